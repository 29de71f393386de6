//! The program's in-cluster environment for one simulation: a private temporary folder with the
//! program and its plan, the service-account files (a random token, a freshly generated CA,
//! the namespace), a `sitecustomize` hook that makes the in-cluster path resolve to them, and
//! the TLS configuration of the fake API server that the CA vouches for.

use super::netns::API_ADDRESS;
use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// Where a pod finds its service-account files, and the same path through `/run`, which
/// `/var/run` links to in most images.
pub const SA_PATHS: [&str; 2] = [
    "/var/run/secrets/kubernetes.io/serviceaccount",
    "/run/secrets/kubernetes.io/serviceaccount",
];

/// Random bytes from the kernel.
pub fn random_bytes(n: usize) -> io::Result<Vec<u8>> {
    let mut out = vec![0u8; n];
    fs::File::open("/dev/urandom")?.read_exact(&mut out)?;
    Ok(out)
}

/// A random string of `len` letters and digits.
pub fn random_token(len: usize) -> io::Result<String> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    // 248 is the largest multiple of 62 below 256: rejecting above it keeps the choice uniform.
    let mut out = String::with_capacity(len);
    while out.len() < len {
        for b in random_bytes(len * 2)? {
            if b < 248 && out.len() < len {
                out.push(ALPHABET[(b % 62) as usize] as char);
            }
        }
    }
    Ok(out)
}

/// A private folder (mode 0700) removed with everything in it when dropped. What a program
/// leaves in it is read through the folder's own descriptor, opened when it was made, so a
/// program that moves the folder or puts a link in its place cannot redirect a read.
pub struct RunDir {
    path: PathBuf,
    fd: std::os::fd::OwnedFd,
    /// The user its folders were handed to ([`RunDir::hand_to`]), again after [`RunDir::renew`].
    owner: std::sync::Mutex<Option<(u32, u32)>>,
    /// On a tmpfs of its own ([`super::scratch`]).
    mounted: bool,
}

/// The folders of a run folder: the service-account files, the hook, the program's working
/// folder and its `TMPDIR`, the ConfigMap's files, and where the pod's root is mounted.
const SUBFOLDERS: [&str; 6] = [
    "serviceaccount",
    "site",
    "work",
    "tmp",
    super::podfs::CREDENTIALS,
    super::podfs::ROOT,
];

