//! The pod's confinement of the program, beyond Landlock (`sandbox`): what the child does to
//! itself between `fork` and `exec`, so the interpreter and everything it starts inherit it.
//!
//! In order: a session of its own (no controlling terminal, and no way back into credlint's
//! process group); every descriptor above 2 marked close-on-exec (credlint may have inherited
//! open files from whoever started it); resource limits; namespaces of its own (mount, PID,
//! IPC, UTS, and a user namespace; the PID namespace makes the program process 1, with a
//! waiter outside standing for it, so that its end kills every descendant); the pod's root
//! filesystem (`podfs`), built as the PID namespace's first process; every
//! capability dropped and, where credlint runs as root and the interpreter is reachable for
//! it, the pod's user (the Job's `runAsUser`/`runAsGroup`, 65532 where unset);
//! `no_new_privs`; then (after Landlock) a seccomp filter that refuses raw and packet sockets,
//! Unix-socket creation (a `socketpair` stays possible), UDP, ptrace and reading other
//! processes' memory, keyrings, mounts, new namespaces, module loading, BPF, io_uring and the
//! like with `EPERM`. Each layer that could not be set up is named in [`Layers`], so a report
//! never claims more than held.

use std::io;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};

/// The pod's user and group where the Job does not say (`runAsUser`/`runAsGroup`), as in the
/// images built to run as a user of their own.
pub const POD_UID: u32 = 65532;

/// The resource limits a program runs under, each `(resource, soft and hard limit)`.
/// Memory is bounded by the data segment (what `malloc` and `mmap` of private memory count),
/// not the address space, which threads reserve generously without using it; the address
/// space has a wide ceiling. Processes count per user, so they bind only when the program runs
/// as the pod's user (the kernel does not count root's).
fn limits(cpu_seconds: u64, pod_user: bool) -> [(libc::__rlimit_resource_t, u64); 8] {
    const MIB: u64 = 1024 * 1024;
    [
        (libc::RLIMIT_DATA, 512 * MIB),
        (libc::RLIMIT_AS, 4096 * MIB),
        (
            libc::RLIMIT_NPROC,
            if pod_user { 128 } else { libc::RLIM_INFINITY },
        ),
        (libc::RLIMIT_FSIZE, 64 * MIB),
        (libc::RLIMIT_CPU, cpu_seconds),
        (libc::RLIMIT_NOFILE, 256),
        (libc::RLIMIT_CORE, 0),
        (libc::RLIMIT_MEMLOCK, 0),
    ]
}

/// Why processes are not limited where the program keeps credlint's user: the kernel counts a
/// user's processes across the machine (root's not at all), so a limit would bind credlint's
/// other processes, not the program's.
const NO_PROCESS_LIMIT: &str =
    "the program runs as credlint's user, whose processes the kernel counts together";

