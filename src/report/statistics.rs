//! `--statistics`: how many findings each rule reported, most first, in place of the findings
//! (as ruff's `--statistics`). Suppressed findings are not counted.

use crate::lint::catalog::Catalog;
use crate::model::Severity;
use crate::model::outcome::Outcome;
use std::collections::BTreeMap;

/// Each rule that reported, with its severity and count, most first, then by rule id.
pub fn counts(outcome: &Outcome) -> Vec<(&str, Severity, usize)> {
    let mut by_rule: BTreeMap<(&str, Severity), usize> = BTreeMap::new();
    for f in outcome.findings.iter().filter(|f| f.suppressed.is_none()) {
        *by_rule.entry((f.rule.as_str(), f.severity)).or_default() += 1;
    }
    let mut out: Vec<(&str, Severity, usize)> =
        by_rule.into_iter().map(|((r, s), n)| (r, s, n)).collect();
    out.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(b.0)));
    out
}

/// A table: count, rule, severity, title; then the summary line unless `quiet`.
pub fn write_text(
    outcome: &Outcome,
    quiet: bool,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let catalog = Catalog::get();
    let counts = counts(outcome);
    let width = counts.iter().map(|(r, _, _)| r.len()).max().unwrap_or(0);
    let digits = counts
        .iter()
        .map(|(_, _, n)| n.to_string().len())
        .max()
        .unwrap_or(0);
    for (rule, severity, n) in &counts {
        let title = catalog.rule(rule).map_or("", |r| r.title.as_str());
        writeln!(
            out,
            "{n:>digits$}  {rule:<width$}  {:<7}  {title}",
            severity.as_str()
        )?;
    }
    if quiet {
        return Ok(());
    }
    super::text::summary(outcome, out)
}

/// The same as JSON: `[{"rule", "severity", "count"}]`.
pub fn write_json(outcome: &Outcome, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let rows: Vec<serde_json::Value> = counts(outcome)
        .into_iter()
        .map(|(rule, severity, count)| {
            serde_json::json!({"rule": rule, "severity": severity.as_str(), "count": count})
        })
        .collect();
    serde_json::to_writer_pretty(&mut *out, &rows)?;
    writeln!(out)
}
