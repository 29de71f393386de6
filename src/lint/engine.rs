//! A run of `credlint check`: every file read and linted on its own (input, object and text
//! rules; bundle facts kept), then bundles assembled across files and their rules run, then the
//! findings sorted.

use crate::lint::catalog::{Catalog, RESOURCES, Resource, Validation};
use crate::lint::cel::reads::{self, Pattern};
use crate::lint::cel::{Cel, Compiled, RuleSet, Verdict};
use crate::lint::checks::runtime::{self, Checked};
use crate::lint::checks::writers::Render;
use crate::lint::checks::{Emit, bundle_rules, plan, text, wiring};
use crate::lint::verdicts::{ObjectVerdicts, VerdictCache, Verdicts};
use crate::load::input::{self, InputError, InputFile};
use crate::load::locate::span_for;
use crate::load::source::Source;
use crate::load::stream;
use crate::load::yaml::{self, Node, Parsed, Span};
use crate::model::bundle::{self, Bundle, Member, MemberKind, Owner};
use crate::model::members::{self, Keep};
use crate::model::object::{self, Object};
use crate::model::writers::Writer;
use crate::model::{Finding, ObjectRef, Severity, bundle_id};
use rayon::prelude::*;
use std::collections::HashMap;

#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The configured CREDENTIALS_IMAGE, if any (`job-image-pinned`).
    pub credentials_image: Option<String>,
    pub keep: Keep,
    /// Kyverno ValidatingPolicies applied to every object (`check --policy`).
    pub policies: Option<std::sync::Arc<crate::lint::kyverno::PolicySet>>,
    /// Threads that lint files and segments in parallel (`None`: one per core).
    pub threads: Option<usize>,
    /// Where `pragma-misplaced` looks: every file read (`true`, `[rules.pragma-misplaced]
    /// scope = "all"`), or only the files that hold a bundle member (the default).
    pub pragma_everywhere: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub files: usize,
    pub documents: usize,
    pub objects: usize,
    pub bundles: usize,
    pub errors: usize,
    pub warnings: usize,
}

/// A `credlint.io/ignore` annotation as written: which object carries it and where. What it
/// means (rules, reason) is read by the suppression step, not by the engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IgnoreAnnotation {
    pub object: ObjectRef,
    pub value: String,
    pub loc: crate::load::source::Loc,
}

/// The annotation that suppresses findings on an object.
pub const IGNORE_ANNOTATION: &str = "credlint.io/ignore";

pub struct Outcome {
    /// Display paths, indexed by `Loc::file`.
    pub files: Vec<String>,
    pub findings: Vec<Finding>,
    pub summary: Summary,
    pub bundles: Vec<Bundle>,
    /// The ids of the bundles with a member in one of the files [`Engine::run_marking`] was
    /// given (empty for other runs).
    pub touched: std::collections::HashSet<String>,
    /// Paths that could not be read: the run exits 2.
    pub input_errors: Vec<InputError>,
    /// Every `credlint.io/ignore` annotation met, in file order.
    pub ignores: Vec<IgnoreAnnotation>,
    pub timings: Timings,
}

struct ObjectRule {
    id: &'static str,
    resources: &'static [&'static Resource],
    condition: Option<&'static str>,
    /// Each validation with its slot in the verdict cache.
    validations: Vec<(Compiled, &'static Validation, usize)>,
}

pub struct Engine {
    /// The threads that lint, made on the first run and kept: a pool per run would start and
    /// stop threads for every run of a long-lived engine (the fuzzer, the property tests).
    pool: std::sync::OnceLock<Option<rayon::ThreadPool>>,
    catalog: &'static Catalog,
    /// The rules compiled: at once by [`Engine::new`], on first need by [`Engine::deferred`]
    /// (a run whose every file comes from the cache needs none of them).
    programs: std::sync::OnceLock<Result<Programs, String>>,
    options: Options,
}

/// The compiled rules and what their verdicts are remembered by.
pub struct Programs {
    cel: Cel,
    rules: Vec<ObjectRule>,
    rule_set: RuleSet,
    /// Match conditions with their slot in the verdict cache.
    conditions: HashMap<&'static str, (Compiled, usize)>,
    /// Verdicts by the projection of the object each program can observe, one per program.
    verdicts: Vec<VerdictCache>,
    /// Per resource (as in `RESOURCES`), the programs its objects can need.
    profiles: Vec<Profile>,
    /// Schema verdicts (clean or not) by the shape of the object (`schema::shape`).
    shapes: VerdictCache<bool>,
}

/// The programs that can run on objects of one resource.
struct Profile {
    resource: &'static Resource,
    /// The rules for the resource, by index in `Engine::rules`.
    rules: Vec<usize>,
    /// What the member condition, the rules' conditions and their validations read, together.
    pattern: Pattern,
    /// All the verdicts an object needed, by its key on `pattern`.
    verdicts: VerdictCache<Verdicts>,
}

/// A create.py another thread is analysing, taken up after the rest of its documents.
struct Waiting {
    later: runtime::Later,
    reference: ObjectRef,
    bundle: Option<String>,
}

/// The stack of each worker thread. CEL evaluation recurses once per level of an expression
/// (user policies up to `kyverno::support::MAX_DEPTH`), and a metered call takes several frames:
/// the default 2 MiB is not enough for the deepest in a debug build. Only what is used is
/// committed.
pub const WORKER_STACK: usize = 16 << 20;

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
    /// Every object read, so that a finding on the raw text names the object it stands in;
    /// used within the file only (a cached result has its findings named already).
    pub(crate) places: Vec<Place>,
    pub documents: usize,
    pub objects: usize,
    pub timings: Timings,
}

/// The key a [`Memo`] files one file's result under, and the digest of the file's bytes alone
/// it was made from (what the memo keeps to know a file's key without reading it again).
pub struct MemoKey {
    pub key: [u8; 32],
    pub content: [u8; 32],
}