/// Every layer of the pod's confinement a report names, in the order it names them: the
/// namespaces, who the program runs as and what it may ask the kernel for, its bounds, and the
/// two layers that watch what it reaches (Landlock refuses, the audit hook reports).
pub const LAYER_NAMES: [&str; 17] = [
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

/// Why the program gets no network namespace of its own without root: credlint makes it and
/// binds the fake servers' ports in it, which takes `CAP_SYS_ADMIN` (a user namespace cannot
/// be made by one thread of a process that has several).
const NO_NETWORK_NAMESPACE: &str = "credlint does not run as root: the namespace where the fake \
     servers listen needs root to make";

/// Why the program gets no root of its own without root: credlint builds it with mounts in the
/// program's mount namespace before the program becomes the pod's user.
const NO_POD_FILESYSTEM: &str = "credlint does not run as root and the program has no user \
     namespace: it runs in the host's root, its in-cluster paths redirected by the startup hook";

/// The namespaces made besides the user namespace: `(layer, clone flag)`.
const NAMESPACES: [(&str, libc::c_int); 4] = [
    ("mount-namespace", libc::CLONE_NEWNS),
    ("pid-namespace", libc::CLONE_NEWPID),
    ("ipc-namespace", libc::CLONE_NEWIPC),
    ("uts-namespace", libc::CLONE_NEWUTS),
];

/// Which namespaces this process can give a program, asked once per process by trying each
/// in a forked child ([`probe`]): the kernel and the container decide (Docker's default seccomp
/// profile refuses them, Ubuntu's AppArmor refuses unprivileged user namespaces).
struct Probed {
    /// `(layer, flag, state)` of each of [`NAMESPACES`]: as root, made before the switch to
    /// the pod's user; without root, each inside a new user namespace.
    others: Vec<(&'static str, libc::c_int, Result<(), String>)>,
    /// A user namespace, made by the user the program runs as (the pod's user when credlint
    /// is root), with that user and group mapped to themselves.
    user: Result<(), String>,
}

/// Runs `attempt` in a forked child of this process: whether it succeeded, or the error it
/// failed with. The child makes system calls only (as between `fork` and `exec`) and ends.
fn probe(attempt: impl Fn() -> Result<(), i32>) -> Result<(), String> {
    // SAFETY: the child calls only `attempt` (system calls on memory prepared before the fork,
    // no allocation, no lock) and `_exit`; the parent waits for exactly that child.
    unsafe {
        let child = libc::fork();
        if child < 0 {
            return Err(format!("cannot try it: {}", io::Error::last_os_error()));
        }
        if child == 0 {
            let code = match attempt() {
                Ok(()) => 0,
                Err(errno) => errno.clamp(1, 255),
            };
            libc::_exit(code);
        }
        let mut status = 0;
        while libc::waitpid(child, &mut status, 0) < 0 {
            if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                return Err("cannot try it: the trial was lost".into());
            }
        }
        match (libc::WIFEXITED(status), libc::WEXITSTATUS(status)) {
            (true, 0) => Ok(()),
            (true, errno) => Err(format!(
                "refused by the kernel or the container: {}",
                io::Error::from_raw_os_error(errno)
            )),
            _ => Err("the trial was killed".into()),
        }
    }
}

fn errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EPERM)
}

/// The result of a C library call that returns -1 and sets `errno` on failure.
fn check(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// What every child starts with: a session of its own, every descriptor above 2 marked
/// close-on-exec (not closed: std's own pipe that reports a failed exec must stay until the
/// exec), and `limits` (those at infinity left as they are).
///
/// # Safety
/// Only in a child between `fork` and `exec`: system calls only, nothing that allocates.
unsafe fn start_child(limits: &[(libc::__rlimit_resource_t, u64)]) -> io::Result<()> {
    // SAFETY: plain integers, and a local rlimit that lives for its call.
    unsafe {
        check(libc::setsid())?;
        check(libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        ) as libc::c_int)
        .or_else(|_| {
            // Before Linux 5.11: one by one, up to the descriptor limit.
            let max = libc::sysconf(libc::_SC_OPEN_MAX).clamp(3, 1 << 20) as libc::c_int;
            for fd in 3..max {
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            }
            Ok::<(), io::Error>(())
        })?;
        for &(resource, value) in limits {
            if value == libc::RLIM_INFINITY {
                continue;
            }
            let limit = libc::rlimit {
                rlim_cur: value,
                rlim_max: value,
            };
            check(libc::setrlimit(resource, &limit))?;
        }
    }
    Ok(())
}

/// `unshare(2)`.
///
/// # Safety
/// Only in a child between `fork` and `exec`, or a probe: it changes the calling process.
unsafe fn unshare(flags: libc::c_int) -> Result<(), i32> {
    // SAFETY: unshare(2) takes a plain integer; the caller is a single-threaded child.
    if unsafe { libc::unshare(flags) } < 0 {
        return Err(errno());
    }
    Ok(())
}

/// Writes `data` to the file `path` of /proc/self in one `write`.
///
/// # Safety
/// Only in a child between `fork` and `exec`, or a probe: system calls only.
unsafe fn write_proc(path: &std::ffi::CStr, data: &[u8]) -> Result<(), i32> {
    // SAFETY: a NUL-terminated path and a buffer that live for the calls.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(errno());
        }
        let written = libc::write(fd, data.as_ptr().cast(), data.len());
        let failed = errno();
        libc::close(fd);
        if usize::try_from(written).ok() != Some(data.len()) {
            return Err(failed);
        }
    }
    Ok(())
}