impl RunDir {
    pub fn create() -> io::Result<RunDir> {
        let base = std::env::temp_dir();
        let mut last = io::Error::other("no attempt");
        for _ in 0..8 {
            // A name like any temporary folder's (mktemp's), nothing that says credlint: the
            // program sees it in `__file__`, `sys.argv`, its working folder and `TMPDIR`, and
            // must not tell a simulation from its pod by it.
            let path = base.join(format!("tmp.{}", random_token(10)?));
            match fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => {
                    // Mounted before it is opened: the descriptor is the tmpfs's.
                    let mounted = super::scratch::mount_on(&path);
                    live().push((path.clone(), mounted));
                    let opened = rustix::fs::open(
                        &path,
                        OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                        Mode::empty(),
                    );
                    let fd = match opened {
                        Ok(fd) => fd,
                        Err(e) => {
                            live().retain(|(p, _)| p != &path);
                            remove_run_folder(&path, mounted);
                            return Err(e.into());
                        }
                    };
                    let dir = RunDir {
                        path,
                        fd,
                        owner: std::sync::Mutex::new(None),
                        mounted,
                    };
                    dir.make_subfolders()?;
                    return Ok(dir);
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = e,
                Err(e) => return Err(in_base(&base, e)),
            }
        }
        Err(in_base(&base, last))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Gives the folder and its working folders to `uid` (and the group of the same number),
    /// the user the program runs as; credlint, as root, still removes them.
    pub fn hand_to(&self, uid: u32, gid: u32) -> io::Result<()> {
        std::os::unix::fs::chown(&self.path, Some(uid), Some(gid))?;
        for sub in SUBFOLDERS {
            std::os::unix::fs::lchown(self.path.join(sub), Some(uid), Some(gid))?;
        }
        *self.owner.lock().unwrap_or_else(|e| e.into_inner()) = Some((uid, gid));
        Ok(())
    }

    fn make_subfolders(&self) -> io::Result<()> {
        for sub in SUBFOLDERS {
            fs::DirBuilder::new()
                .mode(0o700)
                .create(self.path.join(sub))?;
        }
        Ok(())
    }

    /// Empties the folder and makes its folders again (handed to the same user), so that
    /// nothing a run leaves (a marker file in its working folder or `TMPDIR`, a changed hook
    /// or service-account file) is there for the next: the caller writes the environment and
    /// the program again. The folder itself stays (the Landlock rule holds it open).
    pub fn renew(&self) -> io::Result<()> {
        for entry in fs::read_dir(&self.path)? {
            let entry = entry?;
            let path = entry.path();
            if entry.file_type()?.is_dir() {
                remove_tree(&path);
            } else {
                fs::remove_file(&path)?;
            }
        }
        self.make_subfolders()?;
        let owner = *self.owner.lock().unwrap_or_else(|e| e.into_inner());
        match owner {
            Some((uid, gid)) => self.hand_to(uid, gid),
            None => Ok(()),
        }
    }

    /// Makes the empty file `name` (a new one: nothing that stands there is followed) for the
    /// user the folder was handed to.
    pub fn make_file(&self, name: &str) -> io::Result<()> {
        let fd = rustix::fs::openat(
            &self.fd,
            name,
            OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::WRONLY | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )?;
        let owner = *self.owner.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((uid, gid)) = owner {
            rustix::fs::fchown(
                &fd,
                Some(rustix::fs::Uid::from_raw(uid)),
                Some(rustix::fs::Gid::from_raw(gid)),
            )?;
        }
        Ok(())
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// What the program left in the file `name` of the folder, removed for the next run: its
    /// first `max` bytes, read without following a link and without waiting (a FIFO in its
    /// place would otherwise block credlint for ever, past `--timeout`). Absent: empty. `Err`
    /// says what stood there instead of a regular file, which is not read.
    pub fn take_left(&self, name: &str, max: u64) -> Result<String, String> {
        let opened = rustix::fs::openat(
            &self.fd,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
        );
        let result = match opened {
            Err(rustix::io::Errno::NOENT) => return Ok(String::new()),
            Err(rustix::io::Errno::LOOP) => Err("a symbolic link".to_string()),
            Err(e) => Err(format!("a file credlint cannot open ({e})")),
            Ok(fd) => match rustix::fs::fstat(&fd).map(|st| FileType::from_raw_mode(st.st_mode)) {
                Ok(FileType::RegularFile) => {
                    let mut bytes = Vec::new();
                    let _ = fs::File::from(fd).take(max).read_to_end(&mut bytes);
                    Ok(String::from_utf8_lossy(&bytes).into_owned())
                }
                Ok(FileType::Fifo) => Err("a FIFO".to_string()),
                Ok(FileType::Directory) => Err("a folder".to_string()),
                Ok(FileType::Socket) => Err("a socket".to_string()),
                Ok(_) => Err("a device".to_string()),
                Err(e) => Err(format!("a file credlint cannot inspect ({e})")),
            },
        };
        if rustix::fs::unlinkat(&self.fd, name, AtFlags::empty()).is_err() {
            // A folder: removed with what it holds (remove_dir_all follows no link).
            let _ = fs::remove_dir_all(self.path.join(name));
        }
        result
    }
}

/// The run folders that exist now, on every thread: removed by the signal handler too.
/// Each with whether it is a tmpfs of its own.
static LIVE: std::sync::Mutex<Vec<(PathBuf, bool)>> = std::sync::Mutex::new(Vec::new());

fn live() -> std::sync::MutexGuard<'static, Vec<(PathBuf, bool)>> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Removes every run folder that exists now (credlint is stopping on a signal).
pub fn remove_live() {
    for (path, mounted) in live().drain(..) {
        remove_run_folder(&path, mounted);
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        live().retain(|(p, _)| p != &self.path);
        remove_run_folder(&self.path, self.mounted);
    }
}

fn remove_run_folder(path: &Path, mounted: bool) {
    if mounted {
        super::scratch::remove_mounted(path);
    } else {
        remove_tree(path);
    }
}

fn remove_tree(path: &Path) {
    if fs::remove_dir_all(path).is_err() {
        // A program may have left read-only folders behind; make them removable, then retry.
        unlock(path, 0);
        let _ = fs::remove_dir_all(path);
    }
}

/// Makes every folder under `dir` writable again, to a bounded depth (a program could nest
/// folders deep enough to exhaust the stack of an unbounded walk).
fn unlock(dir: &Path, depth: usize) {
    if depth > 64 {
        return;
    }
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                let _ = fs::set_permissions(&path, fs::Permissions::from_mode(0o700));
                unlock(&path, depth + 1);
            }
        }
    }
}

/// `error`, saying in which folder the run folder was to be made (`TMPDIR` or `/tmp`).
fn in_base(base: &Path, error: io::Error) -> io::Error {
    io::Error::new(
        error.kind(),
        format!(
            "no run folder can be made in {} (TMPDIR, or /tmp where it is unset): {error}",
            base.display()
        ),
    )
}

