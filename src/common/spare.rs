//! A thread started as the program starts, before the command line is parsed, for the one job
//! that wants a head start (the create.py analysis of a pre-commit hook's file,
//! `cli::head_start`). Starting a thread is not free: its signal stack and the C allocator's
//! arena are mapped while the main thread faults in its own pages, and on a busy machine the
//! first instruction of the new thread ran a millisecond after the spawn. Started first, the
//! thread is running by the time the job is ready for it.

use std::sync::mpsc::{Sender, channel};
use std::thread::JoinHandle;

pub type Job = Box<dyn FnOnce() + Send>;

pub struct Spare {
    jobs: Sender<Job>,
    thread: JoinHandle<()>,
}

impl Spare {
    /// `None` when no thread can be had; the job then runs on a thread of its own, later.
    pub fn start(name: &str) -> Option<Spare> {
        let (jobs, job) = channel::<Job>();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                // Signals are for the main thread: `simulate` blocks them there to handle them
                // itself, and a thread started before that would take them instead.
                // Faults stay unblocked: they are this thread's own (a stack overflow is
                // reported as one).
                // SAFETY: fills a local signal set and changes this thread's own mask.
                unsafe {
                    let mut sent: libc::sigset_t = std::mem::zeroed();
                    libc::sigfillset(&mut sent);
                    for fault in [
                        libc::SIGSEGV,
                        libc::SIGBUS,
                        libc::SIGFPE,
                        libc::SIGILL,
                        libc::SIGTRAP,
                        libc::SIGSYS,
                    ] {
                        libc::sigdelset(&mut sent, fault);
                    }
                    libc::pthread_sigmask(libc::SIG_BLOCK, &sent, std::ptr::null_mut());
                }
                // Dropped unused (a command that has no such job), the sender closes the
                // channel and the thread ends.
                if let Ok(job) = job.recv() {
                    job();
                }
            })
            .ok()?;
        Some(Spare { jobs, thread })
    }

    /// Runs `job` on the spare thread and returns the thread; `None` when the thread is gone
    /// (it cannot be, short of a panic before the job arrived), and the job with it.
    pub fn run(self, job: Job) -> Option<JoinHandle<()>> {
        self.jobs.send(job).ok()?;
        Some(self.thread)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_runs_on_the_spare_thread_and_an_unused_spare_ends() {
        let spare = Spare::start("credlint-test-spare").unwrap();
        let (tell, told) = channel();
        let thread = spare
            .run(Box::new(move || {
                tell.send(std::thread::current().name().map(str::to_string))
                    .unwrap();
            }))
            .unwrap();
        thread.join().unwrap();
        assert_eq!(told.recv().unwrap().as_deref(), Some("credlint-test-spare"));

        // The job runs with every signal blocked, so a signal sent to the process goes to a
        // thread that expects it.
        let spare = Spare::start("credlint-test-mask").unwrap();
        let (tell, told) = channel();
        let thread = spare
            .run(Box::new(move || {
                // SAFETY: reads this thread's mask into a local set.
                let blocked = unsafe {
                    let mut mask: libc::sigset_t = std::mem::zeroed();
                    libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut mask);
                    [libc::SIGINT, libc::SIGTERM, libc::SIGHUP]
                        .iter()
                        .all(|&s| libc::sigismember(&mask, s) == 1)
                };
                tell.send(blocked).unwrap();
            }))
            .unwrap();
        thread.join().unwrap();
        assert!(told.recv().unwrap());

        let unused = Spare::start("credlint-test-unused").unwrap();
        let thread = unused.thread;
        drop(unused.jobs);
        // Ends rather than waits for ever: join returns.
        thread.join().unwrap();
    }
}