/// Maps the caller's own user and group into the user namespace it just made, the one mapping
/// an unprivileged process may write (`setgroups` denied first, as the kernel requires), so the
/// program sees its own ids rather than the overflow id.
///
/// # Safety
/// As [`write_proc`].
unsafe fn map_ids(uid_map: &[u8], gid_map: &[u8]) -> Result<(), i32> {
    // SAFETY: as write_proc; each call writes a buffer prepared before the fork, and prctl
    // takes plain integers.
    unsafe {
        // A process that changed its user (root becoming the pod's user) is not dumpable, and
        // its /proc/self files then belong to root: dumpable only while it writes its maps.
        let dumpable = libc::prctl(libc::PR_GET_DUMPABLE, 0, 0, 0, 0);
        libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0);
        let written = (|| {
            match write_proc(c"/proc/self/setgroups", b"deny") {
                // Before Linux 3.19 there is no such file, and nothing to deny.
                Err(libc::ENOENT) | Ok(()) => {}
                Err(e) => return Err(e),
            }
            write_proc(c"/proc/self/uid_map", uid_map)?;
            write_proc(c"/proc/self/gid_map", gid_map)
        })();
        if dumpable >= 0 {
            libc::prctl(libc::PR_SET_DUMPABLE, dumpable, 0, 0, 0);
        }
        written
    }
}

/// The maps of [`map_ids`] for `uid` and `gid`: each mapped to itself.
fn id_maps(uid: u32, gid: u32) -> (Vec<u8>, Vec<u8>) {
    (
        format!("{uid} {uid} 1\n").into_bytes(),
        format!("{gid} {gid} 1\n").into_bytes(),
    )
}

/// Makes the caller's next child the first process of the PID namespace the caller made
/// (`unshare(CLONE_NEWPID)` puts the caller's children there, not the caller): the child
/// returns, to go on to `exec`; the caller stays outside, waits for it and ends as it ended,
/// so credlint sees the program's exit through it. When the first process of a PID namespace
/// ends, the kernel kills every other process in it: no descendant outlives the program,
/// whatever sessions or double forks it made.
///
/// # Safety
/// Only in a child between `fork` and `exec`.
unsafe fn first_of_pid_namespace() -> io::Result<()> {
    // SAFETY: fork, prctl, close_range, waitpid, signal, kill and _exit on plain integers and
    // a local status; no allocation or lock, as between fork and exec.
    unsafe {
        let child = libc::fork();
        if child < 0 {
            return Err(io::Error::last_os_error());
        }
        if child == 0 {
            // Killed with the waiter (credlint kills the waiter's whole process group).
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            return Ok(());
        }
        // The waiter. std's pipe that reports a failed exec must close here, or the spawn
        // would wait for the program's end; the program holds its own copy until its exec.
        if libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) < 0 {
            let max = libc::sysconf(libc::_SC_OPEN_MAX).clamp(3, 1 << 20) as libc::c_int;
            for fd in 3..max {
                libc::close(fd);
            }
        }
        let mut status = 0;
        loop {
            let reaped = libc::waitpid(child, &mut status, 0);
            if reaped == child {
                break;
            }
            if reaped < 0 && errno() != libc::EINTR {
                libc::_exit(127);
            }
        }
        if libc::WIFEXITED(status) {
            libc::_exit(libc::WEXITSTATUS(status));
        }
        if libc::WIFSIGNALED(status) {
            let sig = libc::WTERMSIG(status);
            libc::signal(sig, libc::SIG_DFL);
            libc::kill(libc::getpid(), sig);
            libc::_exit(128 + sig);
        }
        libc::_exit(127)
    }
}

impl Probed {
    /// What this process can give a program, asked once.
    fn get() -> &'static Probed {
        static PROBED: std::sync::OnceLock<Probed> = std::sync::OnceLock::new();
        PROBED.get_or_init(|| {
            // SAFETY: geteuid and getegid have no preconditions.
            let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
            if uid == 0 {
                let others = NAMESPACES
                    .iter()
                    // SAFETY: in the probe's child.
                    .map(|&(layer, flag)| (layer, flag, probe(|| unsafe { unshare(flag) })))
                    .collect();
                let (uid_map, gid_map) = id_maps(POD_UID, POD_UID);
                let user = probe(|| {
                    // SAFETY: in the probe's child: the switch the program's child makes.
                    unsafe {
                        if libc::setgroups(0, std::ptr::null()) < 0
                            || libc::setresgid(POD_UID, POD_UID, POD_UID) < 0
                            || libc::setresuid(POD_UID, POD_UID, POD_UID) < 0
                        {
                            return Err(errno());
                        }
                        unshare(libc::CLONE_NEWUSER)?;
                        map_ids(&uid_map, &gid_map)
                    }
                });
                Probed { others, user }
            } else {
                let (uid_map, gid_map) = id_maps(uid, gid);
                let with_user = |flag: libc::c_int| {
                    probe(|| {
                        // SAFETY: in the probe's child.
                        unsafe {
                            unshare(libc::CLONE_NEWUSER | flag)?;
                            map_ids(&uid_map, &gid_map)
                        }
                    })
                };
                let user = with_user(0);
                let others = NAMESPACES
                    .iter()
                    .map(|&(layer, flag)| {
                        let state = match &user {
                            Ok(()) => with_user(flag),
                            Err(_) => Err("credlint is not root, and an unprivileged process \
                                 needs a user namespace to make one"
                                .to_string()),
                        };
                        (layer, flag, state)
                    })
                    .collect();
                Probed { others, user }
            }
        })
    }
}

