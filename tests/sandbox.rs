//! `credlint simulate` runs a program that arrives in the change under review: each test here
//! is a hostile program of one class, put before the correct program of fixtures/runtime, that
//! reports what it managed by failing with `ESCAPED <what>` (a `runtime-failed` finding). A
//! confined run shows no such finding and the correct program still passes every scenario.
//! Needs python3; `.ci/run` requires it (`CREDLINT_REQUIRE_PYTHON=1`).

mod common;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The wall-clock guard of one credlint run: far past `--timeout 20` times the runs, and
/// short of for ever (a run that hangs fails here instead of hanging the suite).
const GUARD: Duration = Duration::from_secs(240);

fn python_or_skip() -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("python3").is_file()));
    if !found {
        common::skip_unless_required(
            "CREDLINT_REQUIRE_PYTHON",
            "python3 is not installed (simulate runs the programs with it)",
        );
    }
    found
}

/// [`python_or_skip`], and root: a test that needs root says why it is skipped without it.
fn python_and_root_or_skip(why: &str) -> bool {
    if !python_or_skip() {
        return false;
    }
    let root = common::is_root();
    if !root {
        eprintln!("SKIPPED: needs root ({why})");
    }
    root
}

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

impl Run {
    fn report(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}\n{}", self.stdout, self.stderr))
    }

    /// `(rule, message)` of every finding.
    fn findings(&self) -> Vec<(String, String)> {
        self.report()["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["rule"].as_str().unwrap_or_default().to_string(),
                    f["message"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect()
    }

    /// The findings that say the program got out.
    fn escapes(&self) -> Vec<String> {
        self.findings()
            .into_iter()
            .map(|(_, m)| m)
            .filter(|m| m.contains("ESCAPED"))
            .collect()
    }
}

/// A component bundle whose create.py is `prefix` and then the correct program.
fn bundle(dir: &Path, prefix: &str) {
    let script = format!(
        "{prefix}\n{}",
        std::fs::read_to_string(common::root().join("fixtures/runtime/create.py")).unwrap()
    );
    let spec = credlint::testkit::render::Spec::example("shop", "shop-db", "component", &script);
    std::fs::write(dir.join("bundle.yaml"), spec.render()).unwrap();
}

/// Runs `credlint simulate --format json --timeout 20 [extra] dir`; `inherit` is a file
/// credlint inherits open (without close-on-exec) as descriptor 9, as a careless CI step
/// could hand it one.
fn simulate(dir: &Path, extra: &[&str], inherit: Option<&Path>) -> Run {
    simulate_env(dir, extra, inherit, &[])
}

/// [`simulate`] with `env` added to credlint's environment; as root, both ways
/// ([`common::zygote_and_fresh`]), so every hostile program here holds both paths to the same
/// confinement.
fn simulate_env(dir: &Path, extra: &[&str], inherit: Option<&Path>, env: &[(&str, &str)]) -> Run {
    common::zygote_and_fresh(
        env,
        |env| simulate_once(dir, extra, inherit, env),
        |r| (r.code, r.stdout.clone(), r.stderr.clone()),
    )
}

fn simulate_once(dir: &Path, extra: &[&str], inherit: Option<&Path>, env: &[(&str, &str)]) -> Run {
    let mut command = common::command();
    command
        .envs(env.iter().copied())
        // No cache: each test is about what the program does when it runs.
        .args([
            "simulate",
            "--no-cache",
            "--format",
            "json",
            "--timeout",
            "20",
        ])
        .args(extra)
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let held = inherit.map(|p| std::fs::File::open(p).unwrap());
    if let Some(file) = &held {
        let fd = std::os::fd::AsRawFd::as_raw_fd(file);
        // SAFETY: dup2 and fcntl only, between fork and exec; `fd` is open in the parent.
        unsafe {
            command.pre_exec(move || {
                if libc::dup2(fd, 9) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::fcntl(9, libc::F_SETFD, 0);
                Ok(())
            });
        }
    }
    let started = Instant::now();
    let mut child = command.spawn().expect("the binary runs");
    let pid = child.id() as libc::pid_t;
    let (done, finished) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if finished.recv_timeout(GUARD).is_err() {
            // SAFETY: kill(2) on our child, which is not reaped before the watchdog ends.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    });
    let mut stdout = String::new();
    let mut stderr = String::new();
    let out = child.stdout.take().unwrap();
    let err = child.stderr.take().unwrap();
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut { err }, &mut s);
        s
    });
    let _ = std::io::Read::read_to_string(&mut { out }, &mut stdout);
    stderr.push_str(&err_reader.join().unwrap());
    let status = child.wait().unwrap();
    let _ = done.send(());
    watchdog.join().unwrap();
    Run {
        code: status.code(),
        stdout,
        stderr,
        elapsed: started.elapsed(),
    }
}

/// Runs the hostile `prefix` and asserts that it escaped nothing and the correct program
/// after it still passed.
fn refused(name: &str, prefix: &str) -> Run {
    let dir = common::temp_dir(&format!("sandbox-{name}"));
    bundle(&dir, prefix);
    let run = simulate(&dir, &[], None);
    assert!(
        run.code.is_some(),
        "{name}: credlint was killed after {:?}: {}",
        run.elapsed,
        run.stderr
    );
    assert_eq!(
        run.escapes(),
        Vec::<String>::new(),
        "{name}: {}",
        run.stderr
    );
    run
}

#[test]
fn a_program_that_says_it_escaped_is_reported() {
    if !python_or_skip() {
        return;
    }
    // The control for every test here: an ESCAPED exit is seen.
    let dir = common::temp_dir("sandbox-control");
    bundle(&dir, "raise SystemExit('ESCAPED control')");
    let run = simulate(&dir, &[], None);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(!run.escapes().is_empty(), "{:?}", run.findings());
}

#[test]
fn descriptors_credlint_inherited_are_closed_to_the_program() {
    if !python_or_skip() {
        return;
    }
    let dir = common::temp_dir("sandbox-fds");
    let secret = dir.join("secret");
    std::fs::write(&secret, "credlint-inherited-secret").unwrap();
    bundle(
        &dir,
        "import os as _o\n\
         for _fd in range(3, 1024):\n\
         \x20   try:\n\
         \x20       if b'inherited-secret' in _o.pread(_fd, 64, 0):\n\
         \x20           raise SystemExit('ESCAPED read an inherited descriptor %d' % _fd)\n\
         \x20   except OSError:\n\
         \x20       pass",
    );
    let run = simulate(&dir, &[], Some(&secret));
    assert_eq!(run.escapes(), Vec::<String>::new(), "{}", run.stderr);
    assert_eq!(run.code, Some(0), "{:?} {}", run.findings(), run.stderr);
}

