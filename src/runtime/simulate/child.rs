//! Runs the program once, bounded: its own process group, each output stream read from a pipe
//! by a thread of its own (the first [`OUTPUT_CAP`] bytes kept, the rest read and dropped, and
//! the reading stopped once the run is over, so that a lingering grandchild holding the pipe
//! cannot keep it open), a deadline, and the whole group killed before the child is reaped on
//! every path, so that no process of it outlives the run.
//!
//! A process group is not enough: a program can leave it (`setsid()`, a double fork). So
//! credlint makes itself the subreaper of everything it starts (`PR_SET_CHILD_SUBREAPER`): a
//! descendant whose parent dies becomes credlint's child, and after every run each such
//! orphan (a child credlint did not start, in a process group other than credlint's own) is
//! killed and reaped, round after round until none is left.

use std::fs::{self, File};
use std::io::{self, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::confine::Confine;
use super::incluster::RunDir;

/// Landlock's part of the confinement, run by the child on itself.
pub type Landlock = Box<dyn FnMut() -> io::Result<()> + Send + Sync>;

/// The programs running now, on every thread: a child of credlint among them is no orphan.
static RUNNING: std::sync::Mutex<Vec<libc::pid_t>> = std::sync::Mutex::new(Vec::new());

fn running() -> std::sync::MutexGuard<'static, Vec<libc::pid_t>> {
    RUNNING.lock().unwrap_or_else(|e| e.into_inner())
}

/// From now on SIGINT, SIGTERM and SIGHUP stop credlint cleanly: every program is killed
/// (with its group and its orphans) and every run folder (token, CA and server keys) removed
/// before it exits with 128 + the signal. Call it before any other thread is started: the
/// signals are blocked in the caller, whose later threads inherit that, and one thread of its
/// own waits for them. A started program gets the default signal mask back (std resets it).
pub fn stop_cleanly_on_signals() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: an all-zero sigset_t is valid storage for sigemptyset to initialise; the
        // calls below only read and write this local set and the calling thread's mask.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: as above: the set is local storage, the mask the calling thread's own.
        unsafe {
            libc::sigemptyset(&mut set);
            for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                libc::sigaddset(&mut set, sig);
            }
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        }
        let started = thread::Builder::new()
            .name("credlint-signals".into())
            .spawn(move || {
                let mut sig: libc::c_int = 0;
                // SAFETY: sigwait reads the set and writes the signal number into `sig`.
                if unsafe { libc::sigwait(&set, &mut sig) } != 0 {
                    return;
                }
                STOPPING.store(true, std::sync::atomic::Ordering::SeqCst);
                // Held to the end: no thread starts a program any more.
                let started = running();
                for pgid in started.iter() {
                    // SAFETY: kill(2) on the group of a program we started and have not reaped
                    // (a reaped one is no longer listed).
                    unsafe {
                        libc::kill(-pgid, libc::SIGKILL);
                    }
                }
                kill_orphans_locked(&started);
                super::incluster::remove_live();
                eprintln!(
                    "credlint: stopped by signal {sig}: the programs were killed and their run \
                     folders removed"
                );
                std::process::exit(128 + sig);
            });
        if started.is_err() {
            // Without the waiting thread the signals must not stay blocked.
            // SAFETY: as above, on the calling thread's mask.
            unsafe {
                libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            }
        }
    });
}

/// Set when a signal is stopping credlint: what fails after it (a run folder removed under a
/// program) is not a result to report.
static STOPPING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether a signal is stopping credlint; the signal's thread ends the process.
pub fn stopping() -> bool {
    STOPPING.load(std::sync::atomic::Ordering::SeqCst)
}

/// Makes this process the subreaper of its descendants, once.
pub(super) fn become_subreaper() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: prctl(2) with PR_SET_CHILD_SUBREAPER takes plain integers. Where the kernel
        // refuses it, orphans go to init as before and killing the group is all there is.
        unsafe {
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        }
    });
}

