//! One interpreter per bundle, which forks each run (issue 32 point 3).
//!
//! Most of a run's CPU is the interpreter's start and the standard library the program
//! imports (docs/performance.md), the same for every run of a bundle. So where credlint is
//! root and the program runs as the pod's user in the pod's root, a bundle's runs start from
//! one *zygote*: the pod's command line (`python3 /credentials/create.py
//! /credentials/plan.json`), started in the bundle's namespaces and pod's root
//! ([`Confine::in_zygote`]) with a startup hook that loads the modules the program names (from
//! an allowlist: nothing of the change under review runs there) and then waits inside its own
//! import, as root of those namespaces. For each run credlint sends it the run's output pipes
//! (the run's folder, with its termination log and access log, is bound in the zygote's root);
//! it forks the run's first process as process 1 of a new PID namespace (no waiter: the
//! zygote itself waits for it), which makes its own mount, IPC and UTS namespaces, mounts its
//! own `/proc`, `/dev/shm` and the run's two logs, then confines itself as
//! [`Confine::in_child`] confines a program (limits, the pod's user and user namespace, no
//! capabilities, `no_new_privs`, Landlock, seccomp, descriptors closed), says so, and returns
//! from the hook's import; the hook's last lines run create.py, compiled once in the zygote,
//! as the interpreter runs a script (same `argv`, `__main__`, `sys.path`, exit status,
//! tracebacks, threads, atexit, finalizers) and end the process without the interpreter's
//! teardown (docs/simulate.md). So
//! every run still has its own namespaces, process 1, `/dev/shm` and logs, and nothing it does
//! reaches the zygote or the next run.
//!
//! Any failure before the program runs (the zygote cannot start, a run's process cannot
//! confine itself) falls back to a fresh interpreter per run, the path of `child.rs`, for the
//! rest of the bundle; so does a run that timed out (its zygote is killed with it).
//! `CREDLINT_ZYGOTE=0` keeps the fresh interpreter per run.

