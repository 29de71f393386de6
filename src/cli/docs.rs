//! Rule documentation generated from the catalog: `credlint explain` and the markdown reference.

use crate::lint::catalog::{Catalog, Rule};
use std::fmt::Write;

/// The bundle contract for users, shipped in the repository; rules cite its sections.
pub const BUNDLE_DOC: &str = include_str!("../../docs/bundle.md");

/// A section of docs/bundle.md: its heading and the anchor GitHub gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section {
    pub title: String,
    pub anchor: String,
}

/// The `## N. Title` section of docs/bundle.md that a rule's `contract` names.
pub fn contract_section(rule: &Rule) -> Option<Section> {
    let number = rule.contract.as_deref()?;
    let prefix = format!("## {number}. ");
    let heading = BUNDLE_DOC.lines().find_map(|l| l.strip_prefix(&prefix))?;
    let title = format!("{number}. {}", heading.trim());
    Some(Section {
        anchor: anchor(&title),
        title,
    })
}

/// A heading's anchor as GitHub makes it: lowercase, spaces to `-`, punctuation dropped.
pub fn anchor(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// Where to read more: the address of the rule's entry in docs/rules.md and
/// the section of the bundle contract it enforces.
fn references(rule: &Rule) -> Vec<String> {
    let mut out = vec![format!("docs:     {}", rule.doc_url())];
    if let Some(section) = contract_section(rule) {
        out.push(format!(
            "contract: docs/bundle.md#{} (section {})",
            section.anchor, section.title
        ));
    }
    out
}

pub fn explain(catalog: &Catalog, rule: &Rule) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}: {}", rule.id, rule.title);
    let _ = writeln!(
        out,
        "severity: {}   scope: {}   enforces: {}\n",
        rule.severity,
        rule.scope.as_str(),
        rule.adr
    );
    let _ = writeln!(out, "Why\n  {}\n", wrap(&rule.rationale, 96, "  "));
    let _ = writeln!(out, "Fix\n  {}\n", wrap(&rule.remediation, 96, "  "));
    for line in references(rule) {
        let _ = writeln!(out, "{line}");
    }
    if let Some(object) = &rule.object {
        let _ = writeln!(
            out,
            "\nDecided by CEL (the same text as the Kyverno policy `{}`)",
            rule.id
        );
        let kinds: Vec<&str> = object.resources.iter().map(|r| r.kind).collect();
        let _ = writeln!(out, "  matches: {}", kinds.join(", "));
        if let Some(c) = &object.condition {
            let _ = writeln!(out, "  when:    {}", catalog.condition(c).unwrap_or(c));
        }
        for (name, expr) in &object.variables {
            let _ = writeln!(out, "  variables.{name} = {expr}");
        }
        for v in &object.validations {
            let _ = writeln!(out, "  denies unless: {}", v.expression);
        }
    }
    out
}

pub fn markdown(catalog: &Catalog) -> String {
    let mut out = String::from(
        "# credlint rules\n\nGenerated from `rules/` by `credlint rules --format markdown`; do not edit.\n\n\
         | id | severity | scope | title |\n|---|---|---|---|\n",
    );
    for r in &catalog.rules {
        let _ = writeln!(
            out,
            "| [`{0}`](#{0}) | {1} | {2} | {3} |",
            r.id,
            r.severity,
            r.scope.as_str(),
            r.title
        );
    }
    for r in &catalog.rules {
        let _ = write!(
            out,
            "\n## {}\n\n{}\n\n- severity: {}\n- scope: {}\n- enforces: {}\n",
            r.id,
            r.title,
            r.severity,
            r.scope.as_str(),
            r.adr,
        );
        if let Some(section) = contract_section(r) {
            let _ = writeln!(
                out,
                "- contract: [bundle.md, section {}](bundle.md#{})",
                section.title, section.anchor
            );
        }
        let _ = write!(
            out,
            "\n**Why.** {}\n\n**Fix.** {}\n",
            r.rationale, r.remediation
        );
        if let Some(o) = &r.object {
            let kinds: Vec<&str> = o.resources.iter().map(|r| r.kind).collect();
            let _ = write!(out, "\n**Decided by CEL** on {}", kinds.join(", "));
            if let Some(c) = &o.condition {
                let _ = write!(out, " where `{c}`");
            }
            out.push_str(":\n\n```cel\n");
            for (name, expr) in &o.variables {
                let _ = writeln!(out, "// variables.{name}\n{expr}");
            }
            for v in &o.validations {
                let _ = writeln!(out, "// denies unless\n{}", v.expression);
            }
            out.push_str("```\n");
        }
    }
    out
}

fn wrap(text: &str, width: usize, indent: &str) -> String {
    let mut out = String::new();
    let mut line_len = 0;
    for word in text.split_whitespace() {
        if line_len > 0 && line_len + 1 + word.len() > width {
            out.push('\n');
            out.push_str(indent);
            line_len = 0;
        } else if line_len > 0 {
            out.push(' ');
            line_len += 1;
        }
        out.push_str(word);
        line_len += word.len();
    }
    out
}
