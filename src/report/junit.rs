//! `--format junit`: JUnit XML for CI systems that show test reports. One `<testsuite>` per
//! bundle (named `namespace/owner`) with one `<testcase>` per rule the run applied to bundles,
//! and one suite, `(outside bundles)`, for findings on no bundle (a document that does not
//! parse, an ExternalSecret), with a test case per rule that reported there.
//!
//! A test case fails when it holds a finding at or above `--fail-on`; its `<failure>` lists
//! every finding as `severity file:line:column: message`. Findings below `--fail-on` leave the
//! case passing with the findings in `<system-out>`; a case whose findings are all suppressed is
//! `<skipped>` with the annotation's reason.

use super::Context;
use crate::lint::catalog::Catalog;
use crate::model::bundle::MemberKind;
use crate::model::outcome::Outcome;
use crate::model::{Finding, Scope};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

pub const OUTSIDE: &str = "(outside bundles)";

struct Case<'a> {
    rule: &'a str,
    findings: Vec<&'a Finding>,
}

struct Suite<'a> {
    name: &'a str,
    cases: Vec<Case<'a>>,
}

/// Whether a rule looks at bundle members, so that a bundle passing it is worth a test case.
fn applies_to_bundles(catalog: &Catalog, rule: &str) -> bool {
    let Some(rule) = catalog.rule(rule) else {
        return false;
    };
    match rule.scope {
        Scope::Bundle | Scope::Text | Scope::Runtime => true,
        Scope::Object => rule
            .object
            .as_ref()
            .is_some_and(|o| o.resources.iter().any(|r| MemberKind::of(r.kind).is_some())),
        Scope::Input => false,
    }
}

pub fn write(
    outcome: &Outcome,
    context: &Context,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let catalog = Catalog::get();
    let bundle_rules: Vec<&str> = context
        .rules
        .iter()
        .copied()
        .filter(|r| applies_to_bundles(catalog, r))
        .collect();
    let mut names: BTreeSet<String> = outcome.bundles.iter().map(|b| b.id()).collect();
    names.extend(outcome.findings.iter().filter_map(|f| f.bundle.clone()));
    let mut by_suite: BTreeMap<Option<&str>, BTreeMap<&str, Vec<&Finding>>> = BTreeMap::new();
    for f in &outcome.findings {
        by_suite
            .entry(f.bundle.as_deref())
            .or_default()
            .entry(f.rule.as_str())
            .or_default()
            .push(f);
    }
    let mut suites = Vec::new();
    for name in &names {
        let mut found = by_suite.remove(&Some(name.as_str())).unwrap_or_default();
        let mut cases: Vec<Case> = bundle_rules
            .iter()
            .map(|rule| Case {
                rule,
                findings: found.remove(rule).unwrap_or_default(),
            })
            .collect();
        cases.extend(
            found
                .into_iter()
                .map(|(rule, findings)| Case { rule, findings }),
        );
        suites.push(Suite { name, cases });
    }
    if let Some(found) = by_suite.remove(&None) {
        suites.push(Suite {
            name: OUTSIDE,
            cases: found
                .into_iter()
                .map(|(rule, findings)| Case { rule, findings })
                .collect(),
        });
    }

    let failed = |c: &Case| c.findings.iter().any(|f| f.fails_at(context.fail_on));
    let skipped =
        |c: &Case| !c.findings.is_empty() && c.findings.iter().all(|f| f.suppressed.is_some());
    let count = |pred: &dyn Fn(&Case) -> bool| -> usize {
        suites
            .iter()
            .map(|s| s.cases.iter().filter(|c| pred(c)).count())
            .sum()
    };
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        xml,
        "<testsuites name=\"credlint\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">",
        count(&|_| true),
        count(&failed),
        count(&skipped),
    );
    for suite in &suites {
        let _ = writeln!(
            xml,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">",
            attr(suite.name),
            suite.cases.len(),
            suite.cases.iter().filter(|c| failed(c)).count(),
            suite.cases.iter().filter(|c| skipped(c)).count(),
        );
        for case in &suite.cases {
            let open = format!(
                "    <testcase classname=\"{}\" name=\"{}\"",
                attr(suite.name),
                attr(case.rule)
            );
            if case.findings.is_empty() {
                let _ = writeln!(xml, "{open}/>");
                continue;
            }
            let _ = writeln!(xml, "{open}>");
            let lines: String = case.findings.iter().map(|f| line(outcome, f)).collect();
            if failed(case) {
                let first = case
                    .findings
                    .iter()
                    .find(|f| f.fails_at(context.fail_on))
                    .map_or("", |f| f.message.as_str());
                let _ = writeln!(
                    xml,
                    "      <failure type=\"{}\" message=\"{}\">{}</failure>",
                    attr(case.rule),
                    attr(first),
                    text(&lines)
                );
            } else {
                if skipped(case) {
                    let reason = case
                        .findings
                        .iter()
                        .find_map(|f| f.suppressed.as_ref())
                        .map_or("", |s| s.reason.as_str());
                    let _ = writeln!(
                        xml,
                        "      <skipped message=\"suppressed: {}\"/>",
                        attr(reason)
                    );
                }
                let _ = writeln!(xml, "      <system-out>{}</system-out>", text(&lines));
            }
            let _ = writeln!(xml, "    </testcase>");
        }
        let _ = writeln!(xml, "  </testsuite>");
    }
    xml.push_str("</testsuites>\n");
    out.write_all(xml.as_bytes())
}

/// `severity file:line:column: message`, and the reason when suppressed.
fn line(outcome: &Outcome, f: &Finding) -> String {
    let mut line = format!(
        "{} {}:{}:{}: {}",
        f.severity,
        super::file_name(outcome, f.loc.file),
        f.loc.line,
        f.loc.column,
        f.message
    );
    if let Some(s) = &f.suppressed {
        let _ = write!(line, " (suppressed: {})", s.reason);
    }
    line.push('\n');
    line
}

/// A character XML 1.0 cannot hold at all (control characters, U+FFFE, U+FFFF).
fn forbidden(c: char) -> bool {
    (c < ' ' && !matches!(c, '\t' | '\n' | '\r')) || matches!(c, '\u{FFFE}' | '\u{FFFF}')
}

/// Element text.
fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\r' => out.push_str("&#13;"),
            c if forbidden(c) => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// An attribute value in double quotes; line breaks and tabs kept as character references,
/// since a parser would otherwise turn them into spaces.
fn attr(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' => out.push_str("&#9;"),
            c if forbidden(c) => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_forbidden_characters_are_escaped() {
        assert_eq!(attr("a<b>&\"'\n"), "a&lt;b&gt;&amp;&quot;&apos;&#10;");
        assert_eq!(text("x\u{1}y\u{FFFF}"), "x\u{FFFD}y\u{FFFD}");
        assert_eq!(text("a\r\nb"), "a&#13;\nb");
    }
}