/// The CA (PEM, for `ca.crt`) and the API server's TLS configuration.
pub struct Pki {
    pub ca_pem: String,
    pub tls: Arc<rustls::ServerConfig>,
}

/// A CA and a server certificate for the `kubernetes` Service's address and names and
/// `127.0.0.1`, made per run.
/// The extensions (key identifiers, key usages) are those that strict X.509 checking, the
/// default of Python 3.13 and later, requires.
pub fn make_pki() -> Result<Pki, String> {
    let text = |e: rcgen::Error| e.to_string();
    let ca_key = KeyPair::generate().map_err(text)?;
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(text)?;
    ca.distinguished_name.push(DnType::CommonName, "kubernetes");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca.self_signed(&ca_key).map_err(text)?;

    let server_key = KeyPair::generate().map_err(text)?;
    // As a cluster's API server certificate names itself: the Service's address and names.
    let mut server = CertificateParams::new(api_names()).map_err(text)?;
    server
        .distinguished_name
        .push(DnType::CommonName, "kube-apiserver");
    server.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    server.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    server.use_authority_key_identifier_extension = true;
    let issuer = Issuer::from_params(&ca, &ca_key);
    let server_cert = server.signed_by(&server_key, &issuer).map_err(text)?;

    let chain = vec![CertificateDer::from(server_cert.der().to_vec())];
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key.serialize_der()));
    // The suite a cluster's API server picks for a Python client: Go's TLS 1.3 server follows
    // its own order, AES-128-GCM first where the client puts AES-GCM ahead (OpenSSL does).
    let mut provider = rustls::crypto::ring::default_provider();
    provider
        .cipher_suites
        .sort_by_key(|s| s.suite() != rustls::CipherSuite::TLS13_AES_128_GCM_SHA256);
    let mut tls = rustls::ServerConfig::builder_with_provider(Arc::new(provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| e.to_string())?;
    tls.ignore_client_order = true;
    // One session ticket a connection, as Go's TLS 1.3 server (the API server's) sends; rustls
    // would send two.
    tls.send_tls13_tickets = 1;
    Ok(Pki {
        ca_pem: ca_cert.pem(),
        tls: Arc::new(tls),
    })
}

/// The startup hook. Python imports `sitecustomize` from `PYTHONPATH` before it runs the
/// program, so the program's own code is untouched; the hook rewrites paths under the
/// in-cluster prefix for every ordinary way of reaching a file: `open`/`io.open` (and so
/// `pathlib`), the `os` path functions (and so `os.path` and `pathlib`'s stat/exists/iterdir),
/// and `ssl`'s certificate loading, which OpenSSL would otherwise read in C.
const HOOK: &str = r#"# Written by `credlint simulate` for one run and removed with it: the in-cluster
# service-account path resolves to this run's files, as a pod's mount would.
import builtins as _builtins
import io as _io
import os as _os

try:
    import ssl as _ssl
except ImportError:  # an interpreter without OpenSSL: the program cannot use HTTPS anyway
    _ssl = None

_TARGET = __TARGET__
_PREFIXES = __PREFIXES__
_FILES = __FILES__


def _redirect(path):
    try:
        raw = _os.fspath(path)
    except TypeError:
        return path
    as_bytes = isinstance(raw, bytes)
    text = _os.fsdecode(raw) if as_bytes else raw
    if not isinstance(text, str) or not text.startswith("/"):
        return path
    norm = "/" + _os.path.normpath(text).lstrip("/")
    if norm in _FILES:
        moved = _FILES[norm]
        return _os.fsencode(moved) if as_bytes else moved
    for prefix in _PREFIXES:
        if norm == prefix or norm.startswith(prefix + "/"):
            moved = _TARGET + norm[len(prefix):]
            return _os.fsencode(moved) if as_bytes else moved
    return path


def _wrap(fn):
    def wrapper(*args, **kwargs):
        if args:
            args = (_redirect(args[0]),) + args[1:]
        else:
            for key in ("file", "path"):
                if key in kwargs:
                    kwargs[key] = _redirect(kwargs[key])
        return fn(*args, **kwargs)

    wrapper.__name__ = getattr(fn, "__name__", "wrapper")
    wrapper.__qualname__ = getattr(fn, "__qualname__", "wrapper")
    wrapper.__doc__ = getattr(fn, "__doc__", None)
    wrapper.__wrapped__ = fn
    return wrapper