/// Results of earlier runs, looked up by a file's bytes (`check`'s cache). The engine only asks
/// and tells; where results are kept, and what else the key holds, is the memo's business.
pub trait Memo: Sync {
    /// The key of a file with these bytes, read as YAML by detect-secrets or not
    /// ([`crate::load::source::yaml_name`]: the only fact of its name verdicts depend on, so a
    /// renamed or copied file finds its entry).
    fn key(&self, yaml_name: bool, bytes: &[u8]) -> MemoKey;
    /// The key of the bytes now at `path`, without reading them, when the memo can tell them
    /// from the file's metadata alone (it saw this very file, unchanged since, read before);
    /// `None` sends the engine to read the file.
    fn key_unread(&self, _path: &std::path::Path, _yaml_name: bool) -> Option<MemoKey> {
        None
    }
    /// Tells the memo that the file `seen` describes (its metadata just before the read) held
    /// the bytes `key` was made from.
    fn read_as(&self, _seen: &std::fs::Metadata, _key: &MemoKey) {}
    /// The result filed under `key`, its places moved to file number `file`.
    fn recall(&self, key: &MemoKey, file: usize) -> Option<FileOut>;
    /// Files the result of linting file number `file`.
    fn remember(&self, key: &MemoKey, file: usize, out: &FileOut);
}

/// Where an object stands in its file: its document and its own node.
#[derive(Debug)]
pub(crate) struct Place {
    document: std::ops::Range<usize>,
    node: Span,
    object: ObjectRef,
    bundle: Option<String>,
}

impl Place {
    /// The object a text finding at `offset` belongs to: the one whose node holds it, else the
    /// last object of the same document that starts before it (a comment after its last key),
    /// else the document's first object (a comment before it).
    fn of(places: &[Place], offset: usize) -> Option<&Place> {
        if let Some(p) = places.iter().find(|p| p.node.range().contains(&offset)) {
            return Some(p);
        }
        let same: Vec<&Place> = places
            .iter()
            .filter(|p| p.document.contains(&offset))
            .collect();
        same.iter()
            .rev()
            .find(|p| p.node.start() <= offset)
            .or(same.first())
            .copied()
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
}

impl Timings {
    fn add(&mut self, other: Timings) {
        self.read += other.read;
        self.parse += other.parse;
        self.rules += other.rules;
        self.cached += other.cached;
        self.unread += other.unread;
    }
}

/// A large file is linted in segments of about this many bytes of whole documents.
const SEGMENT_BYTES: usize = 256 * 1024;

/// Where a document that is a sequence holding Kubernetes objects starts. A sequence of
/// anything else (an Ansible playbook found in a walk) is not credlint's business, as a
/// mapping without `kind` is not.
fn sequence_of_objects(root: &Node) -> Option<usize> {
    let items = root.as_seq()?;
    items
        .iter()
        .any(|item| object::Object::from_node(item).is_some())
        .then_some(root.span.start())
}

/// The condition that says whether an object belongs to a bundle.
const MEMBER_CONDITION: &str = "credentials-member";

impl Engine {
    /// An engine with its rules compiled.
    pub fn new(options: Options) -> Result<Engine, String> {
        let engine = Engine::deferred(options);
        engine.compiled()?;
        Ok(engine)
    }

    /// An engine that compiles its rules when a file first needs them, or when
    /// [`Engine::compiled`] is called (from another thread, say, while the inputs are listed).
    pub fn deferred(options: Options) -> Engine {
        Engine {
            pool: std::sync::OnceLock::new(),
            catalog: Catalog::get(),
            programs: std::sync::OnceLock::new(),
            options,
        }
    }

    /// The compiled rules; the first caller compiles them and any other waits for it.
    pub fn compiled(&self) -> Result<&Programs, String> {
        self.programs
            .get_or_init(|| Programs::compile(self.catalog, &self.options))
            .as_ref()
            .map_err(Clone::clone)
    }
}

impl Programs {
    fn compile(catalog: &'static Catalog, options: &Options) -> Result<Programs, String> {
        let cel = Cel::new();
        let mut rule_set = RuleSet::default();
        let mut slots = 0;
        let mut conditions = HashMap::new();
        for (name, text) in &catalog.conditions {
            let program = cel
                .compile(text)
                .map_err(|e| format!("condition {name}: {e}"))?;
            conditions.insert(name.as_str(), (rule_set.prepare(program, text), slots));
            slots += 1;
        }
        let mut rules = Vec::new();
        for rule in &catalog.rules {
            let Some(object) = &rule.object else { continue };
            // The configured image is a constant the `job-image-pinned` rule reads as a variable.
            let image = options.credentials_image.as_deref().unwrap_or("");
            let texts: Vec<&str> = object
                .validations
                .iter()
                .map(|v| v.expression.as_str())
                .collect();
            let compiled = rule_set
                .add(
                    &cel,
                    &object.variables,
                    &[("credentialsImage", image)],
                    &texts,
                )
                .map_err(|e| format!("{}: {e}", rule.id))?;
            rules.push(ObjectRule {
                id: &rule.id,
                resources: &object.resources,
                condition: object.condition.as_deref(),
                validations: compiled
                    .validations
                    .into_iter()
                    .zip(&object.validations)
                    .map(|(c, v)| {
                        slots += 1;
                        (c, v, slots - 1)
                    })
                    .collect(),
            });
        }
        let verdicts = (0..slots).map(|_| VerdictCache::default()).collect();
        let profiles = RESOURCES
            .iter()
            .map(|resource| {
                let ids: Vec<usize> = (0..rules.len())
                    .filter(|&i| rules[i].resources.contains(&resource))
                    .collect();
                let member = MemberKind::of(resource.kind).map(|_| MEMBER_CONDITION);
                let conditions = member
                    .into_iter()
                    .chain(ids.iter().filter_map(|&i| rules[i].condition))
                    .filter_map(|name| conditions.get(name))
                    .map(|(c, _)| &c.pattern);
                let validations = ids
                    .iter()
                    .flat_map(|&i| rules[i].validations.iter().map(|(c, _, _)| &c.pattern));
                Profile {
                    resource,
                    pattern: Pattern::union(conditions.chain(validations)),
                    rules: ids,
                    verdicts: VerdictCache::default(),
                }
            })
            .collect();
        Ok(Programs {
            cel,
            rules,
            rule_set,
            conditions,
            verdicts,
            profiles,
            shapes: VerdictCache::default(),
        })
    }

