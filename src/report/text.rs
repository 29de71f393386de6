//! `--format text`: each finding as a miette diagnostic (rule id, message, the offending node
//! labelled in its source, the remediation as help), then a summary line.
//!
//! miette's stock sources scan from the start of the file for every diagnostic; the source here
//! keeps a line index, so a finding near the end of a large file renders without a rescan.

use super::Texts;
use crate::lint::catalog::Catalog;
use crate::load::source::LineIndex;
use crate::model::outcome::{IGNORE_ANNOTATION, Outcome};
use crate::model::{Finding, Severity};
use miette::{
    GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteDiagnostic, MietteError,
    MietteSpanContents, SourceCode, SourceSpan, SpanContents,
};
use std::collections::HashMap;

/// A file's text with its line index, as miette reads it. Characters a terminal would act on
/// are shown escaped ([`super::shown`]); `shifts` maps the file's offsets past them.
pub struct IndexedSource {
    name: String,
    text: String,
    lines: LineIndex,
    /// For each escaped character, where it ends in the file and how many bytes the escapes up
    /// to it added.
    shifts: Vec<(usize, usize)>,
}

impl IndexedSource {
    pub fn new(name: String, text: String) -> Self {
        let name = super::shown(&name).into_owned();
        let (text, shifts) = escaped_source(text);
        let lines = LineIndex::new(&text);
        IndexedSource {
            name,
            text,
            lines,
            shifts,
        }
    }

    /// Where offset `at` of the file is in the text shown.
    fn at(&self, at: usize) -> usize {
        let before = self.shifts.partition_point(|&(end, _)| end <= at);
        at + before.checked_sub(1).map_or(0, |i| self.shifts[i].1)
    }

    /// A finding's span in the text shown.
    fn span(&self, start: usize, len: usize) -> (usize, usize) {
        let from = self.at(start);
        (from, self.at(start + len) - from)
    }
}

/// The text with its hidden characters escaped (a CR before a line feed is a line ending and
/// stays), and the shifts of [`IndexedSource`].
fn escaped_source(text: String) -> (String, Vec<(usize, usize)>) {
    let hides = |text: &str, i: usize, c: char| {
        super::hidden(c) && !(c == '\r' && text.as_bytes().get(i + 1) == Some(&b'\n'))
    };
    if !text.char_indices().any(|(i, c)| hides(&text, i, c)) {
        return (text, Vec::new());
    }
    let mut out = String::with_capacity(text.len() + 64);
    let mut shifts = Vec::new();
    let mut added = 0;
    for (i, c) in text.char_indices() {
        if hides(&text, i, c) {
            let escape = format!("\\u{{{:x}}}", u32::from(c));
            added += escape.len() - c.len_utf8();
            out.push_str(&escape);
            shifts.push((i + c.len_utf8(), added));
        } else {
            out.push(c);
        }
    }
    (out, shifts)
}

/// A snippet longer than this (a minified JSON file, a 50 MB scalar on one line) is cut down
/// to the part of the line around the span.
const MAX_WINDOW: usize = 4096;
const CLIP_MARGIN: usize = 80;

impl IndexedSource {
    fn clipped(&self, start: usize, end: usize) -> Box<dyn SpanContents<'_> + '_> {
        let line = self.lines.line_of(start);
        let line_start = self.lines.line_start(line).unwrap_or(0);
        let line_end = self
            .lines
            .line_start(line + 1)
            .map_or(self.text.len(), |next| next.saturating_sub(1));
        let mut from = start.saturating_sub(CLIP_MARGIN).max(line_start);
        while !self.text.is_char_boundary(from) {
            from -= 1;
        }
        let mut to = (end.min(start + CLIP_MARGIN) + CLIP_MARGIN)
            .min(line_end)
            .max(from);
        while !self.text.is_char_boundary(to) {
            to += 1;
        }
        let column = self.lines.chars_between(&self.text, line_start, from);
        Box::new(MietteSpanContents::new_named(
            self.name.clone(),
            &self.text.as_bytes()[from..to],
            SourceSpan::new(from.into(), to - from),
            line,
            column,
            1,
        ))
    }
}

impl IndexedSource {
    /// The span alone, from its own column: miette reads the location it prints in a
    /// diagnostic's header (`file:line:column`) from this.
    fn at_span(&self, start: usize, end: usize) -> Box<dyn SpanContents<'_> + '_> {
        let line = self.lines.line_of(start);
        let line_start = self.lines.line_start(line).unwrap_or(0);
        let column = self.lines.chars_between(&self.text, line_start, start);
        let last = self.lines.line_of(end.max(start));
        Box::new(MietteSpanContents::new_named(
            self.name.clone(),
            &self.text.as_bytes()[start..end],
            SourceSpan::new(start.into(), end - start),
            line,
            column,
            last - line + 1,
        ))
    }
}

