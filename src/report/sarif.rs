//! `--format sarif`: SARIF 2.1.0, one run, for code-scanning services. The driver lists every
//! rule of the catalog (id, title, rationale, remediation, default level); each result points at
//! the same region as the JSON finding (1-based lines, columns counted in Unicode code points, as
//! `columnKind` says, end column exclusive), with the finding's labels as related locations and
//! a `credlint.io/ignore` annotation as an in-source suppression carrying its reason.

use crate::lint::catalog::Catalog;
use crate::load::source::Loc;
use crate::model::outcome::Outcome;
use crate::model::{Finding, Severity};
use serde::Serialize;

const SCHEMA: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

#[derive(Serialize)]
struct Log<'a> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    version: &'static str,
    runs: [Run<'a>; 1],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Run<'a> {
    tool: Tool<'a>,
    column_kind: &'static str,
    invocations: [Invocation; 1],
    results: Vec<SarifResult<'a>>,
    /// `simulate` only: the layers of the programs' sandbox (as in the JSON summary).
    #[serde(skip_serializing_if = "Option::is_none")]
    properties: Option<RunProperties<'a>>,
}

#[derive(Serialize)]
struct RunProperties<'a> {
    sandbox: super::json::Sandbox<'a>,
}

#[derive(Serialize)]
struct Tool<'a> {
    driver: Driver<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Driver<'a> {
    name: &'static str,
    version: &'static str,
    information_uri: &'static str,
    rules: Vec<Rule<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Rule<'a> {
    id: &'a str,
    short_description: Text,
    full_description: Text,
    help: Help,
    help_uri: String,
    default_configuration: Configuration,
    properties: RuleProperties<'a>,
}

#[derive(Serialize)]
struct Text {
    text: String,
}

#[derive(Serialize)]
struct Help {
    text: String,
    markdown: String,
}

#[derive(Serialize)]
struct Configuration {
    level: &'static str,
}

#[derive(Serialize)]
struct RuleProperties<'a> {
    scope: &'static str,
    adr: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Invocation {
    execution_successful: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_execution_notifications: Vec<Notification>,
}

#[derive(Serialize)]
struct Notification {
    level: &'static str,
    message: Text,
    locations: Vec<Location>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifResult<'a> {
    rule_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    rule_index: Option<usize>,
    level: &'static str,
    message: Text,
    locations: [Location; 1],
    #[serde(skip_serializing_if = "Vec::is_empty")]
    related_locations: Vec<Location>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    suppressions: Vec<Suppression>,
    properties: ResultProperties<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Location {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<usize>,
    physical_location: PhysicalLocation,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<Text>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PhysicalLocation {
    artifact_location: ArtifactLocation,
    #[serde(skip_serializing_if = "Option::is_none")]
    region: Option<Region>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ArtifactLocation {
    uri: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    uri_base_id: Option<&'static str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Region {
    start_line: usize,
    start_column: usize,
    end_line: usize,
    end_column: usize,
}

#[derive(Serialize)]
struct Suppression {
    kind: &'static str,
    status: &'static str,
    justification: String,
    location: Location,
}

#[derive(Serialize)]
struct ResultProperties<'a> {
    bundle: Option<&'a str>,
    object: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    source: Option<&'a str>,
}

/// Where the tool is documented: the repository Cargo.toml names (SARIF wants an absolute URI).
fn information_uri() -> &'static str {
    crate::lint::catalog::REPOSITORY
}

fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}

