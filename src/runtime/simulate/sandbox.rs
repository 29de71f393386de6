//! Landlock confinement of the program, where the kernel allows it: what the audit hook only
//! reports, the kernel then refuses.
//!
//! The ruleset is built once per simulation, in credlint (which stays unconfined); the child
//! enforces it on itself between `fork` and `exec` (`no_new_privs`, then
//! `landlock_restrict_self`), so the interpreter and everything it starts are confined from
//! their first instruction. What the program may reach:
//! - its run folder: everything (it holds the program, the plan, the service-account files,
//!   its working folder and `TMPDIR`);
//! - read and execute: the system's program and library folders (`/usr`, `/lib*`, `/bin`,
//!   `/sbin`), the interpreter's own folders (its `sys.path` and prefixes, as it said when
//!   asked), the CA certificates, time zones and the few `/etc` files the C library reads to
//!   start a program and resolve `localhost`;
//! - `/dev/null` (read and write), `/dev/urandom` and `/dev/random` (read);
//! - TCP (Landlock ABI 4 and later): connecting only to the ports of the fake API server and
//!   the fake server pods, binding none;
//! - signals and abstract Unix sockets (ABI 6 and later): none beyond its own processes.
//!
//! Everything else (the home folder, `/proc`, the rest of `/etc`, other ports) fails with
//! `EACCES`. Landlock does not cover UDP, a named Unix socket's connect, or a port's address
//! (a connect to another host at the fake API's port number passes; the hook reports it).
//! Where the kernel has no Landlock, or refuses it, the run falls back to the audit hook alone,
//! and credlint says so once.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// `struct landlock_ruleset_attr` (ABI 6 layout; older kernels accept it with the fields they
/// do not know left zero).
#[repr(C)]
#[derive(Clone, Copy)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

/// `struct landlock_path_beneath_attr` (packed, as the kernel declares it).
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// `struct landlock_net_port_attr`.
#[repr(C)]
struct NetPortAttr {
    allowed_access: u64,
    port: u64,
}

const CREATE_RULESET_VERSION: u32 = 1;
const RULE_PATH_BENEATH: libc::c_int = 1;
const RULE_NET_PORT: libc::c_int = 2;

const FS_EXECUTE: u64 = 1 << 0;
const FS_WRITE_FILE: u64 = 1 << 1;
const FS_READ_FILE: u64 = 1 << 2;
const FS_READ_DIR: u64 = 1 << 3;
/// Every filesystem right of ABI 1 (execute through make-symlink).
const FS_ABI1: u64 = (1 << 13) - 1;
const FS_REFER: u64 = 1 << 13;
const FS_TRUNCATE: u64 = 1 << 14;
const FS_IOCTL_DEV: u64 = 1 << 15;
/// The rights that apply to a file (the others are about folders' entries).
const FS_FILE: u64 = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV;

const NET_BIND_TCP: u64 = 1 << 0;
const NET_CONNECT_TCP: u64 = 1 << 1;

const SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1 << 0;
const SCOPE_SIGNAL: u64 = 1 << 1;

/// Read-only and executable for any program: the system's programs and libraries.
const SYSTEM: &[&str] = &[
    "/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin",
];

/// Readable: what the C library and OpenSSL read to start a program, load its libraries,
/// resolve `localhost` and verify a certificate, and time zones. Nothing here is a secret.
pub const READABLE: &[&str] = &[
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/ld.so.preload",
    "/etc/ssl",
    "/etc/pki",
    "/etc/ca-certificates",
    "/etc/crypto-policies",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/mime.types",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/nsswitch.conf",
    "/etc/resolv.conf",
    "/etc/gai.conf",
    "/etc/services",
    "/etc/protocols",
    "/dev/urandom",
    "/dev/random",
];

/// The environment variable that turns the confinement off (`CREDLINT_LANDLOCK=0`): for a
/// kernel whose Landlock misbehaves, and for the test of the fallback.
pub const DISABLE_VAR: &str = "CREDLINT_LANDLOCK";

