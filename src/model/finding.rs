//! What a run produces: findings with their severity, location, object and bundle.

use crate::load::source::Loc;
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }

    pub fn parse(text: &str) -> Option<Severity> {
        match text {
            "warning" => Some(Severity::Warning),
            "error" => Some(Severity::Error),
            _ => None,
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which part of the input a rule needs to decide (rules.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    Object,
    Bundle,
    Text,
    Runtime,
    Input,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Object => "object",
            Scope::Bundle => "bundle",
            Scope::Text => "text",
            Scope::Runtime => "runtime",
            Scope::Input => "input",
        }
    }

    pub fn parse(text: &str) -> Option<Scope> {
        Some(match text {
            "object" => Scope::Object,
            "bundle" => Scope::Bundle,
            "text" => Scope::Text,
            "runtime" => Scope::Runtime,
            "input" => Scope::Input,
            _ => return None,
        })
    }
}

/// The Kubernetes object a finding is about.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectRef {
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
}

impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} {}/{}", self.kind, ns, self.name),
            None => write!(f, "{} {}", self.kind, self.name),
        }
    }
}

/// A second place a finding refers to (the first of two duplicate keys, the object a bundle
/// finding compares with).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    pub loc: Loc,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub rule: String,
    pub severity: Severity,
    pub message: String,
    pub loc: Loc,
    pub labels: Vec<Label>,
    pub object: Option<ObjectRef>,
    /// `namespace/owner`, or the owner alone when the objects carry no namespace.
    pub bundle: Option<String>,
    /// Set when a `credlint.io/ignore` annotation accepts the finding: it is still reported,
    /// but counts neither in the summary nor for the exit code.
    pub suppressed: Option<Suppression>,
}

/// Why a finding is accepted, and where that was written (the annotation's value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Suppression {
    pub reason: String,
    pub loc: Loc,
    /// Accepted by a `[[per-path]]` entry of credlint.toml (`loc` is its line), not by an
    /// annotation.
    pub per_path: bool,
}

impl Finding {
    /// Whether the finding counts: at or above `fail_on` and not suppressed.
    pub fn fails_at(&self, fail_on: Severity) -> bool {
        self.suppressed.is_none() && self.severity >= fail_on
    }

    /// The order of the output: file, line, column, rule.
    pub fn sort_key(&self) -> (usize, usize, usize, &str, usize, usize, &str) {
        (
            self.loc.file,
            self.loc.line,
            self.loc.column,
            self.rule.as_str(),
            self.loc.end_line,
            self.loc.end_column,
            self.message.as_str(),
        )
    }
}

/// The identity of a bundle: the namespace and the owner.
pub fn bundle_id(namespace: Option<&str>, owner: &str) -> String {
    match namespace {
        Some(ns) => format!("{ns}/{owner}"),
        None => owner.to_string(),
    }
}