    /// The verdict of `compiled` on `root`: from the cache when an object with the same
    /// projection was judged before, else evaluated in `bound`, the object's own context (made
    /// on first need and shared by its rules).
    fn decide(
        &self,
        compiled: &Compiled,
        slot: usize,
        root: &Node,
        bound: &mut Option<crate::lint::cel::Bound>,
    ) -> Verdict {
        self.verdicts[slot].get_or(
            |key| reads::key(root, &compiled.pattern, key),
            || match bound {
                Some(bound) => {
                    self.rule_set.bind(bound, &compiled.needs);
                    bound.check(&compiled.program)
                }
                // No context for the whole object yet: judge the part the program observes,
                // which for a match condition is a name or two, not the whole object.
                None => {
                    let mut pruned = self.cel.bind(&reads::prune(root, &compiled.pattern));
                    self.rule_set.bind(&mut pruned, &compiled.needs);
                    pruned.check(&compiled.program)
                }
            },
        )
    }
}

impl Engine {
    pub fn run(&self, inputs: &[InputFile], input_errors: Vec<InputError>) -> Outcome {
        self.run_with(inputs, input_errors, None)
    }

    /// A run that takes what `memo` holds for a file's bytes instead of linting it again, and
    /// gives it what it lints.
    pub fn run_with(
        &self,
        inputs: &[InputFile],
        input_errors: Vec<InputError>,
        memo: Option<&dyn Memo>,
    ) -> Outcome {
        self.run_marking(
            inputs,
            input_errors,
            memo,
            &std::collections::HashSet::new(),
        )
    }

    /// [`run_with`](Self::run_with), also naming in [`Outcome::touched`] every bundle with a
    /// member in one of the `marked` inputs (by index): what `--pre-commit` narrows its report
    /// to, without keeping every bundle to the end of the run.
    pub fn run_marking(
        &self,
        inputs: &[InputFile],
        mut input_errors: Vec<InputError>,
        memo: Option<&dyn Memo>,
        marked: &std::collections::HashSet<usize>,
    ) -> Outcome {
        let started = std::time::Instant::now();
        let mut touched = std::collections::HashSet::new();
        let in_marked = |at: &crate::load::source::At| {
            !marked.is_empty() && marked.contains(&crate::load::source::Loc::from(at).file)
        };
        let touch = |b: &Bundle, touched: &mut std::collections::HashSet<String>| {
            if b.members.values().flatten().any(|m| in_marked(&m.loc)) {
                touched.insert(b.id());
            }
        };
        // A member that arrives after its bundle was checked touches it too.
        let touch_late =
            |d: &bundle::LateDuplicate, touched: &mut std::collections::HashSet<String>| {
                if in_marked(&d.member.loc) {
                    touched.insert(d.bundle.clone());
                }
            };
        let mut timings = Timings::default();
        let mut bundling = std::time::Duration::ZERO;
        let mut files = Vec::new();
        let mut findings = Vec::new();
        // Without a command that needs the bundles afterwards, each one is checked as soon as
        // it is complete and dropped.
        let keep = self.options.keep.bundles || self.options.keep.programs;
        let mut assembler = bundle::Assembler::new(!keep);
        let mut bundle_emit = Emit::new(self.catalog);
        // What the one-writer checks compare once every file is read.
        let mut render = Render::default();
        let mut ignores = Vec::new();
        let mut summary = Summary::default();
        // One small file (a pre-commit hook's) is linted on this thread: starting threads and
        // handing it over would cost more than it saves.
        let alone = inputs.len() == 1
            && inputs
                .first()
                .and_then(input::size)
                .is_some_and(|n| n <= SEGMENT_BYTES);
        let pool = if alone {
            &None
        } else {
            self.pool.get_or_init(|| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(self.options.threads.unwrap_or(0))
                    .stack_size(WORKER_STACK)
                    .build()
                    .ok()
            })
        };
        // Files are linted a window at a time and merged in input order while the next window is
        // linted, so a 4,000-file tree never holds more than two windows' results. A window of 64
        // files per thread keeps the threads' hand-overs (a wake-up each) to a few dozen.
        let window = pool.as_ref().map_or(1, |p| p.current_num_threads()) * 64;
        let lint_file = |id: usize| -> Result<FileOut, String> {
            let started = std::time::Instant::now();
            let name = &inputs[id].display;
            let yaml_name = crate::load::source::yaml_name(name);
            let path = match &inputs[id].origin {
                input::Origin::File(path) => Some(path),
                _ => None,
            };
            // Looking a file up is counted as reading it.
            let served = |mut out: FileOut, unread: bool| {
                out.timings.read += started.elapsed();
                out.timings.cached += 1;
                out.timings.unread += usize::from(unread);
                Ok(out)
            };
            // A file the memo knows unchanged is not read at all.
            if let (Some(memo), Some(path)) = (memo, path)
                && let Some(key) = memo.key_unread(path, yaml_name)
                && let Some(out) = memo.recall(&key, id)
            {
                return served(out, true);
            }
            let (bytes, seen) = input::read_seen(&inputs[id])?;
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
            let mut out = self.lint_bytes(id, name, &bytes)?;
            if let (Some(memo), Some(key)) = (memo, &key) {
                memo.remember(key, id, &out);
            }
            out.timings.read += read;
            Ok(out)
        };
        let lint_window = |range: std::ops::Range<usize>| -> Vec<Result<FileOut, String>> {
            if alone {
                return range.map(lint_file).collect();
            }
            range.into_par_iter().map(lint_file).collect()
        };
        // Merged in input order: the output is the same whatever the thread count.
        let mut merge = |range: std::ops::Range<usize>, results: Vec<Result<FileOut, String>>| {
            for (file, result) in inputs[range].iter().zip(results) {
                files.push(file.display.clone());
                match result {
                    Ok(out) => {
                        timings.add(out.timings);
                        let merging = std::time::Instant::now();
                        summary.documents += out.documents;
                        summary.objects += out.objects;
                        findings.extend(out.findings);
                        render.writers.extend(out.writers);
                        assemble_settling(
                            out.members,
                            |m, emit, render| match assembler.add(m) {
                                bundle::Added::Open => None,
                                bundle::Added::Complete(b) => {
                                    touch(&b, &mut touched);
                                    Some(b)
                                }
                                bundle::Added::Duplicate(d) => {
                                    touch_late(&d, &mut touched);
                                    late_duplicate(d, emit, render);
                                    None
                                }
                            },
                            &mut bundle_emit,
                            &mut render,
                            pool.as_ref(),
                            self.catalog,
                        );
                        ignores.extend(out.ignores);
                        bundling += merging.elapsed();
                    }
                    Err(message) => input_errors.push(InputError {
                        path: file.display.clone(),
                        message,
                    }),
                }
            }
        };
        let windows: Vec<std::ops::Range<usize>> = (0..inputs.len())
            .step_by(window)
            .map(|from| from..(from + window).min(inputs.len()))
            .collect();
        // While one window is merged (bundles assembled and checked on one thread), the next
        // is linted on the others.
        let mut step = |current: Option<(std::ops::Range<usize>, Vec<_>)>,
                        next: Option<std::ops::Range<usize>>| {
            match (current, next) {
                (Some((range, results)), Some(next)) if !alone => {
                    let both = || rayon::join(|| merge(range, results), || lint_window(next)).1;
                    Some(match pool {
                        Some(pool) => pool.install(both),
                        // Without a pool of its own the run uses rayon's global one.
                        None => both(),
                    })
                }
                (current, next) => {
                    if let Some((range, results)) = current {
                        merge(range, results);
                    }
                    next.map(|next| match pool {
                        Some(pool) if !alone => pool.install(|| lint_window(next)),
                        _ => lint_window(next),
                    })
                }
            }
        };
        let mut linted = step(None, windows.first().cloned());
        for (i, range) in windows.iter().enumerate() {
            let results = linted.take().unwrap_or_default();
            linted = step(Some((range.clone(), results)), windows.get(i + 1).cloned());
        }
        summary.files = files.len();
        if let Some(set) = &self.options.policies {
            // Problems of the policies point into the policy files, listed after the inputs.
            let first = files.len();
            files.extend(set.files.iter().map(|f| f.display.clone()));
            findings.extend(crate::lint::kyverno::report::unsupported_findings(
                set, first,
            ));
        }
        let finishing = std::time::Instant::now();
        let finished = assembler.finish();
        let mut bundles = finished.bundles;
        let mut emit = bundle_emit;
        for d in finished.duplicates {
            touch_late(&d, &mut touched);
            late_duplicate(d, &mut emit, &mut render);
        }
        for b in &bundles {
            touch(b, &mut touched);
        }
        settle_all(
            &mut bundles,
            &mut emit,
            &mut render,
            pool.as_ref(),
            self.catalog,
        );
        crate::lint::checks::writers::check(&render, &mut emit);
        findings.extend(emit.findings);
        fix_bundle_ids(&mut findings, &bundles);
        timings.bundles = bundling + finishing.elapsed();
        findings.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
        findings.dedup();
        summary.bundles = finished.count;
        summary.errors = findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .count();
        summary.warnings = findings
            .iter()
            .filter(|f| f.severity == Severity::Warning)
            .count();
        Outcome {
            files,
            findings,
            summary,
            bundles: if self.options.keep.bundles || self.options.keep.programs {
                bundles
            } else {
                Vec::new()
            },
            input_errors,
            ignores,
            touched,
            timings: Timings {
                wall: started.elapsed(),
                ..timings
            },
        }
    }