/// Which layers hold for the programs of one simulation, and why a missing one is missing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layers {
    /// `(layer, held)`, with the reason where it did not; each name one of [`LAYER_NAMES`].
    pub entries: Vec<(&'static str, Result<(), String>)>,
}

impl Layers {
    pub fn missing(&self) -> Vec<(&'static str, &str)> {
        self.entries
            .iter()
            .filter_map(|(n, r)| r.as_ref().err().map(|why| (*n, why.as_str())))
            .collect()
    }

    /// Sets `layer`'s state; a name outside [`LAYER_NAMES`] is a programming error, kept out
    /// of the report (the report names only layers it can explain).
    pub fn set(&mut self, layer: &'static str, state: Result<(), String>) {
        debug_assert!(LAYER_NAMES.contains(&layer), "unknown layer {layer}");
        self.entries.retain(|(n, _)| *n != layer);
        self.entries.push((layer, state));
        self.entries
            .sort_by_key(|(n, _)| LAYER_NAMES.iter().position(|x| x == n));
    }

    /// What held for both `self` and `other` (the programs of two simulations): a layer holds
    /// only where it held for every program, and a layer one of them does not name is missing.
    pub fn merge(&mut self, other: &Layers) {
        let names: Vec<&'static str> = self
            .entries
            .iter()
            .chain(&other.entries)
            .map(|(n, _)| *n)
            .collect();
        let state = |layers: &Layers, name: &str| {
            layers
                .entries
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, r)| r.clone())
        };
        let mut merged = Layers::default();
        for name in names {
            let mine = state(self, name);
            let theirs = state(other, name);
            let result = match (mine, theirs) {
                (Some(Ok(())), Some(Ok(()))) => Ok(()),
                (Some(Err(why)), _) | (_, Some(Err(why))) => Err(why),
                _ => Err("not set up for every program".to_string()),
            };
            merged.set(name, result);
        }
        *self = merged;
    }
}

/// Says once per process which layers do not hold and why: a missing layer is never silent.
pub fn note_missing(layers: &Layers) {
    let missing = layers.missing();
    if missing.is_empty() {
        return;
    }
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let list: Vec<String> = missing
            .iter()
            .map(|(layer, why)| format!("{layer} ({why})"))
            .collect();
        eprintln!(
            "credlint: note: simulate's programs run without these layers of the pod's \
             confinement: {}",
            list.join("; ")
        );
    });
}

/// The confinement of one simulation's programs, prepared in credlint.
#[derive(Clone)]
pub struct Confine {
    /// Switch to the pod's user (credlint is root and the interpreter starts as that user).
    user: bool,
    /// The pod's user and group: the Job's `runAsUser` and `runAsGroup`.
    pod_user: (u32, u32),
    /// credlint is root: the bounding set is emptied so an `exec` as root gains nothing.
    root: bool,
    filter: Option<BpfProgram>,
    /// `clone3` answers `ENOSYS` (its flags are in memory, out of the filter's reach), so the C
    /// library falls back to `clone`, whose flags the first filter checks.
    clone3: Option<BpfProgram>,
    cpu_seconds: u64,
    /// The namespaces the child makes (clone flags, without `CLONE_NEWUSER`): as root before
    /// it becomes the pod's user, otherwise inside its new user namespace.
    namespaces: libc::c_int,
    /// Make a user namespace, mapping `uid_map` and `gid_map` (the user the program runs as).
    user_namespace: Option<(Vec<u8>, Vec<u8>)>,
    /// The host name in the program's UTS namespace: its pod's name, not the host's.
    hostname: Vec<u8>,
    /// The network namespace the child enters, where the fake servers listen (as root).
    net: Option<super::netns::NetNs>,
    /// The pod's root the child builds and enters, in its mount and PID namespaces (as root, or
    /// with the capabilities of its user namespace).
    pod_fs: Option<std::sync::Arc<super::podfs::PodFs>>,
    pub layers: Layers,
}

