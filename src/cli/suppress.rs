//! Suppressions a reviewer can audit: the `credlint.io/ignore` annotation,
//! `"<rule-id>[,<rule-id>...]: <reason>"`, accepts the named rules' findings on the object that
//! carries it. An accepted finding stays in the report with its reason and no longer counts.
//! An annotation that cannot be honoured is an `ignore-invalid` error (and none of it is
//! applied); a rule it names that reports nothing on the object is an `ignore-unused` warning.
//!
//! The engine only collects the annotations as written ([`Outcome::ignores`]); what they mean is
//! decided here, after the run, so that bundle findings reported on an annotated member are
//! accepted the same way as the object's own. The two findings about annotations name the
//! annotated object but no bundle: like `yaml-syntax`, they are about the text written, and
//! they carry the same fields whatever the output format and whether bundles were kept.

use crate::lint::catalog::Catalog;
use crate::lint::checks::Emit;
use crate::model::outcome::{IGNORE_ANNOTATION, IgnoreAnnotation, Outcome};
use crate::model::{Finding, Suppression};

pub const INVALID: &str = "ignore-invalid";
pub const UNUSED: &str = "ignore-unused";
const POLICY_PREFIX: &str = crate::lint::kyverno::report::PREFIX;

/// What the suppression step does in a run.
#[derive(Clone, Copy, Debug)]
pub struct Options<'a> {
    /// Report `ignore-invalid` and `ignore-unused` (`check`); `simulate` only applies the
    /// annotations, since `check` judges them.
    pub judge: bool,
    /// Rules this run cannot produce (the simulated ones, in `check`): naming one is not unused.
    pub not_run: &'a [&'a str],
}

/// An annotation's meaning.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ignore {
    pub rules: Vec<String>,
    pub reason: String,
}

/// Reads `<rule-id>[,<rule-id>...]: <reason>`; the error says what is wrong, for `ignore-invalid`.
/// Rule ids are the catalog's, or `policy:<name>` for a `check --policy` policy.
pub fn parse(value: &str, catalog: &Catalog) -> Result<Ignore, String> {
    let usage = format!("write `{IGNORE_ANNOTATION}: \"<rule-id>[,<rule-id>...]: <reason>\"`");
    let Some(colon) = reason_colon(value) else {
        return Err(format!(
            "`{IGNORE_ANNOTATION}` gives no reason (no `:` after the rule ids): {usage}"
        ));
    };
    let (ids, reason) = (&value[..colon], &value[colon + 1..]);
    let mut rules: Vec<String> = Vec::new();
    for id in ids.split(',').map(str::trim) {
        if id.is_empty() {
            return Err(format!(
                "`{IGNORE_ANNOTATION}` has an empty rule id before the reason: {usage}"
            ));
        }
        if id == INVALID || id == UNUSED {
            return Err(format!(
                "`{id}` cannot be ignored: it is about the annotation itself"
            ));
        }
        let policy = id
            .strip_prefix(POLICY_PREFIX)
            .is_some_and(|name| !name.is_empty());
        if catalog.rule(id).is_none() && !policy {
            let hint = crate::cli::suggest::unknown_rule_hint(id, catalog);
            return Err(format!(
                "`{IGNORE_ANNOTATION}` names the unknown rule `{id}` ({hint})"
            ));
        }
        if !rules.iter().any(|r| r == id) {
            rules.push(id.to_string());
        }
    }
    let reason = reason.trim();
    if reason.is_empty() {
        return Err(format!(
            "`{IGNORE_ANNOTATION}` accepts {} without a reason: say after the `:` why the \
             finding is acceptable",
            rules.join(", ")
        ));
    }
    Ok(Ignore {
        rules,
        reason: reason.to_string(),
    })
}

/// The `:` that ends the rule ids: the first one that is not part of a `policy:` prefix.
fn reason_colon(value: &str) -> Option<usize> {
    let mut start = 0;
    loop {
        let token = start + (value[start..].len() - value[start..].trim_start().len());
        let from = if value[token..].starts_with(POLICY_PREFIX) {
            token + POLICY_PREFIX.len()
        } else {
            token
        };
        let at = from + value[from..].find([',', ':'])?;
        if value.as_bytes()[at] == b':' {
            return Some(at);
        }
        start = at + 1;
    }
}