_open = _wrap(_io.open)
_builtins.open = _open
_io.open = _open
for _name in ("open", "stat", "lstat", "access", "listdir", "scandir", "readlink", "chdir"):
    _original = getattr(_os, _name, None)
    if _original is None:
        continue
    _wrapped = _wrap(_original)
    setattr(_os, _name, _wrapped)
    # Keep the capability sets that shutil and pathlib consult truthful for the wrappers.
    for _set_name in ("supports_fd", "supports_dir_fd", "supports_follow_symlinks", "supports_effective_ids"):
        _set = getattr(_os, _set_name, None)
        if isinstance(_set, set) and _original in _set:
            _set.add(_wrapped)

if _ssl is not None:
    _load_verify_locations = _ssl.SSLContext.load_verify_locations
    _load_cert_chain = _ssl.SSLContext.load_cert_chain

    def _verify_locations(self, cafile=None, capath=None, cadata=None):
        return _load_verify_locations(
            self,
            None if cafile is None else _redirect(cafile),
            None if capath is None else _redirect(capath),
            cadata,
        )

    def _cert_chain(self, certfile, keyfile=None, password=None):
        keyfile = None if keyfile is None else _redirect(keyfile)
        return _load_cert_chain(self, _redirect(certfile), keyfile, password)

    _ssl.SSLContext.load_verify_locations = _verify_locations
    _ssl.SSLContext.load_cert_chain = _cert_chain

# What the program reaches beyond its run folder and the fake servers, reported (not stopped)
# through an audit hook: credlint reads the log after the run. Python-level calls only: a
# subprocess or ctypes call is itself logged, but not what it then does. Everything the hook
# reads lives in the closure of one function that is not kept in this module, so a program
# that rebinds or mutates `sitecustomize`'s names (`_busy`, `_READABLE`, ...) changes nothing
# the hook sees; reaching the closure needs the interpreter's object graph or a tracer, and
# asking for those is reported in its own right.
import sys as _sys


def _install_audit(os, sys, run, ports, log_path):
    run = tuple(os.path.realpath(r) for r in run)
    loopback = __LOOPBACK__
    # Reads that any interpreter makes: its own modules, CA certificates, time zones, devices,
    # and the pod's name and resolver files.
    readable = tuple(
        os.path.realpath(p)
        for p in list(sys.path) + [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
        if isinstance(p, str) and p.startswith("/") and p != "/"
    ) + (
        "/etc/ssl", "/usr/lib/ssl", "/etc/pki", "/etc/ca-certificates", "/usr/share/ca-certificates",
        "/usr/local/share/ca-certificates", "/etc/localtime", "/usr/share/zoneinfo", "/etc/mime.types",
        "/etc/hosts", "/etc/resolv.conf", "/etc/hostname",
        "/dev/null", "/dev/urandom", "/dev/random",
    )
    writable = ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/fd/1", "/dev/fd/2", "/proc/self/fd/1", "/proc/self/fd/2")
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
    # The interpreter's own object graph and tracers: the ways to the hook's closure.
    inspecting = ("gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys.settrace", "sys.setprofile")
    log_fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    logged = set()
    busy = [False]
    realpath, join, getcwd, fsdecode, write = os.path.realpath, os.path.join, os.getcwd, os.fsdecode, os.write

    def under(path, roots):
        return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)

    def resolve(path):
        if isinstance(path, bytes):
            path = fsdecode(path)
        if not isinstance(path, str):
            return None  # a file descriptor: opened earlier, judged then
        return realpath(join(getcwd(), path))

    def record(kind, detail):
        entry = kind + "\t" + detail.replace("\n", " ").replace("\t", " ")[:300]
        if entry in logged or len(logged) >= 50:
            return
        logged.add(entry)
        try:
            write(log_fd, (entry + "\n").encode("utf-8", "replace"))
        except OSError:
            pass

    def judge_path(path, writes):
        full = resolve(path)
        if full is None or under(full, run):
            return
        if writes and not under(full, writable):
            record("write", full)
        elif not writes and not under(full, readable):
            record("read", full)

    def audit(event, args):
        if busy[0]:
            return
        busy[0] = True
        try:
            if event == "open":
                path, mode, flags = (tuple(args) + (None, None, None))[:3]
                writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                    isinstance(flags, int) and flags & write_flags != 0
                )
                judge_path(path, writes)
            elif event in ("os.remove", "os.rmdir", "os.mkdir", "os.truncate", "os.chmod", "os.chown", "os.utime"):
                judge_path(args[0], True)
            elif event in ("os.rename", "os.link", "os.symlink"):
                judge_path(args[1], True)
                judge_path(args[0], event == "os.rename")
            elif event in ("os.listdir", "os.scandir") and args and args[0] is not None:
                judge_path(args[0], False)
            elif event in ("socket.connect", "socket.sendto"):
                address = args[1]
                if isinstance(address, tuple) and len(address) >= 2:
                    host, port = address[0], address[1]
                    if not (host in loopback and port in ports):
                        record("connect", "%s:%s" % (host, port))
                else:
                    record("connect", repr(address))
            elif event in ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn"):
                record("exec", repr(args[0]))
            elif event == "ctypes.dlopen" and args and args[0] is not None:
                record("exec", "ctypes " + repr(args[0]))
            elif event in inspecting:
                record("inspect", event)
        except Exception:
            pass
        finally:
            busy[0] = False

    sys.addaudithook(audit)