#[test]
fn raw_packet_and_unix_sockets_udp_and_dns_are_refused() {
    if !python_or_skip() {
        return;
    }
    // A Unix socket listening where the program could name it, as docker.sock would.
    let dir = common::temp_dir("sandbox-sockets-target");
    let path = dir.join("listening.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = udp.local_addr().unwrap().port();
    let prefix = format!(
        "import socket as _s\n\
         def _try(what, make):\n\
         \x20   try:\n\
         \x20       make()\n\
         \x20   except OSError:\n\
         \x20       return\n\
         \x20   raise SystemExit('ESCAPED ' + what)\n\
         _try('raw ICMP', lambda: _s.socket(_s.AF_INET, _s.SOCK_RAW, _s.IPPROTO_ICMP))\n\
         _try('raw IPv6', lambda: _s.socket(_s.AF_INET6, _s.SOCK_RAW, 58))\n\
         _try('packet', lambda: _s.socket(17, _s.SOCK_RAW, 0))\n\
         _try('unix connect', lambda: _s.socket(_s.AF_UNIX).connect({path:?}))\n\
         _try('udp', lambda: _s.socket(_s.AF_INET, _s.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', {port})))\n\
         _try('udp6', lambda: _s.socket(_s.AF_INET6, _s.SOCK_DGRAM))\n\
         _try('dns', lambda: _s.getaddrinfo('credlint-test.example.com', 53))\n\
         _a, _b = _s.socketpair()\n\
         _a.send(b'pair'); assert _b.recv(4) == b'pair'",
        path = path.to_string_lossy()
    );
    refused("sockets", &prefix);
    udp.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 8];
    assert!(udp.recv(&mut buf).is_err(), "a datagram arrived");
}

/// In its own network namespace the program reaches the fake servers and nothing of the
/// host's network: a port listening on the host's loopback gets no connection, even with
/// Landlock (which also refuses other ports) turned off.
#[test]
fn a_port_on_the_hosts_loopback_is_out_of_reach() {
    if !python_or_skip() {
        return;
    }
    let host = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    host.set_nonblocking(true).unwrap();
    let port = host.local_addr().unwrap().port();
    let dir = common::temp_dir("sandbox-host-port");
    bundle(
        &dir,
        &format!(
            "import socket as _s\n\
             try:\n\
             \x20   _s.create_connection(('127.0.0.1', {port}), timeout=2).close()\n\
             except OSError:\n\
             \x20   pass"
        ),
    );
    let run = simulate_env(&dir, &[], None, &[("CREDLINT_LANDLOCK", "0")]);
    let (held, missing) = layers(&run.report()["summary"]["sandbox"]);
    if !held.iter().any(|l| l == "network-namespace") {
        eprintln!("SKIPPED: no network namespace here: {missing:?}");
        return;
    }
    // The attempt is reported (the audit hook), and it is all that is: the reference program
    // still reached the fake API server and did its work in every scenario.
    let findings = run.findings();
    assert_eq!(run.code, Some(1), "{findings:?} {}", run.stderr);
    assert!(
        !findings.is_empty()
            && findings
                .iter()
                .all(|(rule, message)| rule == "runtime-sandbox-escape"
                    && message.contains(&format!("connected to 127.0.0.1:{port},"))),
        "{findings:?}"
    );
    assert!(
        host.accept().is_err(),
        "the program reached the host's port"
    );
}

#[test]
fn no_capability_ptrace_keyring_mount_or_namespace() {
    if !python_or_skip() {
        return;
    }
    refused(
        "privileges",
        "import os as _o, ctypes as _c\n\
         _l = _c.CDLL(None, use_errno=True)\n\
         open('owned', 'w').close()\n\
         try:\n\
         \x20   _o.chown('owned', 1, 1)\n\
         \x20   raise SystemExit('ESCAPED chown (a capability)')\n\
         except OSError:\n\
         \x20   pass\n\
         if _l.ptrace(0, 0, 0, 0) == 0:\n\
         \x20   raise SystemExit('ESCAPED ptrace')\n\
         if _o.uname().machine == 'x86_64' and _l.syscall(248, b'user', b'credlint', b'x', 1, -2) >= 0:\n\
         \x20   raise SystemExit('ESCAPED add_key')\n\
         if _l.unshare(0x10000000) == 0:\n\
         \x20   raise SystemExit('ESCAPED unshare(CLONE_NEWUSER)')\n\
         if _l.mount(b'none', b'/tmp', b'tmpfs', 0, None) == 0:\n\
         \x20   raise SystemExit('ESCAPED mount')\n\
         _o.remove('owned')",
    );
}

#[test]
fn memory_file_size_and_process_bombs_are_bounded() {
    if !python_or_skip() {
        return;
    }
    refused(
        "bombs",
        "import os as _o\n\
         try:\n\
         \x20   _big = bytearray(1 << 30)\n\
         \x20   raise SystemExit('ESCAPED allocated 1 GiB')\n\
         except MemoryError:\n\
         \x20   pass\n\
         try:\n\
         \x20   with open('big', 'wb') as _f:\n\
         \x20       for _ in range(128):\n\
         \x20           _f.write(b'x' * (1 << 20))\n\
         \x20   raise SystemExit('ESCAPED wrote 128 MiB')\n\
         except OSError:\n\
         \x20   pass\n\
         _o.remove('big')",
    );
}

/// As root, each run folder is a tmpfs of its own (128 MiB), mounted in credlint's own mount
/// namespace: the program's termination log sits on it, the host never sees the mount, and
/// the folders are gone when credlint ends.
#[test]
fn as_root_run_folders_are_a_tmpfs_the_host_never_sees() {
    if !python_and_root_or_skip("credlint mounts the run folders in its own namespace") {
        return;
    }
    let dir = common::temp_dir("sandbox-scratch");
    let scratch = dir.join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    bundle(
        &dir,
        "import os as _o\n\
         _s = _o.statvfs('/dev/termination-log')\n\
         if _s.f_blocks * _s.f_frsize != 128 << 20:\n\
         \x20   raise SystemExit('the run folder is no 128 MiB tmpfs: %d' % (_s.f_blocks * _s.f_frsize))",
    );
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watched = scratch.to_string_lossy().into_owned();
    let watcher = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut seen = Vec::new();
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
                seen.extend(
                    table
                        .lines()
                        .filter(|l| l.contains(&watched))
                        .map(str::to_string),
                );
                std::thread::sleep(Duration::from_millis(5));
            }
            seen
        })
    };
    let run = simulate_env(&dir, &[], None, &[("TMPDIR", &scratch.to_string_lossy())]);
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let seen = watcher.join().unwrap();
    assert_eq!(run.code, Some(0), "{:?} {}", run.findings(), run.stderr);
    assert_eq!(
        seen,
        Vec::<String>::new(),
        "the host saw a run folder's mount"
    );
    let left: Vec<_> = std::fs::read_dir(&scratch)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(
        left,
        Vec::<std::path::PathBuf>::new(),
        "run folders left behind"
    );
}

