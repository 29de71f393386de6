//! The executor: every decision of how a run is scheduled, and none of what it finds. The
//! threads (one pool, made on first need), the windows of files linted while the previous one
//! is merged, whether a large file is read, scanned and linted in pieces side by side, where
//! the held bundles are checked, the rules compiled while a folder is walked, the create.py
//! analysis begun ahead of linting, and the allocator's policy all live here. The stages below
//! decide every finding on the calling thread and take a [`Spread`] where work can be split.
//!
//! `--threads 1` runs everything on the calling thread with [`Serial`]: the reference every
//! other thread count is tested against (`tests/integrity.rs`, the tests below).

use crate::common::spread::{Serial, Spread};
use crate::lint::file::SEGMENT_BYTES;
use crate::lint::run::Run;
use crate::lint::{Linter, Options};
use crate::load::input::{self, InputError, InputFile};
use crate::model::outcome::{FileOut, Memo, MemoKey, Outcome, RunOut, Timings};
use rayon::prelude::*;
use std::collections::HashSet;

pub mod place;

/// The stack of each worker thread. CEL evaluation recurses once per level of an expression
/// (user policies up to `kyverno::support::MAX_DEPTH`), and a metered call takes several frames:
/// the default 2 MiB is not enough for the deepest in a debug build. Only what is used is
/// committed.
pub const WORKER_STACK: usize = 16 << 20;

/// A text at least this large is read and scanned in pieces on the pool.
const PIECES_FROM: usize = 4 << 20;
/// Bytes per piece: whole pages, and a multiple of the line index's blocks.
const PIECE: usize = 1 << 20;
/// Files per thread in a window: enough that the threads' hand-overs (a wake-up each) are few.
const WINDOW_PER_THREAD: usize = 64;

/// Work spread over a pool's threads: several items side by side, a large text in pieces.
#[derive(Clone, Copy)]
pub struct Pool<'p>(&'p rayon::ThreadPool);

impl Spread for Pool<'_> {
    fn piece_bytes(&self, len: usize) -> Option<usize> {
        (len >= PIECES_FROM).then_some(PIECE)
    }

    fn map<I: Sync, T: Send>(&self, items: &[I], f: impl Fn(&I) -> T + Sync + Send) -> Vec<T> {
        if items.len() < 2 {
            return Serial.map(items, f);
        }
        self.0.install(|| items.par_iter().map(f).collect())
    }

    fn map_mut<I: Send, T: Send>(
        &self,
        items: &mut [I],
        f: impl Fn(&mut I) -> T + Sync + Send,
    ) -> Vec<T> {
        if items.len() < 2 {
            return Serial.map_mut(items, f);
        }
        self.0.install(|| items.par_iter_mut().map(f).collect())
    }

    fn join<A: Send, B: Send>(
        &self,
        a: impl FnOnce() -> A + Send,
        b: impl FnOnce() -> B + Send,
    ) -> (A, B) {
        self.0.install(|| rayon::join(a, b))
    }
}

/// What the allocator should do with the memory a run frees, decided once from its inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Memory {
    /// A small run (a pre-commit hook's few files): keep it, every page is soon reused or
    /// dropped at exit, and giving one back costs a system call.
    Keep,
    /// A large run: give back what is clearly not reused, since its peak is what counts.
    Return,
    /// Standard input, of a size known only at its end: give back at once, so a buffer grown
    /// by doubling does not hold its predecessors too.
    ReturnAtOnce,
}

/// Runs of at most this many files, of at most [`SMALL_RUN_BYTES`] together, are small.
const SMALL_RUN_FILES: usize = 64;
const SMALL_RUN_BYTES: usize = 4 << 20;

impl Memory {
    /// The policy for a run of `files` (listed, not yet read).
    pub fn for_inputs(files: &[InputFile]) -> Memory {
        if files.iter().any(|f| f.origin == input::Origin::Stdin) {
            return Memory::ReturnAtOnce;
        }
        if files.len() > SMALL_RUN_FILES {
            return Memory::Return;
        }
        let total: Option<usize> = files.iter().map(input::size).sum();
        match total {
            Some(total) if total <= SMALL_RUN_BYTES => Memory::Keep,
            _ => Memory::Return,
        }
    }
}

/// How a run is scheduled: the linter, and the threads it may use.
pub struct Executor {
    linter: Linter,
    /// Threads to lint with (`None`: one per core; 1: the calling thread alone).
    threads: Option<usize>,
    /// The pool, made on the first run that needs it and kept: a pool per run would start and
    /// stop threads for every run of a long-lived executor (the fuzzer, the property tests).
    pool: std::sync::OnceLock<Option<rayon::ThreadPool>>,
}

