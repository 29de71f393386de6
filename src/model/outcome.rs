//! What a run produces, and what linting one file leaves behind: the types every stage after
//! linting reads (the cache keeps a file's [`FileOut`], the reports read an [`Outcome`]).

use crate::load::input::InputError;
use crate::load::source::Loc;
use crate::model::bundle::{Bundle, Member};
use crate::model::writers::Writer;
use crate::model::{Finding, ObjectRef};

/// The annotation that suppresses findings on an object.
pub const IGNORE_ANNOTATION: &str = "credlint.io/ignore";

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub files: usize,
    pub documents: usize,
    pub objects: usize,
    pub bundles: usize,
    pub errors: usize,
    pub warnings: usize,
    /// `simulate` only: how much it ran.
    pub simulated: Option<Simulation>,
    /// `simulate` only: each layer of the programs' sandbox, in the order reports name them.
    pub sandbox: Vec<SandboxLayer>,
}

/// One layer of the sandbox `simulate` runs the programs in: a namespace, the pod's user,
/// seccomp, Landlock, ... (docs/simulate.md).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SandboxLayer {
    pub name: String,
    /// Why it did not hold for every program; `None`: it held.
    pub missing: Option<String>,
}

/// How much a `simulate` run ran, over every bundle simulated (a bundle's verdict taken from
/// the cache counts what its simulation ran, so the figures do not depend on the cache).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Simulation {
    pub scenarios: usize,
    /// Runs of the programs.
    pub runs: usize,
}

/// A `credlint.io/ignore` annotation as written: which object carries it and where. What it
/// means (rules, reason) is read by the suppression step, not by the linter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IgnoreAnnotation {
    pub object: ObjectRef,
    pub value: String,
    pub loc: Loc,
}

/// A whole run: every finding, sorted, and what the commands after linting need.
pub struct Outcome {
    /// Display paths, indexed by `Loc::file`.
    pub files: Vec<String>,
    pub findings: Vec<Finding>,
    pub summary: Summary,
    /// The bundles, where the run was asked to keep them (JUnit, simulate).
    pub bundles: Vec<Bundle>,
    /// The ids of the bundles with a member in one of the files the run was told to mark
    /// (empty for other runs): what `--pre-commit` narrows its report to.
    pub touched: std::collections::HashSet<String>,
    /// Paths that could not be read: the run exits 2.
    pub input_errors: Vec<InputError>,
    /// Every `credlint.io/ignore` annotation met, in file order.
    pub ignores: Vec<IgnoreAnnotation>,
    pub timings: Timings,
    /// Each bundle's id and the files its members lie in, sorted: what a later run of the same
    /// files needs to name the bundles it touches. Gathered only for a memo (empty otherwise).
    pub bundle_files: Vec<(String, Vec<usize>)>,
}

/// What a [`Memo`] keeps of a whole run, for a later run of the very same files: everything of
/// its [`Outcome`] that does not depend on which files that run marks or how long it took.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct RunOut {
    pub findings: Vec<Finding>,
    /// The counts of `check` (the `simulate` fields are not kept).
    pub summary: Summary,
    pub ignores: Vec<IgnoreAnnotation>,
    pub bundle_files: Vec<(String, Vec<usize>)>,
}

/// What linting one file leaves behind: all a later run needs to skip the file (the cache
/// keeps it).
#[derive(Debug, Default)]
pub struct FileOut {
    pub findings: Vec<Finding>,
    pub members: Vec<Member>,
    /// Objects that write Secrets or grant rights (the one-writer rules compare them with the
    /// bundles once every file is read).
    pub writers: Vec<Writer>,
    pub ignores: Vec<IgnoreAnnotation>,
    pub documents: usize,
    pub objects: usize,
    pub timings: Timings,
}

impl FileOut {
    /// Appends `other`, a later part of the same file.
    pub fn append(&mut self, mut other: FileOut) {
        self.timings.add(other.timings);
        self.findings.append(&mut other.findings);
        self.members.append(&mut other.members);
        self.writers.append(&mut other.writers);
        self.ignores.append(&mut other.ignores);
        self.documents += other.documents;
        self.objects += other.objects;
    }
}

/// Where a run spent its time (`check --timings`). Reading and parsing are summed over threads,
/// as are the rules; `wall` is the run from start to end.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Timings {
    /// Reading files.
    pub read: std::time::Duration,
    /// Cutting files into documents and parsing them: the YAML parse alone.
    pub parse: std::time::Duration,
    /// Everything done with a parsed document: object, text and input rules, facts.
    pub rules: std::time::Duration,
    /// Assembling bundles and their rules.
    pub bundles: std::time::Duration,
    pub wall: std::time::Duration,
    /// Files whose result came from the cache (a count, not a time: it says what a warm run
    /// skipped whatever the machine's speed).
    pub cached: usize,
    /// Of those, files the cache knew unchanged without their being read at all.
    pub unread: usize,
    /// The whole run's result came from the cache (every file unread, no bundle assembled).
    pub whole: bool,
}

impl Timings {
    /// Adds the per-file parts of `other` (not its wall time or bundling).
    pub fn add(&mut self, other: Timings) {
        self.read += other.read;
        self.parse += other.parse;
        self.rules += other.rules;
        self.cached += other.cached;
        self.unread += other.unread;
    }
}

/// The key a [`Memo`] files one file's result under, and the digest of the file's bytes alone
/// it was made from (what the memo keeps to know a file's key without reading it again).
pub struct MemoKey {
    pub key: [u8; 32],
    pub content: [u8; 32],
}

/// Results of earlier runs, looked up by a file's bytes (`check`'s cache). A run only asks and
/// tells; where results are kept, and what else the key holds, is the memo's business.
pub trait Memo: Sync {
    /// The key of a file with these bytes, read as YAML by detect-secrets or not
    /// ([`crate::load::source::yaml_name`]: the only fact of its name verdicts depend on, so a
    /// renamed or copied file finds its entry).
    fn key(&self, yaml_name: bool, bytes: &[u8]) -> MemoKey;
    /// The key of the bytes now at `path`, without reading them, when the memo can tell them
    /// from the file's metadata alone (it saw this very file, unchanged since, read before);
    /// `None` sends the run to read the file.
    fn key_unread(&self, _path: &std::path::Path, _yaml_name: bool) -> Option<MemoKey> {
        None
    }
    /// Tells the memo that the file `seen` describes (its metadata just before the read) held
    /// the bytes `key` was made from.
    fn read_as(&self, _seen: &std::fs::Metadata, _key: &MemoKey) {}
    /// Tells the memo that a run of the files named `names` (as reports show them, in order)
    /// looks its files up next: a memo may fetch at once what the last such run used.
    fn begin(&self, _names: &[&str]) {}
    /// Tells the memo that the run goes file by file (a file must be read): a memo may fetch
    /// now what such a run looks up.
    fn file_by_file(&self) {}
    /// The result filed under `key`, its places moved to file number `file`.
    fn recall(&self, key: &MemoKey, file: usize) -> Option<FileOut>;
    /// Files the result of linting file number `file`.
    fn remember(&self, key: &MemoKey, file: usize, out: &FileOut);
    /// The whole result filed under `key` (of every file's name and key, in order, see
    /// `exec`), for a run of `files` files; `None` sends the run file by file.
    fn recall_run(&self, _key: &[u8; 32], _files: usize) -> Option<RunOut> {
        None
    }
    /// Files a whole run's result under `key`.
    fn remember_run(&self, _key: &[u8; 32], _out: &Outcome) {}
}
