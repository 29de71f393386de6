//! `credlint.io/ignore` as a reviewer meets it: the annotation accepts this finding, JSON shows
//! it with its reason, it does not fail the run, the text report counts or lists it, and
//! `--no-inline-ignores` turns it off.

mod common;
use common::*;

const ACCEPTED: &str = "fixtures/ignore-invalid/good-with-reason.yaml";
const BUNDLE_FINDING: &str = "fixtures/ignore-unused/good-bundle-finding.yaml";
const REASON: &str = "finished Jobs are removed by the nightly sweep (PLAT-12)";

#[test]
fn the_annotation_suppresses_its_finding_and_json_keeps_it_with_the_reason() {
    let out = credlint(&["check", ACCEPTED, "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report = json(&out);
    let findings = report["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{findings:#?}");
    let f = &findings[0];
    assert_eq!(f["rule"], "job-ttl");
    assert_eq!(f["line"], 108);
    assert_eq!(
        f["suppressed"],
        serde_json::json!({"reason": REASON, "file": ACCEPTED, "line": 107, "column": 25})
    );
    assert_eq!(report["summary"]["errors"], 0);
    assert_eq!(report["summary"]["suppressed"], 1);
}

#[test]
fn no_inline_ignores_makes_every_finding_count_again() {
    let out = credlint(&["check", ACCEPTED, "--format", "json", "--no-inline-ignores"]);
    assert_eq!(out.status.code(), Some(1));
    let report = json(&out);
    assert_eq!(report["summary"]["errors"], 1);
    assert!(report["summary"].get("suppressed").is_none());
    let f = &report["findings"][0];
    assert_eq!(f["rule"], "job-ttl");
    assert!(f.get("suppressed").is_none(), "{f}");
    // Annotations are not judged either: a bad one is no finding of its own.
    let out = credlint(&[
        "check",
        "fixtures/ignore-invalid/bad-no-reason.yaml",
        "--format",
        "json",
        "--no-inline-ignores",
    ]);
    let rules: Vec<String> = json(&out)["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(rules, ["job-ttl"]);
}

#[test]
fn a_bundle_finding_on_an_annotated_member_is_suppressed() {
    let out = credlint(&["check", BUNDLE_FINDING, "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let f = &json(&out)["findings"][0];
    assert_eq!(f["rule"], "job-name-hash");
    assert_eq!(f["bundle"], "shop/shop-sessions");
    assert_eq!(f["object"]["kind"], "Job");
    assert!(
        f["suppressed"]["reason"]
            .as_str()
            .unwrap()
            .contains("re-tagged")
    );
}

#[test]
fn the_text_report_counts_suppressions_and_lists_them_on_request() {
    let out = credlint(&["check", ACCEPTED]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(
        !text.contains("× The credentials Job"),
        "not shown as a diagnostic: {text}"
    );
    assert!(text.contains("0 errors, 0 warnings"), "{text}");
    assert!(
        text.contains("1 finding suppressed by credlint.io/ignore (--show-suppressed lists it)"),
        "{text}"
    );
    let out = credlint(&["check", ACCEPTED, "--show-suppressed"]);
    let text = stdout(&out);
    assert!(
        text.contains(&format!(
            "  error {ACCEPTED}:108:1 job-ttl on Job shop/shop-sessions-credentials-cde96e50: \"{REASON}\" (annotation at {ACCEPTED}:107)"
        )),
        "{text}"
    );
}

#[test]
fn bad_and_unused_annotations_are_findings_at_the_annotation() {
    let out = credlint(&[
        "check",
        "fixtures/ignore-invalid/bad-unknown-rule.yaml",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let report = json(&out);
    let invalid = &report["findings"][0];
    assert_eq!(invalid["rule"], "ignore-invalid");
    assert_eq!(
        (invalid["line"].as_u64(), invalid["column"].as_u64()),
        (Some(107), Some(25))
    );
    assert!(
        invalid["message"]
            .as_str()
            .unwrap()
            .contains("did you mean `job-ttl`?")
    );
    // Nothing of a refused annotation applies: job-ttl, named correctly, still counts.
    assert_eq!(report["findings"][1]["rule"], "job-ttl");
    assert!(report["findings"][1].get("suppressed").is_none());

    let out = credlint(&[
        "check",
        "fixtures/ignore-unused/bad-fixed.yaml",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "ignore-unused is a warning");
    let report = json(&out);
    assert_eq!(report["findings"][0]["rule"], "ignore-unused");
    assert_eq!(report["findings"][0]["severity"], "warning");
    let out = credlint(&[
        "check",
        "fixtures/ignore-unused/bad-fixed.yaml",
        "--fail-on",
        "warning",
    ]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn an_ignore_for_a_rule_dropped_by_ignore_is_not_called_unused() {
    // --ignore job-ttl drops the finding after the annotation accepted it: nothing is unused.
    let out = credlint(&["check", ACCEPTED, "--ignore", "job-ttl", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(json(&out)["findings"], serde_json::json!([]));
}

#[test]
fn an_annotation_accepts_findings_on_its_own_copy_of_the_object_only() {
    // The same Job in two files (a bundle-duplicate): only the annotated copy is accepted.
    let out = credlint(&[
        "check",
        ACCEPTED,
        "fixtures/job-ttl/bad-no-ttl.yaml",
        "--format",
        "json",
    ]);
    let report = json(&out);
    let ttl: Vec<(&str, bool)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "job-ttl")
        .map(|f| (f["file"].as_str().unwrap(), f.get("suppressed").is_some()))
        .collect();
    assert_eq!(
        ttl,
        [
            (ACCEPTED, true),
            ("fixtures/job-ttl/bad-no-ttl.yaml", false)
        ]
    );
}
