//! Where run folders live: on a tmpfs of their own, mounted in a mount namespace credlint makes
//! for itself, where it runs as root; on the temporary folder's filesystem elsewhere.
//!
//! A simulation renews its run folder before each of its ~240 runs: a few thousand files and
//! folders made and removed within seconds. On a disk filesystem each made inode costs a search
//! past the recently freed ones (ext4 without a journal skips every inode freed in the last
//! half minute), which grew to several per cent of a simulation's CPU (docs/performance.md).
//! A tmpfs makes that free, bounds what a program that runs in the host's root can write into
//! its folder in all (its size, where the file-size limit bounds one file only; in the pod's
//! root only the logs are writable there), and goes with its namespace: nothing of it
//! outlives credlint.
//!
//! The namespace is the calling thread's alone (namespaces belong to threads): threads it starts
//! later inherit it, threads started before stay in the host's. So a run folder is mounted only
//! by a thread seen to be in credlint's own namespace; any other makes a plain folder, as does
//! credlint when the kernel or the container refuses the namespace. The folder's path is the
//! same either way (`$TMPDIR/tmp.XXXXXXXXXX`), and the host sees it as an empty folder while it
//! exists.

use rustix::mount::{MountFlags, MountPropagationFlags, UnmountFlags};
use std::path::Path;
use std::sync::OnceLock;

/// The identity (device, inode) of credlint's own mount namespace, once it has made one.
static OWN: OnceLock<(u64, u64)> = OnceLock::new();

/// What one run folder may hold in all: twice the file-size limit of a run (64 MiB), so a
/// program that writes one file up to its limit still finds room for the rest.
const SIZE: &std::ffi::CStr = c"size=128m,nr_inodes=16384,mode=0700";

fn current() -> Option<(u64, u64)> {
    let st = rustix::fs::stat("/proc/thread-self/ns/mnt").ok()?;
    Some((st.st_dev, st.st_ino))
}

/// Moves the calling thread into a mount namespace of its own, where mounts do not reach the
/// host (events of the host's still arrive), so that its later threads can mount run folders.
/// Call it before starting the threads that make run folders. Quietly does nothing where the
/// kernel or the container refuses (without root, in a container without `CAP_SYS_ADMIN`).
pub fn own_namespace() {
    if OWN.get().is_some() || !rustix::process::geteuid().is_root() {
        return;
    }
    // SAFETY: only the mount namespace (with the filesystem information it implies: root and
    // working folder, which stay the same) is unshared, never the descriptor table, so every
    // descriptor stays valid on every thread.
    if unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::NEWNS) }.is_err() {
        return;
    }
    // From now on a mount here is not propagated to the host's namespace.
    let slave = rustix::mount::mount_change(
        c"/",
        MountPropagationFlags::DOWNSTREAM | MountPropagationFlags::REC,
    );
    if slave.is_ok()
        && let Some(id) = current()
    {
        let _ = OWN.set(id);
    }
    // A namespace whose mounts might reach the host is never used: `OWN` stays unset.
}

/// Mounts a fresh tmpfs on the empty folder `path` when the calling thread is in credlint's own
/// mount namespace; false when it is not, or the kernel refused (the folder stays as it was).
pub fn mount_on(path: &Path) -> bool {
    let Some(own) = OWN.get() else {
        return false;
    };
    if current().as_ref() != Some(own) {
        return false;
    }
    rustix::mount::mount(
        "tmpfs",
        path,
        "tmpfs",
        MountFlags::NOSUID | MountFlags::NODEV,
        SIZE,
    )
    .is_ok()
}

/// Removes the folder `path` that [`mount_on`] mounted: the tmpfs is detached with everything
/// in it (it is freed when no process uses it), then the empty folder below is removed.
pub fn remove_mounted(path: &Path) {
    let _ = rustix::mount::unmount(path, UnmountFlags::DETACH);
    let _ = std::fs::remove_dir(path);
}