/// The report, with each finding's Helm template in its message and `properties.source`
/// (`helm`: none for `Sources::default()`).
pub fn write(
    outcome: &Outcome,
    helm: &super::helm::Sources,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let catalog = Catalog::get();
    let rules = catalog
        .rules
        .iter()
        .map(|r| Rule {
            id: &r.id,
            short_description: Text {
                text: r.title.clone(),
            },
            full_description: Text {
                text: r.rationale.clone(),
            },
            help: Help {
                text: r.remediation.clone(),
                markdown: format!(
                    "**Fix.** {}\n\n**Why.** {}\n\nEnforces {}.",
                    r.remediation, r.rationale, r.adr
                ),
            },
            help_uri: r.doc_url(),
            default_configuration: Configuration {
                level: level(r.severity),
            },
            properties: RuleProperties {
                scope: r.scope.as_str(),
                adr: &r.adr,
            },
        })
        .collect();
    let results = outcome
        .findings
        .iter()
        .enumerate()
        .map(|(i, f)| result(f, outcome, catalog, helm.get(i)))
        .collect();
    let notifications = outcome
        .input_errors
        .iter()
        .map(|e| Notification {
            level: "error",
            message: Text {
                text: format!("{}: {}", e.path, e.message),
            },
            locations: vec![Location {
                id: None,
                physical_location: PhysicalLocation {
                    artifact_location: artifact(&e.path),
                    region: None,
                },
                message: None,
            }],
        })
        .collect();
    let log = Log {
        schema: SCHEMA,
        version: "2.1.0",
        runs: [Run {
            tool: Tool {
                driver: Driver {
                    name: "credlint",
                    version: env!("CARGO_PKG_VERSION"),
                    information_uri: information_uri(),
                    rules,
                },
            },
            column_kind: "unicodeCodePoints",
            invocations: [Invocation {
                execution_successful: outcome.input_errors.is_empty(),
                tool_execution_notifications: notifications,
            }],
            results,
            properties: super::json::sandbox(&outcome.summary.sandbox)
                .map(|sandbox| RunProperties { sandbox }),
        }],
    };
    serde_json::to_writer_pretty(&mut *out, &log)?;
    writeln!(out)
}

fn result<'a>(
    f: &'a Finding,
    outcome: &'a Outcome,
    catalog: &Catalog,
    source: Option<&'a str>,
) -> SarifResult<'a> {
    // The template is not a file of the run (credlint read the rendered output), so it is
    // said in the message rather than given as a location that could not be opened.
    let text = match source {
        Some(template) => format!("{} (from the Helm template {template})", f.message),
        None => f.message.clone(),
    };
    SarifResult {
        rule_id: &f.rule,
        rule_index: catalog.rules.iter().position(|r| r.id == f.rule),
        level: level(f.severity),
        message: Text { text },
        locations: [location(outcome, &f.loc, None, None)],
        related_locations: f
            .labels
            .iter()
            .enumerate()
            .map(|(i, l)| location(outcome, &l.loc, Some(i + 1), Some(&l.message)))
            .collect(),
        suppressions: f
            .suppressed
            .iter()
            .map(|s| Suppression {
                // An annotation stands in the manifest; a [[per-path]] entry in credlint.toml.
                kind: if s.per_path { "external" } else { "inSource" },
                status: "accepted",
                justification: s.reason.clone(),
                location: location(outcome, &s.loc, None, None),
            })
            .collect(),
        properties: ResultProperties {
            bundle: f.bundle.as_deref(),
            object: f.object.as_ref().map(ToString::to_string),
            source,
        },
    }
}

fn location(outcome: &Outcome, loc: &Loc, id: Option<usize>, message: Option<&str>) -> Location {
    Location {
        id,
        physical_location: PhysicalLocation {
            artifact_location: artifact(super::file_name(outcome, loc.file)),
            region: Some(Region {
                start_line: loc.line,
                start_column: loc.column,
                end_line: loc.end_line,
                end_column: loc.end_column,
            }),
        },
        message: message.map(|m| Text {
            text: m.to_string(),
        }),
    }
}

/// A display path as a URI: relative paths stay relative to the folder credlint ran in
/// (`%SRCROOT%`, the repository root in CI), absolute ones become `file://` URIs.
fn artifact(path: &str) -> ArtifactLocation {
    if path.starts_with('/') {
        ArtifactLocation {
            uri: format!("file://{}", encode_path(path)),
            uri_base_id: None,
        }
    } else {
        ArtifactLocation {
            uri: encode_path(path),
            uri_base_id: Some("%SRCROOT%"),
        }
    }
}

/// Percent-encodes what may not stand in a URI path (RFC 3986 `pchar` and `/`), and `:` too,
/// which would make a relative path's first segment look like a scheme.
pub fn encode_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        let plain = b.is_ascii_alphanumeric() || b"-._~/!$&'()*+,;=@".contains(&b);
        if plain {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_become_uris() {
        assert_eq!(encode_path("rendered/shop.yaml"), "rendered/shop.yaml");
        assert_eq!(encode_path("a b/ä:1.yaml"), "a%20b/%C3%A4%3A1.yaml");
        assert_eq!(encode_path("100%.yaml"), "100%25.yaml");
        assert_eq!(artifact("/tmp/x y.yaml").uri, "file:///tmp/x%20y.yaml");
        assert_eq!(artifact("x.yaml").uri_base_id, Some("%SRCROOT%"));
    }
}
