//! Rule documentation generated from the catalog: `credlint explain` and the markdown reference.

use crate::lint::catalog::{Catalog, Rule};
use std::fmt::Write;

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
    let _ = writeln!(out, "Fix\n  {}", wrap(&rule.remediation, 96, "  "));
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
            "\n## {}\n\n{}\n\n- severity: {}\n- scope: {}\n- enforces: {}\n\n**Why.** {}\n\n**Fix.** {}\n",
            r.id,
            r.title,
            r.severity,
            r.scope.as_str(),
            r.adr,
            r.rationale,
            r.remediation
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