impl Executor {
    /// An executor whose rules are compiled now.
    pub fn new(options: Options) -> Result<Executor, String> {
        Ok(Executor::with(Linter::new(options)?))
    }

    /// An executor whose rules are compiled when a file first needs them.
    pub fn deferred(options: Options) -> Executor {
        Executor::with(Linter::deferred(options))
    }

    fn with(linter: Linter) -> Executor {
        Executor {
            linter,
            threads: None,
            pool: std::sync::OnceLock::new(),
        }
    }

    /// The same executor, linting with `threads` threads (`None`: one per core).
    pub fn threads(mut self, threads: Option<usize>) -> Executor {
        self.threads = threads;
        self
    }

    pub fn linter(&self) -> &Linter {
        &self.linter
    }

    /// The pool, unless the run is to stay on the calling thread.
    fn pool(&self) -> Option<&rayon::ThreadPool> {
        if self.threads == Some(1) {
            return None;
        }
        self.pool
            .get_or_init(|| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(self.threads.unwrap_or(0))
                    .stack_size(WORKER_STACK)
                    .build()
                    .ok()
            })
            .as_ref()
    }

    pub fn run(&self, inputs: &[InputFile], input_errors: Vec<InputError>) -> Outcome {
        self.run_marking(inputs, input_errors, None, &HashSet::new())
    }

    /// A run that takes what `memo` holds for a file's bytes instead of linting it again, and
    /// gives it what it lints.
    pub fn run_with(
        &self,
        inputs: &[InputFile],
        input_errors: Vec<InputError>,
        memo: Option<&dyn Memo>,
    ) -> Outcome {
        self.run_marking(inputs, input_errors, memo, &HashSet::new())
    }

    /// [`run_with`](Self::run_with), also naming in [`Outcome::touched`] every bundle with a
    /// member in one of the `marked` inputs (by index): what `--pre-commit` narrows its report
    /// to, without keeping every bundle to the end of the run.
    pub fn run_marking(
        &self,
        inputs: &[InputFile],
        input_errors: Vec<InputError>,
        memo: Option<&dyn Memo>,
        marked: &HashSet<usize>,
    ) -> Outcome {
        let started = std::time::Instant::now();
        // One small file (a pre-commit hook's) is linted on this thread: starting threads and
        // handing it over would cost more than it saves.
        let alone = inputs.len() == 1
            && inputs
                .first()
                .and_then(input::size)
                .is_some_and(|n| n <= SEGMENT_BYTES);
        let pool = if alone { None } else { self.pool() };
        // A run whose every file the memo knows unchanged may have been run whole before: its
        // result is taken as it was left, without a file's entry read or a bundle assembled.
        let options = self.linter.options();
        let whole = memo.filter(|_| {
            input_errors.is_empty()
                && options.policies.is_none()
                && !options.keep.bundles
                && !options.keep.programs
        });
        // The memo learns which files the run holds (it may keep what such a run uses)...
        if let Some(memo) = memo {
            memo.begin(
                &inputs
                    .iter()
                    .map(|f| f.display.as_str())
                    .collect::<Vec<_>>(),
            );
        }
        // ...then is asked, once and up front, every file's key it knows without a read: the
        // whole run's key is made of them, and each file's lookup below takes its own.
        let known: Vec<Option<MemoKey>> = match memo {
            None => Vec::new(),
            Some(memo) => {
                // The first file that must be read rules the whole run out: the memo is told
                // at once, so that what a run file by file needs is fetched while the rest
                // are asked.
                let told = std::sync::atomic::AtomicBool::new(false);
                let ask = |id: usize| {
                    let key = key_unread(memo, &inputs[id]);
                    if key.is_none() && !told.swap(true, std::sync::atomic::Ordering::Relaxed) {
                        memo.file_by_file();
                    }
                    key
                };
                match pool {
                    None => (0..inputs.len()).map(ask).collect(),
                    Some(pool) => {
                        pool.install(|| (0..inputs.len()).into_par_iter().map(ask).collect())
                    }
                }
            }
        };
        let run_key = whole.and_then(|_| run_key(inputs, &known));
        if let (Some(memo), Some(key)) = (whole, &run_key)
            && let Some(out) = memo.recall_run(key, inputs.len())
        {
            return recalled(inputs, out, marked, started);
        }
        let mut run = Run::new(&self.linter, marked, input_errors);
        if run_key.is_some() {
            run = run.recording();
        }
        let known = &known;
        let outcome = match pool {
            None => {
                for (id, file) in inputs.iter().enumerate() {
                    run.add(
                        file,
                        self.lint_file(inputs, id, memo, known, &Serial),
                        &Serial,
                    );
                }
                run.finish(&Serial)
            }
            Some(pool) => self.run_windows(pool, run, inputs, memo, known),
        };
        if let (Some(memo), Some(key)) = (whole, &run_key)
            && outcome.input_errors.is_empty()
        {
            memo.remember_run(key, &outcome);
        }
        outcome
    }

    /// Files linted a window at a time on `pool` and merged in input order while the next
    /// window is linted, so a large tree never holds more than two windows' results.
    fn run_windows(
        &self,
        pool: &rayon::ThreadPool,
        mut run: Run,
        inputs: &[InputFile],
        memo: Option<&dyn Memo>,
        known: &[Option<MemoKey>],
    ) -> Outcome {
        let spread = Pool(pool);
        let window = pool.current_num_threads() * WINDOW_PER_THREAD;
        let windows: Vec<std::ops::Range<usize>> = (0..inputs.len())
            .step_by(window)
            .map(|from| from..(from + window).min(inputs.len()))
            .collect();
        let lint_window = |range: std::ops::Range<usize>| -> Vec<Result<FileOut, String>> {
            range
                .into_par_iter()
                .map(|id| self.lint_file(inputs, id, memo, known, &spread))
                .collect()
        };
        pool.install(|| {
            let mut linted = windows.first().cloned().map(lint_window);
            for (i, range) in windows.iter().enumerate() {
                let results = linted.take().unwrap_or_default();
                let merge = |run: &mut Run| {
                    for (file, result) in inputs[range.clone()].iter().zip(results) {
                        run.add(file, result, &spread);
                    }
                };
                linted = match windows.get(i + 1) {
                    Some(next) => rayon::join(|| merge(&mut run), || lint_window(next.clone())).1,
                    None => {
                        merge(&mut run);
                        Vec::new()
                    }
                }
                .into();
            }
        });
        run.finish(&spread)
    }

    /// One file's result: from the memo when it holds the file, else read and linted (and
    /// given to the memo).
    fn lint_file(
        &self,
        inputs: &[InputFile],
        id: usize,
        memo: Option<&dyn Memo>,
        known: &[Option<MemoKey>],
        spread: &impl Spread,
    ) -> Result<FileOut, String> {
        let started = std::time::Instant::now();
        let name = &inputs[id].display;
        let yaml_name = crate::load::source::yaml_name(name);
        // Looking a file up is counted as reading it.
        let served = |mut out: FileOut, unread: bool| {
            out.timings.read += started.elapsed();
            out.timings.cached += 1;
            out.timings.unread += usize::from(unread);
            Ok(out)
        };
        // A file the memo knows unchanged is not read at all.
        if let (Some(memo), Some(Some(key))) = (memo, known.get(id))
            && let Some(out) = memo.recall(key, id)
        {
            return served(out, true);
        }
        let (bytes, seen) = input::read_seen(&inputs[id], spread)?;
        let key = memo.map(|m| m.key(yaml_name, &bytes));
        if let (Some(memo), Some(key)) = (memo, &key) {
            if let Some(seen) = &seen {
                memo.read_as(seen, key);
            }
            if let Some(out) = memo.recall(key, id) {
                return served(out, false);
            }
        }
        let read = started.elapsed();
        let mut out = self.linter.lint_bytes(id, name, &bytes, spread)?;
        if let (Some(memo), Some(key)) = (memo, &key) {
            memo.remember(key, id, &out);
        }
        out.timings.read += read;
        Ok(out)
    }
}