use std::io::{self, IoSlice, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::child::{self, Exit, Guard, Outcome};
use super::confine::Confine;
use super::incluster::RunDir;

/// The environment variable that turns the zygote off (`CREDLINT_ZYGOTE=0`) or makes its
/// failure an error (`=require`).
pub const MODE_VAR: &str = "CREDLINT_ZYGOTE";

/// The standard-library modules a zygote loads ahead when the program names them: modules
/// without effects beyond their own definitions, since they load as root of the bundle's
/// namespaces, before any confinement a run adds.
const PRELOADABLE: &[&str] = &[
    "argparse",
    "base64",
    "binascii",
    "collections",
    "contextlib",
    "copy",
    "dataclasses",
    "datetime",
    "email",
    "email.utils",
    "enum",
    "errno",
    "functools",
    "hashlib",
    "hmac",
    "http",
    "http.client",
    "ipaddress",
    "itertools",
    "json",
    "math",
    "pathlib",
    "random",
    "re",
    "secrets",
    "shlex",
    "socket",
    "ssl",
    "string",
    "struct",
    "textwrap",
    "typing",
    "urllib",
    "urllib.error",
    "urllib.parse",
    "urllib.request",
    "uuid",
];

/// The modules of [`PRELOADABLE`] that `script` imports (`import a.b, c` and `from a import b`
/// lines; a name elsewhere is simply loaded by the program itself).
pub fn preload(script: &str) -> Vec<String> {
    let mut out = std::collections::BTreeSet::new();
    for line in script.lines() {
        let line = line.trim_start();
        let names: Vec<&str> = if let Some(rest) = line.strip_prefix("import ") {
            rest.split(',')
                .filter_map(|n| n.split_whitespace().next())
                .collect()
        } else if let Some(rest) = line.strip_prefix("from ") {
            rest.split_whitespace().next().into_iter().collect()
        } else {
            continue;
        };
        out.extend(
            names
                .into_iter()
                .filter(|n| PRELOADABLE.contains(n))
                .map(String::from),
        );
    }
    out.into_iter().collect()
}

/// Whether `CREDLINT_ZYGOTE=0` turned the zygote off.
pub fn disabled() -> bool {
    std::env::var_os(MODE_VAR).is_some_and(|v| v == "0")
}

/// Whether `CREDLINT_ZYGOTE=require` makes a zygote that fails an error (for the tests that
/// hold the zygote's runs to a fresh interpreter's).
pub fn required() -> bool {
    std::env::var_os(MODE_VAR).is_some_and(|v| v == "require")
}

/// A bundle's zygote, running and waiting for runs.
pub struct Zygote {
    /// Killed with its whole PID namespace (every run's process is inside it) when dropped.
    guard: Guard,
    control: UnixStream,
}

/// How long a run's process may take to confine itself, and the zygote to start.
const START: Duration = Duration::from_secs(20);

impl Zygote {
    /// Starts the zygote on the pod's root of `confine` (built from `home`, the zygote's own
    /// folder, which holds the zygote's hook), hands it `config` and waits until its modules
    /// are loaded. `Err` says why it could not.
    pub fn start(
        python: &Path,
        home: &RunDir,
        env: &[(String, String)],
        confine: &Confine,
        config: &serde_json::Value,
    ) -> Result<Zygote, String> {
        let (ours, theirs) = UnixStream::pair().map_err(|e| e.to_string())?;
        // The pod's command line: `confine` runs it in the pod's root.
        let mut command = child::program_command(python, home, env, confine);
        command
            .stdin(Stdio::from(OwnedFd::from(theirs)))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: the hook makes only system calls (no allocation, no lock), as a child
        // between fork and exec must.
        unsafe {
            command.pre_exec(confine.in_zygote());
        }
        child::become_subreaper();
        let guard = Guard::start(&mut command).map_err(|e| match e {
            child::RunError::Spawn(e) | child::RunError::Files(e) => e.to_string(),
        })?;
        let mut zygote = Zygote {
            guard,
            control: ours,
        };
        let mut line = config.to_string();
        line.push('\n');
        zygote
            .control
            .write_all(line.as_bytes())
            .map_err(|e| format!("cannot configure it: {e}"))?;
        match zygote.line(Instant::now() + START)?.as_str() {
            "up" => Ok(zygote),
            other => Err(format!("it said {other:?}")),
        }
    }

    /// The zygote's next line, read until `deadline`.
    fn line(&mut self, deadline: Instant) -> Result<String, String> {
        let mut out = Vec::new();
        loop {
            let left = deadline
                .checked_duration_since(Instant::now())
                .filter(|d| !d.is_zero())
                .ok_or("no answer in time")?;
            self.control
                .set_read_timeout(Some(left))
                .map_err(|e| e.to_string())?;
            let mut byte = [0u8; 1];
            match self.control.read(&mut byte) {
                Ok(0) => return Err("the zygote ended".into()),
                Ok(_) if byte[0] == b'\n' => return Ok(String::from_utf8_lossy(&out).into_owned()),
                Ok(_) => {
                    if out.len() < 4096 {
                        out.push(byte[0]);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return Err("no answer in time".into());
                }
                Err(e) => return Err(e.to_string()),
            }
        }
    }

    /// Hands the run its two output pipes.
    fn send(&self, fds: [std::os::fd::BorrowedFd<'_>; 2]) -> io::Result<()> {
        use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags, sendmsg};
        let mut space = [std::mem::MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(2))];
        let mut ancillary = SendAncillaryBuffer::new(&mut space);
        if !ancillary.push(SendAncillaryMessage::ScmRights(&fds)) {
            return Err(io::Error::other("no room for the descriptors"));
        }
        sendmsg(
            &self.control,
            &[IoSlice::new(b"r")],
            &mut ancillary,
            SendFlags::NOSIGNAL,
        )?;
        Ok(())
    }

    /// Runs the program once, its termination log and access log those of the run folder the
    /// zygote's root shows at [`super::podfs::STAGING_PATH`] (made for the run by the caller).
    /// `Ok((outcome, alive))`: the program ran (`alive` false: the zygote is gone, killed at
    /// the timeout or ended). `Err`: the program did not run (the run could not be confined,
    /// or the zygote failed before), and the zygote is not to be used again.
    pub fn run(&mut self, timeout: Duration) -> Result<(Outcome, bool), String> {
        let text = |e: io::Error| e.to_string();
        let (out_read, out_write) = io::pipe().map_err(text)?;
        let (err_read, err_write) = io::pipe().map_err(text)?;
        self.send([out_write.as_fd(), err_write.as_fd()])
            .map_err(text)?;
        drop((out_write, err_write));
        let stop = Arc::new(AtomicBool::new(false));
        let captured = child::start_capture(Some(out_read), "stdout", &stop).and_then(|out| {
            child::start_capture(Some(err_read), "stderr", &stop).map(|err| (out, err))
        });
        let Ok((out, err)) = captured else {
            stop.store(true, Ordering::SeqCst);
            return Err("cannot read the run's output".into());
        };
        let finish = |stop: &AtomicBool| {
            stop.store(true, Ordering::SeqCst);
            (
                out.join().unwrap_or_default(),
                err.join().unwrap_or_default(),
            )
        };
        let ready = self.line(Instant::now() + START);
        if ready.as_deref() != Ok("ready") {
            // Not confined: the program did not run. After a run's own word of its failure,
            // the zygote's line about the run's end.
            if ready.as_deref().is_ok_and(|s| s.starts_with("fail")) {
                let _ = self.line(Instant::now() + START);
            }
            finish(&stop);
            return Err(match ready {
                Ok(said) => said,
                Err(why) => why,
            });
        }
        let deadline = child::deadline_after(timeout)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(365 * 24 * 3600));
        let (exit, alive) = match self.line(deadline) {
            Ok(said) => match said
                .strip_prefix("exit ")
                .and_then(|s| s.parse::<i32>().ok())
            {
                Some(status) if libc::WIFEXITED(status) => {
                    (Exit::Code(libc::WEXITSTATUS(status)), true)
                }
                Some(status) if libc::WIFSIGNALED(status) => {
                    (Exit::Signal(libc::WTERMSIG(status)), true)
                }
                _ => (Exit::Signal(0), false),
            },
            Err(why) => {
                // The timeout (or a zygote gone): the zygote's PID namespace goes, and with it
                // the run's.
                let _ = self.guard.finish();
                let exit = if why == "no answer in time" {
                    Exit::TimedOut
                } else {
                    Exit::Signal(libc::SIGKILL)
                };
                (exit, false)
            }
        };
        let (stdout, stderr) = finish(&stop);
        Ok((child::outcome(exit, stdout, stderr), alive))
    }
}