impl Confine {
    /// `timeout` bounds the CPU time as well as the wall time.
    pub fn new(timeout: std::time::Duration) -> Confine {
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        let mut layers = Layers::default();
        layers.set("session", Ok(()));
        layers.set("descriptors", Ok(()));
        layers.set("rlimits", Ok(()));
        layers.set("no-new-privs", Ok(()));
        layers.set("capabilities", Ok(()));
        layers.set(
            "user",
            Err(if root {
                "the interpreter was not tried as the pod's user".into()
            } else {
                "credlint does not run as root: the program runs as credlint's user".into()
            }),
        );
        layers.set("process-limit", Err(NO_PROCESS_LIMIT.into()));
        layers.set("network-namespace", Err(NO_NETWORK_NAMESPACE.into()));
        layers.set("pod-filesystem", Err("the pod's root was not tried".into()));
        let probed = Probed::get();
        let mut namespaces = 0;
        for (layer, flag, state) in &probed.others {
            if state.is_ok() {
                namespaces |= flag;
            }
            layers.set(layer, state.clone());
        }
        let mut user_namespace = None;
        if root {
            layers.set(
                "user-namespace",
                Err("the interpreter was not tried as the pod's user".into()),
            );
        } else {
            layers.set("user-namespace", probed.user.clone());
            if probed.user.is_ok() {
                // SAFETY: geteuid and getegid have no preconditions.
                let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
                user_namespace = Some(id_maps(uid, gid));
            }
        }
        // Installed by the interpreter's startup (`sitecustomize`) in every run.
        layers.set("audit-hook", Ok(()));
        let (filter, clone3) = match filters() {
            Ok((f, c)) => {
                layers.set("seccomp", Ok(()));
                (Some(f), Some(c))
            }
            Err(why) => {
                layers.set("seccomp", Err(why));
                (None, None)
            }
        };
        Confine {
            user: false,
            pod_user: (POD_UID, POD_UID),
            root,
            filter,
            clone3,
            cpu_seconds: timeout.as_secs().saturating_add(2),
            namespaces,
            user_namespace,
            hostname: b"credentials".to_vec(),
            net: None,
            pod_fs: None,
            layers,
        }
    }

    /// The program's network namespace, where credlint is root and confines the program.
    pub fn network(confine: bool) -> Result<super::netns::NetNs, String> {
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        if !confine {
            Err("the program's confinement is turned off".into())
        } else if !root {
            Err(NO_NETWORK_NAMESPACE.into())
        } else {
            super::netns::NetNs::create()
        }
    }

    /// The child enters `net` (the fake servers listen in it), or runs in the host's network
    /// for the reason given.
    pub fn with_network(&mut self, net: Result<super::netns::NetNs, String>) {
        match net {
            Ok(net) => {
                self.layers.set("network-namespace", Ok(()));
                self.net = Some(net);
            }
            Err(why) => {
                self.layers.set("network-namespace", Err(why));
                self.net = None;
            }
        }
    }

    /// The program's host name, where it has a UTS namespace ([`super::incluster::pod_name`]).
    pub fn with_hostname(&mut self, name: &str) {
        self.hostname = name.as_bytes().to_vec();
    }

    /// Whether the child can build the pod's root: it gets mount and PID namespaces of its own,
    /// and either credlint is root or the child makes a user namespace to hold them.
    pub fn can_build_pod_fs(&self) -> bool {
        let needed = libc::CLONE_NEWNS | libc::CLONE_NEWPID;
        (self.root || self.user_namespace.is_some()) && self.namespaces & needed == needed
    }

    /// Why the child cannot build the pod's root ([`Confine::can_build_pod_fs`] is false).
    pub fn why_no_pod_fs(&self) -> String {
        if self.root || self.user_namespace.is_some() {
            "the program has no mount and PID namespaces of its own to build it in".into()
        } else {
            NO_POD_FILESYSTEM.into()
        }
    }