/// A Landlock ruleset ready for a child to enforce on itself.
pub struct Sandbox {
    ruleset: OwnedFd,
    /// The kernel's Landlock ABI version.
    pub abi: i32,
    /// The fake servers' ports, the only ones the program may connect to.
    ports: Vec<u16>,
    /// Set where the program runs in the pod's root: the child builds its ruleset there.
    pod: Option<PodRules>,
}

/// The ruleset of a program in the pod's root, which exists only in the child: the child
/// makes it on the pod's paths once it has entered the root. Everything the root shows may be
/// read and executed (it holds only what the pod would see); what may be written is what a
/// pod may write: the devices, `/dev/shm`, the termination log, and the hook's access log.
struct PodRules {
    /// `(pod path, rights)`, each right masked to what the ABI handles.
    paths: Vec<(CString, u64)>,
}

/// Why the kernel last refused Landlock to a starting program (the note says it once).
static REFUSED: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// Why a program started without Landlock that should have had it, for the report.
pub fn why_unconfined() -> String {
    REFUSED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
        .unwrap_or_else(|| "the kernel refused it as a program started".into())
}

/// Why there is no sandbox: said once per process, then the audit hook alone reports.
pub fn note_unconfined(reason: &str) {
    *REFUSED.lock().unwrap_or_else(|e| e.into_inner()) = Some(reason.to_string());
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        eprintln!(
            "credlint: note: simulate's programs run without a Landlock sandbox ({reason}); the \
             audit hook still reports what they reach beyond their folder and the fake servers"
        );
    });
}

/// The kernel's Landlock ABI version, or why there is none.
pub fn abi() -> Result<i32, String> {
    // SAFETY: with the VERSION flag the kernel reads no attribute (null, size 0) and returns
    // the ABI version or -1 with errno.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<RulesetAttr>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    };
    if v < 1 {
        let e = io::Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::ENOSYS) => "the kernel has no Landlock".into(),
            Some(libc::EOPNOTSUPP) => "Landlock is disabled in this kernel".into(),
            _ => format!("Landlock is refused: {e}"),
        });
    }
    Ok(i32::try_from(v).unwrap_or(i32::MAX))
}

/// The filesystem rights an ABI version knows: all of them are handled (denied unless a rule
/// allows them).
fn fs_rights(abi: i32) -> u64 {
    let mut fs = FS_ABI1;
    if abi >= 2 {
        fs |= FS_REFER;
    }
    if abi >= 3 {
        fs |= FS_TRUNCATE;
    }
    if abi >= 5 {
        fs |= FS_IOCTL_DEV;
    }
    fs
}