impl SourceCode for IndexedSource {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        before: usize,
        after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let start = span.offset();
        let end = start + span.len();
        if end > self.text.len() {
            return Err(MietteError::OutOfBounds);
        }
        if before == 0 && after == 0 {
            return Ok(self.at_span(start, end));
        }
        let first = self.lines.line_of(start).saturating_sub(before);
        let last_line = self
            .lines
            .line_of(end.saturating_sub(usize::from(!span.is_empty())).max(start));
        let last = (last_line + after).min(self.lines.line_count() - 1);
        let window_start = self.lines.line_start(first).unwrap_or(0);
        let window_end = self
            .lines
            .line_start(last + 1)
            .map_or(self.text.len(), |next| next.saturating_sub(1));
        let window_end = window_end.max(window_start);
        if window_end - window_start > MAX_WINDOW {
            return Ok(self.clipped(start, end));
        }
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.clone(),
            &self.text.as_bytes()[window_start..window_end],
            SourceSpan::new(window_start.into(), window_end - window_start),
            first,
            0,
            last - first + 1,
        )))
    }
}

#[derive(Clone, Debug, Default)]
pub struct Style {
    pub color: bool,
    /// List every suppressed finding with its reason (otherwise only their number is shown).
    pub show_suppressed: bool,
    /// The width to wrap messages at; `None`: no wrapping (output into a pipe or a file).
    pub width: Option<usize>,
    /// Only the findings: no summary line, no line about suppressed findings.
    pub quiet: bool,
}

/// The report, with the Helm template each finding comes from (`helm`: none for
/// `Sources::default()`).
pub fn write(
    outcome: &Outcome,
    texts: &Texts,
    helm: &super::helm::Sources,
    style: &Style,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let catalog = Catalog::get();
    let theme = if style.color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let handler = GraphicalReportHandler::new_themed(theme)
        .with_context_lines(1)
        // The rule's address follows its id as text: a terminal hyperlink shows nothing where
        // it is not understood.
        .with_links(false);
    let handler = match style.width {
        Some(width) => handler.with_width(width),
        None => handler.with_wrap_lines(false).with_width(100_000),
    };
    let mut sources: HashMap<usize, Option<std::sync::Arc<IndexedSource>>> = HashMap::new();
    for (index, finding) in outcome.findings.iter().enumerate() {
        if finding.suppressed.is_some() {
            continue;
        }
        let source = sources
            .entry(finding.loc.file)
            .or_insert_with(|| {
                let name = outcome.files.get(finding.loc.file)?.clone();
                texts
                    .read(outcome, finding.loc.file)
                    .map(|t| std::sync::Arc::new(IndexedSource::new(name, t)))
            })
            .clone();
        let diagnostic = diagnostic(finding, catalog, outcome, source.as_deref());
        let mut rendered = String::new();
        let report = match source {
            Some(src) => miette::Report::new(diagnostic).with_source_code(SharedSource(src)),
            None => miette::Report::new(diagnostic),
        };
        if handler
            .render_report(&mut rendered, report.as_ref())
            .is_err()
        {
            rendered = format!("{}: {}\n", finding.rule, super::shown(&finding.message));
        }
        if source_missing(&sources, finding) {
            let file = super::shown_file_name(outcome, finding.loc.file);
            rendered.push_str(&format!(
                "  at {file}:{}:{}\n",
                finding.loc.line, finding.loc.column
            ));
        }
        if let Some(template) = helm.get(index) {
            rendered.push_str(&format!(
                "  from the Helm template {}\n",
                super::shown(template)
            ));
        }
        writeln!(out, "{rendered}")?;
    }
    if style.quiet {
        return Ok(());
    }
    summary(outcome, out)?;
    suppressed(outcome, style, out)
}

/// The end of a report: errors, warnings and what was read (from `simulate`, a second line
/// with the scenarios and runs).
pub fn summary(outcome: &Outcome, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let s = &outcome.summary;
    writeln!(
        out,
        "{} {}, {} {} in {} {} ({} {}, {} {}, {} {})",
        s.errors,
        plural(s.errors, "error", "errors"),
        s.warnings,
        plural(s.warnings, "warning", "warnings"),
        s.documents,
        plural(s.documents, "document", "documents"),
        s.objects,
        plural(s.objects, "object", "objects"),
        s.bundles,
        plural(s.bundles, "bundle", "bundles"),
        s.files,
        plural(s.files, "file", "files"),
    )?;
    if let Some(sim) = s.simulated {
        writeln!(
            out,
            "simulated: {} {}, {} {} of the programs",
            sim.scenarios,
            plural(sim.scenarios, "scenario", "scenarios"),
            sim.runs,
            plural(sim.runs, "run", "runs"),
        )?;
    }
    if !s.sandbox.is_empty() {
        let held: Vec<&str> = s
            .sandbox
            .iter()
            .filter(|l| l.missing.is_none())
            .map(|l| l.name.as_str())
            .collect();
        writeln!(
            out,
            "sandbox: {} of {} layers held: {}",
            held.len(),
            s.sandbox.len(),
            if held.is_empty() {
                "none".to_string()
            } else {
                held.join(", ")
            }
        )?;
        for layer in &s.sandbox {
            if let Some(why) = &layer.missing {
                writeln!(out, "sandbox: not held: {}: {why}", layer.name)?;
            }
        }
    }
    Ok(())
}

