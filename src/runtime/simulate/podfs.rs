//! The pod's filesystem, where the program gets mount and PID namespaces (as root, or inside
//! its user namespace): the program starts in a root of its own, as
//! its container would, and finds what its pod would find at the pod's paths and nothing of
//! the host's beyond what an image holds.
//!
//! What the root holds: the system's program and library folders (`/usr`, `/bin`, `/lib*`,
//! `/sbin`) and the interpreter's own folders, read-only; the few `/etc` files the C library
//! and OpenSSL read; the ConfigMap's files at `/credentials`, the service-account files at
//! `/var/run/secrets/kubernetes.io/serviceaccount` (through `/var/run` -> `/run`, as in most
//! images), `/dev` with its usual devices, `/dev/shm` and `/dev/termination-log`, and a
//! `/proc` of the program's own PID namespace. Everything else is read-only, as the Job's
//! `readOnlyRootFilesystem` makes it: `/tmp` exists and cannot be written. The startup hook
//! (`sitecustomize`) and its access log sit in a folder of their own on `PYTHONPATH`.
//!
//! The plan is built in credlint ([`PodFs::plan`]); the child carries it out between `fork`
//! and `exec` ([`PodFs::enter`]), in the mount namespace it made and as the first process of
//! its PID namespace (the new `/proc` shows that namespace), before it becomes the pod's user.
//! Every mount is private to that namespace: the host sees an empty folder.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};
use rustix::mount::{MountFlags, MountPropagationFlags, UnmountFlags};

/// The run folder's subfolder the pod's root is mounted on.
pub const ROOT: &str = "root";
/// The run folder's subfolder that holds the ConfigMap's files (`create.py`, `plan.json`).
pub const CREDENTIALS: &str = "credentials";
/// Where the pod finds the ConfigMap's files.
pub const CREDENTIALS_PATH: &str = "/credentials";
/// Where the startup hook and its access log are in the pod's root.
pub const HOOK_PATH: &str = "/.site";
/// Where a zygote's root shows the run folder of the run being started: the pod's empty,
/// read-only `/tmp`, which each run's first process uncovers again before the program starts.
pub const STAGING_PATH: &str = "/tmp";

/// The system's folders an image has, bound read-only (or linked, where the host links them).
const SYSTEM: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32",
];

/// The devices of a container's `/dev`.
const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom"];

/// One step of building the root, all of its paths prepared in credlint.
enum Step {
    /// A folder in the new root.
    Dir(CString),
    /// An empty file in the new root, to mount a file on.
    File(CString),
    /// A symbolic link in the new root.
    Link { target: CString, at: CString },
    /// A bind mount, read-only unless `writable`; a device keeps its node usable. `keep`:
    /// the source mount's flags a remount in a user namespace must keep (the kernel locks
    /// them there).
    Bind {
        from: CString,
        to: CString,
        writable: bool,
        device: bool,
        keep: MountFlags,
    },
    /// A fresh tmpfs, read-only when `read_only` (then it stays empty).
    Tmpfs {
        at: CString,
        data: CString,
        read_only: bool,
    },
    /// A `/proc` of the PID namespace.
    Proc(CString),
}

/// How to build one program's root.
pub struct PodFs {
    root: CString,
    steps: Vec<Step>,
}

/// The flags of the mount `path` lies on that a user namespace locks: a remount of a bind of
/// it there must keep them (as root they are kept too, which changes nothing the program may
/// do: none of them grants anything).
fn locked(path: &Path) -> MountFlags {
    use rustix::fs::StatVfsMountFlags as F;
    let Ok(st) = rustix::fs::statvfs(path) else {
        return MountFlags::empty();
    };
    let mut keep = MountFlags::empty();
    for (has, flag) in [
        (F::RDONLY, MountFlags::RDONLY),
        (F::NOSUID, MountFlags::NOSUID),
        (F::NODEV, MountFlags::NODEV),
        (F::NOEXEC, MountFlags::NOEXEC),
        (F::NOATIME, MountFlags::NOATIME),
        (F::NODIRATIME, MountFlags::NODIRATIME),
        (F::RELATIME, MountFlags::RELATIME),
    ] {
        if st.f_flag.contains(has) {
            keep |= flag;
        }
    }
    keep
}

