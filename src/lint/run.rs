//! A run across files: each file's result taken in input order, bundles assembled as their
//! members arrive and checked once complete, the one-writer rules once every file is read, then
//! the findings sorted. The order results are given in decides the output; who linted them, and
//! when, does not.

use crate::common::spread::Spread;
use crate::lint::Linter;
use crate::lint::checks::writers::Render;
use crate::lint::checks::{Emit, bundle_rules};
use crate::load::input::{InputError, InputFile};
use crate::load::source::{At, Loc};
use crate::model::bundle::{self, Bundle, MemberKind};
use crate::model::outcome::{FileOut, Outcome, Summary, Timings};
use crate::model::{Finding, ObjectRef, Severity};
use std::collections::{HashMap, HashSet};

/// Bundles a file completes, checked together (side by side where the spread allows).
const SETTLE_BATCH: usize = 64;

/// What checking one bundle leaves: its findings, and what the one-writer rules keep of it.
pub struct Settled {
    findings: Vec<Finding>,
    render: Render,
}

/// A bundle's checks: the findings its candidates held, now that it is one, then its rules.
pub fn settle(linter: &Linter, bundle: &mut Bundle, siblings: &bundle_rules::Siblings) -> Settled {
    let mut emit = Emit::new(linter.catalog);
    let mut render = Render::default();
    emit.findings.extend(bundle.release());
    bundle_rules::check(bundle, siblings, &mut emit);
    render.add(bundle);
    Settled {
        findings: emit.findings,
        render,
    }
}

/// The state of a run while file results arrive.
pub struct Run<'l> {
    linter: &'l Linter,
    started: std::time::Instant,
    /// Input indexes whose bundles [`Outcome::touched`] names.
    marked: &'l HashSet<usize>,
    touched: HashSet<String>,
    /// Each bundle's id and the files its members lie in, where a memo will keep the run.
    bundle_files: Option<Vec<(String, Vec<usize>)>>,
    files: Vec<String>,
    findings: Vec<Finding>,
    input_errors: Vec<InputError>,
    assembler: bundle::Assembler,
    emit_findings: Vec<Finding>,
    render: Render,
    ignores: Vec<crate::model::outcome::IgnoreAnnotation>,
    summary: Summary,
    timings: Timings,
    bundling: std::time::Duration,
    /// Owner and namespace of each bundle settled complete before the end, which
    /// `bundle-incomplete` names when an object of the owner is elsewhere.
    settled_complete: Vec<(String, Option<String>)>,
}