    /// Lints one file's bytes. A document that is not UTF-8 is a `yaml-syntax` finding; the
    /// file's other documents are still read. UTF-16 with a byte-order mark is decoded, as
    /// go-yaml decodes it. `name` is the file as shown (some verdicts depend on its ending).
    /// Fails only where the rules do not compile.
    pub fn lint_bytes(&self, file: usize, name: &str, bytes: &[u8]) -> Result<FileOut, String> {
        let p = self.compiled()?;
        // Decoding the bytes is the first step of the parse, and is timed with it.
        let started = std::time::Instant::now();
        let decoded = stream::decode(bytes);
        let decoding = started.elapsed();
        let mut out = self.lint_decoded(p, file, name, &decoded);
        out.timings.parse += decoding;
        Ok(out)
    }

    fn lint_decoded(
        &self,
        p: &Programs,
        file: usize,
        name: &str,
        decoded: &stream::Decoded,
    ) -> FileOut {
        let started = std::time::Instant::now();
        // The lines are indexed first: the same pass finds where the text is cut.
        let source = Source::new(file, &decoded.text).named(name);
        // Concatenated JSON objects are documents one by one, as kubectl applies them.
        let stream = crate::load::json_stream::objects(&decoded.text);
        let ranges = match &stream {
            Some(stream) => stream.objects.clone(),
            None => decoded.ranges(&source.lines),
        };
        let cut = started.elapsed();
        let mut out = self.lint_ranges(p, &source, &ranges, decoded);
        out.timings.parse += cut;
        if let Some(at) = stream.and_then(|s| s.trailing) {
            let mut emit = Emit::new(self.catalog);
            let message = "after two or more JSON objects kubectl reads only JSON objects, and \
                           this is none: it stops here with an error";
            emit.add(
                "yaml-syntax",
                source.loc(source.char_at(at)),
                message,
                None,
                None,
            );
            out.findings.extend(emit.findings);
        }
        out
    }