fn open_path(path: &Path) -> io::Result<OwnedFd> {
    let c = CString::new(path.as_os_str().as_bytes()).map_err(io::Error::other)?;
    // SAFETY: open(2) with a NUL-terminated path; O_PATH opens no content.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

impl Sandbox {
    /// The ruleset for one simulation: `run` is the run folder, `interpreter` the folders and
    /// files the interpreter reads (its prefixes, `sys.path`, its executable), `ports` those of
    /// the fake servers. `Err` says why the kernel gives none.
    pub fn new(run: &Path, interpreter: &[PathBuf], ports: &[u16]) -> Result<Sandbox, String> {
        if std::env::var_os(DISABLE_VAR).is_some_and(|v| v == "0") {
            return Err(format!("{DISABLE_VAR}=0 is set"));
        }
        let abi = abi()?;
        let fs = fs_rights(abi);
        let fd = create_ruleset(&ruleset_attr(abi))
            .map_err(|e| format!("the kernel refused a ruleset: {e}"))?;
        // SAFETY: a fresh descriptor (close-on-exec) that nothing else owns.
        let ruleset = unsafe { OwnedFd::from_raw_fd(fd) };
        let sandbox = Sandbox {
            ruleset,
            abi,
            ports: ports.to_vec(),
            pod: None,
        };
        sandbox.allow(run, fs, true)?;
        let read = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR;
        for p in SYSTEM
            .iter()
            .map(Path::new)
            .chain(interpreter.iter().map(PathBuf::as_path))
        {
            sandbox.allow(p, read, false)?;
        }
        for p in READABLE {
            sandbox.allow(Path::new(p), FS_READ_FILE | FS_READ_DIR, false)?;
        }
        sandbox.allow(
            Path::new("/dev/null"),
            FS_READ_FILE | FS_WRITE_FILE | FS_TRUNCATE | FS_IOCTL_DEV,
            false,
        )?;
        if abi >= 4 {
            add_port_rules(sandbox.ruleset.as_raw_fd(), ports)
                .map_err(|e| format!("the kernel refused a rule: {e}"))?;
        }
        Ok(sandbox)
    }

    /// The program runs in the pod's root (`podfs`): its child builds the ruleset on the pod's
    /// paths, with the same network rules as this one.
    pub fn for_pod_root(&mut self) -> Result<(), String> {
        let fs = fs_rights(self.abi);
        let read = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR;
        let device = FS_READ_FILE | FS_WRITE_FILE | FS_TRUNCATE | FS_IOCTL_DEV;
        let log = format!(
            "{}/{}",
            super::podfs::HOOK_PATH,
            super::incluster::ACCESS_LOG
        );
        let paths: [(&str, u64); 8] = [
            ("/", read),
            ("/dev/null", device),
            ("/dev/zero", FS_READ_FILE),
            ("/dev/full", device),
            ("/dev/urandom", FS_READ_FILE),
            ("/dev/shm", fs),
            (
                super::incluster::TERMINATION_PATH,
                FS_READ_FILE | FS_WRITE_FILE | FS_TRUNCATE,
            ),
            (log.as_str(), FS_WRITE_FILE),
        ];
        let mut rules = Vec::new();
        for (path, rights) in paths {
            rules.push((CString::new(path).map_err(|e| e.to_string())?, rights & fs));
        }
        self.pod = Some(PodRules { paths: rules });
        Ok(())
    }

    /// The ruleset of [`Sandbox::for_pod_root`] for a run's first process in a zygote to make
    /// on itself (`zygote.py`): the attribute's three fields, the pod's paths with their
    /// rights, the rights a file may have, and the ports it may connect to. None where the
    /// program does not run in the pod's root.
    pub fn pod_rules_json(&self) -> Option<serde_json::Value> {
        let pod = self.pod.as_ref()?;
        let attr = ruleset_attr(self.abi);
        let paths: Vec<(String, u64)> = pod
            .paths
            .iter()
            .map(|(p, r)| (p.to_string_lossy().into_owned(), *r))
            .collect();
        Some(serde_json::json!({
            "attr": [attr.handled_access_fs, attr.handled_access_net, attr.scoped],
            "paths": paths,
            "file_rights": FS_FILE,
            "ports": self.ports,
            "connect": NET_CONNECT_TCP,
        }))
    }

    /// The program runs in the host's root after all (the pod's root failed its trial).
    pub fn for_host_root(&mut self) {
        self.pod = None;
    }

    /// Allows `access` (within what the ruleset handles; only a file's rights on a file) beneath
    /// `path`. A path that does not exist is skipped unless `required`.
    fn allow(&self, path: &Path, access: u64, required: bool) -> Result<(), String> {
        let fd = match open_path(path) {
            Ok(fd) => fd,
            Err(_) if !required => return Ok(()),
            Err(e) => return Err(format!("cannot open {}: {e}", path.display())),
        };
        add_path_rule(self.ruleset.as_raw_fd(), &fd, access & fs_rights(self.abi))
            .map_err(|e| format!("{}: the kernel refused a rule: {e}", path.display()))
    }

    /// What the child runs between `fork` and `exec`: only system calls, nothing that
    /// allocates or locks. `no_new_privs` first, which Landlock requires of an unprivileged
    /// process (and which keeps a set-uid program from escaping).
    pub fn enforce_in_child(&self) -> impl FnMut() -> io::Result<()> + Send + Sync + 'static {
        let fd = self.ruleset.as_raw_fd();
        let pod = self
            .pod
            .as_ref()
            .map(|p| (ruleset_attr(self.abi), p.paths.clone(), self.ports.clone()));
        move || {
            // SAFETY: prctl(2) and the Landlock call take plain integers; `fd` is the ruleset,
            // inherited from the parent, which keeps it open until the child has started.
            unsafe {
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            let ruleset = match &pod {
                Some((attr, paths, ports)) => pod_ruleset(attr, paths, ports)?,
                None => fd,
            };
            // SAFETY: as above; `ruleset` is open (the parent's, or the one just made).
            unsafe {
                if libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0u32) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            Ok(())
        }
    }
}

/// Makes the ruleset of a program in the pod's root, in the child: system calls only, on
/// paths and attributes prepared in credlint. A path the root lacks is skipped.
fn pod_ruleset(attr: &RulesetAttr, paths: &[(CString, u64)], ports: &[u16]) -> io::Result<RawFd> {
    let ruleset = create_ruleset(attr)?;
    for (path, rights) in paths {
        let Ok(target) = rustix::fs::open(
            path.as_c_str(),
            rustix::fs::OFlags::PATH | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        ) else {
            continue;
        };
        add_path_rule(ruleset, &target, *rights)?;
    }
    if attr.handled_access_net != 0 {
        add_port_rules(ruleset, ports)?;
    }
    Ok(ruleset)
}

/// What a ruleset handles under ABI `abi`: every filesystem right it knows, TCP bind and
/// connect (ABI 4), signals and abstract Unix sockets (ABI 6).
fn ruleset_attr(abi: i32) -> RulesetAttr {
    RulesetAttr {
        handled_access_fs: fs_rights(abi),
        handled_access_net: if abi >= 4 {
            NET_BIND_TCP | NET_CONNECT_TCP
        } else {
            0
        },
        scoped: if abi >= 6 {
            SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
        } else {
            0
        },
    }
}

// The system calls below allocate nothing: a child between `fork` and `exec` makes them too.

/// A new ruleset (close-on-exec, as the kernel makes every one).
fn create_ruleset(attr: &RulesetAttr) -> io::Result<RawFd> {
    // SAFETY: the attribute lives for the call and its size is passed with it.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            attr as *const RulesetAttr,
            std::mem::size_of::<RulesetAttr>(),
            0u32,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    RawFd::try_from(fd).map_err(io::Error::other)
}

fn add_rule(ruleset: RawFd, kind: libc::c_int, rule: *const libc::c_void) -> io::Result<()> {
    // SAFETY: `rule` points at the attribute struct of `kind`, alive for the call.
    if unsafe { libc::syscall(libc::SYS_landlock_add_rule, ruleset, kind, rule, 0u32) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Allows `rights` beneath the file or folder `target` (only a file's rights on a file).
fn add_path_rule(ruleset: RawFd, target: &OwnedFd, rights: u64) -> io::Result<()> {
    let is_dir = rustix::fs::fstat(target)
        .is_ok_and(|st| rustix::fs::FileType::from_raw_mode(st.st_mode).is_dir());
    let rule = PathBeneathAttr {
        allowed_access: rights & if is_dir { u64::MAX } else { FS_FILE },
        parent_fd: target.as_raw_fd(),
    };
    add_rule(
        ruleset,
        RULE_PATH_BENEATH,
        &rule as *const PathBeneathAttr as *const libc::c_void,
    )
}

/// Allows TCP connections to `ports`, and to no other.
fn add_port_rules(ruleset: RawFd, ports: &[u16]) -> io::Result<()> {
    for &port in ports {
        let rule = NetPortAttr {
            allowed_access: NET_CONNECT_TCP,
            port: u64::from(port),
        };
        add_rule(
            ruleset,
            RULE_NET_PORT,
            &rule as *const NetPortAttr as *const libc::c_void,
        )?;
    }
    Ok(())
}