/// Marks the findings the annotations accept, and adds `ignore-invalid` / `ignore-unused`
/// findings when `options.judge`. The summary is not recounted here.
pub fn apply(outcome: &mut Outcome, options: Options) {
    let catalog = Catalog::get();
    let mut emit = Emit::new(catalog);
    let annotations = std::mem::take(&mut outcome.ignores);
    for annotation in &annotations {
        let ignore = match parse(&annotation.value, catalog) {
            Ok(ignore) => ignore,
            Err(message) => {
                if options.judge {
                    emit.add(
                        INVALID,
                        annotation.loc.clone(),
                        message,
                        Some(&annotation.object),
                        None,
                    );
                }
                continue;
            }
        };
        for rule in &ignore.rules {
            let matched = accept(&mut outcome.findings, annotation, rule, &ignore.reason);
            if matched == 0 && options.judge && !options.not_run.contains(&rule.as_str()) {
                emit.add(
                    UNUSED,
                    annotation.loc.clone(),
                    format!(
                        "`{IGNORE_ANNOTATION}` accepts `{rule}` on {}, which has no {rule} \
                         finding: remove `{rule}` from the annotation",
                        annotation.object
                    ),
                    Some(&annotation.object),
                    None,
                );
            }
        }
    }
    outcome.ignores = annotations;
    if !emit.findings.is_empty() {
        outcome.findings.extend(emit.findings);
        outcome
            .findings
            .sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
        outcome.findings.dedup();
    }
}

/// Suppresses the findings of `rule` on the annotated object; returns how many it matched
/// (findings an earlier annotation already accepted count as matched, not re-accepted).
fn accept(
    findings: &mut [Finding],
    annotation: &IgnoreAnnotation,
    rule: &str,
    reason: &str,
) -> usize {
    let mut matched = 0;
    for f in findings.iter_mut().filter(|f| {
        f.rule == rule
                && f.object.as_ref() == Some(&annotation.object)
                // The object as written in this file: a duplicate of it elsewhere (itself a
                // bundle-duplicate finding) carries its own annotations.
                && f.loc.file == annotation.loc.file
    }) {
        matched += 1;
        if f.suppressed.is_none() {
            f.suppressed = Some(Suppression {
                reason: reason.to_string(),
                loc: annotation.loc.clone(),
                per_path: false,
            });
        }
    }
    matched
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(value: &str) -> Result<Ignore, String> {
        parse(value, Catalog::get())
    }

    #[test]
    fn ids_and_reason_are_read() {
        let ignore =
            parsed(" job-ttl , job-seccomp: kept for the migration: see PLAT-12 ").unwrap();
        assert_eq!(ignore.rules, ["job-ttl", "job-seccomp"]);
        assert_eq!(ignore.reason, "kept for the migration: see PLAT-12");
        assert_eq!(parsed("job-ttl,job-ttl:x").unwrap().rules, ["job-ttl"]);
        let ignore = parsed("policy:require-ttl, job-ttl: cleaned by the sweep").unwrap();
        assert_eq!(ignore.rules, ["policy:require-ttl", "job-ttl"]);
        assert_eq!(ignore.reason, "cleaned by the sweep");
        assert_eq!(parsed("policy:x:why").unwrap().reason, "why");
    }

    #[test]
    fn what_cannot_be_audited_is_refused_with_a_reason() {
        let err = parsed("job-ttl").unwrap_err();
        assert!(err.contains("no reason"), "{err}");
        let err = parsed("job-ttl:   ").unwrap_err();
        assert!(err.contains("without a reason"), "{err}");
        let err = parsed("job-tll: legacy").unwrap_err();
        assert!(err.contains("unknown rule `job-tll`"), "{err}");
        assert!(err.contains("did you mean `job-ttl`?"), "{err}");
        let err = parsed("job-ttl,: legacy").unwrap_err();
        assert!(err.contains("empty rule id"), "{err}");
        let err = parsed(": legacy").unwrap_err();
        assert!(err.contains("empty rule id"), "{err}");
        let err = parsed("ignore-unused: noise").unwrap_err();
        assert!(err.contains("cannot be ignored"), "{err}");
        assert!(parsed("").is_err());
        assert!(parsed("policy:").is_err());
        let texts = [
            "policy:",
            " policy:a, policy:b",
            "a,",
            ",",
            "é:é",
            "policy:é,policy:",
            "\u{0}:",
        ];
        for text in texts {
            for cut in (0..=text.len()).filter(|&i| text.is_char_boundary(i)) {
                let _ = parsed(&text[..cut]);
            }
        }
        let err = parsed("policy:: why").unwrap_err();
        assert!(err.contains("unknown rule `policy:`"), "{err}");
    }
}