    fn lint_ranges(
        &self,
        p: &Programs,
        source: &Source,
        ranges: &[std::ops::Range<usize>],
        decoded: &stream::Decoded,
    ) -> FileOut {
        // Consecutive documents in segments of about SEGMENT_BYTES, linted in parallel.
        let mut segments: Vec<std::ops::Range<usize>> = Vec::new();
        let mut start = 0;
        for (i, r) in ranges.iter().enumerate() {
            if r.end - ranges[start].start >= SEGMENT_BYTES || i + 1 == ranges.len() {
                segments.push(start..i + 1);
                start = i + 1;
            }
        }
        // A segment's pragma scan reads only its own lines and objects, so it runs beside the
        // segment's linting, in parallel, wherever the file's findings will need it: when the
        // segment holds a bundle member (then so does the file) or every file is judged.
        let scan = |seg: &std::ops::Range<usize>, part: &FileOut, lines: &mut Vec<usize>| {
            let started = std::time::Instant::now();
            let bytes = ranges[seg.start].start..ranges[seg.end - 1].end;
            let found = self.misplaced_pragmas(source, bytes, lines, &part.places);
            (found, started.elapsed())
        };
        let parts: Vec<(FileOut, Vec<usize>, Option<Vec<Finding>>)> =
            each_segment(&segments, |seg| {
                let (mut part, mut lines) =
                    self.lint_documents(p, source, &ranges[seg.clone()], decoded);
                let pragmas =
                    (!part.members.is_empty() || self.options.pragma_everywhere).then(|| {
                        let (found, took) = scan(seg, &part, &mut lines);
                        part.timings.rules += took;
                        found
                    });
                (part, lines, pragmas)
            });
        let mut out = FileOut::default();
        // Sized once: grown by doubling, the lists of a large render's hundreds of segments
        // were copied again and again into fresh pages.
        if parts.len() > 1 {
            let total = |f: fn(&FileOut) -> usize| parts.iter().map(|(p, _, _)| f(p)).sum();
            out.findings.reserve(total(|p| p.findings.len()));
            out.members.reserve(total(|p| p.members.len()));
            out.writers.reserve(total(|p| p.writers.len()));
            out.ignores.reserve(total(|p| p.ignores.len()));
        }
        let mut scans = Vec::with_capacity(parts.len());
        for (seg, (mut part, lines, pragmas)) in segments.iter().zip(parts) {
            out.timings.add(part.timings);
            out.findings.append(&mut part.findings);
            out.members.append(&mut part.members);
            out.writers.append(&mut part.writers);
            out.ignores.append(&mut part.ignores);
            out.documents += part.documents;
            out.objects += part.objects;
            scans.push((seg, part, lines, pragmas));
        }
        // A file that holds no bundle member (a chart's values.yaml that uses detect-secrets
        // pragmas on purpose) is judged only when the configuration asks for every file.
        if out.members.is_empty() && !self.options.pragma_everywhere {
            return out;
        }
        // After every segment's own findings, in segment order, as one scan of the file left
        // them; a segment without members is scanned now that the file is known to need it.
        for (seg, part, mut lines, pragmas) in scans {
            let found = pragmas.unwrap_or_else(|| {
                let (found, took) = scan(seg, &part, &mut lines);
                out.timings.rules += took;
                found
            });
            out.findings.extend(found);
        }
        out
    }

    /// The `pragma-misplaced` findings in `bytes` of `source`: pragmas anywhere but on the lines
    /// where the create.py pragma belongs (`lines`, sorted here), each named after the object of
    /// `places` it stands in.
    fn misplaced_pragmas(
        &self,
        source: &Source,
        bytes: std::ops::Range<usize>,
        lines: &mut [usize],
        places: &[Place],
    ) -> Vec<Finding> {
        // Looked up for every pragma found: one per bundle in a large render.
        lines.sort_unstable();
        let mut problems = Vec::new();
        text::misplaced_pragmas(source, bytes, lines, &mut problems);
        let mut emit = Emit::new(self.catalog);
        for (rule, span, message) in problems {
            let place = Place::of(places, span.start());
            emit.add(
                rule,
                source.loc(span),
                message,
                place.map(|p| &p.object),
                place.and_then(|p| p.bundle.as_deref()),
            );
        }
        emit.findings
    }

    /// Lints a run of documents of one file; returns what it found and the lines where the
    /// create.py pragma belongs.
    fn lint_documents(
        &self,
        p: &Programs,
        source: &Source,
        ranges: &[std::ops::Range<usize>],
        decoded: &stream::Decoded,
    ) -> (FileOut, Vec<usize>) {
        let text = source.text;
        let mut out = FileOut::default();
        let mut emit = Emit::new(self.catalog);
        let mut header_lines = Vec::new();
        let mut waiting = Vec::new();
        for range in ranges {
            let range = range.clone();
            if let Some((at, byte)) = decoded.invalid_in(&range) {
                let loc = source.loc(Span::new(at, at + 1));
                let message = format!(
                    "the document is not UTF-8 (byte 0x{byte:02X}); Kubernetes reads UTF-8 only"
                );
                emit.add("yaml-syntax", loc, message, None, None);
                continue;
            }
            let parsing = std::time::Instant::now();
            let documents = yaml::parse_range(text, range.clone());
            out.timings.parse += parsing.elapsed();
            let linting = std::time::Instant::now();
            for parsed in documents {
                match parsed {
                    // A document kubectl never reads is not linted: the cluster never sees it.
                    Parsed::Error(e) | Parsed::Unread(e) => {
                        emit.add("yaml-syntax", source.loc(e.span), e.message, None, None);
                    }
                    Parsed::Document(doc) => {
                        if doc.root.is_null() {
                            continue;
                        }
                        out.documents += 1;
                        if let Some(at) = sequence_of_objects(&doc.root) {
                            emit.add(
                                "yaml-syntax",
                                source.loc(source.char_at(at)),
                                "a top-level sequence is not a Kubernetes object: kubectl and \
                                 Argo CD refuse it whole (none of its items is applied); write \
                                 each item as a document of its own, `---` between, or under \
                                 `items:` of a `kind: List`",
                                None,
                                None,
                            );
                            continue;
                        }
                        for dup in &doc.duplicate_keys {
                            emit.add(
                                "yaml-duplicate-key",
                                source.loc(dup.second),
                                format!("the key `{}` appears twice in this mapping", dup.key),
                                None,
                                None,
                            )
                            .label(source.loc(dup.first), "first written here");
                        }
                        for (span, message) in object::not_objects(&doc.root) {
                            emit.add("not-an-object", source.loc(span), message, None, None);
                        }
                        let mut objects = Vec::new();
                        object::objects(&doc.root, &mut objects);
                        for obj in &objects {
                            out.objects += 1;
                            if let Some(value) =
                                obj.root.at(&["metadata", "annotations", IGNORE_ANNOTATION])
                            {
                                out.ignores.push(IgnoreAnnotation {
                                    object: obj.reference(),
                                    value: value.display_scalar().unwrap_or_default(),
                                    loc: source.loc(value.span),
                                });
                            }
                            let bundle = self.lint_object(
                                p,
                                obj,
                                source,
                                &mut emit,
                                &mut out.members,
                                &mut out.writers,
                                &mut header_lines,
                                &mut waiting,
                            );
                            out.places.push(Place {
                                document: range.clone(),
                                node: obj.root.span,
                                object: obj.reference(),
                                bundle,
                            });
                        }
                    }
                }
            }
            out.timings.rules += linting.elapsed();
        }
        let linting = std::time::Instant::now();
        for w in waiting {
            for f in w.later.finish(source) {
                let loc = source.loc(f.span);
                emit.add(
                    f.rule,
                    loc,
                    f.message,
                    Some(&w.reference),
                    w.bundle.as_deref(),
                );
            }
        }
        out.timings.rules += linting.elapsed();
        out.findings = emit.findings;
        (out, header_lines)
    }

