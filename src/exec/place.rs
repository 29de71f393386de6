//! Threads started on a CPU their spawner is not using.
//!
//! Linux may put a new thread on its spawner's own CPU, queued behind it while another CPU is
//! idle, until the load balancer moves it: for a run whose two threads each hold half of the
//! longest chain (a pre-commit hook's `check`), that wait is added to the whole run. So the
//! spawner hands the new thread to the CPUs it is not on, and the thread, once running, takes
//! back the spawner's full set: where it goes next, and where the threads it spawns go, stay
//! the scheduler's choice.

use std::io;
use std::thread::{Builder, JoinHandle};

/// `builder.spawn(work)`, with the new thread started on another CPU the spawner may use (on
/// Linux, when there is one; otherwise where the scheduler puts it).
pub fn spawn<T, F>(builder: Builder, work: F) -> io::Result<JoinHandle<T>>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    imp::spawn(builder, work)
}

#[cfg(target_os = "linux")]
mod imp {
    use rustix::thread::{CpuSet, sched_getaffinity, sched_getcpu, sched_setaffinity};
    use std::io;
    use std::os::unix::thread::JoinHandleExt;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::thread::{Builder, JoinHandle};

    /// A CPU mask laid out as glibc's `cpu_set_t`: 1,024 bits in 64-bit words.
    #[repr(C)]
    struct Mask([u64; 16]);

    pub(super) fn spawn<T, F>(builder: Builder, work: F) -> io::Result<JoinHandle<T>>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let Ok(allowed) = sched_getaffinity(None) else {
            return builder.spawn(work);
        };
        let here = sched_getcpu();
        let mut elsewhere = Mask([0; 16]);
        let mut any = false;
        for cpu in (0..CpuSet::MAX_CPU.min(1024)).filter(|&c| c != here && allowed.is_set(c)) {
            elsewhere.0[cpu / 64] |= 1 << (cpu % 64);
            any = true;
        }
        if !any {
            return builder.spawn(work);
        }
        // Set once the spawner has pinned the thread: only then may the thread widen its set
        // again, or the pin would land after the widening and stay.
        let placed = Arc::new(AtomicBool::new(false));
        let seen = Arc::clone(&placed);
        let handle = builder.spawn(move || {
            while !seen.load(Ordering::Acquire) {
                // Lets the spawner run, should both share this CPU.
                std::thread::yield_now();
            }
            let _ = sched_setaffinity(None, &allowed);
            work()
        })?;
        // SAFETY: the handle names a thread that is not joined (the handle is still here), so
        // its pthread_t is valid; the mask is `size_of::<Mask>()` bytes laid out as a
        // cpu_set_t, and lives for the call. A failure only leaves the thread where it is.
        unsafe {
            libc::pthread_setaffinity_np(
                handle.as_pthread_t(),
                std::mem::size_of::<Mask>(),
                (&raw const elsewhere).cast::<libc::cpu_set_t>(),
            );
        }
        placed.store(true, Ordering::Release);
        Ok(handle)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        fn cpus(set: &CpuSet) -> Vec<usize> {
            (0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect()
        }

        /// The thread runs its work with the spawner's CPUs, whether the spawner may use
        /// several or a single one (then it has no other to hand the thread to).
        #[test]
        fn the_thread_runs_its_work_and_ends_up_with_the_spawners_cpus() {
            // On a thread of its own, so that narrowing the set below leaves the harness alone.
            let checked = std::thread::spawn(|| {
                let before = cpus(&sched_getaffinity(None).unwrap());
                let handle = spawn(Builder::new().name("placed".into()), || {
                    (
                        std::thread::current().name().map(str::to_string),
                        cpus(&sched_getaffinity(None).unwrap()),
                    )
                })
                .unwrap();
                let (name, inside) = handle.join().unwrap();
                assert_eq!(name.as_deref(), Some("placed"));
                assert_eq!(inside, before);
                let mut one = CpuSet::new();
                one.set(before[0]);
                sched_setaffinity(None, &one).unwrap();
                let inside = spawn(Builder::new(), || cpus(&sched_getaffinity(None).unwrap()))
                    .unwrap()
                    .join()
                    .unwrap();
                assert_eq!(inside, vec![before[0]]);
            });
            checked.join().unwrap();
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    pub(super) fn spawn<T, F>(
        builder: std::thread::Builder,
        work: F,
    ) -> std::io::Result<std::thread::JoinHandle<T>>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        builder.spawn(work)
    }
}