/// The children of this process that it did not start: descendants of a program, orphaned and
/// handed to the subreaper. Read from /proc: (pid, parent, process group).
fn orphans(started: &[libc::pid_t]) -> Vec<libc::pid_t> {
    // SAFETY: getpid and getpgrp have no preconditions.
    let (me, my_group) = unsafe { (libc::getpid(), libc::getpgrp()) };
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<libc::pid_t>().ok())
        .filter(|pid| !started.contains(pid))
        .filter(|pid| {
            let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // After the command name, in parentheses that may hold anything: state, parent,
            // process group.
            let Some((_, rest)) = stat.rsplit_once(')') else {
                return false;
            };
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let parent = fields.get(1).and_then(|f| f.parse::<libc::pid_t>().ok());
            let group = fields.get(2).and_then(|f| f.parse::<libc::pid_t>().ok());
            parent == Some(me) && group != Some(my_group)
        })
        .collect()
}

/// Kills and reaps every orphan, until none is left (a killed one's children are next). The
/// list of running programs stays locked meanwhile, so no thread starts one half-way through.
fn kill_orphans() {
    kill_orphans_locked(&running());
}

fn kill_orphans_locked(started: &[libc::pid_t]) {
    // Round after round: each kill hands the killed one's children to credlint. Bounded by
    // time, not by a count a chain of sessions could outgrow (one deeper than 64 once escaped).
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until {
        let found = orphans(started);
        if found.is_empty() {
            return;
        }
        for pid in found {
            // SAFETY: kill(2) and waitpid(2) on a child of ours that is not reaped yet, so
            // its pid cannot have been reused.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, std::ptr::null_mut(), 0);
            }
        }
    }
}

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
    /// The start of its stdout and stderr ([`OUTPUT_CAP`] bytes each), for the leak check.
    pub stdout: String,
    pub stderr: String,
    /// How many bytes it wrote to each, kept or dropped.
    pub stdout_len: u64,
    pub stderr_len: u64,
    /// What it wrote to `/dev/termination-log` (filled in by the caller).
    pub termination_message: String,
    /// What it reached beyond its folder and the fake servers, `(kind, detail)` (filled in by
    /// the caller from the audit hook's log).
    pub access: Vec<(String, String)>,
}

/// How much of each output stream is kept (and so read by the leak check); the rest is read
/// and dropped, so the program never blocks on a full pipe, and the run is reported.
pub const OUTPUT_CAP: usize = 1024 * 1024;

/// How much of the end of stderr is kept for the failure message.
const TAIL: usize = 4096;

/// What one output stream held.
#[derive(Default)]
pub(super) struct Captured {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    len: u64,
}