impl<'l> Run<'l> {
    /// A run that names in [`Outcome::touched`] every bundle with a member in one of the
    /// `marked` inputs (by index); `input_errors` are the paths that could not be listed.
    pub fn new(
        linter: &'l Linter,
        marked: &'l HashSet<usize>,
        input_errors: Vec<InputError>,
    ) -> Run<'l> {
        let keep = linter.options.keep.bundles || linter.options.keep.programs;
        Run {
            linter,
            started: std::time::Instant::now(),
            marked,
            touched: HashSet::new(),
            bundle_files: None,
            files: Vec::new(),
            findings: Vec::new(),
            input_errors,
            // Without a command that needs the bundles afterwards, each one is checked as soon
            // as it is complete and dropped.
            assembler: bundle::Assembler::new(!keep),
            emit_findings: Vec::new(),
            render: Render::default(),
            ignores: Vec::new(),
            summary: Summary::default(),
            timings: Timings::default(),
            bundling: std::time::Duration::ZERO,
            settled_complete: Vec::new(),
        }
    }

    /// Also gathers, for [`Outcome::bundle_files`], which files each bundle lies in.
    pub fn recording(mut self) -> Run<'l> {
        self.bundle_files = Some(Vec::new());
        self
    }

    fn in_marked(&self, at: &At) -> bool {
        !self.marked.is_empty() && self.marked.contains(&Loc::from(at).file)
    }

    fn touch(&mut self, b: &Bundle) {
        let marked = b.members.values().flatten().any(|m| self.in_marked(&m.loc));
        if !marked && self.bundle_files.is_none() {
            return;
        }
        let id = b.id();
        if let Some(all) = &mut self.bundle_files {
            let mut files: Vec<usize> = b
                .members
                .values()
                .flatten()
                .map(|m| Loc::from(&m.loc).file)
                .collect();
            files.sort_unstable();
            files.dedup();
            all.push((id.clone(), files));
        }
        if marked {
            self.touched.insert(id);
        }
    }

    /// Takes the next file's result, in input order; the bundles it completes are checked a
    /// batch at a time in the pieces `spread` runs, and dropped.
    pub fn add(&mut self, file: &InputFile, result: Result<FileOut, String>, spread: &impl Spread) {
        self.files.push(file.display.clone());
        let out = match result {
            Ok(out) => out,
            Err(message) => {
                self.input_errors.push(InputError {
                    path: file.display.clone(),
                    message,
                });
                return;
            }
        };
        self.timings.add(out.timings);
        let merging = std::time::Instant::now();
        self.summary.documents += out.documents;
        self.summary.objects += out.objects;
        self.findings.extend(out.findings);
        self.render.writers.extend(out.writers);
        // A batch at most: a large render never holds its bundles.
        let mut complete = Vec::with_capacity(SETTLE_BATCH);
        for m in out.members {
            match self.assembler.add(m) {
                bundle::Added::Open => {}
                bundle::Added::Complete(b) => {
                    self.touch(&b);
                    complete.push(b);
                    if complete.len() == SETTLE_BATCH {
                        self.settle_batch(&mut complete, spread);
                    }
                }
                bundle::Added::Duplicate(d) => self.late_duplicate(d),
            }
        }
        self.settle_batch(&mut complete, spread);
        self.ignores.extend(out.ignores);
        self.bundling += merging.elapsed();
    }

    /// Checks `bundles`, joins what they leave in their order, and drops them.
    fn settle_batch(&mut self, bundles: &mut Vec<Bundle>, spread: &impl Spread) {
        let linter = self.linter;
        // A complete bundle lacks nothing another namespace could hold.
        let none = bundle_rules::Siblings::default();
        for settled in spread.map_mut(bundles, |b| settle(linter, b, &none)) {
            self.join(settled);
        }
        // Dropped now: only their owners and namespaces are kept.
        self.settled_complete
            .extend(bundles.drain(..).map(|b| (b.owner, b.namespace)));
    }

    fn join(&mut self, settled: Settled) {
        self.emit_findings.extend(settled.findings);
        let part = settled.render;
        self.render.digests.extend(part.digests);
        self.render.member_bindings.extend(part.member_bindings);
        self.render.member_jobs.extend(part.member_jobs);
        self.render.writers.extend(part.writers);
    }

    /// A member of a bundle that was complete, and checked, before it arrived.
    fn late_duplicate(&mut self, mut d: bundle::LateDuplicate) {
        if self.in_marked(&d.member.loc) {
            self.touched.insert(d.bundle.clone());
        }
        if let Some(all) = &mut self.bundle_files {
            all.push((d.bundle.clone(), vec![Loc::from(&d.member.loc).file]));
        }
        match d.member.kind {
            MemberKind::RoleBinding => {
                self.render.member_bindings.insert(d.member.loc);
            }
            MemberKind::Job => {
                self.render.member_jobs.insert(d.member.object());
            }
            _ => {}
        }
        let id = d.bundle;
        let mut emit = Emit::new(self.linter.catalog);
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
        self.emit_findings.extend(emit.findings);
    }

    /// The run's outcome, once every file's result is in: the bundles still held (incomplete
    /// ones, or all where they are kept) are checked in the pieces `spread` runs, then the
    /// one-writer rules, then everything is sorted.
    pub fn finish(mut self, spread: &impl Spread) -> Outcome {
        self.summary.files = self.files.len();
        if let Some(set) = &self.linter.options.policies {
            // Problems of the policies point into the policy files, listed after the inputs.
            let first = self.files.len();
            self.files
                .extend(set.files.iter().map(|f| f.display.clone()));
            self.findings
                .extend(crate::lint::kyverno::report::unsupported_findings(
                    set, first,
                ));
        }
        let finishing = std::time::Instant::now();
        let assembler = std::mem::replace(&mut self.assembler, bundle::Assembler::new(true));
        let finished = assembler.finish();
        let mut bundles = finished.bundles;
        for d in finished.duplicates {
            self.late_duplicate(d);
        }
        for b in &bundles {
            self.touch(b);
        }
        // Each bundle's checks read that bundle alone; joined in the bundles' order.
        let linter = self.linter;
        let siblings = bundle_rules::Siblings::of(&bundles, &self.settled_complete);
        for settled in spread.map_mut(&mut bundles, |b| settle(linter, b, &siblings)) {
            self.join(settled);
        }
        let mut emit = Emit::new(self.linter.catalog);
        crate::lint::checks::writers::check(&self.render, &mut emit, spread);
        let mut findings = self.findings;
        findings.extend(self.emit_findings);
        findings.extend(emit.findings);
        fix_bundle_ids(&mut findings, &bundles);
        self.timings.bundles = self.bundling + finishing.elapsed();
        findings.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
        findings.dedup();
        self.summary.bundles = finished.count;
        self.summary.errors = findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .count();
        self.summary.warnings = findings
            .iter()
            .filter(|f| f.severity == Severity::Warning)
            .count();
        let keep = self.linter.options.keep;
        Outcome {
            files: self.files,
            findings,
            summary: self.summary,
            bundles: if keep.bundles || keep.programs {
                bundles
            } else {
                Vec::new()
            },
            input_errors: self.input_errors,
            ignores: self.ignores,
            touched: self.touched,
            bundle_files: self.bundle_files.map(merge_by_id).unwrap_or_default(),
            timings: Timings {
                wall: self.started.elapsed(),
                ..self.timings
            },
        }
    }
}

/// One entry per bundle id, in id order, with every file any of its entries named.
fn merge_by_id(mut all: Vec<(String, Vec<usize>)>) -> Vec<(String, Vec<usize>)> {
    all.sort_unstable();
    let mut merged: Vec<(String, Vec<usize>)> = Vec::with_capacity(all.len());
    for (id, files) in all {
        match merged.last_mut() {
            Some((last, known)) if *last == id => {
                known.extend(files);
                known.sort_unstable();
                known.dedup();
            }
            _ => merged.push((id, files)),
        }
    }
    merged
}

/// Findings about a Job known only by its name's prefix were given the prefix as bundle; the
/// assembled bundle knows the owner. A Job that two bundles render under one name
/// (`plan-shared-secret`) names no single owner: its findings keep the bundle they were given,
/// as they do in a streamed run, where the bundles are gone by now.
fn fix_bundle_ids(findings: &mut [Finding], bundles: &[Bundle]) {
    let mut ids: HashMap<ObjectRef, Option<String>> = HashMap::new();
    for b in bundles {
        if let Some(jobs) = b.members.get(&MemberKind::Job) {
            for job in jobs {
                let id = b.id();
                ids.entry(job.object())
                    .and_modify(|known| {
                        if known.as_ref() != Some(&id) {
                            *known = None;
                        }
                    })
                    .or_insert(Some(id));
            }
        }
    }
    for f in findings.iter_mut() {
        if let (Some(object), Some(_)) = (&f.object, &f.bundle)
            && let Some(Some(id)) = ids.get(object)
        {
            f.bundle = Some(id.clone());
        }
    }
}
