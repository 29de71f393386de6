//! Policy verdicts as findings: a denial is `policy:<name>` at the node the validation blames
//! (the object's name when nothing is blamed), with the policy's message; a policy credlint cannot
//! evaluate is `policy-unsupported`, at the policy file or, when only one object is undecidable,
//! at that object.

use super::{PolicySet, Verdict};
use crate::lint::catalog::Catalog;
use crate::load::locate::span_for;
use crate::load::source::Source;
use crate::model::object::Object;
use crate::model::{Finding, ObjectRef, Severity};

/// The rule id of a policy's findings.
pub const PREFIX: &str = "policy:";
pub const UNSUPPORTED: &str = "policy-unsupported";

pub fn rule_id(policy: &str) -> String {
    format!("{PREFIX}{policy}")
}

fn unsupported_severity() -> Severity {
    Catalog::get()
        .rule(UNSUPPORTED)
        .map_or(Severity::Error, |r| r.severity)
}

/// The findings of every policy on one object.
pub fn object_findings(
    set: &PolicySet,
    obj: &Object,
    source: &Source,
    reference: &ObjectRef,
    bundle: Option<&str>,
    admitted: bool,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let finding = |rule: String, severity, span, message: String| Finding {
        rule,
        severity,
        message,
        loc: source.loc(span),
        labels: Vec::new(),
        object: Some(reference.clone()),
        bundle: bundle.map(str::to_string),
        suppressed: None,
    };
    let Some(subject) = set.subject(obj.root) else {
        return out;
    };
    for (index, policy) in set.policies.iter().enumerate() {
        match set.decide_for(index, &subject) {
            Verdict::NotMatched | Verdict::Admitted => {}
            Verdict::Undecidable(reason) => out.push(finding(
                UNSUPPORTED.into(),
                unsupported_severity(),
                obj.anchor().span,
                format!("policy `{}`: {reason}", policy.name),
            )),
            Verdict::Denied(denials) => {
                // The API server refuses an object with a schema error before any policy sees
                // it: a policy that cannot even evaluate on it would only repeat that finding.
                for denial in denials.into_iter().filter(|d| admitted || !d.error) {
                    let mut spans: Vec<_> =
                        denial.paths.iter().map(|p| span_for(obj.root, p)).collect();
                    spans.dedup();
                    if spans.is_empty() {
                        spans.push(obj.anchor().span);
                    }
                    for span in spans {
                        out.push(finding(
                            rule_id(&policy.name),
                            policy.severity,
                            span,
                            denial.message.clone(),
                        ));
                    }
                }
            }
        }
    }
    out
}

/// `policy-unsupported` findings located in the policy files, whose display index in the run's
/// file list starts at `first_file`.
pub fn unsupported_findings(set: &PolicySet, first_file: usize) -> Vec<Finding> {
    set.unsupported
        .iter()
        .filter_map(|u| {
            let file = set.files.get(u.file)?;
            let source = Source::new(first_file + u.file, &file.text);
            let message = match &u.policy {
                Some(name) => format!("policy `{name}` is not evaluated: {}", u.reason),
                None => format!("not evaluated: {}", u.reason),
            };
            // A block scalar's span runs to the next key: show its first line only.
            let start = u.span.start();
            let end = file
                .text
                .get(start..)
                .and_then(|rest| rest.find('\n'))
                .map_or(u.span.end(), |n| (start + n).min(u.span.end()));
            Some(Finding {
                rule: UNSUPPORTED.into(),
                severity: unsupported_severity(),
                message,
                loc: source.loc(crate::load::yaml::Span::new(start, end)),
                labels: Vec::new(),
                object: None,
                bundle: None,
                suppressed: None,
            })
        })
        .collect()
}