"#;

/// The end of [`HOOK`] for a run of its own: the audit hook installed now.
const AUDIT_NOW: &str =
    "_install_audit(_os, _sys, __RUN__, __PORTS__, __LOG__)\ndel _install_audit\n";

/// The program's clock, appended to the hook as a piece of its own (before the origin, so that
/// the origin's wrapper is the outer one): `time.sleep` returns at once and advances a virtual
/// clock, which `time.monotonic`, `time.perf_counter` and `time.time` (and their `_ns` forms)
/// read; every read advances it by a microsecond (a loop that only reads the clock still
/// ends), every request by a millisecond (a round trip), and every request tells the fake API
/// server the clock in a header, so its controllers wait in the program's time. A wait costs
/// no wall time and every verdict is the same on a busy machine. `time.time` starts at
/// 2026-11-01T00:00:00Z, the fake cluster's own timestamp. A sleep past an hour of virtual time
/// in one run blocks for real: such a program hangs, and `--timeout` ends it as before.
const CLOCK_HOOK: &str = r#"

# The program's virtual clock (written by `credlint simulate`).
def _install_clock():
    import http.client as _http_client
    import time as _time

    _real_sleep = _time.sleep
    _now = [0]  # nanoseconds since the run began; only ever grows
    _mono0 = 1000 * 10**9
    _wall0 = 1793491200 * 10**9
    _LIMIT = 3600 * 10**9  # an hour of sleeping in one run

    def _tick(ns):
        _now[0] += ns
        return _now[0]

    def monotonic_ns():
        return _mono0 + _tick(1000)

    def monotonic():
        return monotonic_ns() / 1e9

    def time_ns():
        return _wall0 + _tick(1000)

    def time():
        return time_ns() / 1e9

    def sleep(secs):
        if isinstance(secs, (str, bytes, bytearray)) or secs is None:
            raise TypeError("'%s' object cannot be interpreted as an integer" % type(secs).__name__)
        seconds = float(secs)
        if seconds != seconds:
            raise ValueError("Invalid value NaN (not a number)")
        if seconds < 0:
            raise ValueError("sleep length must be non-negative")
        if _tick(int(min(seconds, 10.0**9) * 10**9)) > _LIMIT:
            # Past any Job's patience: the run hangs, as it would, until --timeout ends it.
            while True:
                _real_sleep(3600)
        _real_sleep(0)  # let other threads run, as a sleep would

    for _name, _fn in (
        ("monotonic", monotonic), ("monotonic_ns", monotonic_ns), ("perf_counter", monotonic),
        ("perf_counter_ns", monotonic_ns), ("time", time), ("time_ns", time_ns), ("sleep", sleep),
    ):
        _fn.__name__ = _fn.__qualname__ = _name
        setattr(_time, _name, _fn)

    _endheaders = _http_client.HTTPConnection.endheaders

    def endheaders(self, *args, **kwargs):
        try:
            self.putheader(__CLOCK_HEADER__, str(_tick(10**6)))
        except Exception:
            pass
        return _endheaders(self, *args, **kwargs)

    endheaders.__wrapped__ = _endheaders
    _http_client.HTTPConnection.endheaders = endheaders
    return lambda: _now.__setitem__(0, 0)
"#;

/// The end of [`CLOCK_HOOK`] for a run of its own.
const CLOCK_NOW: &str = "\n\n_install_clock()\ndel _install_clock\n";

/// The end of [`CLOCK_HOOK`] in a zygote, which sets each run's clock back to its start.
const CLOCK_KEPT: &str = "\n\n_clock_reset = _install_clock()\ndel _install_clock\n";

/// The zygote's loop, the last piece of its hook (`zygote.rs`).
const ZYGOTE: &str = include_str!("zygote.py");

/// The header that carries the program's virtual clock (nanoseconds since the run began).
pub const CLOCK_HEADER: &str = "X-Credlint-Clock";

