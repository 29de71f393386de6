//! One file linted: its bytes decoded and cut into documents, each document parsed and its
//! objects judged (input, object and text rules), the facts its bundle members leave kept for
//! the run. Everything here is decided on the calling thread; a large file's segments and scans
//! are handed to the caller's [`Spread`], which says whether they run side by side.

use crate::common::spread::Spread;
use crate::lint::Linter;
use crate::lint::catalog::Resource;
use crate::lint::cel::reads;
use crate::lint::checks::objects::{self, MemberObject, ObjectFacts};
use crate::lint::checks::{Emit, text};
use crate::lint::programs::{MEMBER_CONDITION, Programs};
use crate::lint::verdicts::ObjectVerdicts;
use crate::load::source::Source;
use crate::load::stream;
use crate::load::yaml::{self, Node, Parsed, Span};
use crate::model::bundle::{MemberKind, Owner};
use crate::model::members;
use crate::model::object::{self, Object};
use crate::model::outcome::{FileOut, IGNORE_ANNOTATION, IgnoreAnnotation};
use crate::model::{Finding, ObjectRef, bundle_id};
use std::ops::Range;

/// A file is linted in segments of about this many bytes of whole documents: the pieces a
/// spread may run side by side.
pub const SEGMENT_BYTES: usize = 256 * 1024;

/// Where an object stands in its file: its document and its own node.
#[derive(Debug)]
struct Place {
    document: Range<usize>,
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

/// What one segment of a file leaves: its result, and what its pragma scan needs.
struct Part {
    out: FileOut,
    /// Every object read, so that a finding on the raw text names the object it stands in.
    places: Vec<Place>,
    /// The lines where the create.py pragma belongs.
    header_lines: Vec<usize>,
    /// Whether a document is a sequence of objects: the file is a manifest, though no object
    /// in it is read.
    sequence: bool,
}

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

/// The rules on how a file's documents are shaped, which hold only for a manifest: a file with
/// a Kubernetes object in it (kubectl refuses the whole file for one bad document).
const DOCUMENT_RULES: &[&str] = &["not-an-object", "yaml-syntax", "yaml-duplicate-key"];

/// Whether a file that yielded no object is still a manifest, one so broken that no object
/// could be read from it: it has a document that does not parse and a top-level `kind` key
/// (`kind:` at the start of a line, or a JSON `"kind"` key). A merge gate must not let a
/// manifest with a typo pass as "no manifest"; a values.yaml whose nested `kind:` is indented,
/// or a file that parses whole, is no manifest.
fn broken_manifest(text: &str, findings: &[Finding]) -> bool {
    let unparsed = findings.iter().any(|f| f.rule == "yaml-syntax");
    let json = text
        .trim_start_matches('\u{feff}')
        .trim_start()
        .starts_with(['{', '[']);
    unparsed
        && text.lines().any(|line| {
            let line = line.strip_prefix("--- ").unwrap_or(line);
            line.starts_with("kind:")
                || line.starts_with("\"kind\":")
                || (json && line.contains("\"kind\""))
        })
}

/// Consecutive documents in segments of about [`SEGMENT_BYTES`], by index into `ranges`.
fn segments(ranges: &[Range<usize>]) -> Vec<Range<usize>> {
    let mut segments = Vec::new();
    let mut start = 0;
    for (i, r) in ranges.iter().enumerate() {
        if r.end - ranges[start].start >= SEGMENT_BYTES || i + 1 == ranges.len() {
            segments.push(start..i + 1);
            start = i + 1;
        }
    }
    segments
}

impl Linter {
    /// Lints one file's bytes. A document that is not UTF-8 is a `yaml-syntax` finding; the
    /// file's other documents are still read. UTF-16 with a byte-order mark is decoded, as
    /// go-yaml decodes it. `name` is the file as shown (some verdicts depend on its ending).
    /// `spread` says whether the scans and segments of a large file run side by side; the
    /// result is the same either way. Fails only where the rules do not compile.
    pub fn lint_bytes(
        &self,
        file: usize,
        name: &str,
        bytes: &[u8],
        spread: &impl Spread,
    ) -> Result<FileOut, String> {
        let p = self.compiled()?;
        // Decoding the bytes and indexing the lines are the first steps of the parse, and are
        // timed with it; the index also finds where the text is cut.
        let started = std::time::Instant::now();
        let decoded = stream::decode_spread(bytes, spread);
        let source = Source::spread(file, &decoded.text, spread).named(name);
        // Concatenated JSON objects are documents one by one, as kubectl applies them.
        let stream = crate::load::json_stream::objects(&decoded.text);
        let ranges = match &stream {
            Some(stream) => stream.objects.clone(),
            None => decoded.ranges(&source.lines),
        };
        let cut = started.elapsed();
        let (mut out, sequence) = self.lint_ranges(p, &source, &ranges, &decoded, spread);
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
        if out.objects == 0 && !sequence && !broken_manifest(&decoded.text, &out.findings) {
            // No manifest (docs/bundle.md, "Files that are not manifests"): a Chart.yaml,
            // values.yaml or package.json is nobody's object, so how its documents are shaped
            // is none of credlint's business. Text rules still hold.
            out.findings
                .retain(|f| !DOCUMENT_RULES.contains(&f.rule.as_str()));
        }
        Ok(out)
    }

