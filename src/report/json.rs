//! `--format json`: one object on standard output, exactly as cli.md describes it. Extensions,
//! present only when they apply, so that output without them is what cli.md shows: `related`
//! (a second place a finding refers to), `suppressed` on a finding a `credlint.io/ignore`
//! annotation accepts (its reason and where the annotation stands), `summary.suppressed`, and
//! `summary.scenarios`, `summary.runs` and `summary.sandbox` (the layers of the programs'
//! sandbox that held, and why each other one did not) from `simulate`.

use crate::model::Finding;
use crate::model::outcome::Outcome;
use serde::Serialize;

#[derive(Serialize)]
struct Report<'a> {
    version: u32,
    summary: Summary<'a>,
    findings: Vec<JsonFinding<'a>>,
}

#[derive(Serialize)]
struct Summary<'a> {
    files: usize,
    documents: usize,
    objects: usize,
    bundles: usize,
    errors: usize,
    warnings: usize,
    #[serde(skip_serializing_if = "is_zero")]
    suppressed: usize,
    /// `simulate` only: the scenarios set up and the runs of the programs.
    #[serde(skip_serializing_if = "Option::is_none")]
    scenarios: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    runs: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sandbox: Option<Sandbox<'a>>,
}

/// `simulate`'s sandbox: the layers that held, and those that did not with the reason.
#[derive(Serialize)]
pub struct Sandbox<'a> {
    held: Vec<&'a str>,
    missing: Vec<MissingLayer<'a>>,
}

#[derive(Serialize)]
struct MissingLayer<'a> {
    layer: &'a str,
    reason: &'a str,
}

/// The sandbox of a `simulate` summary; `None` for other runs.
pub fn sandbox(layers: &[crate::model::outcome::SandboxLayer]) -> Option<Sandbox<'_>> {
    (!layers.is_empty()).then(|| Sandbox {
        held: layers
            .iter()
            .filter(|l| l.missing.is_none())
            .map(|l| l.name.as_str())
            .collect(),
        missing: layers
            .iter()
            .filter_map(|l| {
                l.missing.as_deref().map(|reason| MissingLayer {
                    layer: &l.name,
                    reason,
                })
            })
            .collect(),
    })
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

#[derive(Serialize)]
struct JsonObject<'a> {
    kind: &'a str,
    namespace: Option<&'a str>,
    name: &'a str,
}

#[derive(Serialize)]
pub struct JsonFinding<'a> {
    rule: &'a str,
    severity: &'a str,
    message: &'a str,
    file: &'a str,
    line: usize,
    column: usize,
    end_line: usize,
    end_column: usize,
    object: Option<JsonObject<'a>>,
    bundle: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    related: Vec<Related<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    suppressed: Option<Suppressed<'a>>,
    /// The Helm template the finding's document was rendered from (`# Source:`).
    #[serde(skip_serializing_if = "Option::is_none")]
    source: Option<&'a str>,
}

#[derive(Serialize)]
struct Suppressed<'a> {
    reason: &'a str,
    file: &'a str,
    line: usize,
    column: usize,
}

#[derive(Serialize)]
struct Related<'a> {
    message: &'a str,
    file: &'a str,
    line: usize,
    column: usize,
    end_line: usize,
    end_column: usize,
}

pub fn finding<'a>(f: &'a Finding, files: &'a [String]) -> JsonFinding<'a> {
    let file = |i: usize| files.get(i).map_or("", String::as_str);
    JsonFinding {
        rule: &f.rule,
        severity: f.severity.as_str(),
        message: &f.message,
        file: file(f.loc.file),
        line: f.loc.line,
        column: f.loc.column,
        end_line: f.loc.end_line,
        end_column: f.loc.end_column,
        object: f.object.as_ref().map(|o| JsonObject {
            kind: &o.kind,
            namespace: o.namespace.as_deref(),
            name: &o.name,
        }),
        bundle: f.bundle.as_deref(),
        related: f
            .labels
            .iter()
            .map(|l| Related {
                message: &l.message,
                file: file(l.loc.file),
                line: l.loc.line,
                column: l.loc.column,
                end_line: l.loc.end_line,
                end_column: l.loc.end_column,
            })
            .collect(),
        suppressed: f.suppressed.as_ref().map(|s| Suppressed {
            reason: &s.reason,
            file: file(s.loc.file),
            line: s.loc.line,
            column: s.loc.column,
        }),
        source: None,
    }
}

/// The report, with each finding's Helm template as `source` (`helm`: none for
/// `Sources::default()`).
pub fn write(
    outcome: &Outcome,
    helm: &super::helm::Sources,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let s = &outcome.summary;
    let report = Report {
        version: 1,
        summary: Summary {
            files: s.files,
            documents: s.documents,
            objects: s.objects,
            bundles: s.bundles,
            errors: s.errors,
            warnings: s.warnings,
            suppressed: outcome
                .findings
                .iter()
                .filter(|f| f.suppressed.is_some())
                .count(),
            scenarios: s.simulated.map(|s| s.scenarios),
            runs: s.simulated.map(|s| s.runs),
            sandbox: sandbox(&s.sandbox),
        },
        findings: outcome
            .findings
            .iter()
            .enumerate()
            .map(|(i, f)| JsonFinding {
                source: helm.get(i),
                ..finding(f, &outcome.files)
            })
            .collect(),
    };
    serde_json::to_writer_pretty(&mut *out, &report)?;
    writeln!(out)
}