fn c(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(io::Error::other)
}

/// A folder where Python finds installed packages (pip's, the distribution's), not its
/// standard library.
fn installed_packages(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n == "site-packages" || n == "dist-packages")
}

/// `inside` (an absolute path) under `root`.
fn under(root: &Path, inside: &Path) -> PathBuf {
    root.join(inside.strip_prefix("/").unwrap_or(inside))
}

impl PodFs {
    /// The plan for the run folder `run` and the interpreter's folders and files (as it said
    /// when asked). The run folder's files are bound by name, so the plan holds for every run
    /// of the simulation (each run gets the folder afresh).
    ///
    /// `staging`, for a zygote (`zygote.rs`): the run folder of each run, bound at
    /// [`STAGING_PATH`], where each run's first process finds its logs to mount before it
    /// detaches the folder.
    pub fn plan(run: &Path, interpreter: &[PathBuf], staging: Option<&Path>) -> io::Result<PodFs> {
        let root = run.join(ROOT);
        let mut plan = Planner {
            root: root.clone(),
            steps: Vec::new(),
            made: Vec::new(),
            bound: Vec::new(),
        };
        for sys in SYSTEM {
            plan.host(Path::new(sys), false)?;
        }
        plan.dir(Path::new("/etc"))?;
        // The pod's own hosts file, resolver settings and host name, then the host's other
        // files the C library reads.
        for (name, at) in super::incluster::POD_ETC {
            plan.file_from(&run.join(name), Path::new(at), false)?;
        }
        for file in super::sandbox::READABLE
            .iter()
            .filter(|p| p.starts_with("/etc/"))
        {
            plan.host(Path::new(file), false)?;
        }
        let mut extra: Vec<&PathBuf> = interpreter
            .iter()
            // Nothing of the run folder, nor of the staged one (the interpreter was asked in a
            // run folder: its `-c` folder is among its paths).
            .filter(|p| {
                p.is_absolute()
                    && p.parent().is_some()
                    && !p.starts_with(run)
                    && staging.is_none_or(|s| !p.starts_with(s))
            })
            .collect();
        extra.sort();
        for path in &extra {
            plan.host(path, false)?;
        }
        // The packages installed beside the host's interpreter are the host's, not the image's:
        // the pod finds the standard library alone (and no `.pth` file of the host's runs when
        // its interpreter starts).
        for path in extra.into_iter().filter(|p| installed_packages(p)) {
            plan.hide(path)?;
        }
        // /dev: a tmpfs with the usual devices, shared memory and the termination log.
        plan.dir(Path::new("/dev"))?;
        plan.steps.push(Step::Tmpfs {
            at: c(&under(&root, Path::new("/dev")))?,
            data: CString::new("mode=755,size=64k").map_err(io::Error::other)?,
            read_only: false,
        });
        for device in DEVICES {
            let host = Path::new("/dev").join(device);
            if host.exists() {
                let to = under(&root, &host);
                plan.steps.push(Step::File(c(&to)?));
                plan.steps.push(Step::Bind {
                    from: c(&host)?,
                    to: c(&to)?,
                    writable: true,
                    device: true,
                    keep: locked(&host),
                });
            }
        }
        for (name, target) in [
            ("fd", "/proc/self/fd"),
            ("stdin", "/proc/self/fd/0"),
            ("stdout", "/proc/self/fd/1"),
            ("stderr", "/proc/self/fd/2"),
        ] {
            plan.steps.push(Step::Link {
                target: CString::new(target).map_err(io::Error::other)?,
                at: c(&under(&root, &Path::new("/dev").join(name)))?,
            });
        }
        plan.dir(Path::new("/dev/shm"))?;
        plan.steps.push(Step::Tmpfs {
            at: c(&under(&root, Path::new("/dev/shm")))?,
            data: CString::new("mode=1777,size=64m").map_err(io::Error::other)?,
            read_only: false,
        });
        plan.file_from(
            &run.join(super::incluster::TERMINATION_LOG),
            Path::new(super::incluster::TERMINATION_PATH),
            true,
        )?;
        plan.dir(Path::new("/proc"))?;
        plan.steps
            .push(Step::Proc(c(&under(&root, Path::new("/proc")))?));
        // The volumes: the ConfigMap and the service account, read-only as the kubelet mounts
        // them.
        plan.dir_from(&run.join(CREDENTIALS), Path::new(CREDENTIALS_PATH), false)?;
        plan.dir_from(
            &run.join("serviceaccount"),
            Path::new(super::incluster::SA_PATHS[1]),
            false,
        )?;
        plan.dir(Path::new("/var"))?;
        plan.steps.push(Step::Link {
            target: CString::new("/run").map_err(io::Error::other)?,
            at: c(&under(&root, Path::new("/var/run")))?,
        });
        plan.dir(Path::new("/tmp"))?;
        // The hook's folder, read-only, and its log (mounted on the empty file of that name
        // the folder holds), which the hook appends to.
        plan.dir_from(&run.join("site"), Path::new(HOOK_PATH), false)?;
        plan.steps.push(Step::Bind {
            from: c(&run.join(super::incluster::ACCESS_LOG))?,
            to: c(&under(
                &root,
                &Path::new(HOOK_PATH).join(super::incluster::ACCESS_LOG),
            ))?,
            writable: true,
            device: false,
            keep: locked(run),
        });
        if let Some(from) = staging {
            plan.dir_from(from, Path::new(STAGING_PATH), true)?;
        }
        Ok(PodFs {
            root: c(&root)?,
            steps: plan.steps,
        })
    }