    #[allow(clippy::too_many_arguments)]
    fn lint_object(
        &self,
        p: &Programs,
        obj: &Object,
        source: &Source,
        emit: &mut Emit,
        members: &mut Vec<Member>,
        writers: &mut Vec<Writer>,
        header_lines: &mut Vec<usize>,
        waiting: &mut Vec<Waiting>,
    ) -> Option<String> {
        writers.extend(crate::model::writers::writer(obj, source));
        let profile = Resource::of(obj.api_version, obj.kind)
            .and_then(|r| p.profiles.iter().find(|profile| profile.resource == r));
        let Some(profile) = profile else {
            self.policies(obj, source, emit, None, true);
            return None;
        };
        let mut bound = None;
        let mut verdicts = ObjectVerdicts::new(&profile.verdicts, p.verdicts.len(), |key| {
            reads::key(obj.root, &profile.pattern, key)
        });
        // A member recognised by itself (the policies' match condition, or a ConfigMap holding
        // the program or its plan), or a candidate whose findings wait for its bundle.
        let kind = MemberKind::of(obj.kind);
        let marked = kind.is_some()
            && (p.holds(MEMBER_CONDITION, obj, &mut bound, &mut verdicts)
                || (kind == Some(MemberKind::ConfigMap) && members::holds_program(obj.root)));
        let held = !marked && kind.is_some_and(|k| members::candidate(obj, k));
        let member_kind = kind.filter(|_| marked || held);
        let reference = obj.reference();
        let member_owner = member_kind.map(|kind| members::owner(obj, kind));
        let owner = member_owner.as_ref().and_then(|o| match o {
            Owner::Known(o) | Owner::Prefix(o) => Some(o.clone()),
            Owner::Linked => None,
        });
        let bundle_name = owner.as_deref().map(|o| bundle_id(obj.namespace, o));
        let bundle = bundle_name.as_deref();

        let schema_issues = match member_kind {
            Some(_) => p.schema_check(obj),
            None => Vec::new(),
        };
        // The API server refuses an object with a schema error before any policy sees it, so a
        // rule that cannot even evaluate on it would only repeat the schema finding.
        let admitted = schema_issues.is_empty();
        // The `--policy` findings hold for any object; the rest wait with a candidate.
        self.policies(obj, source, emit, bundle, admitted);
        let first_held = emit.findings.len();
        for issue in schema_issues {
            emit.add(
                "schema",
                source.loc(issue.span),
                issue.message,
                Some(&reference),
                bundle,
            );
        }
        for rule in profile.rules.iter().filter_map(|&i| p.rules.get(i)) {
            // Every condition of rules/_match.yaml marks bundle members: the linter knows more
            // members than one object shows (candidates), so membership decides here.
            if rule.condition.is_some() && member_kind.is_none() {
                continue;
            }
            p.object_rule(
                rule,
                obj,
                &mut bound,
                &mut verdicts,
                source,
                emit,
                &reference,
                bundle,
                admitted,
            );
        }
        verdicts.finish();

        let kind = member_kind?;
        let owner = owner.unwrap_or_default();
        let mut plan = None;
        match kind {
            MemberKind::ConfigMap => {
                let (read, problems) = plan::check(obj.root, &owner, source);
                plan = read;
                for (rule, span, message) in problems {
                    emit.add(rule, source.loc(span), message, Some(&reference), bundle);
                }
                let mut problems = Vec::new();
                if let Some(line) = text::check_script(obj.root, source, &mut problems) {
                    header_lines.push(line);
                }
                if let Some(script) = obj.root.at(&["data", "create.py"]) {
                    match runtime::check_or_wait(script, source) {
                        Checked::Now(found) => {
                            for f in found {
                                let loc = source.loc(f.span);
                                emit.add(f.rule, loc, f.message, Some(&reference), bundle);
                            }
                        }
                        Checked::Later(later) => waiting.push(Waiting {
                            later,
                            reference: reference.clone(),
                            bundle: bundle.map(str::to_string),
                        }),
                    }
                }
                for (rule, span, message) in problems {
                    emit.add(rule, source.loc(span), message, Some(&reference), bundle);
                }
            }
            // A binding named otherwise is linked to its bundle later; its names are then
            // `bundle-naming`'s finding.
            MemberKind::RoleBinding if bundle::owner_of_name(obj.name.unwrap_or("")).is_some() => {
                for (span, message) in wiring::rolebinding(obj.root, &owner, obj.namespace) {
                    emit.add(
                        "rolebinding-wiring",
                        source.loc(span),
                        message,
                        Some(&reference),
                        bundle,
                    );
                }
            }
            _ => {}
        }
        let owner = member_owner.unwrap_or(Owner::Linked);
        let mut member = members::member(obj, kind, owner, source, plan, self.options.keep);
        if held {
            member.held = Some(emit.findings.split_off(first_held));
        }
        members.push(member);
        bundle_name
    }