/// Suppressed findings do not count and are not shown as diagnostics: one line says how many,
/// or, with `--show-suppressed`, one line each says what was accepted, where, and why.
pub(crate) fn suppressed(
    outcome: &Outcome,
    style: &Style,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let accepted: Vec<&Finding> = outcome
        .findings
        .iter()
        .filter(|f| f.suppressed.is_some())
        .collect();
    if accepted.is_empty() {
        return Ok(());
    }
    let n = accepted.len();
    let inline = accepted
        .iter()
        .any(|f| f.suppressed.as_ref().is_some_and(|s| !s.per_path));
    let config = accepted
        .iter()
        .any(|f| f.suppressed.as_ref().is_some_and(|s| s.per_path));
    let by = match (inline, config) {
        (true, true) => format!("{IGNORE_ANNOTATION} and [[per-path]]"),
        (false, true) => "[[per-path]]".to_string(),
        _ => IGNORE_ANNOTATION.to_string(),
    };
    if !style.show_suppressed {
        return writeln!(
            out,
            "{n} {} suppressed by {by} (--show-suppressed lists {})",
            plural(n, "finding", "findings"),
            plural(n, "it", "them"),
        );
    }
    writeln!(
        out,
        "{n} {} suppressed by {by}:",
        plural(n, "finding", "findings")
    )?;
    for f in accepted {
        let Some(s) = &f.suppressed else { continue };
        let on = f.object.as_ref().map_or(String::new(), |o| {
            format!(" on {}", super::shown(&o.to_string()))
        });
        writeln!(
            out,
            "  {} {}:{}:{} {}{on}: \"{}\" ({} at {}:{})",
            f.severity,
            super::shown_file_name(outcome, f.loc.file),
            f.loc.line,
            f.loc.column,
            f.rule,
            super::shown(&s.reason),
            if s.per_path {
                "[[per-path]]"
            } else {
                "annotation"
            },
            super::shown_file_name(outcome, s.loc.file),
            s.loc.line,
        )?;
    }
    Ok(())
}

fn source_missing(
    sources: &HashMap<usize, Option<std::sync::Arc<IndexedSource>>>,
    f: &Finding,
) -> bool {
    sources.get(&f.loc.file).is_none_or(Option::is_none)
}

fn plural(n: usize, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 { one } else { many }
}

struct SharedSource(std::sync::Arc<IndexedSource>);

impl SourceCode for SharedSource {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        before: usize,
        after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        self.0.read_span(span, before, after)
    }
}

fn diagnostic(
    f: &Finding,
    catalog: &Catalog,
    outcome: &Outcome,
    source: Option<&IndexedSource>,
) -> MietteDiagnostic {
    let severity = match f.severity {
        Severity::Error => miette::Severity::Error,
        Severity::Warning => miette::Severity::Warning,
    };
    let mut d = MietteDiagnostic::new(super::shown(&f.message))
        .with_code(f.rule.clone())
        .with_severity(severity);
    if let Some(rule) = catalog.rule(&f.rule) {
        d = d.with_help(rule.remediation.clone());
        d = d.with_url(rule.doc_url());
    }
    if let Some(source) = source {
        let mut labels = vec![LabeledSpan::new_primary_with_span(
            Some(super::shown(&label_text(f)).into_owned()),
            source.span(f.loc.span.start(), f.loc.span.len()),
        )];
        for l in &f.labels {
            if l.loc.file == f.loc.file {
                labels.push(LabeledSpan::new_with_span(
                    Some(super::shown(&l.message).into_owned()),
                    source.span(l.loc.span.start(), l.loc.span.len()),
                ));
            } else {
                let file = super::shown_file_name(outcome, l.loc.file);
                d.help = Some(format!(
                    "{}\nsee {file}:{}:{}: {}",
                    d.help.unwrap_or_default(),
                    l.loc.line,
                    l.loc.column,
                    super::shown(&l.message)
                ));
            }
        }
        d = d.with_labels(labels);
    }
    d
}

fn label_text(f: &Finding) -> String {
    match &f.object {
        Some(o) if o.name.is_empty() => format!("{} without metadata.name", o.kind),
        Some(o) => format!("{} {}", o.kind, o.name),
        None => "here".to_string(),
    }
}