    /// Builds the root and makes it the process's own: system calls only, on paths prepared
    /// in [`PodFs::plan`] (no allocation, no lock), as a child between `fork` and `exec` must.
    /// The caller has the capabilities of its mount namespace (root, or the creator of its user
    /// namespace) and is the first process of its PID namespace. The working folder is the root, as in an image without `WORKDIR`.
    pub fn enter(&self) -> io::Result<()> {
        let root = self.root.as_c_str();
        // Nothing mounted here reaches the host's namespace, and nothing of the host's
        // mounts later reaches this one.
        rustix::mount::mount_change(
            c"/",
            MountPropagationFlags::REC | MountPropagationFlags::PRIVATE,
        )?;
        rustix::mount::mount(
            c"tmpfs",
            root,
            c"tmpfs",
            MountFlags::NOSUID | MountFlags::NODEV,
            Some(c"mode=755,size=1m"),
        )?;
        for step in &self.steps {
            match step {
                Step::Dir(at) => rustix::fs::mkdir(at.as_c_str(), Mode::from_raw_mode(0o755))?,
                Step::File(at) => {
                    rustix::fs::open(
                        at.as_c_str(),
                        OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::CLOEXEC,
                        Mode::from_raw_mode(0o644),
                    )?;
                }
                Step::Link { target, at } => rustix::fs::symlink(target.as_c_str(), at.as_c_str())?,
                Step::Bind {
                    from,
                    to,
                    writable,
                    device,
                    keep,
                } => {
                    rustix::mount::mount_bind_recursive(from.as_c_str(), to.as_c_str())?;
                    if *device {
                        // A device's bind keeps its source's flags, nodev not among them.
                        continue;
                    }
                    let mut flags = MountFlags::BIND | MountFlags::NOSUID | *keep;
                    if !writable {
                        flags |= MountFlags::RDONLY;
                    }
                    flags |= MountFlags::NODEV;
                    rustix::mount::mount_remount(to.as_c_str(), flags, c"")?;
                }
                Step::Tmpfs {
                    at,
                    data,
                    read_only,
                } => {
                    let mut flags = MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC;
                    if *read_only {
                        flags |= MountFlags::RDONLY;
                    }
                    rustix::mount::mount(
                        c"tmpfs",
                        at.as_c_str(),
                        c"tmpfs",
                        flags,
                        Some(data.as_c_str()),
                    )?
                }
                Step::Proc(at) => rustix::mount::mount(
                    c"proc",
                    at.as_c_str(),
                    c"proc",
                    MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
                    None,
                )?,
            }
        }
        // The root itself read-only (its mounts keep their own flags).
        rustix::mount::mount_remount(
            root,
            MountFlags::RDONLY | MountFlags::NOSUID | MountFlags::NODEV,
            c"mode=755,size=1m",
        )?;
        // The host's root goes: stacked under the new one by pivot_root, then detached.
        rustix::process::chdir(root)?;
        rustix::process::pivot_root(c".", c".")?;
        rustix::mount::unmount(c".", UnmountFlags::DETACH)?;
        rustix::process::chdir(c"/")?;
        Ok(())
    }
}