/// Reads a pipe until its end, keeping the first [`OUTPUT_CAP`] and the last [`TAIL`] bytes.
/// Once `stop` is set (every process of the run is killed) it reads only what is buffered, so
/// a writer that somehow survived cannot hold the run open.
fn capture(
    mut pipe: impl Read + std::os::fd::AsRawFd,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> Captured {
    let mut out = Captured::default();
    let mut buf = vec![0u8; 64 * 1024];
    // Reads after the stop: bounded, in case a survivor keeps writing.
    let mut after_stop = 0;
    loop {
        let stopping = stop.load(std::sync::atomic::Ordering::SeqCst);
        if stopping {
            after_stop += 1;
            if after_stop > 64 {
                return out;
            }
        }
        let mut fd = libc::pollfd {
            fd: pipe.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll(2) reads and writes the one pollfd, which lives for the call.
        let ready = unsafe { libc::poll(&mut fd, 1, if stopping { 0 } else { 50 }) };
        if ready < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        }
        if ready <= 0 {
            if stopping || ready < 0 {
                return out;
            }
            continue;
        }
        match pipe.read(&mut buf) {
            Ok(0) => return out,
            Ok(n) => {
                let bytes = &buf[..n];
                out.len += n as u64;
                let room = OUTPUT_CAP.saturating_sub(out.head.len());
                out.head.extend_from_slice(&bytes[..room.min(n)]);
                out.tail.extend(&bytes[n.saturating_sub(TAIL)..]);
                let extra = out.tail.len().saturating_sub(TAIL);
                out.tail.drain(..extra);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return out,
        }
    }
}

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
pub(super) struct Guard {
    child: Child,
    reaped: bool,
}

impl Guard {
    pub(super) fn start(command: &mut Command) -> Result<Guard, RunError> {
        // Registered before another thread can look for orphans.
        let mut started = running();
        let child = command.spawn().map_err(RunError::Spawn)?;
        started.push(libc::pid_t::try_from(child.id()).unwrap_or(0));
        Ok(Guard {
            child,
            reaped: false,
        })
    }

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

    pub(super) fn finish(&mut self) -> io::Result<std::process::ExitStatus> {
        self.kill_group();
        let status = self.child.wait();
        self.reaped = true;
        self.unregister();
        kill_orphans();
        status
    }

    fn unregister(&self) {
        let pid = self.pgid();
        running().retain(|&p| p != pid);
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if !self.reaped {
            self.kill_group();
            let _ = self.child.wait();
            self.unregister();
            kill_orphans();
        }
    }
}

/// Starts [`capture`] on a thread of its own.
pub(super) fn start_capture<P: Read + std::os::fd::AsRawFd + Send + 'static>(
    pipe: Option<P>,
    name: &str,
    stop: &std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> Result<thread::JoinHandle<Captured>, RunError> {
    let stop = std::sync::Arc::clone(stop);
    let pipe = pipe.ok_or_else(|| RunError::Files(io::Error::other("no pipe to the program")))?;
    thread::Builder::new()
        .name(format!("credlint-{name}"))
        .spawn(move || capture(pipe, stop))
        .map_err(RunError::Files)
}

/// None: a timeout too large to add to the clock, i.e. no deadline.
pub(super) fn deadline_after(timeout: Duration) -> Option<Instant> {
    Instant::now().checked_add(timeout)
}

/// Why a run could not happen.
pub enum RunError {
    /// The interpreter could not be started.
    Spawn(io::Error),
    /// The output files could not be made.
    Files(io::Error),
}

/// The interpreter, as it said when asked: the executable a bare name such as `python3`
/// stands for (a version manager's shim, pyenv's a shell script, costs more to start than the
/// program itself; a path is used as given), and the folders and files it reads its own code
/// from (its `sys.path` and prefixes), which the sandbox lets it read.
pub struct Interpreter {
    pub executable: PathBuf,
    pub paths: Vec<PathBuf>,
}

/// What the interpreter prints about itself.
const SELF_REPORT: &str = "import json, os, sys\n\
    paths = list(sys.path) + [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]\n\
    if sys.executable:\n    paths += [sys.executable, os.path.dirname(os.path.realpath(sys.executable))]\n\
    sys.stdout.write(json.dumps({'executable': sys.executable or '', 'paths': \
    [os.path.realpath(p) for p in paths if isinstance(p, str) and p.startswith('/') and p != '/']}))";

/// An interpreter's answer to [`SELF_REPORT`], kept for the simulation's other bundles.
struct Report {
    key: Asked,
    /// The executable it named and its search folders; empty where it could not say.
    executable: String,
    paths: Vec<PathBuf>,
    /// Why the pod's user could not start it, where it could not.
    refused: Option<String>,
}

/// What decides an interpreter's answer: the interpreter, the user it runs as, and its
/// environment without what names one bundle (the API server's address, the run folder).
#[derive(PartialEq)]
struct Asked {
    python: PathBuf,
    user: Option<(u32, u32)>,
    env: Vec<(String, String)>,
}

static REPORTS: std::sync::Mutex<Vec<Report>> = std::sync::Mutex::new(Vec::new());

/// Asks the interpreter once per simulation what it is (see [`Interpreter`]), when the answer
/// is needed: a bare name to resolve, or `paths` for the sandbox. One that cannot say is used
/// as given. The path given is among the paths (a wrapper script is read and executed). The
/// answer is shared by the bundles that ask with the same interpreter, user and environment
/// (each asking cost an interpreter's start); entries in the run folder are left out of it.
pub fn resolve_python(
    python: &Path,
    dir: &RunDir,
    env: &[(String, String)],
    timeout: Duration,
    paths: bool,
    confine: &mut Confine,
) -> Result<Interpreter, RunError> {
    let bare = python.components().count() == 1;
    let mut given: Vec<PathBuf> = Vec::new();
    if !bare {
        given.push(python.to_path_buf());
        given.extend(python.canonicalize().ok());
    }
    if !bare && !paths && !confine.can_switch_user() {
        return Ok(Interpreter {
            executable: python.to_path_buf(),
            paths: given,
        });
    }
    let folder = dir.path().to_string_lossy().into_owned();
    let key = Asked {
        python: python.to_path_buf(),
        user: confine.can_switch_user().then(|| confine.pod_user()),
        env: env
            .iter()
            .filter(|(k, _)| !k.starts_with("KUBERNETES_"))
            .map(|(k, v)| (k.clone(), v.replace(&folder, "\0")))
            .collect(),
    };
    let known = REPORTS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|r| r.key == key)
        .map(|r| (r.executable.clone(), r.paths.clone(), r.refused.clone()));
    let (found, said_paths) = match known {
        Some((executable, paths, refused)) => {
            // What asking did to the run folder and the confinement, done again.
            if confine.can_switch_user() {
                with_user(dir, confine)?;
                if let Some(why) = refused {
                    without_user(dir, confine, why)?;
                }
            }
            (executable, paths)
        }
        None => {
            let (succeeded, said, refused) = ask_python(python, dir, env, timeout, confine)?;
            let said: serde_json::Value = if succeeded {
                serde_json::from_str(&said).unwrap_or_default()
            } else {
                serde_json::Value::Null
            };
            let executable = said["executable"].as_str().unwrap_or_default().to_string();
            // The run folder (the working folder, the hook's) is the asking bundle's own.
            let real = dir
                .path()
                .canonicalize()
                .unwrap_or_else(|_| dir.path().into());
            let paths: Vec<PathBuf> = said["paths"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p.as_str())
                .map(PathBuf::from)
                .filter(|p| !p.starts_with(dir.path()) && !p.starts_with(&real))
                .collect();
            REPORTS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(Report {
                    key,
                    executable: executable.clone(),
                    paths: paths.clone(),
                    refused,
                });
            (executable, paths)
        }
    };
    let found = PathBuf::from(found);
    let executable = if bare && found.is_absolute() && found.is_file() {
        found
    } else {
        python.to_path_buf()
    };
    let mut paths = given;
    paths.extend(said_paths);
    Ok(Interpreter { executable, paths })
}

/// Runs [`SELF_REPORT`], as the pod's user where credlint is root and that user can start the
/// interpreter: whether it succeeded, what it printed, and why the pod's user could not.
fn ask_python(
    python: &Path,
    dir: &RunDir,
    env: &[(String, String)],
    timeout: Duration,
    confine: &mut Confine,
) -> Result<(bool, String, Option<String>), RunError> {
    let out_path = dir.join("executable");
    let ask = |confine: &Confine| -> Result<(bool, String), RunError> {
        let out = File::create(&out_path).map_err(RunError::Files)?;
        let mut command = Command::new(python);
        command
            .args(["-c", SELF_REPORT])
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            // Where the program runs: `-c` puts the current folder on the module path.
            .current_dir(dir.join("work"))
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(Stdio::null());
        let succeeded =
            run_bounded(&mut command, confine, None, timeout)?.is_some_and(|s| s.success());
        // A path and the interpreter's search folders: a few KiB. An interpreter given by
        // `--python` that prints far more is cut off (the JSON then fails to parse: not
        // trusted).
        let said = head(&out_path, 64 * 1024);
        let _ = fs::remove_file(&out_path);
        Ok((succeeded, said))
    };
    if !confine.can_switch_user() {
        let (succeeded, said) = ask(confine)?;
        return Ok((succeeded, said, None));
    }
    with_user(dir, confine)?;
    if let Ok((true, said)) = ask(confine) {
        return Ok((true, said, None));
    }
    // The pod's user cannot start it: a folder on the way is closed to that user.
    let why = format!(
        "{} cannot start as uid {}: a folder on its path is closed to that user",
        python.display(),
        confine.pod_user().0
    );
    without_user(dir, confine, why.clone())?;
    let (succeeded, said) = ask(confine)?;
    Ok((succeeded, said, Some(why)))
}

/// The program runs as the pod's user: the run folder is handed to it.
fn with_user(dir: &RunDir, confine: &mut Confine) -> Result<(), RunError> {
    let (uid, gid) = confine.pod_user();
    dir.hand_to(uid, gid).map_err(RunError::Files)?;
    confine.with_user();
    Ok(())
}

/// The program runs as credlint's user, for `why`: the run folder is handed back to it.
fn without_user(dir: &RunDir, confine: &mut Confine, why: String) -> Result<(), RunError> {
    confine.without_user(why);
    let me = rustix::process::geteuid().as_raw();
    dir.hand_to(me, me).map_err(RunError::Files)
}

/// `python create.py plan.json`, the pod's command line where the program runs in the pod's
/// root (`/credentials/...`), else on the run folder's files, with `env` alone and no input.
pub(super) fn program_command(
    python: &Path,
    dir: &RunDir,
    env: &[(String, String)],
    confine: &Confine,
) -> Command {
    let files = if confine.in_pod_fs() {
        PathBuf::from(super::podfs::CREDENTIALS_PATH)
    } else {
        dir.join(super::podfs::CREDENTIALS)
    };
    let mut command = Command::new(python);
    command
        .arg(files.join("create.py"))
        .arg(files.join("plan.json"))
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(dir.join("work"))
        .stdin(Stdio::null());
    command
}

/// Starts the program's command line once, confined as every run will be (Landlock from
/// `sandbox` included, no fallback), on the program already written to the run folder: `Err`
/// says why it could not run to a clean exit. Simulate tries the pod's root this way before the
/// first scenario.
pub fn trial(
    python: &Path,
    dir: &RunDir,
    env: &[(String, String)],
    timeout: Duration,
    confine: &Confine,
    sandbox: Option<&super::sandbox::Sandbox>,
) -> Result<(), String> {
    let err_path = dir.join("trial-stderr");
    let err = File::create(&err_path).map_err(|e| e.to_string())?;
    let mut command = program_command(python, dir, env, confine);
    command.stdout(Stdio::null()).stderr(err);
    let landlock: Option<Landlock> = sandbox.map(|s| Box::new(s.enforce_in_child()) as Landlock);
    let status = run_bounded(&mut command, confine, landlock, timeout);
    let said = head(&err_path, 4096);
    let _ = fs::remove_file(&err_path);
    match status {
        Ok(Some(s)) if s.success() => Ok(()),
        Ok(Some(s)) => Err(format!(
            "the interpreter ended with {s} in it: {}",
            said.trim()
        )),
        Ok(None) => Err("it did not end within the timeout".into()),
        Err(RunError::Spawn(e) | RunError::Files(e)) => Err(e.to_string()),
    }
}

/// Starts `command` confined (`landlock` enforced where given) and waits for it at most
/// `timeout`: its exit status, or None where it was still running and was killed.
fn run_bounded(
    command: &mut Command,
    confine: &Confine,
    landlock: Option<Landlock>,
    timeout: Duration,
) -> Result<Option<std::process::ExitStatus>, RunError> {
    // SAFETY: the hook makes only system calls (no allocation, no lock), as a child between
    // fork and exec must.
    unsafe {
        command.pre_exec(confine.in_child(landlock));
    }
    become_subreaper();
    let mut guard = Guard::start(command)?;
    let deadline = deadline_after(timeout);
    while !guard.exited() && deadline.is_none_or(|d| Instant::now() < d) {
        thread::sleep(Duration::from_millis(3));
    }
    let exited = guard.exited();
    let status = guard.finish().map_err(RunError::Spawn)?;
    Ok(exited.then_some(status))
}

/// Runs `python create.py plan.json` (at `/credentials` in the pod's root, else in the run
/// folder). Err only when it cannot start.
///
/// With a `sandbox` the program enforces it on itself before `exec`. Where that fails (the
/// kernel refuses to confine it) the run starts again without, the sandbox is dropped for the
/// rest of the simulation and credlint says so once.
pub fn run(
    python: &Path,
    dir: &RunDir,
    env: &[(String, String)],
    timeout: Duration,
    confine: &Confine,
    sandbox: &mut Option<super::sandbox::Sandbox>,
) -> Result<Outcome, RunError> {
    let start = |landlock: Option<Landlock>| {
        let mut command = program_command(python, dir, env, confine);
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
        // SAFETY: the hook makes only system calls (no allocation, no lock), as a child
        // between fork and exec must.
        unsafe {
            command.pre_exec(confine.in_child(landlock));
        }
        Guard::start(&mut command)
    };
    become_subreaper();
    let mut guard = match sandbox {
        Some(landlock) => {
            match start(Some(Box::new(landlock.enforce_in_child()))) {
                Ok(guard) => guard,
                Err(RunError::Spawn(e)) => {
                    // Either the kernel refused Landlock for the child, or the interpreter
                    // cannot start at all: a start without Landlock tells which.
                    let guard = start(None)?;
                    super::sandbox::note_unconfined(&format!(
                        "the program could not start confined: {e}"
                    ));
                    *sandbox = None;
                    guard
                }
                Err(e) => return Err(e),
            }
        }
        None => start(None)?,
    };
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stdout_reader = start_capture(guard.child.stdout.take(), "stdout", &stop)?;
    let stderr_reader = start_capture(guard.child.stderr.take(), "stderr", &stop)?;
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
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    Ok(outcome(
        exit,
        stdout_reader.join().unwrap_or_default(),
        stderr_reader.join().unwrap_or_default(),
    ))
}

/// A run's outcome from how it ended and what its two streams held.
pub(super) fn outcome(exit: Exit, stdout: Captured, stderr: Captured) -> Outcome {
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    Outcome {
        exit,
        stderr_tail: text(&stderr.tail.iter().copied().collect::<Vec<u8>>()),
        stdout: text(&stdout.head),
        stderr: text(&stderr.head),
        stdout_len: stdout.len,
        stderr_len: stderr.len,
        termination_message: String::new(),
        access: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A program whose grandchild leaves its session (`setsid`) and would sleep for a minute.
    const ESCAPES: &str = r#"import os, sys, time
pidfile = os.environ["CREDLINT_TEST_PIDFILE"]
child = os.fork()
if child == 0:
    os.setsid()
    if os.fork() == 0:
        # Its pid as credlint sees it (/proc is the host's): inside a PID namespace,
        # getpid() answers the namespace's own number.
        with open(pidfile + ".tmp", "w") as f:
            f.write(os.readlink("/proc/self"))
        os.rename(pidfile + ".tmp", pidfile)
        time.sleep(60)
    os._exit(0)
os.waitpid(child, 0)
while not os.path.exists(pidfile):
    time.sleep(0.01)
"#;

    #[test]
    fn a_program_that_leaves_its_session_does_not_outlive_the_run() {
        let dir = RunDir::create().unwrap();
        super::super::incluster::write_program(&dir, ESCAPES, "{}").unwrap();
        // Removed when the test ends, whether it passes, fails or skips.
        let scratch_dir = crate::testkit::TempDir::new("credlint-escape");
        let scratch = scratch_dir.join("pid");
        let env = vec![
            (
                "PATH".to_string(),
                std::env::var("PATH").unwrap_or_default(),
            ),
            (
                "CREDLINT_TEST_PIDFILE".to_string(),
                scratch.to_string_lossy().into_owned(),
            ),
        ];
        let Ok(outcome) = run(
            Path::new("python3"),
            &dir,
            &env,
            Duration::from_secs(20),
            &Confine::new(Duration::from_secs(20)),
            &mut None,
        ) else {
            eprintln!("SKIPPED python3 is not installed");
            return;
        };
        assert_eq!(outcome.exit, Exit::Code(0), "{}", outcome.stderr_tail);
        let pid: i32 = fs::read_to_string(&scratch)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "the escaped grandchild {pid} is still there"
        );
    }
}