    /// The findings of the `--policy` policies on an object.
    fn policies(
        &self,
        obj: &Object,
        source: &Source,
        emit: &mut Emit,
        bundle: Option<&str>,
        admitted: bool,
    ) {
        if let Some(set) = &self.options.policies {
            let reference = obj.reference();
            emit.findings
                .extend(crate::lint::kyverno::report::object_findings(
                    set, obj, source, &reference, bundle, admitted,
                ));
        }
    }
}

impl Programs {
    /// The schema check, done once per shape of object: the members of a clean render differ in
    /// names, which the check does not read.
    fn schema_check(&self, obj: &Object) -> Vec<crate::lint::schema::SchemaIssue> {
        let check = || crate::lint::schema::check(obj.root, obj.api_version, obj.kind);
        if !crate::lint::schema::has_shape(obj.root) {
            return check();
        }
        let mut found = None;
        let clean = self.shapes.get_or(
            |key| crate::lint::schema::shape(obj.root, obj.api_version, obj.kind, key),
            || {
                let issues = check();
                let clean = issues.is_empty();
                found = Some(issues);
                clean
            },
        );
        match found {
            Some(issues) => issues,
            None if clean => Vec::new(),
            // Known to fail: the issues carry this object's places and words.
            None => check(),
        }
    }

