//! What a user meets day to day (issue 17): findings attributed to their object, the pragma
//! rule's scope, output flags, colour and width, Helm sources, the config schema, messages.

mod common;

use common::{credlint, credlint_in, json, root, stderr, stdout};
use std::path::{Path, PathBuf};

/// A temporary folder removed when the test ends, passed or failed.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        Scratch(common::temp_dir(&format!("usability-{name}")))
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const PRAGMA_IN_PLAN: &str = "fixtures/pragma-misplaced/bad-plan-line.yaml";
const UNRELATED: &str = "fixtures/pragma-misplaced/good-unrelated-file.yaml";

#[test]
fn a_pragma_finding_belongs_to_the_object_and_bundle_it_stands_in() {
    let out = credlint(&["check", "--no-config", PRAGMA_IN_PLAN, "--format", "json"]);
    let report = json(&out);
    let finding = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "pragma-misplaced")
        .expect("the pragma is reported");
    assert_eq!(finding["object"]["kind"], "ConfigMap", "{finding}");
    assert_eq!(finding["object"]["name"], "shop-sessions-credentials");
    assert_eq!(finding["bundle"], "shop/shop-sessions");
}

#[test]
fn an_ignore_on_the_configmap_accepts_its_pragma_finding() {
    let dir = Scratch::new("pragma-ignore");
    let text = std::fs::read_to_string(root().join(PRAGMA_IN_PLAN)).unwrap();
    let annotated = text.replacen(
        "  name: shop-sessions-credentials\n  namespace: shop\n  annotations:\n    argocd.argoproj.io/hook: PreSync\n    argocd.argoproj.io/sync-wave: \"0\"\n    argocd.argoproj.io/hook-delete-policy: BeforeHookCreation\ndata:",
        "  name: shop-sessions-credentials\n  namespace: shop\n  annotations:\n    credlint.io/ignore: \"pragma-misplaced: the note is reviewed (SEC-1)\"\n    argocd.argoproj.io/hook: PreSync\n    argocd.argoproj.io/sync-wave: \"0\"\n    argocd.argoproj.io/hook-delete-policy: BeforeHookCreation\ndata:",
        1,
    );
    assert_ne!(annotated, text, "the ConfigMap was annotated");
    std::fs::write(dir.join("bundle.yaml"), annotated).unwrap();
    let out = credlint_in(
        &dir,
        &["check", "--no-config", "bundle.yaml", "--format", "json"],
    );
    let report = json(&out);
    let findings = report["findings"].as_array().unwrap();
    assert!(
        findings.iter().all(|f| f["rule"] != "ignore-unused"),
        "the annotation is used: {report}"
    );
    let pragma = findings
        .iter()
        .find(|f| f["rule"] == "pragma-misplaced")
        .unwrap();
    assert_eq!(
        pragma["suppressed"]["reason"],
        "the note is reviewed (SEC-1)"
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn pragmas_are_judged_in_bundle_files_unless_the_scope_is_all() {
    let out = credlint(&["check", "--no-config", UNRELATED, "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert_eq!(json(&out)["findings"], serde_json::json!([]));

    let dir = Scratch::new("pragma-scope");
    std::fs::copy(root().join(UNRELATED), dir.join("values.yaml")).unwrap();
    std::fs::write(
        dir.join("credlint.toml"),
        "[rules.pragma-misplaced]\nscope = \"all\"\n",
    )
    .unwrap();
    let out = credlint_in(&dir, &["check", "values.yaml", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report = json(&out);
    assert_eq!(report["findings"][0]["rule"], "pragma-misplaced");
    assert_eq!(report["findings"][0]["line"], 9);
    assert_eq!(report["findings"][0]["object"]["kind"], "ConfigMap");
    assert_eq!(report["findings"][0]["bundle"], serde_json::Value::Null);

    std::fs::write(
        dir.join("credlint.toml"),
        "[rules.pragma-misplaced]\nscope = \"everywhere\"\n",
    )
    .unwrap();
    let out = credlint_in(&dir, &["check", "values.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("credlint.toml:2: `scope` must be \"bundles\" or \"all\""),
        "{}",
        stderr(&out)
    );
    std::fs::write(
        dir.join("credlint.toml"),
        "[rules.job-ttl]\nscope = \"all\"\n",
    )
    .unwrap();
    let out = credlint_in(&dir, &["check", "values.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("takes no settings"),
        "{}",
        stderr(&out)
    );
}

const IMAGE: &str = "registry.example/platform/credentials:1.5.0@sha256:1111111111111111111111111111111111111111111111111111111111111111";

#[test]
fn policies_read_credlint_toml_as_check_does() {
    let dir = Scratch::new("policies-config");
    std::fs::write(
        dir.join("credlint.toml"),
        format!(
            "credentials-image = \"{IMAGE}\"\n[rules]\nignore = [\"job-ttl\"]\n\
             [rules.severity]\nrole-wildcard = \"warning\"\n"
        ),
    )
    .unwrap();
    let out = credlint_in(&dir, &["policies"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        !text.contains("name: job-ttl\n"),
        "an ignored rule has no policy"
    );
    assert!(text.contains("name: job-seccomp\n"));
    assert!(
        text.contains(&format!("'{IMAGE}'")),
        "the file's image is baked in"
    );
    let wildcard = text
        .split("\n---\n")
        .find(|d| d.contains("\n  name: role-wildcard\n"))
        .unwrap();
    assert!(
        wildcard.contains("validationActions: [Warn, Audit]\n"),
        "{wildcard}"
    );
    let without = stdout(&credlint_in(&dir, &["policies", "--no-config"]));
    assert!(without.contains("name: job-ttl\n"));
}

#[test]
fn policies_check_prints_the_command_that_regenerates_what_it_compared() {
    let dir = Scratch::new("policies-check");
    let check = [
        "policies",
        "--check",
        "--out",
        "my policies",
        "--flavor",
        "vap",
        "--audit",
    ];
    let out = credlint_in(&dir, &check);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    let command = err
        .lines()
        .find_map(|l| l.split("run `").nth(1))
        .and_then(|rest| rest.strip_suffix('`'))
        .unwrap_or_else(|| panic!("{err}"));
    assert_eq!(
        command,
        "credlint policies --out 'my policies' --flavor vap --audit"
    );
    // Following the advice makes the check pass.
    let out = credlint_in(
        &dir,
        &[
            "policies",
            "--out",
            "my policies",
            "--flavor",
            "vap",
            "--audit",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = credlint_in(&dir, &check);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}
