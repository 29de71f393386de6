//! Threads started on a CPU their spawner is not using.
//!
//! Linux put a new thread on its spawner's own CPU, behind it, while the other CPU stayed idle:
//! on the 2-core virtual machine credlint is measured on, a thread spawned by a busy thread ran
//! its first instruction 1.6 to 3.7 ms later; pinned to the other CPU, after 0.1 ms. A one-file
//! `check` has two such threads on its longest chain (the rest of `check` beside the create.py
//! analysis, and the rules compiled beside the inputs read), so the spawner hands each new
//! thread to the CPUs it is not on, and the thread, once running, takes back the spawner's full
//! set: where it goes next, and where the threads it spawns go, stay the scheduler's choice.

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
    use std::io;
    use std::os::unix::thread::JoinHandleExt;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::thread::{Builder, JoinHandle};

    pub(super) fn spawn<T, F>(builder: Builder, work: F) -> io::Result<JoinHandle<T>>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let Some((allowed, elsewhere)) = masks() else {
            return builder.spawn(work);
        };
        // Set once the spawner has pinned the thread: only then may the thread widen its set
        // again, or the pin would land after the widening and stay.
        let placed = Arc::new(AtomicBool::new(false));
        let seen = Arc::clone(&placed);
        let handle = builder.spawn(move || {
            while !seen.load(Ordering::Acquire) {
                // Lets the spawner run, should both share this CPU.
                std::thread::yield_now();
            }
            set_own(&allowed);
            work()
        })?;
        // SAFETY: the handle names a thread that is not joined (the handle is still here), so
        // its pthread_t is valid; the mask is a valid cpu_set_t. A failure only leaves the
        // thread where the scheduler put it.
        unsafe {
            libc::pthread_setaffinity_np(
                handle.as_pthread_t(),
                std::mem::size_of::<libc::cpu_set_t>(),
                &elsewhere,
            );
        }
        placed.store(true, Ordering::Release);
        Ok(handle)
    }

    /// The CPUs this thread may use, and those of them it is not running on; `None` when that
    /// leaves none, or the system does not say.
    fn masks() -> Option<(libc::cpu_set_t, libc::cpu_set_t)> {
        let allowed = own_mask()?;
        // SAFETY: only reads which CPU the calling thread is on.
        let here = usize::try_from(unsafe { libc::sched_getcpu() }).ok()?;
        let mut elsewhere = allowed;
        // SAFETY: clears a bit of a valid cpu_set_t, below its size; counts a valid one.
        unsafe {
            if here < libc::CPU_SETSIZE as usize {
                libc::CPU_CLR(here, &mut elsewhere);
            }
            (libc::CPU_COUNT(&elsewhere) > 0).then_some((allowed, elsewhere))
        }
    }

    /// The CPUs this thread may use.
    pub(super) fn own_mask() -> Option<libc::cpu_set_t> {
        // SAFETY: a zeroed cpu_set_t is the empty set; the call only writes into it.
        unsafe {
            let mut mask: libc::cpu_set_t = std::mem::zeroed();
            (libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut mask) == 0)
                .then_some(mask)
        }
    }

    pub(super) fn set_own(mask: &libc::cpu_set_t) {
        // SAFETY: sets the calling thread's own affinity from a valid cpu_set_t.
        unsafe {
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), mask);
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

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::imp::{own_mask, set_own};
    use std::thread::Builder;

    fn cpus(mask: &libc::cpu_set_t) -> Vec<usize> {
        // SAFETY: reads a valid cpu_set_t.
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| unsafe { libc::CPU_ISSET(c, mask) })
            .collect()
    }

    #[test]
    fn the_thread_runs_its_work_and_ends_up_with_the_spawners_cpus() {
        // On a thread of its own, so that narrowing the set below leaves the harness alone.
        let checked = std::thread::spawn(|| {
            let before = cpus(&own_mask().unwrap());
            let handle = super::spawn(Builder::new().name("placed".into()), || {
                (
                    std::thread::current().name().map(str::to_string),
                    cpus(&own_mask().unwrap()),
                )
            })
            .unwrap();
            let (name, inside) = handle.join().unwrap();
            assert_eq!(name.as_deref(), Some("placed"));
            // Pinned elsewhere to start, then widened again: never left with fewer CPUs.
            assert_eq!(inside, before);
            // A spawner allowed a single CPU has no other to hand the thread to: it still
            // runs, with that one CPU.
            let only = before[0];
            // SAFETY: a zeroed cpu_set_t is the empty set.
            let mut one: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            // SAFETY: `only` is below CPU_SETSIZE (it came from a set).
            unsafe { libc::CPU_SET(only, &mut one) };
            set_own(&one);
            let inside = super::spawn(Builder::new(), || cpus(&own_mask().unwrap()))
                .unwrap()
                .join()
                .unwrap();
            assert_eq!(inside, vec![only]);
        });
        checked.join().unwrap();
    }
}