/// The program is process 1 of its PID namespace, in a session and process group it does not
/// lead (their leaders are out of its sight), so it may make a session of its own: the same
/// whether its run was forked from the zygote or started afresh (both are run here as root).
#[test]
fn the_program_is_process_1_and_leads_no_group_or_session() {
    if !python_and_root_or_skip("without it the PID namespace depends on the container") {
        return;
    }
    let dir = common::temp_dir("sandbox-session");
    bundle(
        &dir,
        "import os as _o\n\
         _seen = (_o.getpid(), _o.getpgrp(), _o.getsid(0))\n\
         if _seen != (1, 0, 0):\n\
         \x20   raise SystemExit('process, group and session seen as %r' % (_seen,))\n\
         _o.setsid()",
    );
    let run = simulate(&dir, &[], None);
    assert_eq!(run.code, Some(0), "{:?} {}", run.findings(), run.stderr);
}

#[test]
fn as_root_the_program_runs_as_the_pods_user_with_processes_bounded() {
    if !python_or_skip() {
        return;
    }
    let python = Path::new("/usr/bin/python3");
    if !common::is_root() || !python.is_file() {
        eprintln!("SKIPPED: needs root and /usr/bin/python3 (a path every user can reach)");
        return;
    }
    let dir = common::temp_dir("sandbox-user");
    bundle(
        &dir,
        "import os as _o, time as _t\n\
         if _o.getuid() != 65532 or _o.getgid() != 65532 or _o.getgroups():\n\
         \x20   raise SystemExit('ESCAPED runs as %d:%d' % (_o.getuid(), _o.getgid()))\n\
         _kids = []\n\
         try:\n\
         \x20   for _ in range(200):\n\
         \x20       _p = _o.fork()\n\
         \x20       if _p == 0:\n\
         \x20           _t.sleep(3)\n\
         \x20           _o._exit(0)\n\
         \x20       _kids.append(_p)\n\
         except OSError:\n\
         \x20   pass\n\
         for _p in _kids:\n\
         \x20   _o.kill(_p, 9)\n\
         \x20   _o.waitpid(_p, 0)\n\
         if len(_kids) >= 200:\n\
         \x20   raise SystemExit('ESCAPED forked 200 processes')",
    );
    let run = simulate(&dir, &["--python", "/usr/bin/python3"], None);
    assert_eq!(run.escapes(), Vec::<String>::new(), "{}", run.stderr);
    assert_eq!(run.code, Some(0), "{:?} {}", run.findings(), run.stderr);
}

/// The audit hook keeps its state out of the program's reach: rebinding every private name of
/// `sitecustomize` (the old `_busy[0] = True` trick among them) does not hide a write outside
/// the run folder, and walking the interpreter's objects to find the hook is itself reported.
#[test]
fn the_audit_hook_cannot_be_silenced_by_the_program() {
    if !python_or_skip() {
        return;
    }
    let dir = common::temp_dir("sandbox-silence");
    let outside = dir.join("outside-the-run");
    bundle(
        &dir,
        &format!(
            "import sitecustomize as _sc\n\
             for _n in list(vars(_sc)):\n\
             \x20   if _n.startswith('_') and not _n.startswith('__') and _n != '_install_clock':\n\
             \x20       _v = getattr(_sc, _n)\n\
             \x20       if isinstance(_v, list) and _v and _v[0] is False:\n\
             \x20           _v[0] = True\n\
             \x20       elif isinstance(_v, (tuple, set, frozenset)):\n\
             \x20           setattr(_sc, _n, ('/',))\n\
             try:\n\
             \x20   open({outside:?}, 'w').close()\n\
             except OSError:\n\
             \x20   pass\n\
             import gc as _gc\n\
             _gc.get_referrers(_sc)",
            outside = outside.to_string_lossy()
        ),
    );
    let run = simulate(&dir, &[], None);
    let findings = run.findings();
    let escaped = |needle: &str| {
        findings
            .iter()
            .any(|(rule, m)| rule == "runtime-sandbox-escape" && m.contains(needle))
    };
    assert!(
        escaped(&outside.to_string_lossy()),
        "{findings:?}\n{}",
        run.stderr
    );
    assert!(escaped("gc.get_referrers"), "{findings:?}\n{}", run.stderr);
}

/// Every layer a report can name (docs/simulate.md lists them).
const LAYERS: [&str; 17] = [
    "user-namespace",
    "mount-namespace",
    "pod-filesystem",
    "pid-namespace",
    "network-namespace",
    "ipc-namespace",
    "uts-namespace",
    "user",
    "capabilities",
    "no-new-privs",
    "seccomp",
    "rlimits",
    "process-limit",
    "session",
    "descriptors",
    "landlock",
    "audit-hook",
];