/// Builds the steps, making each folder of the new root once.
struct Planner {
    root: PathBuf,
    steps: Vec<Step>,
    /// Folders of the new root made so far (pod paths).
    made: Vec<PathBuf>,
    /// Pod paths bound or linked so far: nothing is made beneath them.
    bound: Vec<PathBuf>,
}

impl Planner {
    fn covered(&self, path: &Path) -> bool {
        self.bound.iter().any(|b| path.starts_with(b))
    }

    /// Makes the folder `path` of the new root and the folders above it.
    fn dir(&mut self, path: &Path) -> io::Result<()> {
        let mut chain: Vec<&Path> = path.ancestors().filter(|a| a.parent().is_some()).collect();
        chain.reverse();
        for p in chain {
            if !self.made.iter().any(|m| m == p) {
                self.steps.push(Step::Dir(c(&under(&self.root, p))?));
                self.made.push(p.to_path_buf());
            }
        }
        Ok(())
    }

    /// The host's `path` at the same path in the new root, read-only: linked as the host links
    /// it, else bound. A path that does not exist, or lies beneath one already there, is
    /// skipped.
    fn host(&mut self, path: &Path, writable: bool) -> io::Result<()> {
        if self.covered(path) {
            return Ok(());
        }
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            return Ok(());
        };
        if let Some(parent) = path.parent() {
            self.dir(parent)?;
        }
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(path)?;
            self.steps.push(Step::Link {
                target: c(&target)?,
                at: c(&under(&self.root, path))?,
            });
            self.bound.push(path.to_path_buf());
            return Ok(());
        }
        if meta.is_dir() {
            self.dir_from(path, path, writable)
        } else {
            self.file_from(path, path, writable)
        }
    }

    /// An empty, read-only folder over `path`, a folder of the host's already in the new root.
    fn hide(&mut self, path: &Path) -> io::Result<()> {
        if !self.covered(path) || !path.is_dir() {
            return Ok(());
        }
        self.steps.push(Step::Tmpfs {
            at: c(&under(&self.root, path))?,
            data: CString::new("mode=755,size=4k").map_err(io::Error::other)?,
            read_only: true,
        });
        Ok(())
    }

    /// The host folder `from` at `to` in the new root.
    fn dir_from(&mut self, from: &Path, to: &Path, writable: bool) -> io::Result<()> {
        self.dir(to)?;
        self.steps.push(Step::Bind {
            from: c(from)?,
            to: c(&under(&self.root, to))?,
            writable,
            device: false,
            keep: locked(from),
        });
        self.bound.push(to.to_path_buf());
        Ok(())
    }

    /// The host file `from` at `to` in the new root.
    fn file_from(&mut self, from: &Path, to: &Path, writable: bool) -> io::Result<()> {
        if let Some(parent) = to.parent() {
            self.dir(parent)?;
        }
        let at = c(&under(&self.root, to))?;
        self.steps.push(Step::File(at.clone()));
        self.steps.push(Step::Bind {
            from: c(from)?,
            to: at,
            writable,
            device: false,
            keep: locked(from),
        });
        self.bound.push(to.to_path_buf());
        Ok(())
    }
}