/// The request's origin, appended to the hook as a piece of its own: every request the program
/// sends through `http.client` (and so `urllib` and the libraries built on it) carries the line
/// of create.py that sent it (the innermost frame in the program's file), so that a finding
/// points at that line. The program can forge or drop the header; the server only accepts a
/// line the program has, and a finding without one points at the `create.py:` key.
const ORIGIN_HOOK: &str = r#"

# The line of create.py that sent each request, for findings (written by `credlint simulate`).
def _install_origin():
    import http.client as _http_client
    import sys as _osys

    def _origin():
        path = getattr(_osys.modules.get("__main__"), "__file__", None)
        frame = _osys._getframe(2)
        while frame is not None and path is not None:
            if frame.f_code.co_filename == path:
                return frame.f_lineno
            frame = frame.f_back
        return None

    _endheaders = _http_client.HTTPConnection.endheaders

    def endheaders(self, *args, **kwargs):
        try:
            line = _origin()
            if line is not None:
                self.putheader(__ORIGIN_HEADER__, str(line))
        except Exception:
            pass
        return _endheaders(self, *args, **kwargs)

    endheaders.__wrapped__ = _endheaders
    _http_client.HTTPConnection.endheaders = endheaders


_install_origin()
del _install_origin
"#;

/// The header that carries the line of create.py a request was sent from.
pub const ORIGIN_HEADER: &str = "X-Credlint-Origin";

/// The DNS names of the `kubernetes` Service, where a pod finds the API server: its
/// certificate names them, the pod's hosts file maps them to its address, and the hook counts
/// them as the fake servers' host.
const SERVICE_NAMES: [&str; 4] = [
    "kubernetes.default.svc.cluster.local",
    "kubernetes.default.svc",
    "kubernetes.default",
    "kubernetes",
];

/// Every name and address the fake API server answers to: loopback, the Service's address and
/// its DNS names.
fn api_names() -> Vec<String> {
    ["127.0.0.1".to_string(), API_ADDRESS.to_string()]
        .into_iter()
        .chain(SERVICE_NAMES.map(String::from))
        .collect()
}

/// A Job pod's name, which is its host name: the Job's and five random characters, cut to the
/// 63 bytes a host name may have.
pub fn pod_name(job: &str, suffix: &str) -> String {
    let mut name = format!("{job}-{}", suffix.to_ascii_lowercase());
    while name.len() > 63 {
        name.pop();
    }
    name
}

/// The files the kubelet writes into a pod's `/etc` (its hosts file, resolver settings and
/// host name), as run-folder names: the pod's root mounts them in place of the host's.
pub const POD_ETC: [(&str, &str); 3] = [
    ("etc-hosts", "/etc/hosts"),
    ("etc-resolv.conf", "/etc/resolv.conf"),
    ("etc-hostname", "/etc/hostname"),
];

/// The texts of [`POD_ETC`] for the pod `hostname` in `namespace`, whose API server is at
/// `api`. The hosts file also maps [`SERVICE_NAMES`], which the cluster's DNS would answer, so
/// the program finds the fake API server by name as by `KUBERNETES_SERVICE_HOST`. The
/// resolver's server is cluster DNS's usual address, which nothing answers (and seccomp allows
/// no UDP): any other name fails at once, as an unknown name would.
/// The pod's own address as it sees it (its hosts file names it so, and its `status.podIP`
/// is this): the loopback of its network namespace, where nothing else has an address.
pub const POD_ADDRESS: &str = "127.0.0.1";

fn pod_etc(hostname: &str, namespace: &str, api: std::net::IpAddr) -> [String; 3] {
    [
        format!(
            "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost \
             ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\n\
             fe00::2\tip6-allrouters\n{POD_ADDRESS}\t{hostname}\n{api}\t{}\n",
            SERVICE_NAMES.join(" ")
        ),
        format!(
            "search {namespace}.svc.cluster.local svc.cluster.local cluster.local\n\
             nameserver 10.96.0.10\noptions ndots:5\n"
        ),
        format!("{hostname}\n"),
    ]
}