    /// The child builds and enters `plan` before it starts the program, or, with the reason,
    /// starts it in the host's root (its in-cluster paths redirected by the startup hook).
    pub fn with_pod_fs(&mut self, plan: Result<super::podfs::PodFs, String>) {
        match plan {
            Ok(plan) => {
                self.layers.set("pod-filesystem", Ok(()));
                self.pod_fs = Some(std::sync::Arc::new(plan));
            }
            Err(why) => {
                self.layers.set("pod-filesystem", Err(why));
                self.pod_fs = None;
            }
        }
    }

    /// Whether the program runs in the pod's root.
    pub fn in_pod_fs(&self) -> bool {
        self.pod_fs.is_some()
    }

    /// The user and group the program runs as where credlint is root (the Job's).
    pub fn with_pod_user(&mut self, pod_user: (u32, u32)) {
        self.pod_user = pod_user;
    }

    pub fn pod_user(&self) -> (u32, u32) {
        self.pod_user
    }

    /// Whether the program may run as the pod's user: credlint is root.
    pub fn can_switch_user(&self) -> bool {
        self.root
    }

    /// The program runs as the pod's user (its run folder is handed to that user).
    pub fn with_user(&mut self) {
        self.user = self.root;
        if self.user {
            self.layers.set("user", Ok(()));
            self.layers.set("process-limit", Ok(()));
            let probed = Probed::get();
            self.layers.set("user-namespace", probed.user.clone());
            let (uid, gid) = self.pod_user;
            self.user_namespace = probed.user.is_ok().then(|| id_maps(uid, gid));
        }
    }

    /// The program cannot start as the pod's user (its interpreter lies in a folder that user
    /// cannot reach): it runs as root, without capabilities.
    pub fn without_user(&mut self, why: String) {
        self.user = false;
        self.layers.set("user", Err(why));
        self.layers
            .set("process-limit", Err(NO_PROCESS_LIMIT.into()));
        if self.root {
            self.user_namespace = None;
            self.layers.set(
                "user-namespace",
                Err(
                    "the program runs as root, whose ids a user namespace made by it would \
                     not map"
                        .into(),
                ),
            );
        }
    }

    /// Whether runs can be forked from one interpreter per bundle (`zygote.rs`): credlint is
    /// root, the program runs as the pod's user in the pod's root, with mount and PID
    /// namespaces of its own, which each run's first process makes afresh.
    pub fn zygote_ready(&self) -> bool {
        let needed = libc::CLONE_NEWNS | libc::CLONE_NEWPID;
        self.root && self.user && self.pod_fs.is_some() && self.namespaces & needed == needed
    }