/// The key of `file`'s bytes when `memo` knows them without reading the file.
fn key_unread(memo: &dyn Memo, file: &InputFile) -> Option<MemoKey> {
    match &file.origin {
        input::Origin::File(path) => {
            memo.key_unread(path, crate::load::source::yaml_name(&file.display))
        }
        _ => None,
    }
}

/// The key a whole run is filed under: every file's name as reports show it and its key, in
/// order (each file's key holds everything else a verdict depends on); `None` when a file's
/// key is not known without reading it.
fn run_key(inputs: &[InputFile], known: &[Option<MemoKey>]) -> Option<[u8; 32]> {
    use sha2::{Digest, Sha256};
    let mut state = Sha256::new();
    state.update(b"credlint-run\0");
    state.update((inputs.len() as u64).to_le_bytes());
    for (file, key) in inputs.iter().zip(known) {
        state.update((file.display.len() as u64).to_le_bytes());
        state.update(file.display.as_bytes());
        state.update(key.as_ref()?.key);
    }
    (known.len() == inputs.len()).then(|| state.finalize().into())
}

/// A run's outcome as a memo kept it, with the bundles it touches named for `marked`.
fn recalled(
    inputs: &[InputFile],
    out: RunOut,
    marked: &HashSet<usize>,
    started: std::time::Instant,
) -> Outcome {
    let touched = out
        .bundle_files
        .iter()
        .filter(|(_, files)| files.iter().any(|f| marked.contains(f)))
        .map(|(id, _)| id.clone())
        .collect();
    Outcome {
        files: inputs.iter().map(|f| f.display.clone()).collect(),
        findings: out.findings,
        summary: out.summary,
        bundles: Vec::new(),
        touched,
        input_errors: Vec::new(),
        ignores: out.ignores,
        timings: Timings {
            cached: inputs.len(),
            unread: inputs.len(),
            whole: true,
            wall: started.elapsed(),
            ..Timings::default()
        },
        bundle_files: out.bundle_files,
    }
}