/// Writes the service-account files and the hook into `dir`; `ports` are those of the fake
/// servers on loopback, which the program may connect to. With `pod` (the pod's host name and
/// the API server's address) the program runs in the pod's root (`podfs`), which puts every
/// file at its in-cluster path: the hook redirects nothing, and the files the root mounts over
/// (the termination and access logs, the pod's `/etc` files) are made here, for the program's
/// user to write or read.
pub fn write_environment(
    dir: &RunDir,
    token: &str,
    ca_pem: &str,
    namespace: &str,
    ports: &[u16],
    pod: Option<(&str, std::net::IpAddr)>,
    zygote: bool,
) -> io::Result<()> {
    let sa = dir.join("serviceaccount");
    fs::write(sa.join("token"), token)?;
    fs::write(sa.join("ca.crt"), ca_pem)?;
    fs::write(sa.join("namespace"), namespace)?;
    if let Some((hostname, api)) = pod {
        for ((name, _), text) in POD_ETC.iter().zip(pod_etc(hostname, namespace, api)) {
            fs::write(dir.join(name), text)?;
        }
    }
    let pod = pod.is_some();
    let target = sa
        .to_str()
        .ok_or_else(|| io::Error::other("the temporary folder's path is not UTF-8"))?;
    let literal = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into());
    let tuple = |items: &[&str]| {
        format!(
            "({})",
            items
                .iter()
                .map(|i| format!("{},", literal(i)))
                .collect::<String>()
        )
    };
    let log = dir.join(TERMINATION_LOG);
    let (prefixes, files, roots, access_log) = if pod {
        dir.make_file(TERMINATION_LOG)?;
        dir.make_file(ACCESS_LOG)?;
        // Where the pod's root mounts the log in the hook's folder.
        dir.make_file(&format!("site/{ACCESS_LOG}"))?;
        (
            "()".to_string(),
            "{}".to_string(),
            // What the pod may read and write beyond the system's files: its volumes, its
            // exit message, the hook, and `/dev/shm`, which is its own (fresh for every run).
            tuple(&[
                super::podfs::CREDENTIALS_PATH,
                SA_PATHS[1],
                TERMINATION_PATH,
                super::podfs::HOOK_PATH,
                "/dev/shm",
            ]),
            format!("{}/{ACCESS_LOG}", super::podfs::HOOK_PATH),
        )
    } else {
        (
            tuple(&SA_PATHS),
            format!(
                "{{{}: {}}}",
                literal(TERMINATION_PATH),
                literal(&log.to_string_lossy())
            ),
            tuple(&[&dir.path.to_string_lossy()]),
            dir.join(ACCESS_LOG).to_string_lossy().into_owned(),
        )
    };
    let pieces = if zygote {
        [HOOK, CLOCK_HOOK, CLOCK_KEPT, ORIGIN_HOOK, ZYGOTE]
    } else {
        [HOOK, AUDIT_NOW, CLOCK_HOOK, CLOCK_NOW, ORIGIN_HOOK]
    };
    let hook = pieces
        .concat()
        .replace("__CLOCK_HEADER__", &literal(CLOCK_HEADER))
        .replace("__ORIGIN_HEADER__", &literal(ORIGIN_HEADER))
        .replace("__TARGET__", &literal(target))
        .replace("__PREFIXES__", &prefixes)
        .replace("__FILES__", &files)
        .replace("__RUN__", &roots)
        .replace("__LOG__", &literal(&access_log))
        .replace(
            "__LOOPBACK__",
            &tuple(
                &api_names()
                    .iter()
                    .map(String::as_str)
                    .chain(["localhost", "::1"])
                    .collect::<Vec<&str>>(),
            ),
        )
        .replace(
            "__PORTS__",
            &format!(
                "frozenset(({}))",
                ports.iter().map(|p| format!("{p},")).collect::<String>()
            ),
        );
    fs::write(dir.join("site").join("sitecustomize.py"), hook)
}

/// The file a container's exit message goes to (`terminationMessagePath`'s default), and the
/// run-folder file the hook makes it.
pub const TERMINATION_PATH: &str = "/dev/termination-log";
pub const TERMINATION_LOG: &str = "termination-log";

/// What the run wrote as its exit message (the first 64 KiB), removed for the next run; `Err`
/// says what the program put in the file's place (not read).
pub fn take_termination_message(dir: &RunDir) -> Result<String, String> {
    dir.take_left(TERMINATION_LOG, 64 * 1024)
}

/// The run-folder file the audit hook logs to: one `kind<TAB>detail` line per access.
pub const ACCESS_LOG: &str = "access-log";

/// What the run reached beyond its folder and the fake servers, `(kind, detail)`, as the hook
/// logged it (the first 64 KiB), removed for the next run. A log the program replaced with
/// something else (a link, a FIFO) is not read; that is itself an entry (`tamper`).
pub fn take_access_log(dir: &RunDir) -> Vec<(String, String)> {
    match dir.take_left(ACCESS_LOG, 64 * 1024) {
        Ok(text) => text
            .lines()
            .filter_map(|l| l.split_once('\t'))
            .map(|(k, d)| (k.to_string(), d.to_string()))
            .collect(),
        Err(what) => vec![("tamper".into(), format!("the audit hook's log with {what}"))],
    }
}