    /// What the zygote's child runs between `fork` and `exec`: the namespaces and the pod's
    /// root of [`Confine::in_child`], as root, and nothing after them. Each run's first process
    /// then makes the rest itself, as the program's child here would, before the program runs
    /// (`zygote.py`). Only credlint's code and the standard library run in the zygote.
    pub fn in_zygote(&self) -> impl FnMut() -> io::Result<()> + Send + Sync + 'static {
        let limits = limits(self.cpu_seconds, false);
        let namespaces = self.namespaces;
        let hostname = self.hostname.clone();
        let net = self.net.as_ref().map(|n| n.raw());
        let pod_fs = self.pod_fs.clone();
        move || {
            // SAFETY: as in `in_child`: plain integers or pointers to locals that live for the
            // call, nothing that allocates or locks.
            unsafe {
                start_child(&limits)?;
                unshare(namespaces).map_err(io::Error::from_raw_os_error)?;
                if namespaces & libc::CLONE_NEWUTS != 0 {
                    libc::sethostname(hostname.as_ptr().cast(), hostname.len());
                }
                if let Some(fd) = net {
                    check(libc::setns(fd, libc::CLONE_NEWNET))?;
                }
                first_of_pid_namespace()?;
            }
            match &pod_fs {
                Some(pod_fs) => pod_fs.enter(),
                None => Err(io::Error::other("no pod root")),
            }
        }
    }

    /// What each run's first process needs to confine itself as [`Confine::in_child`] would:
    /// its limits, user, user namespace, the two seccomp programs (as `sock_filter` bytes, in
    /// hex) and the system call numbers of this machine.
    pub fn zygote_config(&self) -> serde_json::Value {
        let filter_hex = |p: &BpfProgram| {
            let mut out = String::with_capacity(p.len() * 16);
            for f in p {
                let mut bytes = [0u8; 8];
                bytes[..2].copy_from_slice(&f.code.to_ne_bytes());
                bytes[2] = f.jt;
                bytes[3] = f.jf;
                bytes[4..].copy_from_slice(&f.k.to_ne_bytes());
                out.push_str(&crate::common::hex(&bytes));
            }
            out
        };
        let limits: Vec<(u64, u64)> = limits(self.cpu_seconds, self.user)
            .into_iter()
            .filter(|&(_, v)| v != libc::RLIM_INFINITY)
            .map(|(r, v)| (u64::from(r), v))
            .collect();
        let seccomp: Vec<String> = [&self.clone3, &self.filter]
            .into_iter()
            .flatten()
            .map(filter_hex)
            .collect();
        serde_json::json!({
            "rlimits": limits,
            "user": [self.pod_user.0, self.pod_user.1],
            "user_namespace": self.user_namespace.is_some(),
            "seccomp": seccomp,
            "syscalls": {
                "capset": libc::SYS_capset,
                "seccomp": libc::SYS_seccomp,
                "landlock_create_ruleset": libc::SYS_landlock_create_ruleset,
                "landlock_add_rule": libc::SYS_landlock_add_rule,
                "landlock_restrict_self": libc::SYS_landlock_restrict_self,
            },
        })
    }

    /// What the child runs between `fork` and `exec`, before Landlock (`landlock` is run in
    /// between, where there is one) and the seccomp filter: system calls only, nothing that
    /// allocates or locks.
    pub fn in_child(
        &self,
        mut landlock: Option<super::child::Landlock>,
    ) -> impl FnMut() -> io::Result<()> + Send + Sync + 'static {
        let user = self.user;
        let (uid, gid) = self.pod_user;
        let root = self.root;
        let filter = self.filter.clone();
        let clone3 = self.clone3.clone();
        let limits = limits(self.cpu_seconds, user);
        let namespaces = self.namespaces;
        let user_namespace = self.user_namespace.clone();
        let hostname = self.hostname.clone();
        let net = self.net.as_ref().map(|n| n.raw());
        let pod_fs = self.pod_fs.clone();
        // The PID namespace's first process, in the pod's root where it has one (its /proc
        // then shows that namespace).
        let first_process = move || -> io::Result<()> {
            // SAFETY: in the child between fork and exec, as first_of_pid_namespace requires.
            unsafe { first_of_pid_namespace() }?;
            match &pod_fs {
                Some(pod_fs) => pod_fs.enter(),
                None => Ok(()),
            }
        };
        let name_host = move || {
            if namespaces & libc::CLONE_NEWUTS != 0 {
                // SAFETY: a buffer and its length, alive for the call.
                unsafe { libc::sethostname(hostname.as_ptr().cast(), hostname.len()) };
            }
        };
        move || {
            // SAFETY: each call below takes plain integers or pointers to locals that live for
            // the call; none allocates or takes a lock, as a child between fork and exec must.
            unsafe {
                start_child(&limits)?;
                if root {
                    for cap in 0..64 {
                        // EINVAL past the last capability this kernel knows.
                        libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0);
                    }
                    // Made while root may: a user namespace adds nothing to what root may.
                    if namespaces != 0 {
                        unshare(namespaces).map_err(io::Error::from_raw_os_error)?;
                        name_host();
                    }
                    if let Some(fd) = net {
                        check(libc::setns(fd, libc::CLONE_NEWNET))?;
                    }
                    // Forked as root, whom the process limit does not bind: as the pod's user
                    // the fork would count against that user's processes across the machine,
                    // which another program's fork bomb may have used up.
                    if namespaces & libc::CLONE_NEWPID != 0 {
                        first_process()?;
                    }
                }
                if user {
                    check(libc::setgroups(0, std::ptr::null()))?;
                    check(libc::setresgid(gid, gid, gid))?;
                    check(libc::setresuid(uid, uid, uid))?;
                }
                if let Some((uid_map, gid_map)) = &user_namespace {
                    // Without root, the other namespaces come with it (the kernel makes the
                    // user namespace first); the capabilities it gives are dropped below.
                    let others = if root { 0 } else { namespaces };
                    unshare(libc::CLONE_NEWUSER | others).map_err(io::Error::from_raw_os_error)?;
                    map_ids(uid_map, gid_map).map_err(io::Error::from_raw_os_error)?;
                    if !root {
                        name_host();
                    }
                }
                // With the capabilities its new user namespace gives it over its mounts.
                if !root && user_namespace.is_some() && namespaces & libc::CLONE_NEWPID != 0 {
                    first_process()?;
                }
                check(libc::prctl(
                    libc::PR_CAP_AMBIENT,
                    libc::PR_CAP_AMBIENT_CLEAR_ALL,
                    0,
                    0,
                    0,
                ))?;
                // capset(2) with every set empty (version 3 takes two 32-bit halves).
                let header = CapHeader {
                    version: 0x2008_0522,
                    pid: 0,
                };
                let data = [CapData::default(); 2];
                check(libc::syscall(libc::SYS_capset, &header, data.as_ptr()) as libc::c_int)?;
                check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))?;
            }
            if let Some(landlock) = landlock.as_mut() {
                landlock()?;
            }
            for program in [&clone3, &filter].into_iter().flatten() {
                seccompiler::apply_filter(program).map_err(io::Error::other)?;
            }
            Ok(())
        }
    }
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Default, Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// The namespaces a new process could ask for (`clone` flags).
const NAMESPACE_FLAGS: [u64; 7] = [
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWNET as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWCGROUP as u64,
];

