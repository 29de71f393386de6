//! The rules decided in Rust (bundle, text and input scope); object rules are CEL, run by the
//! engine. Each submodule holds the rules of one concern.

pub mod bundle_rules;
pub mod objects;
pub mod plan;
pub mod runtime;
pub mod text;
pub mod wiring;
pub mod writers;

use crate::lint::catalog::Catalog;
use crate::load::source::Loc;
use crate::model::{Finding, Label, ObjectRef, Severity};

/// Collects findings, with each rule's severity from the catalog.
pub struct Emit<'c> {
    catalog: &'c Catalog,
    pub findings: Vec<Finding>,
}

impl<'c> Emit<'c> {
    pub fn new(catalog: &'c Catalog) -> Self {
        Emit {
            catalog,
            findings: Vec::new(),
        }
    }

    /// An empty `Emit` of the same catalog, for a part of a check run on another thread.
    pub fn sibling(&self) -> Emit<'c> {
        Emit::new(self.catalog)
    }

    pub fn add(
        &mut self,
        rule: &str,
        loc: impl Into<Loc>,
        message: impl Into<String>,
        object: Option<&ObjectRef>,
        bundle: Option<&str>,
    ) -> &mut Finding {
        let severity = self
            .catalog
            .rule(rule)
            .map_or(Severity::Error, |r| r.severity);
        debug_assert!(
            self.catalog.rule(rule).is_some(),
            "rule `{rule}` is not in the catalog"
        );
        self.findings.push(Finding {
            rule: rule.to_string(),
            severity,
            message: message.into(),
            loc: loc.into(),
            labels: Vec::new(),
            object: object.cloned(),
            bundle: bundle.map(str::to_string),
            suppressed: None,
        });
        self.findings.last_mut().expect("just pushed")
    }
}

impl Finding {
    pub fn label(&mut self, loc: impl Into<Loc>, message: impl Into<String>) -> &mut Self {
        self.labels.push(Label {
            loc: loc.into(),
            message: message.into(),
        });
        self
    }
}