/// Writes the program and its plan exactly as the ConfigMap holds them.
/// They are in a folder of their own, which the pod's root mounts at `/credentials`.
pub fn write_program(dir: &RunDir, script: &str, plan_json: &str) -> io::Result<()> {
    let folder = dir.join(super::podfs::CREDENTIALS);
    fs::write(folder.join("create.py"), script)?;
    fs::write(folder.join("plan.json"), plan_json)
}

/// The search path of a container whose image sets none (the OCI runtimes' default).
const IMAGE_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The child's environment before its container's own ([`with_container`]): the image's
/// variables, the `kubernetes` Service's variables and the hook. In the pod's root the image's
/// are a stand-in for any image's (its default search path, `HOME` `/` as for a user the image
/// does not name, a UTF-8 locale); outside it, what Python needs to find itself on the host (a
/// pyenv shim needs HOME and PYENV_*). Nothing else of the caller's leaks in.
pub fn child_env(
    dir: &RunDir,
    host: std::net::IpAddr,
    port: u16,
    pod: bool,
) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = Vec::new();
    if pod {
        env.extend([
            ("PATH".into(), IMAGE_PATH.into()),
            ("HOME".into(), "/".into()),
            ("LANG".into(), "C.UTF-8".into()),
        ]);
    } else {
        for key in [
            "PATH",
            "HOME",
            "LANG",
            "LC_ALL",
            "LC_CTYPE",
            "PYENV_ROOT",
            "PYENV_VERSION",
        ] {
            if let Ok(v) = std::env::var(key) {
                env.push((key.into(), v));
            }
        }
    }
    let port = port.to_string();
    let path = |name: &str| dir.join(name).to_string_lossy().into_owned();
    env.extend([
        ("KUBERNETES_SERVICE_HOST".into(), host.to_string()),
        ("KUBERNETES_SERVICE_PORT".into(), port.clone()),
        ("KUBERNETES_SERVICE_PORT_HTTPS".into(), port.clone()),
        ("KUBERNETES_PORT".into(), format!("tcp://{host}:{port}")),
        (
            format!("KUBERNETES_PORT_{port}_TCP"),
            format!("tcp://{host}:{port}"),
        ),
        (format!("KUBERNETES_PORT_{port}_TCP_ADDR"), host.to_string()),
        (format!("KUBERNETES_PORT_{port}_TCP_PORT"), port.clone()),
        (format!("KUBERNETES_PORT_{port}_TCP_PROTO"), "tcp".into()),
        ("PYTHONDONTWRITEBYTECODE".into(), "1".into()),
        ("PYTHONUNBUFFERED".into(), "1".into()),
        ("PYTHONIOENCODING".into(), "utf-8".into()),
    ]);
    if pod {
        // The pod's root is read-only: no folder for temporary files, as in the pod.
        env.push(("PYTHONPATH".into(), super::podfs::HOOK_PATH.into()));
    } else {
        env.push(("PYTHONPATH".into(), path("site")));
        env.push(("TMPDIR".into(), path("tmp")));
    }
    env
}

/// The `kubernetes` Service's variables of `env` ([`child_env`]): the service variables a
/// container's `$(VAR)` may name.
pub fn service_vars(env: &[(String, String)]) -> Vec<(String, String)> {
    env.iter()
        .filter(|(k, _)| k.starts_with("KUBERNETES_"))
        .cloned()
        .collect()
}

/// What the container runtime and the kubelet put over the image's variables `env`: the
/// pod's `HOSTNAME`, then the kubelet's list (`podenv::resolve`). The hook's folder stays
/// first on `PYTHONPATH` (a container's own path follows it), and outside the pod's root
/// `TMPDIR` stays the run's folder, which stands for the pod's filesystem there.
pub fn with_container(
    env: &mut Vec<(String, String)>,
    hostname: &str,
    kubelet: &[(String, String)],
) {
    use super::podenv::set;
    set(env, "HOSTNAME", hostname.to_string());
    let kept = |name: &str, env: &[(String, String)]| {
        env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    };
    let hook = kept("PYTHONPATH", env);
    let tmp = kept("TMPDIR", env);
    for (k, v) in kubelet {
        set(env, k, v.clone());
    }
    if let Some(hook) = hook {
        let theirs = kubelet
            .iter()
            .rev()
            .find(|(k, _)| k == "PYTHONPATH")
            .map(|(_, v)| v.as_str())
            .unwrap_or("");
        let path = if theirs.is_empty() {
            hook
        } else {
            format!("{hook}:{theirs}")
        };
        set(env, "PYTHONPATH", path);
    }
    if let Some(tmp) = tmp {
        set(env, "TMPDIR", tmp);
    }
}