/// The two seccomp programs: what is refused with `EPERM`, and `clone3` with `ENOSYS`.
fn filters() -> Result<(BpfProgram, BpfProgram), String> {
    // SAFETY: prctl(2) with PR_GET_SECCOMP takes no pointer; -1 means no seccomp here.
    if unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) } < 0 {
        return Err(format!(
            "the kernel has no seccomp: {}",
            io::Error::last_os_error()
        ));
    }
    let arch: seccompiler::TargetArch = std::env::consts::ARCH
        .try_into()
        .map_err(|_| format!("no seccomp filter for {}", std::env::consts::ARCH))?;
    let text = |e: seccompiler::BackendError| e.to_string();
    let cond = |arg: u8, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value).map_err(text)
    };
    let rule = |conditions: Vec<SeccompCondition>| SeccompRule::new(conditions).map_err(text);
    // The socket type without SOCK_NONBLOCK and SOCK_CLOEXEC.
    let kind = |t: i32| cond(1, SeccompCmpOp::MaskedEq(0xf), t as u64);
    let family = |f: i32| cond(0, SeccompCmpOp::Eq, f as u64);
    let mut socket = vec![
        rule(vec![family(libc::AF_PACKET)?])?,
        rule(vec![family(libc::AF_UNIX)?])?,
    ];
    for f in [libc::AF_INET, libc::AF_INET6] {
        socket.push(rule(vec![family(f)?, kind(libc::SOCK_RAW)?])?);
        socket.push(rule(vec![family(f)?, kind(libc::SOCK_DGRAM)?])?);
    }
    let mut clone = Vec::new();
    for flag in NAMESPACE_FLAGS {
        clone.push(rule(vec![cond(0, SeccompCmpOp::MaskedEq(flag), flag)?])?);
    }
    let mut rules = std::collections::BTreeMap::new();
    rules.insert(libc::SYS_socket, socket);
    rules.insert(libc::SYS_clone, clone);
    for call in [
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_chroot,
        libc::SYS_fsopen,
        libc::SYS_fsmount,
        libc::SYS_fsconfig,
        libc::SYS_fspick,
        libc::SYS_move_mount,
        libc::SYS_open_tree,
        libc::SYS_mount_setattr,
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
        libc::SYS_userfaultfd,
        libc::SYS_io_uring_setup,
        libc::SYS_kexec_load,
        libc::SYS_kexec_file_load,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_open_by_handle_at,
        libc::SYS_name_to_handle_at,
        libc::SYS_swapon,
        libc::SYS_swapoff,
        libc::SYS_reboot,
        libc::SYS_acct,
        libc::SYS_quotactl,
        libc::SYS_syslog,
    ] {
        rules.insert(call, Vec::new());
    }
    let deny = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(text)?;
    let mut only_clone3 = std::collections::BTreeMap::new();
    only_clone3.insert(libc::SYS_clone3, Vec::new());
    let clone3 = SeccompFilter::new(
        only_clone3,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .map_err(text)?;
    let compile = |f: SeccompFilter| BpfProgram::try_from(f).map_err(|e| e.to_string());
    Ok((compile(deny)?, compile(clone3)?))
}