/// `(held, [(missing layer, why)])` of a JSON report's `summary.sandbox` (or SARIF's run
/// properties), with each of [`LAYERS`] named exactly once in one of the two.
fn layers(sandbox: &serde_json::Value) -> (Vec<String>, Vec<(String, String)>) {
    let held: Vec<String> = sandbox["held"]
        .as_array()
        .unwrap_or_else(|| panic!("no sandbox.held: {sandbox}"))
        .iter()
        .map(|l| l.as_str().unwrap().to_string())
        .collect();
    let missing: Vec<(String, String)> = sandbox["missing"]
        .as_array()
        .unwrap_or_else(|| panic!("no sandbox.missing: {sandbox}"))
        .iter()
        .map(|l| {
            (
                l["layer"].as_str().unwrap().to_string(),
                l["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let mut named: Vec<&str> = held
        .iter()
        .map(String::as_str)
        .chain(missing.iter().map(|(l, _)| l.as_str()))
        .collect();
    named.sort_unstable();
    let mut all = LAYERS.to_vec();
    all.sort_unstable();
    assert_eq!(named, all, "each layer named once: {sandbox}");
    for (layer, why) in &missing {
        assert!(
            !why.trim().is_empty(),
            "{layer} is missing without a reason"
        );
    }
    (held, missing)
}

/// A program that writes outside its folder, as an unconfined run lets it.
fn writes_outside(dir: &Path) -> std::path::PathBuf {
    let marker = dir.join("ran-unconfined");
    bundle(
        dir,
        &format!(
            "try:\n\
             \x20   open({marker:?}, 'w').close()\n\
             except OSError:\n\
             \x20   pass",
            marker = marker.to_string_lossy()
        ),
    );
    marker
}

/// Every report names the sandbox's layers: those that held, and each missing one with its
/// reason (the text summary, `summary.sandbox` in JSON, the run's properties in SARIF). With
/// Landlock turned off, the report says so: the run is not silently less confined.
#[test]
fn every_report_names_the_layers_that_held_and_why_the_others_did_not() {
    if !python_or_skip() {
        return;
    }
    let dir = common::temp_dir("sandbox-layers");
    bundle(&dir, "");
    let run = simulate(&dir, &[], None);
    assert_eq!(run.code, Some(0), "{:?} {}", run.findings(), run.stderr);
    let (held, missing) = layers(&run.report()["summary"]["sandbox"]);
    // Held wherever credlint runs: what needs no privilege and no kernel feature.
    for layer in [
        "no-new-privs",
        "rlimits",
        "session",
        "descriptors",
        "audit-hook",
    ] {
        assert!(
            held.iter().any(|l| l == layer),
            "{layer}: {held:?} {missing:?}"
        );
    }

    let off = simulate_env(&dir, &[], None, &[("CREDLINT_LANDLOCK", "0")]);
    assert_eq!(off.code, Some(0), "{}", off.stderr);
    let (_, missing) = layers(&off.report()["summary"]["sandbox"]);
    assert!(
        missing
            .iter()
            .any(|(l, why)| l == "landlock" && why.contains("CREDLINT_LANDLOCK=0")),
        "{missing:?}"
    );

    // The other two reports of the same run, beside the JSON on standard output.
    let sarif = dir.join("report.sarif");
    let text = dir.join("report.txt");
    let reports = simulate_env(
        &dir,
        &[
            "--format",
            "sarif",
            "--output-file",
            sarif.to_str().unwrap(),
            "--format",
            "text",
            "--output-file",
            text.to_str().unwrap(),
        ],
        None,
        &[("CREDLINT_LANDLOCK", "0")],
    );
    assert_eq!(reports.code, Some(0), "{}", reports.stderr);
    let log: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&sarif).unwrap()).unwrap();
    let (_, missing) = layers(&log["runs"][0]["properties"]["sandbox"]);
    assert!(missing.iter().any(|(l, _)| l == "landlock"), "{missing:?}");
    let text = std::fs::read_to_string(&text).unwrap();
    assert!(
        text.contains("sandbox: not held: landlock: CREDLINT_LANDLOCK=0 is set"),
        "{text}"
    );
    assert!(text.contains(" layers held: "), "{text}");
}

/// `--require-sandbox` starts no program while a layer is missing: exit 2, each missing layer
/// named; a program that would write outside its folder never ran. Where every layer holds,
/// the run is as without the flag.
#[test]
fn require_sandbox_runs_no_program_while_a_layer_is_missing() {
    if !python_or_skip() {
        return;
    }
    let dir = common::temp_dir("sandbox-require");
    let marker = writes_outside(&dir);
    let run = simulate_env(
        &dir,
        &["--require-sandbox"],
        None,
        &[("CREDLINT_LANDLOCK", "0")],
    );
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(
        run.stderr.contains("--require-sandbox") && run.stderr.contains("landlock ("),
        "{}",
        run.stderr
    );
    assert!(!marker.exists(), "the program ran");

    // Without the override: what this machine gives decides.
    let plain = simulate(&dir, &[], None);
    let (_, missing) = layers(&plain.report()["summary"]["sandbox"]);
    let _ = std::fs::remove_file(&marker);
    let required = simulate(&dir, &["--require-sandbox"], None);
    if missing.is_empty() {
        assert_eq!(required.code, plain.code, "{}", required.stderr);
    } else {
        assert_eq!(required.code, Some(2), "{}", required.stderr);
        for (layer, why) in &missing {
            assert!(
                required.stderr.contains(&format!("{layer} ({why})")),
                "{layer}: {}",
                required.stderr
            );
        }
        assert!(!marker.exists(), "the program ran");
    }
}

/// What a program leaves for credlint to read (the termination log, the audit hook's log) is
/// read without following a link and without blocking: a FIFO in the termination log's place
/// once hung credlint past `--timeout`, and a link in the log's place made credlint read a host
/// file of the program's choosing (here one whose text reads as an escape). Both are refused
/// and reported.
#[test]
fn what_the_program_leaves_is_read_without_links_or_blocking() {
    if !python_or_skip() {
        return;
    }
    let dir = common::temp_dir("sandbox-leftovers");
    let host = dir.join("host-file");
    std::fs::write(
        &host,
        "read\tESCAPED credlint read a host file through a link\n",
    )
    .unwrap();
    bundle(
        &dir,
        &format!(
            "import os as _o, sitecustomize as _sc\n\
             _log = getattr(_sc, '_FILES', {{}}).get('/dev/termination-log', '/dev/termination-log')\n\
             _access = _o.path.join(_o.path.dirname(_log), 'access-log')\n\
             for _p in (_log, _access):\n\
             \x20   try:\n\
             \x20       _o.remove(_p)\n\
             \x20   except OSError:\n\
             \x20       pass\n\
             try:\n\
             \x20   _o.mkfifo(_log)\n\
             \x20   _o.symlink({host:?}, _access)\n\
             except OSError:\n\
             \x20   pass",
            host = host.to_string_lossy()
        ),
    );
    let run = simulate(&dir, &[], None);
    assert!(
        run.code.is_some() && run.elapsed < Duration::from_secs(120),
        "credlint hung: {:?} {}",
        run.elapsed,
        run.stderr
    );
    assert_eq!(run.escapes(), Vec::<String>::new(), "{}", run.stderr);
    let findings = run.findings();
    let reported = |needle: &str| {
        findings
            .iter()
            .any(|(rule, m)| rule == "runtime-sandbox-escape" && m.contains(needle))
    };
    // In the pod's root both files are mount points the program cannot replace; elsewhere it
    // replaces them, and credlint refuses to read what it put there and says so.
    let (held, _) = layers(&run.report()["summary"]["sandbox"]);
    if !held.iter().any(|l| l == "pod-filesystem") {
        assert!(reported("/dev/termination-log with a FIFO"), "{findings:?}");
        assert!(
            reported("the audit hook's log with a symbolic link"),
            "{findings:?}"
        );
    } else {
        assert!(!reported("with a FIFO"), "{findings:?}");
        assert!(!reported("with a symbolic link"), "{findings:?}");
    }
}

/// A component bundle whose create.py is `script`.
fn bundle_of(dir: &Path, script: &str) {
    let spec = credlint::testkit::render::Spec::example("shop", "shop-db", "component", script);
    std::fs::write(dir.join("bundle.yaml"), spec.render()).unwrap();
}

/// The rules a JSON report's findings name, sorted and deduplicated.
fn rules(run: &Run) -> Vec<String> {
    let mut rules: Vec<String> = run.findings().into_iter().map(|(r, _)| r).collect();
    rules.sort();
    rules.dedup();
    rules
}

/// Every run starts in a fresh folder: a program that misbehaves only until it finds its own
/// marker (left in its working folder, `TMPDIR`, beside its program and beside the hook, and
/// in `/dev/shm`, the one place the pod's root lets it write; a pod never would find one: each
/// Job run is a new pod) gets the verdict of the program that always misbehaves. Before, the
/// marker outlived the first run and every later scenario saw the correct program.
#[test]
fn nothing_a_run_leaves_reaches_the_next() {
    if !python_or_skip() {
        return;
    }
    let fixtures = common::root().join("fixtures/runtime");
    let correct = std::fs::read_to_string(fixtures.join("create.py")).unwrap();
    let faulty = std::fs::read_to_string(fixtures.join("broken/overwrite-value.py")).unwrap();
    let always = common::temp_dir("sandbox-state-always");
    bundle_of(&always, &faulty);
    let marked = common::temp_dir("sandbox-state-marker");
    bundle_of(
        &marked,
        &format!(
            "import os, sys, sitecustomize\n\
             places = [os.getcwd(), os.environ.get('TMPDIR', '.'),\n\
             \x20         os.path.dirname(os.path.abspath(sys.argv[0])),\n\
             \x20         os.path.dirname(os.path.abspath(sitecustomize.__file__)), '/dev/shm']\n\
             seen = any(os.path.exists(os.path.join(p, '.seen')) for p in places)\n\
             for p in places:\n\
             \x20   try:\n\
             \x20       open(os.path.join(p, '.seen'), 'w').close()\n\
             \x20   except OSError:\n\
             \x20       pass\n\
             source = {correct:?} if seen else {faulty:?}\n\
             exec(compile(source, __file__, 'exec'), {{'__name__': '__main__', '__file__': __file__}})\n"
        ),
    );
    let baseline = simulate(&always, &[], None);
    assert!(
        rules(&baseline).contains(&"runtime-value-rewritten".to_string()),
        "{:?}",
        baseline.findings()
    );
    let run = simulate(&marked, &[], None);
    assert_eq!(run.code, baseline.code, "{}", run.stderr);
    // In the pod's root the marker's writes outside it are refused and reported; the rest of
    // the verdict is the always faulty program's.
    let mut verdict = rules(&run);
    verdict.retain(|r| r != "runtime-sandbox-escape");
    assert_eq!(verdict, rules(&baseline), "{:?}", run.findings());
}

/// The program cannot tell a simulation from its pod by a name: nothing in its `__file__`, its
/// command line, its working folder, `TMPDIR`, its module path or its environment's names
/// says credlint (before, the run folder was `credlint-sim-<pid>-<hex>`).
#[test]
fn no_path_or_name_says_credlint() {
    if !python_or_skip() {
        return;
    }
    refused(
        "fingerprint",
        "import os as _o, sys as _s\n\
         _seen = [__file__, _o.getcwd(), _o.environ.get('TMPDIR', ''), _o.environ.get('PYTHONPATH', '')]\n\
         _seen += list(_s.argv) + list(_o.environ)\n\
         for _v in _seen:\n\
         \x20   if 'credlint' in _v.lower():\n\
         \x20       raise SystemExit('ESCAPED saw %r' % _v)\n\
         for _k, _v in _o.environ.items():\n\
         \x20   if 'credlint-sim' in _v.lower():\n\
         \x20       raise SystemExit('ESCAPED saw %s=%r' % (_k, _v))",
    );
}

/// Every descendant of a program dies with its run: here a chain of 80 processes, each in a
/// session of its own (`setsid`, then `fork`), each then replaced by a `sleep` whose argument
/// no other process has. Before, killing the chain stopped at 64 links and the rest lived on.
/// The run is without Landlock, so that nothing but the run's end stops them.
#[test]
fn no_descendant_outlives_the_run() {
    if !python_or_skip() {
        return;
    }
    let dir = common::temp_dir("sandbox-descendants");
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    // A long sleep, told apart from every other process's by its digits.
    let token = format!("{}.{:09}", 3000 + std::process::id() % 1000, nanos);
    bundle(
        &dir,
        &format!(
            "import os as _o, shutil as _sh\n\
             _sleep = _sh.which('sleep') or '/bin/sleep'\n\
             if _o.fork() == 0:\n\
             \x20   for _i in range(80):\n\
             \x20       _o.setsid()\n\
             \x20       if _o.fork() != 0:\n\
             \x20           _o.execv(_sleep, [_sleep, {token:?}])\n\
             \x20   _o.execv(_sleep, [_sleep, {token:?}])",
        ),
    );
    let run = simulate_env(&dir, &[], None, &[("CREDLINT_LANDLOCK", "0")]);
    // The `exec` of `sleep` is reported, and nothing else.
    assert_eq!(run.code, Some(1), "{:?} {}", run.findings(), run.stderr);
    assert!(
        run.findings()
            .iter()
            .all(|(rule, m)| rule == "runtime-sandbox-escape" && m.contains("sleep")),
        "{:?}",
        run.findings()
    );
    let survivors = || -> Vec<String> {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .filter(|c| c.contains(&token))
            .collect()
    };
    assert_eq!(survivors(), Vec::<String>::new());
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(survivors(), Vec::<String>::new());
}

/// The report's namespaces are the program's: each one the report says held is another
/// namespace than credlint's (the program compares its own `/proc/self/ns/*` with credlint's,
/// which this test shares), and each one it says is missing is the same. Run without Landlock,
/// which keeps `/proc` from the program.
#[test]
fn the_namespaces_the_report_names_are_the_programs() {
    if !python_or_skip() {
        return;
    }
    let kinds = [
        ("user-namespace", "user"),
        ("mount-namespace", "mnt"),
        ("pid-namespace", "pid"),
        ("network-namespace", "net"),
        ("ipc-namespace", "ipc"),
        ("uts-namespace", "uts"),
    ];
    let ours: Vec<(&str, String)> = kinds
        .iter()
        .map(|(_, ns)| {
            let link = std::fs::read_link(format!("/proc/self/ns/{ns}")).unwrap();
            (*ns, link.to_string_lossy().into_owned())
        })
        .collect();
    let dir = common::temp_dir("sandbox-namespaces");
    // Said on standard error, which the failure it ends with reports: in the pod's root no
    // host folder is there to write to.
    bundle(
        &dir,
        &format!(
            "import os as _o, posix as _px, sys as _s\n\
             _said = []\n\
             for _ns in {names:?}:\n\
             \x20   _said.append(_ns + ' ' + _o.readlink('/proc/self/ns/' + _ns))\n\
             _said.append('pid1 %d' % (_o.getpid() == 1))\n\
             _said.append('host ' + _o.uname().nodename)\n\
             _said.append('argv ' + _s.argv[0])\n\
             try:\n\
             \x20   _px.stat('/var/run/secrets/kubernetes.io/serviceaccount/token')\n\
             \x20   _said.append('token 1')\n\
             except OSError:\n\
             \x20   _said.append('token 0')\n\
             _s.stderr.write('SEEN ' + ';'.join(_said) + ' END')\n\
             _s.exit(3)",
            names = ours.iter().map(|(ns, _)| *ns).collect::<Vec<_>>(),
        ),
    );
    // What the program sees (namespace numbers, its pod's random name) differs from one
    // simulation to the next: the zygote's runs and fresh interpreters are each held to it.
    for mode in ["require", "0"] {
        namespaces_seen(&dir, &kinds, &ours, mode);
    }
}

/// [`the_namespaces_the_report_names_are_the_programs`] with `CREDLINT_ZYGOTE=mode`.
fn namespaces_seen(dir: &Path, kinds: &[(&str, &str)], ours: &[(&str, String)], mode: &str) {
    let run = simulate_env(
        dir,
        &[],
        None,
        &[("CREDLINT_LANDLOCK", "0"), ("CREDLINT_ZYGOTE", mode)],
    );
    let (held, _) = layers(&run.report()["summary"]["sandbox"]);
    let seen = run
        .findings()
        .iter()
        .find_map(|(_, m)| Some(m.split_once("SEEN ")?.1.split_once(" END")?.0.to_string()))
        .unwrap_or_else(|| panic!("{:?} {}", run.findings(), run.stderr))
        .replace(';', "\n");
    let seen = format!("\n{seen}\n");
    for ((layer, ns), (_, mine)) in kinds.iter().zip(ours) {
        let theirs = seen
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{ns} ")))
            .unwrap_or_else(|| panic!("{ns}: {seen}"));
        let own = theirs != mine;
        assert_eq!(
            own,
            held.iter().any(|l| l == layer),
            "{layer}: the program's {theirs}, credlint's {mine}; held: {held:?}"
        );
    }
    if held.iter().any(|l| l == "pid-namespace") {
        assert!(
            seen.contains("pid1 1"),
            "the program is its namespace's first: {seen}"
        );
    }
    if held.iter().any(|l| l == "uts-namespace") {
        // Its pod's name: the Job's and five random characters.
        assert!(seen.contains("\nhost shop-db-credentials-"), "{seen}");
    }
    // The pod's root: the program at the pod's path, the service-account token there for a
    // call the startup hook does not redirect (`posix.stat`).
    let pod_root = seen.contains("\nargv /credentials/create.py\n") && seen.contains("\ntoken 1\n");
    assert_eq!(
        pod_root,
        held.iter().any(|l| l == "pod-filesystem"),
        "{seen}; held: {held:?}"
    );
}

/// Where the container refuses namespaces (Docker's default seccomp profile refuses
/// `unshare`), the run goes on without them and says so: every namespace is named as missing
/// with the refusal, the correct program still passes, and `--require-sandbox` runs nothing.
/// The refusal is played by a seccomp filter credlint is started under.
#[test]
fn a_container_that_refuses_namespaces_gets_a_run_that_says_so() {
    if !python_or_skip() {
        return;
    }
    let arch: seccompiler::TargetArch = std::env::consts::ARCH.try_into().unwrap();
    let mut rules = std::collections::BTreeMap::new();
    rules.insert(libc::SYS_unshare, Vec::new());
    let filter: seccompiler::BpfProgram = seccompiler::SeccompFilter::new(
        rules,
        seccompiler::SeccompAction::Allow,
        seccompiler::SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .unwrap()
    .try_into()
    .unwrap();
    let dir = common::temp_dir("sandbox-refused-namespaces");
    bundle(&dir, "");
    let run_under_filter = |extra: &[&str]| {
        let mut command = common::command();
        command
            .args([
                "simulate",
                "--no-cache",
                "--format",
                "json",
                "--timeout",
                "20",
            ])
            .args(extra)
            .arg(dir.as_path())
            .stdin(Stdio::null());
        let filter = filter.clone();
        // SAFETY: prctl and seccomp(2) on a filter compiled before the fork; no allocation.
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                seccompiler::apply_filter(&filter).map_err(std::io::Error::other)
            });
        }
        command.output().unwrap()
    };
    let out = run_under_filter(&[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let report: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let (_, missing) = layers(&report["summary"]["sandbox"]);
    for layer in [
        "user-namespace",
        "mount-namespace",
        "pid-namespace",
        "ipc-namespace",
        "uts-namespace",
    ] {
        assert!(
            missing
                .iter()
                .any(|(l, why)| l == layer && why.contains("refused")),
            "{layer}: {missing:?}"
        );
    }
    assert!(stderr.contains("pid-namespace"), "a note says so: {stderr}");
    // The correct program ran without them and passed every scenario.
    assert_eq!(out.status.code(), Some(0), "{report} {stderr}");
    assert!(report["summary"]["runs"].as_u64() > Some(0), "{report}");

    let required = run_under_filter(&["--require-sandbox"]);
    let stderr = String::from_utf8_lossy(&required.stderr);
    assert_eq!(required.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("pid-namespace (refused"), "{stderr}");
    assert!(required.stdout.is_empty(), "no report: no program ran");
}

/// As root, the program runs as the Job's `runAsUser` and `runAsGroup` (the container's own
/// over the pod's), in the pod's root: its command line and working folder are the pod's, it
/// finds the ConfigMap's two files at `/credentials`, the root is read-only, and the API
/// server is at the `kubernetes` Service's address. Said on standard error, which the failure
/// it ends with reports.
#[test]
fn the_program_runs_as_the_jobs_user_in_the_pods_root() {
    if !python_or_skip() {
        return;
    }
    let dir = common::temp_dir("sandbox-run-as");
    let script = "import errno, os, socket, sys\n\
        try:\n\
        \x20   socket.getaddrinfo('example.com', 443)\n\
        \x20   outside = 'resolved'\n\
        except OSError:\n\
        \x20   outside = 'unknown'\n\
        by_name = socket.socket()\n\
        by_name.connect(('kubernetes.default.svc.cluster.local', 443))\n\
        by_name.close()\n\
        names = '%s %s %s' % (socket.gethostbyname('kubernetes.default.svc'),\n\
        \x20   open('/etc/hostname').read().strip() == socket.gethostname(), outside)\n\
        try:\n\
        \x20   open('/dev/shm/scratch', 'w').write('x')\n\
        except OSError:\n\
        \x20   pass\n\
        try:\n\
        \x20   open('/written', 'w')\n\
        \x20   ro = 'no'\n\
        except OSError as e:\n\
        \x20   ro = 'yes' if e.errno == errno.EROFS else 'errno %d' % e.errno\n\
        installed = [n for p in sys.path if os.path.basename(p) in ('site-packages', 'dist-packages')\n\
        \x20   and os.path.isdir(p) for n in os.listdir(p)]\n\
        sys.stderr.write('SEEN ids %d %d %s;argv %s;cwd %s;files %s;readonly %s;installed %d;names %s;api %s:%s END' % (\n\
        \x20   os.getuid(), os.getgid(), os.getgroups(), ' '.join(sys.argv), os.getcwd(),\n\
        \x20   ','.join(sorted(os.listdir('/credentials'))) if os.path.isdir('/credentials') else '-', ro,\n\
        \x20   len(installed), names, os.environ['KUBERNETES_SERVICE_HOST'], os.environ['KUBERNETES_SERVICE_PORT']))\n\
        sys.exit(3)\n";
    let spec = credlint::testkit::render::Spec::example("shop", "shop-db", "component", script);
    let text = spec
        .render()
        .replace("runAsUser: 65532", "runAsUser: 1234")
        .replace(
            "allowPrivilegeEscalation: false",
            "allowPrivilegeEscalation: false\n            runAsGroup: 4321",
        );
    assert!(text.contains("runAsGroup: 4321") && text.contains("runAsUser: 1234"));
    std::fs::write(dir.join("bundle.yaml"), text).unwrap();
    let run = simulate(&dir, &[], None);
    let (held, _) = layers(&run.report()["summary"]["sandbox"]);
    let seen = run
        .findings()
        .iter()
        .find_map(|(_, m)| Some(m.split_once("SEEN ")?.1.split_once(" END")?.0.to_string()))
        .unwrap_or_else(|| panic!("{:?} {}", run.findings(), run.stderr));
    if held.iter().any(|l| l == "user") {
        assert!(seen.starts_with("ids 1234 4321 []"), "{seen}");
    }
    if held.iter().any(|l| l == "pod-filesystem") {
        assert!(
            seen.contains(";argv /credentials/create.py /credentials/plan.json;cwd /;"),
            "{seen}"
        );
        assert!(
            seen.contains(";files create.py,plan.json;readonly yes;"),
            "{seen}"
        );
        // The host's installed packages (pip's, here at least the test tools') are not the
        // image's: the pod's interpreter finds its standard library alone.
        assert!(seen.contains(";installed 0;"), "{seen}");
        // The pod's /etc: the kubernetes Service by its DNS name, its own host name, and no
        // resolver beyond.
        assert!(seen.contains(";names 10.96.0.1 True unknown;"), "{seen}");
        // The pod's own /dev/shm and /etc/hostname, and the API server by its Service's full
        // name, are no escape; the refused write to its root is reported.
        let escapes: Vec<String> = run
            .findings()
            .into_iter()
            .filter(|(rule, _)| rule == "runtime-sandbox-escape")
            .map(|(_, m)| m)
            .collect();
        assert!(
            escapes.iter().all(|m| !m.contains("/dev/shm")
                && !m.contains("/etc/hostname")
                && !m.contains("cluster.local")),
            "{escapes:?}"
        );
        assert!(
            escapes.iter().any(|m| m.contains("/written")),
            "{escapes:?}"
        );
    }
    // In its own network the fake API server is where a pod finds the `kubernetes` Service.
    if held.iter().any(|l| l == "network-namespace") {
        assert!(seen.ends_with(";api 10.96.0.1:443"), "{seen}");
    }
}

/// Without root, the program still gets the pod's root where the kernel gives it a user
/// namespace: the child builds the root with the capabilities that namespace gives it over
/// its own mounts. credlint is started here as `nobody` (the test is root); the report says
/// `pod-filesystem` held exactly where the program saw the pod's paths.
#[test]
fn without_root_the_pod_root_is_built_in_the_programs_user_namespace() {
    if !python_and_root_or_skip("the test starts credlint as another user") {
        return;
    }
    if !Path::new("/usr/bin/python3").is_file() {
        eprintln!("SKIPPED: no /usr/bin/python3 for an unprivileged user to start");
        return;
    }
    let dir = common::temp_dir("sandbox-unprivileged");
    let open = |path: &Path, mode: u32| {
        std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(mode)).unwrap()
    };
    open(&dir, 0o755);
    // A copy `nobody` can start, wherever the checkout is.
    let binary = dir.join("credlint");
    std::fs::copy(env!("CARGO_BIN_EXE_credlint"), &binary).unwrap();
    open(&binary, 0o755);
    let script = "import os, posix, sys\n\
        try:\n\
        \x20   posix.stat('/var/run/secrets/kubernetes.io/serviceaccount/token')\n\
        \x20   token = 1\n\
        except OSError:\n\
        \x20   token = 0\n\
        sys.stderr.write('SEEN uid %d;argv %s;token %d END' % (os.getuid(), sys.argv[0], token))\n\
        sys.exit(3)\n";
    let spec = credlint::testkit::render::Spec::example("shop", "shop-db", "component", script);
    let bundle = dir.join("bundle.yaml");
    std::fs::write(&bundle, spec.render()).unwrap();
    open(&bundle, 0o644);
    let tmp = dir.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    open(&tmp, 0o1777);
    let mut command = std::process::Command::new(&binary);
    command
        .args(["simulate", "--no-cache", "--no-config", "--format", "json"])
        .args(["--timeout", "20", "--python", "/usr/bin/python3"])
        .arg(&bundle)
        .current_dir(dir.as_path())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", dir.as_path())
        .env("TMPDIR", &tmp)
        .stdin(Stdio::null());
    // SAFETY: setgroups, setresgid and setresuid on plain integers, between fork and exec.
    unsafe {
        command.pre_exec(|| {
            if libc::setgroups(0, std::ptr::null()) < 0
                || libc::setresgid(65534, 65534, 65534) < 0
                || libc::setresuid(65534, 65534, 65534) < 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let report: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let (held, missing) = layers(&report["summary"]["sandbox"]);
    assert!(
        missing.iter().any(|(l, _)| l == "user"),
        "credlint runs as nobody: {held:?}"
    );
    let seen = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|f| {
            let m = f["message"].as_str()?;
            Some(m.split_once("SEEN ")?.1.split_once(" END")?.0.to_string())
        })
        .unwrap_or_else(|| panic!("{report} {stderr}"));
    assert!(seen.starts_with("uid 65534;"), "{seen}");
    let pod_root = seen.ends_with(";argv /credentials/create.py;token 1");
    assert_eq!(
        pod_root,
        held.iter().any(|l| l == "pod-filesystem"),
        "{seen}; {report}"
    );
    if !pod_root {
        eprintln!("note: no pod's root without root here: {missing:?}");
    }
}

/// The program finds the environment its pod would have: the container's variables as the
/// kubelet builds them (`fieldRef`s, `resourceFieldRef`s, the bundle's ConfigMap's keys,
/// `envFrom`,
/// `$(VAR)` expanded), `HOSTNAME`, and, in the pod's root, an image's defaults in place of the
/// host's `PATH`, `HOME` and pyenv variables, in the same order both ways (by name, as a
/// started interpreter gets them). A Secret's key the render cannot tell is left out, and
/// credlint says so. Before, the container's variables were missing (a program that
/// read one failed) and the host's leaked in.
#[test]
fn the_program_sees_its_containers_environment_and_not_the_hosts() {
    if !python_or_skip() {
        return;
    }
    let dir = common::temp_dir("sandbox-pod-env");
    let check = "import os as _o, socket as _s, sys as _y\n\
        _e = _o.environ\n\
        _want = {\n\
        \x20   'POD_NAMESPACE': 'shop', 'SA': 'shop-db-credentials', 'POD_IP': '127.0.0.1',\n\
        \x20   'CPU_MILLI': '500', 'MEMORY_MIB': '256', 'MISSING_LABEL': '', 'TEAM': 'payments',\n\
        \x20   'MODE': 'fast', 'CREDENTIALS_mode': 'fast',\n\
        \x20   'DOLLAR_REF': '$(POD_NAMESPACE) $x $(open',\n\
        \x20   'URL': 'https://%s:%s/shop/$(UNDEFINED)' % (_e.get('KUBERNETES_SERVICE_HOST'), _e.get('KUBERNETES_SERVICE_PORT')),\n\
        \x20   'POD_NAME': _s.gethostname(), 'HOSTNAME': _s.gethostname(),\n\
        \x20   'PLAN': open(_y.argv[1]).read(), 'CREDENTIALS_plan.json': open(_y.argv[1]).read(),\n\
        }\n\
        _wrong = ['%s=%r' % (k, _e.get(k)) for k, v in _want.items() if _e.get(k) != v]\n\
        _wrong += [k for k in ('ADMIN', 'PYENV_ROOT', 'PYENV_VERSION') if k in _e]\n\
        if list(_e) != sorted(_e):\n\
        \x20   _wrong.append('the order %r' % list(_e))\n\
        if not _e.get('JOB', '').startswith('shop-db-credentials-') or len(_e.get('POD_UID', '')) != 36:\n\
        \x20   _wrong.append('JOB or POD_UID')\n\
        if _e.get('WANT_PATH') and not _e.get('PYTHONPATH', '').endswith(':' + _e['WANT_PATH']):\n\
        \x20   _wrong.append('PYTHONPATH=%r' % _e.get('PYTHONPATH'))\n\
        if _o.path.exists('/credentials/create.py') and (_e.get('HOME'), _e.get('PATH')) != ('/', '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'):\n\
        \x20   _wrong.append('HOME or PATH of the host: %r %r' % (_e.get('HOME'), _e.get('PATH')))\n\
        if _wrong:\n\
        \x20   raise SystemExit('WRONG ' + ', '.join(_wrong))\n";
    let script = format!(
        "{check}\n{}",
        std::fs::read_to_string(common::root().join("fixtures/runtime/create.py")).unwrap()
    );
    let spec = credlint::testkit::render::Spec::example("shop", "shop-db", "component", &script);
    let command = "          command: [python3, /credentials/create.py, /credentials/plan.json]\n";
    let env = "          env:\n\
        \x20           - {name: POD_NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}\n\
        \x20           - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}\n\
        \x20           - {name: POD_UID, valueFrom: {fieldRef: {fieldPath: metadata.uid}}}\n\
        \x20           - {name: SA, valueFrom: {fieldRef: {fieldPath: spec.serviceAccountName}}}\n\
        \x20           - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}\n\
        \x20           - {name: JOB, valueFrom: {fieldRef: {fieldPath: \"metadata.labels['job-name']\"}}}\n\
        \x20           - {name: TEAM, valueFrom: {fieldRef: {fieldPath: \"metadata.labels['team']\"}}}\n\
        \x20           - {name: MISSING_LABEL, valueFrom: {fieldRef: {fieldPath: \"metadata.labels['none']\"}}}\n\
        \x20           - {name: URL, value: 'https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)/$(POD_NAMESPACE)/$(UNDEFINED)'}\n\
        \x20           - {name: DOLLAR_REF, value: '$$(POD_NAMESPACE) $x $(open'}\n\
        \x20           - {name: CPU_MILLI, valueFrom: {resourceFieldRef: {resource: limits.cpu, divisor: 1m}}}\n\
        \x20           - {name: MEMORY_MIB, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}\n\
        \x20           - {name: PLAN, valueFrom: {configMapKeyRef: {name: shop-db-credentials, key: plan.json}}}\n\
        \x20           - {name: ADMIN, valueFrom: {secretKeyRef: {name: db-admin, key: password}}}\n\
        \x20           - {name: MODE, valueFrom: {configMapKeyRef: {name: shop-db-credentials, key: mode}}}\n\
        \x20         envFrom:\n\
        \x20           - {prefix: CREDENTIALS_, configMapRef: {name: shop-db-credentials}}\n\
        \x20         resources:\n\
        \x20           limits: {cpu: 500m, memory: 256Mi}\n";
    // Without and with a variable that acts as the interpreter starts (`PYTHONPATH`): as
    // root, the first runs forked from a zygote, which sets the variables in each run once
    // confined; the second a fresh interpreter each run, started with them.
    let python_path = "            - {name: PYTHONPATH, value: /opt/lib}\n\
                       \x20           - {name: WANT_PATH, value: /opt/lib}\n";
    for extra in ["", python_path] {
        let env = env.replacen(
            "          envFrom:",
            &format!("{extra}          envFrom:"),
            1,
        );
        let rendered = spec
            .render()
            .replacen(command, &format!("{command}{env}"), 1)
            .replacen(
                "  template:\n    spec:\n",
                "  template:\n    metadata:\n      labels: {team: payments}\n    spec:\n",
                1,
            )
            .replacen(
                "data:\n  plan.json:",
                "data:\n  mode: fast\n  plan.json:",
                1,
            );
        assert!(rendered.contains("envFrom") && rendered.contains("team: payments"));
        assert!(rendered.contains("  mode: fast\n"));
        assert_eq!(rendered.contains("name: WANT_PATH"), !extra.is_empty());
        std::fs::write(dir.join("bundle.yaml"), rendered).unwrap();
        let run = simulate(&dir, &[], None);
        assert_eq!(run.code, Some(0), "{:?}\n{}", run.findings(), run.stderr);
        assert_eq!(run.findings(), Vec::new(), "{}", run.stderr);
        assert!(
            run.stderr
                .contains("the program runs without ADMIN (key password of Secret db-admin)"),
            "{}",
            run.stderr
        );
    }
}

/// A variable taken from a key the bundle's ConfigMap does not hold, not marked optional,
/// keeps the kubelet from starting the container: the bundle is not simulated, and credlint
/// says why.
#[test]
fn a_container_that_could_not_start_is_not_simulated() {
    let dir = common::temp_dir("sandbox-pod-env-missing");
    let spec =
        credlint::testkit::render::Spec::example("shop", "shop-db", "component", "print(1)\n");
    let command = "          command: [python3, /credentials/create.py, /credentials/plan.json]\n";
    let env = "          env:\n\
        \x20           - {name: MODE, valueFrom: {configMapKeyRef: {name: shop-db-credentials, key: mode}}}\n";
    let rendered = spec
        .render()
        .replacen(command, &format!("{command}{env}"), 1);
    assert!(rendered.contains("key: mode"));
    std::fs::write(dir.join("bundle.yaml"), rendered).unwrap();
    let run = simulate_once(&dir, &[], None, &[]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "is not simulated: its Job's container would not start: MODE takes key mode of \
             ConfigMap shop-db-credentials, which does not hold it"
        ),
        "{}",
        run.stderr
    );
}