/// `walk` on this thread while the rules compile on another: a tree of thousands of files
/// takes longer to list than the rules to compile. The compiling thread is not waited for: a
/// file the cache does not hold waits for the rules when it needs them, and a run whose every
/// file the cache holds ends without them.
pub fn compile_while<T>(
    executor: std::sync::Arc<Executor>,
    walk: impl FnOnce() -> T,
) -> (T, std::sync::Arc<Executor>) {
    let compiling = std::sync::Arc::clone(&executor);
    // No thread to be had: the first file that needs the rules compiles them. A failure is met
    // again, and reported, by that file.
    let _ = place::spawn(
        std::thread::Builder::new().name("credlint-rules".into()),
        move || {
            let _ = compiling.linter.compiled();
        },
    );
    (walk(), executor)
}

/// Inputs up to this size have their programs analysed ahead of linting.
const AHEAD_BYTES: usize = 1024 * 1024;

/// Whether a file (display name, bytes) has its result in `check`'s cache: linting will not
/// read it, so its programs need no analysis.
pub type Held = Box<dyn Fn(&str, &[u8]) -> bool + Send>;

/// The analysis begun by [`analyse_ahead`], waiting to learn what the cache holds.
#[derive(Default)]
pub struct Ahead(Option<std::sync::mpsc::Sender<Option<Held>>>);

impl Ahead {
    /// Tells the analysis which files the cache holds (`None`: no cache, analyse them all).
    /// Dropped untold (the run ended before linting), the analysis stops.
    pub fn cache(self, held: Option<Held>) {
        if let Some(tell) = self.0 {
            let _ = tell.send(held);
        }
    }
}

/// The analysis [`analyse_ahead`] returns, for the caller to run on the thread it chooses.
pub type Job = Box<dyn FnOnce() + Send>;

/// The static analysis of every create.py in `files`, as a job to run beside the rest of the
/// command from the moment the command line is read, where the inputs are small (a pre-commit
/// hook's few files): it is the largest cost of such a run, and then overlaps reading the
/// settings, compiling the rules and linting the other objects; linting finds each result kept
/// (or waits for it, never repeating it). The job reads the files and finds their programs,
/// then waits to learn what the cache holds before it analyses. Larger inputs are left alone
/// (`None`): there the analysis of a program shared by many bundles is kept after the first.
///
/// The caller runs the job on the process's first thread and the rest of the command on a new
/// one: the C parser allocates with the system's malloc, which grows the first thread's heap in
/// one piece but gives any other thread an arena of its own, grown a page at a time.
pub fn analyse_ahead(files: &[InputFile]) -> Option<(Ahead, Job)> {
    let sizes: Option<usize> = files.iter().map(input::size).sum();
    if files.is_empty() || sizes.is_none_or(|total| total > AHEAD_BYTES) {
        return None;
    }
    let files = files.to_vec();
    let (tell, told) = std::sync::mpsc::channel::<Option<Held>>();
    let job = move || {
        let mut answer: Option<Option<Held>> = None;
        for file in &files {
            let Ok(bytes) = input::read(file) else {
                continue;
            };
            let scripts = crate::lint::checks::runtime::scripts(&bytes);
            if scripts.is_empty() {
                continue;
            }
            let held = match &answer {
                Some(held) => held,
                None => match told.recv() {
                    Ok(held) => answer.insert(held),
                    Err(_) => return,
                },
            };
            if held
                .as_ref()
                .is_some_and(|held| held(&file.display, &bytes))
            {
                continue;
            }
            for script in scripts {
                crate::runtime::python::check_script(&script);
            }
        }
    };
    Some((Ahead(Some(tell)), Box::new(job)))
}

#[cfg(test)]
mod tests;
