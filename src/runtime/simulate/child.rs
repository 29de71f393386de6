//! Runs the program once, bounded: its own process group, output to files in the run folder
//! (no pipe that a lingering grandchild could hold open), a deadline, and the whole group
//! killed before the child is reaped on every path, so that no process of it outlives the run.

use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::incluster::RunDir;

/// How one run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
    TimedOut,
}

pub struct Outcome {
    pub exit: Exit,
    /// The end of what the program wrote to stderr (not yet scrubbed of values).
    pub stderr_tail: String,
    /// The start of its stdout and stderr ([`SCANNED_OUTPUT`] bytes each), for the leak check.
    pub stdout: String,
    pub stderr: String,
    /// What it wrote to `/dev/termination-log` (filled in by the caller).
    pub termination_message: String,
}

/// How much of each output stream the leak check reads.
pub const SCANNED_OUTPUT: u64 = 4 * 1024 * 1024;

/// The first `max` bytes of a file, as text.
pub fn head(path: &Path, max: u64) -> String {
    let Ok(file) = File::open(path) else {
        return String::new();
    };
    let mut bytes = Vec::new();
    let _ = file.take(max).read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Kills the child's process group and reaps the child when dropped, whatever happened.
struct Guard {
    child: Child,
    reaped: bool,
}

impl Guard {
    fn pgid(&self) -> libc::pid_t {
        libc::pid_t::try_from(self.child.id()).unwrap_or(0)
    }

    fn kill_group(&self) {
        let pgid = self.pgid();
        if pgid > 0 {
            // SAFETY: kill(2) takes plain integers and touches no memory of ours. The group id is
            // the child's pid, which cannot be reused while the child is unreaped (we reap it
            // only after this call), so the signal reaches the program's group and nothing else.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
    }

    /// Whether the child has exited, without reaping it (so its pid stays reserved).
    fn exited(&self) -> bool {
        let mut info: libc::siginfo_t = unsafe {
            // SAFETY: siginfo_t is a plain C struct for which all-zero bytes are a valid value.
            std::mem::zeroed()
        };
        // SAFETY: waitid(2) writes only into `info`, which lives for the whole call.
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                self.child.id(),
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        // SAFETY: after a successful waitid the kernel has filled in si_pid (0: still running).
        rc != 0 || unsafe { info.si_pid() } != 0
    }

    fn finish(&mut self) -> io::Result<std::process::ExitStatus> {
        self.kill_group();
        let status = self.child.wait();
        self.reaped = true;
        status
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if !self.reaped {
            self.kill_group();
            let _ = self.child.wait();
        }
    }
}

/// The last `max` bytes of a file, as text.
fn tail(path: &Path, max: u64) -> String {
    let Ok(mut file) = File::open(path) else {
        return String::new();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(max)));
    let mut bytes = Vec::new();
    let _ = file.take(max).read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes).into_owned()
}

/// None: a timeout too large to add to the clock, i.e. no deadline.
fn deadline_after(timeout: Duration) -> Option<Instant> {
    Instant::now().checked_add(timeout)
}

/// Why a run could not happen.
pub enum RunError {
    /// The interpreter could not be started.
    Spawn(io::Error),
    /// The output files could not be made.
    Files(io::Error),
}

/// The interpreter a bare name such as `python3` stands for, asked once per simulation: a
/// version manager's shim (pyenv's is a shell script) costs more to start than the program
/// itself. A path is used as given.
pub fn resolve_python(
    python: &Path,
    dir: &RunDir,
    env: &[(String, String)],
    timeout: Duration,
) -> Result<PathBuf, RunError> {
    if python.components().count() != 1 {
        return Ok(python.to_path_buf());
    }
    let out_path = dir.join("executable");
    let out = File::create(&out_path).map_err(RunError::Files)?;
    let mut command = Command::new(python);
    command
        .args(["-c", "import sys; sys.stdout.write(sys.executable or '')"])
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(Stdio::null())
        .process_group(0);
    let mut guard = Guard {
        child: command.spawn().map_err(RunError::Spawn)?,
        reaped: false,
    };
    let deadline = deadline_after(timeout);
    while !guard.exited() && deadline.is_none_or(|d| Instant::now() < d) {
        thread::sleep(Duration::from_millis(3));
    }
    let succeeded = guard.exited() && guard.finish().is_ok_and(|s| s.success());
    drop(guard);
    let found = fs::read_to_string(&out_path).unwrap_or_default();
    let _ = fs::remove_file(&out_path);
    let found = PathBuf::from(found.trim());
    Ok(if succeeded && found.is_absolute() && found.is_file() {
        found
    } else {
        python.to_path_buf()
    })
}

/// Runs `python create.py plan.json` in the run folder. Err only when it cannot start.
pub fn run(
    python: &Path,
    dir: &RunDir,
    env: &[(String, String)],
    timeout: Duration,
) -> Result<Outcome, RunError> {
    let stderr_path = dir.join("stderr");
    let stdout = File::create(dir.join("stdout")).map_err(RunError::Files)?;
    let stderr = File::create(&stderr_path).map_err(RunError::Files)?;
    let mut command = Command::new(python);
    command
        .arg(dir.join("create.py"))
        .arg(dir.join("plan.json"))
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(dir.join("work"))
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .process_group(0);
    let mut guard = Guard {
        child: command.spawn().map_err(RunError::Spawn)?,
        reaped: false,
    };
    let deadline = deadline_after(timeout);
    let exit = loop {
        if guard.exited() {
            let status = guard.finish().map_err(RunError::Spawn)?;
            break match (status.code(), status.signal()) {
                (Some(code), _) => Exit::Code(code),
                (None, Some(sig)) => Exit::Signal(sig),
                (None, None) => Exit::Signal(0),
            };
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            guard.finish().map_err(RunError::Spawn)?;
            break Exit::TimedOut;
        }
        thread::sleep(Duration::from_millis(3));
    };
    drop(guard);
    let stderr_tail = tail(&stderr_path, 4096);
    let stdout = head(&dir.join("stdout"), SCANNED_OUTPUT);
    let stderr = head(&stderr_path, SCANNED_OUTPUT);
    let _ = fs::remove_file(dir.join("stdout"));
    let _ = fs::remove_file(&stderr_path);
    Ok(Outcome {
        exit,
        stderr_tail,
        stdout,
        stderr,
        termination_message: String::new(),
    })
}