    fn lint_ranges(
        &self,
        p: &Programs,
        source: &Source,
        ranges: &[Range<usize>],
        decoded: &stream::Decoded,
        spread: &impl Spread,
    ) -> (FileOut, bool) {
        let segments = segments(ranges);
        let parts = spread.map(&segments, |seg| {
            self.lint_documents(p, source, &ranges[seg.clone()], decoded)
        });
        let mut out = FileOut::default();
        // Sized once: the lists of a large render's segments would otherwise be copied again
        // and again as they grow.
        let total = |f: fn(&Part) -> usize| parts.iter().map(f).sum::<usize>();
        out.findings.reserve(total(|p| p.out.findings.len()));
        out.members.reserve(total(|p| p.out.members.len()));
        out.writers.reserve(total(|p| p.out.writers.len()));
        out.ignores.reserve(total(|p| p.out.ignores.len()));
        let mut scans = Vec::with_capacity(parts.len());
        let sequence = parts.iter().any(|p| p.sequence);
        for (seg, part) in segments.iter().zip(parts) {
            out.append(part.out);
            let bytes = ranges[seg.start].start..ranges[seg.end - 1].end;
            scans.push((bytes, part.places, part.header_lines));
        }
        // A file that holds no bundle member (a chart's values.yaml that uses detect-secrets
        // pragmas on purpose) is judged only when the configuration asks for every file.
        if out.members.is_empty() && !self.options.pragma_everywhere {
            return (out, sequence);
        }
        // Each segment's scan reads only its own lines and objects; the findings follow the
        // segments' own, in segment order.
        let scanned = spread.map(&scans, |(bytes, places, lines)| {
            let started = std::time::Instant::now();
            let found = self.misplaced_pragmas(source, bytes.clone(), lines, places);
            (found, started.elapsed())
        });
        for (found, took) in scanned {
            out.timings.rules += took;
            out.findings.extend(found);
        }
        (out, sequence)
    }

    /// The `pragma-misplaced` findings in `bytes` of `source`: pragmas anywhere but on the lines
    /// where the create.py pragma belongs (`lines`), each named after the object of `places` it
    /// stands in.
    fn misplaced_pragmas(
        &self,
        source: &Source,
        bytes: Range<usize>,
        lines: &[usize],
        places: &[Place],
    ) -> Vec<Finding> {
        let mut lines = lines.to_vec();
        lines.sort_unstable();
        let mut problems = Vec::new();
        text::misplaced_pragmas(source, bytes, &lines, &mut problems);
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

    /// Lints a run of documents of one file.
    fn lint_documents(
        &self,
        p: &Programs,
        source: &Source,
        ranges: &[Range<usize>],
        decoded: &stream::Decoded,
    ) -> Part {
        let text = source.text;
        let mut part = Part {
            out: FileOut::default(),
            places: Vec::new(),
            header_lines: Vec::new(),
            sequence: false,
        };
        let out = &mut part.out;
        let mut emit = Emit::new(self.catalog);
        let mut programs = Vec::new();
        let mut sequence = false;
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
                            sequence = true;
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
                            let mut facts = ObjectFacts::default();
                            let bundle =
                                self.lint_object(p, obj, source, &mut emit, out, &mut facts);
                            part.header_lines.extend(facts.header_line);
                            if let Some(program) = facts.program {
                                programs.push((program, obj.reference(), bundle.clone()));
                            }
                            part.places.push(Place {
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
        // The programs last: where another thread is analysing one, the rest of the documents
        // were linted meanwhile.
        let linting = std::time::Instant::now();
        for (program, reference, bundle) in programs {
            for f in program.check(source) {
                let loc = source.loc(f.span);
                emit.add(f.rule, loc, f.message, Some(&reference), bundle.as_deref());
            }
        }
        out.timings.rules += linting.elapsed();
        out.findings = emit.findings;
        part.sequence = sequence;
        part
    }

    /// Judges one object: the `--policy` policies, `schema`, the CEL object rules and, for a
    /// bundle member, the Rust object rules; keeps the member's facts and the writers. Returns
    /// the bundle it belongs to, if it is known.
    fn lint_object(
        &self,
        p: &Programs,
        obj: &Object,
        source: &Source,
        emit: &mut Emit,
        out: &mut FileOut,
        facts: &mut ObjectFacts,
    ) -> Option<String> {
        out.writers
            .extend(crate::model::writers::writers(obj, source));
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
        let member = MemberObject {
            obj,
            source,
            owner: &owner,
            reference: &reference,
            bundle,
        };
        for check in objects::checks_for(kind) {
            check(&member, emit, facts);
        }
        let owner = member_owner.unwrap_or(Owner::Linked);
        let plan = facts.plan.take();
        let mut member = members::member(obj, kind, owner, source, plan, self.options.keep);
        if held {
            member.held = Some(emit.findings.split_off(first_held));
        }
        out.members.push(member);
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