    /// Whether the named match condition holds for `obj`.
    fn holds(
        &self,
        name: &str,
        obj: &Object,
        bound: &mut Option<crate::lint::cel::Bound>,
        verdicts: &mut ObjectVerdicts,
    ) -> bool {
        self.conditions.get(name).is_some_and(|(compiled, slot)| {
            verdicts.get(*slot, || self.decide(compiled, *slot, obj.root, bound)) == Verdict::Pass
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn object_rule(
        &self,
        rule: &ObjectRule,
        obj: &Object,
        bound: &mut Option<crate::lint::cel::Bound>,
        verdicts: &mut ObjectVerdicts,
        source: &Source,
        emit: &mut Emit,
        reference: &ObjectRef,
        bundle: Option<&str>,
        admitted: bool,
    ) {
        for (compiled, validation, slot) in &rule.validations {
            let verdict = verdicts.get(*slot, || self.decide(compiled, *slot, obj.root, bound));
            if verdict == Verdict::Pass || (!admitted && matches!(verdict, Verdict::Error(_))) {
                continue;
            }
            // A denial is located in the object's own context, with its variables bound.
            let bound = bound.get_or_insert_with(|| self.cel.bind(obj.root));
            self.rule_set.bind(bound, &compiled.needs);
            let program = &compiled.program;
            let mut spans: Vec<(Span, Option<String>)> = bound
                .blame(program, obj.root, &self.rule_set)
                .iter()
                .map(|path| {
                    let span = span_for(obj.root, path);
                    let reach = crate::load::locate::reach(obj.root, path);
                    let value = reach
                        .complete
                        .then(|| reach.node.display_for_message())
                        .flatten();
                    (span, value)
                })
                .collect();
            spans.dedup_by(|a, b| a.0 == b.0);
            if spans.is_empty() {
                spans.push((obj.anchor().span, None));
            }
            // A detail states why the node fails; when the rule could not be evaluated, that
            // was never established, so only the message and the error are shown.
            let detail = validation
                .detail
                .as_ref()
                .filter(|_| verdict == Verdict::Deny);
            for (span, value) in spans {
                let mut message = match (detail, value) {
                    (Some(detail), Some(value)) => {
                        format!(
                            "{}. {}",
                            detail.replace("{value}", &value),
                            validation.message
                        )
                    }
                    (Some(detail), None) if !detail.contains("{value}") => {
                        format!("{detail}. {}", validation.message)
                    }
                    _ => validation.message.clone(),
                };
                if let Verdict::Error(e) = &verdict {
                    message.push_str(&format!(" (the rule could not be evaluated here: {e})"));
                }
                emit.add(rule.id, source.loc(span), message, Some(reference), bundle);
            }
        }
    }
}

/// `f` on each segment of a file, in parallel where there are several. One segment stays on this
/// thread, so that a small file linted alone never starts rayon's global pool.
fn each_segment<T: Send>(
    segments: &[std::ops::Range<usize>],
    f: impl Fn(&std::ops::Range<usize>) -> T + Sync + Send,
) -> Vec<T> {
    if segments.len() > 1 {
        segments.par_iter().map(f).collect()
    } else {
        segments.iter().map(f).collect()
    }
}

/// A bundle's checks: the findings its candidates held, now that it is one, then its rules;
/// what the one-writer checks need of it is kept in `render`.
fn settle(bundle: &mut Bundle, emit: &mut Emit, render: &mut Render) {
    emit.findings.extend(bundle.release());
    bundle_rules::check(bundle, emit);
    render.add(bundle);
}

/// Below this many bundles, handing them to the pool costs more than it saves.
const SETTLE_PARALLEL_FROM: usize = 64;
/// Bundles per hand-over to the pool.
const SETTLE_BATCH: usize = SETTLE_PARALLEL_FROM / 4;

/// What [`settle`] leaves of some bundles: their findings, and what the one-writer checks keep.
type Settled = (Vec<Finding>, Render);

/// [`settle`] on `bundles`, into an `Emit` and a `Render` of their own.
fn settle_batch<'b>(
    bundles: impl IntoIterator<Item = &'b mut Bundle>,
    catalog: &Catalog,
) -> Settled {
    let mut emit = Emit::new(catalog);
    let mut render = Render::default();
    for b in bundles {
        settle(b, &mut emit, &mut render);
    }
    (emit.findings, render)
}

/// Joins what batches of bundles left, in the bundles' order, as one thread would have left it.
fn join_settled(parts: Vec<Settled>, emit: &mut Emit, render: &mut Render) {
    for (findings, part) in parts {
        emit.findings.extend(findings);
        render.digests.extend(part.digests);
        render.member_bindings.extend(part.member_bindings);
        render.writers.extend(part.writers);
    }
}

/// [`settle`] on every bundle held to the end of a run (all of them where the bundles are
/// kept: `--pre-commit`, JUnit), on the pool's threads when there are many. Each bundle's
/// checks read that bundle alone.
fn settle_all(
    bundles: &mut [Bundle],
    emit: &mut Emit,
    render: &mut Render,
    pool: Option<&rayon::ThreadPool>,
    catalog: &Catalog,
) {
    let Some(pool) = pool.filter(|_| bundles.len() >= SETTLE_PARALLEL_FROM) else {
        for b in bundles {
            settle(b, emit, render);
        }
        return;
    };
    let parts: Vec<Settled> = pool.install(|| {
        bundles
            .par_chunks_mut(SETTLE_BATCH)
            .map(|chunk| settle_batch(chunk, catalog))
            .collect()
    });
    join_settled(parts, emit, render);
}

/// Hands `members` to `add` one by one, on this thread, and [`settle`]s the bundles it returns
/// complete: where there are enough members for many bundles, in batches on the pool's threads
/// while the later members are still being added (the pool's threads are otherwise idle while
/// one large render's thousands of bundles are assembled), each batch freed by the thread that
/// checked it. What they leave is joined into `emit` and `render` in the bundles' order.
fn assemble_settling(
    members: Vec<Member>,
    mut add: impl FnMut(Member, &mut Emit, &mut Render) -> Option<Bundle>,
    emit: &mut Emit,
    render: &mut Render,
    pool: Option<&rayon::ThreadPool>,
    catalog: &Catalog,
) {
    // Five members make a bundle.
    let Some(pool) = pool.filter(|_| members.len() >= 5 * SETTLE_PARALLEL_FROM) else {
        let mut complete: Vec<Bundle> = Vec::new();
        for m in members {
            complete.extend(add(m, emit, render));
        }
        for b in &mut complete {
            settle(b, emit, render);
        }
        return;
    };
    let (sender, settled) = std::sync::mpsc::channel::<(usize, Settled)>();
    pool.in_place_scope(|scope| {
        let mut sent = 0;
        let mut batch = Vec::with_capacity(SETTLE_BATCH);
        let mut hand_over = |batch: Vec<Bundle>| {
            let sender = sender.clone();
            let order = sent;
            sent += 1;
            scope.spawn(move |_| {
                let mut batch = batch;
                // The receiver lives until the scope has ended.
                let _ = sender.send((order, settle_batch(&mut batch, catalog)));
            });
        };
        for m in members {
            if let Some(b) = add(m, emit, render) {
                batch.push(b);
                if batch.len() == SETTLE_BATCH {
                    hand_over(std::mem::replace(
                        &mut batch,
                        Vec::with_capacity(SETTLE_BATCH),
                    ));
                }
            }
        }
        if !batch.is_empty() {
            hand_over(batch);
        }
    });
    drop(sender);
    let mut parts: Vec<(usize, Settled)> = settled.into_iter().collect();
    parts.sort_unstable_by_key(|(order, _)| *order);
    join_settled(
        parts.into_iter().map(|(_, part)| part).collect(),
        emit,
        render,
    );
}

/// A member of a bundle that was complete, and checked, before it arrived.
fn late_duplicate(mut d: bundle::LateDuplicate, emit: &mut Emit, render: &mut Render) {
    if d.member.kind == MemberKind::RoleBinding {
        render.member_bindings.insert(d.member.loc);
    }
    let id = d.bundle;
    for mut f in d.member.held.take().unwrap_or_default() {
        f.bundle = Some(id.clone());
        emit.findings.push(f);
    }
    emit.add(
        "bundle-duplicate",
        d.member.loc,
        bundle_rules::duplicate_message(&id, d.member.kind),
        Some(&d.member.object()),
        Some(&id),
    )
    .label(d.first, "the first one");
}

/// Findings about a Job known only by its name's prefix were given the prefix as bundle; the
/// assembled bundle knows the owner.
fn fix_bundle_ids(findings: &mut [Finding], bundles: &[Bundle]) {
    let mut ids: HashMap<ObjectRef, String> = HashMap::new();
    for b in bundles {
        if let Some(jobs) = b.members.get(&MemberKind::Job) {
            for job in jobs {
                ids.insert(job.object(), b.id());
            }
        }
    }
    for f in findings.iter_mut() {
        if let (Some(object), Some(_)) = (&f.object, &f.bundle)
            && let Some(id) = ids.get(object)
        {
            f.bundle = Some(id.clone());
        }
    }
}

/// Lints in-memory text, for tests and tools: one file, shown as `name`.
pub fn check_text(name: &str, text: &str, options: Options) -> Result<Outcome, String> {
    let engine = Engine::new(options)?;
    let decoded = stream::decode(text.as_bytes());
    let mut out = engine.lint_decoded(engine.compiled()?, 0, name, &decoded);
    let mut bundles = bundle::assemble(std::mem::take(&mut out.members));
    let mut emit = Emit::new(engine.catalog);
    let mut render = Render {
        writers: std::mem::take(&mut out.writers),
        ..Render::default()
    };
    for b in &mut bundles {
        settle(b, &mut emit, &mut render);
    }
    crate::lint::checks::writers::check(&render, &mut emit);
    let mut findings = out.findings;
    findings.extend(emit.findings);
    fix_bundle_ids(&mut findings, &bundles);
    findings.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    findings.dedup();
    let summary = Summary {
        files: 1,
        documents: out.documents,
        objects: out.objects,
        bundles: bundles.len(),
        errors: findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .count(),
        warnings: findings
            .iter()
            .filter(|f| f.severity == Severity::Warning)
            .count(),
    };
    Ok(Outcome {
        files: vec![name.to_string()],
        findings,
        summary,
        bundles,
        input_errors: Vec::new(),
        ignores: out.ignores,
        touched: Default::default(),
        timings: out.timings,
    })
}

#[cfg(test)]
mod tests;
