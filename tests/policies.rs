//! `credlint policies` and `credlint check --policy` as users and CI meet them: the checked-in
//! `policies/` is current, `--check` notices an edit, `--out` leaves foreign files alone, and
//! team policies are applied to manifests with Kyverno's semantics.

mod common;

use credlint::cli::policies;
use credlint::lint::catalog::Catalog;
use credlint::policy;
use std::path::{Path, PathBuf};
use std::process::Output;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn credlint(args: &[&str]) -> Output {
    common::credlint(args)
}

fn temp_dir(name: &str) -> common::TempDir {
    common::TempDir::new(&format!("credlint-policies-{name}"))
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn the_checked_in_policies_are_what_the_rules_and_fixtures_generate() {
    let files = policies::files(
        Catalog::get(),
        &policy::Options::default(),
        Some(&root().join("fixtures")),
    )
    .unwrap();
    let stale = policies::stale_files(&root().join("policies"), &files);
    assert!(
        stale.is_empty(),
        "{}\nrun `cargo run -- policies --out policies`",
        stale.join("\n")
    );
    assert!(files.contains_key("kustomization.yaml"));
    assert!(files.contains_key("role-forbidden-verb/.kyverno-test/kyverno-test.yaml"));
}

#[test]
fn check_fails_naming_an_edited_generated_file() {
    let dir = temp_dir("check");
    let dir_arg = dir.to_string_lossy().into_owned();
    let out = credlint(&["policies", "--out", &dir_arg]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = credlint(&["policies", "--check", "--out", &dir_arg]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let edited = dir.join("job-ttl/job-ttl.yaml");
    let text = std::fs::read_to_string(&edited).unwrap();
    std::fs::write(
        &edited,
        text.replace("validationActions: [Deny]", "validationActions: [Audit]"),
    )
    .unwrap();
    std::fs::remove_file(dir.join("role-wildcard/role-wildcard.yaml")).unwrap();
    let out = credlint(&["policies", "--check", "--out", &dir_arg]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("job-ttl/job-ttl.yaml differs"), "{err}");
    assert!(
        err.contains("role-wildcard/role-wildcard.yaml is missing"),
        "{err}"
    );
    assert!(
        !err.contains("job-seccomp"),
        "only the stale files are named: {err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn out_replaces_only_what_it_generated() {
    let dir = temp_dir("out");
    let dir_arg = dir.to_string_lossy().into_owned();
    let foreign = dir.join("team-policy.yaml");
    std::fs::write(
        &foreign,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ours}\n",
    )
    .unwrap();
    let retired = dir.join("retired-rule/retired-rule.yaml");
    std::fs::create_dir_all(retired.parent().unwrap()).unwrap();
    std::fs::write(
        &retired,
        format!(
            "{} from rules/retired-rule.yaml: do not edit.\n",
            policy::MARKER
        ),
    )
    .unwrap();

    let out = credlint(&["policies", "--check", "--out", &dir_arg]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no rule generates it"),
        "{}",
        stderr(&out)
    );

    let out = credlint(&["policies", "--out", &dir_arg]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        foreign.exists(),
        "a file credlint did not generate is left alone"
    );
    assert!(
        !retired.exists(),
        "a file credlint generated and no rule generates now is removed"
    );
    assert!(dir.join("hook-wave/hook-wave.yaml").exists());
    let leftovers: Vec<_> = walk(&dir)
        .into_iter()
        .filter(|p| p.to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let out = credlint(&["policies", "--out", &dir_arg]);
    assert!(stderr(&out).contains("0 written"), "{}", stderr(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let p = entry.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn without_out_the_policies_are_one_stream_and_flavors_differ() {
    let out = credlint(&["policies"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    let object_rules = Catalog::get()
        .rules
        .iter()
        .filter(|r| r.object.is_some())
        .count();
    assert_eq!(
        text.matches("kind: ValidatingPolicy\n").count(),
        object_rules
    );
    assert_eq!(text.matches("\n---\n").count(), object_rules - 1);
    let again = credlint(&["policies"]);
    assert_eq!(again.stdout, text.as_bytes(), "byte-stable");

    let vap =
        String::from_utf8(credlint(&["policies", "--flavor", "vap", "--audit"]).stdout).unwrap();
    assert_eq!(
        vap.matches("kind: ValidatingAdmissionPolicyBinding\n")
            .count(),
        object_rules
    );
    assert!(
        vap.contains("  policyName: job-ttl\n  validationActions: [Audit]\n"),
        "{vap}"
    );
    let cp =
        String::from_utf8(credlint(&["policies", "--flavor", "clusterpolicy"]).stdout).unwrap();
    assert_eq!(cp.matches("kind: ClusterPolicy\n").count(), object_rules);
    let pinned = format!("reg.example/c@sha256:{}", "0".repeat(64));
    let image = credlint(&["policies", "--credentials-image", &pinned]);
    assert!(
        String::from_utf8_lossy(&image.stdout).contains(&format!("expression: \"'{pinned}'\""))
    );
    let bad = credlint(&["policies", "--flavor", "gatekeeper"]);
    assert_eq!(bad.status.code(), Some(2));
}

const TEAM_POLICY: &str = r#"apiVersion: policies.kyverno.io/v1beta1
kind: ValidatingPolicy
metadata:
  name: no-latest
spec:
  validationActions: [Audit]
  matchConstraints:
    resourceRules:
      - apiGroups: ['']
        apiVersions: [v1]
        operations: [CREATE, UPDATE]
        resources: [pods]
  validations:
    - expression: "object.spec.containers.all(c, !c.image.endsWith(':latest'))"
      messageExpression: "'workload ' + object.metadata.name + ' runs a :latest image'"
"#;

const WORKLOADS: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  template:
    spec:
      containers:
        - name: web
          image: nginx:latest
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: report
  namespace: shop
spec:
  schedule: "0 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          containers:
            - name: report
              image: registry.example/report:1.2
"#;

#[test]
fn check_applies_team_policies_with_autogen_and_reports_each_denial() {
    let dir = temp_dir("team");
    std::fs::write(dir.join("policy.yaml"), TEAM_POLICY).unwrap();
    std::fs::write(dir.join("workloads.yaml"), WORKLOADS).unwrap();
    let manifests = dir.join("workloads.yaml").to_string_lossy().into_owned();
    let policy = dir.join("policy.yaml").to_string_lossy().into_owned();

    let out = credlint(&["check", &manifests, "--policy", &policy, "--format", "json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "an Audit policy warns: {}",
        stderr(&out)
    );
    let report = json(&out);
    let findings = report["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{findings:#?}");
    let f = &findings[0];
    assert_eq!(f["rule"], "policy:no-latest");
    assert_eq!(f["severity"], "warning");
    assert_eq!(f["message"], "workload web runs a :latest image");
    assert_eq!(
        (f["line"].as_u64(), f["column"].as_u64()),
        (Some(11), Some(18)),
        "at the image"
    );
    assert_eq!(f["object"]["kind"], "Deployment");
    assert_eq!(
        report["summary"]["files"], 1,
        "policy files are not linted files"
    );

    let out = credlint(&[
        "check",
        &manifests,
        "--policy",
        &policy,
        "--fail-on",
        "warning",
    ]);
    assert_eq!(out.status.code(), Some(1));

    std::fs::write(
        dir.join("policy.yaml"),
        TEAM_POLICY.replace("[Audit]", "[Deny]"),
    )
    .unwrap();
    let out = credlint(&["check", &manifests, "--policy", &policy, "--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json(&out)["findings"][0]["severity"], "error");
    let out = credlint(&[
        "check",
        &manifests,
        "--policy",
        &policy,
        "--ignore",
        "policy:no-latest",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = credlint(&[
        "check", &manifests, "--policy", &policy, "--ignore", "policy:*",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let out = credlint(&[
        "check", &manifests, "--policy", &policy, "--select", "policy:*", "--format", "json",
    ]);
    assert_eq!(json(&out)["findings"].as_array().unwrap().len(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_generated_policies_applied_with_check_agree_with_the_rules() {
    let out = credlint(&[
        "check",
        "fixtures/role-forbidden-verb/bad-list-watch.yaml",
        "--policy",
        "policies",
        "--format",
        "json",
    ]);
    let report = json(&out);
    let rules: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap())
        .collect();
    assert!(rules.contains(&"role-forbidden-verb"), "{rules:?}");
    assert!(rules.contains(&"policy:role-forbidden-verb"), "{rules:?}");
    let lines = |rule: &str| -> Vec<u64> {
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["rule"] == rule)
            .map(|f| f["line"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(
        lines("role-forbidden-verb"),
        lines("policy:role-forbidden-verb"),
        "located alike"
    );
    assert!(
        rules
            .iter()
            .all(|r| !r.starts_with("policy:") || *r == "policy:role-forbidden-verb"),
        "{rules:?}"
    );
}

#[test]
fn unsupported_policies_are_findings_and_an_empty_policy_path_is_a_usage_error() {
    let out = credlint(&[
        "check",
        "fixtures/policy-unsupported/bad-reads-the-cluster/manifests.yaml",
        "--policy",
        "fixtures/policy-unsupported/bad-reads-the-cluster/policies",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let report = json(&out);
    let f = &report["findings"][0];
    assert_eq!(f["rule"], "policy-unsupported");
    assert!(f["file"].as_str().unwrap().ends_with("settings-owner.yaml"));
    assert!(
        f["message"].as_str().unwrap().contains("resource.Get"),
        "{f}"
    );

    let dir = temp_dir("empty");
    std::fs::write(
        dir.join("kustomization.yaml"),
        "kind: Kustomization\nresources: []\n",
    )
    .unwrap();
    let out = credlint(&[
        "check",
        "fixtures/clean",
        "--policy",
        &dir.to_string_lossy(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no Kyverno policy"),
        "{}",
        stderr(&out)
    );
    let out = credlint(&["check", "fixtures/clean", "--policy", "no/such/folder"]);
    assert_eq!(out.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn explain_says_where_policy_ids_come_from() {
    let out = credlint(&["explain", "policy:no-latest"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("--policy"));
    let out = credlint(&["explain", "policy-unsupported"]);
    assert_eq!(out.status.code(), Some(0));
}

/// Waits for `child` a minute at most (a hang is a failure, not a stuck suite).
fn wait_bounded(mut child: std::process::Child) -> Output {
    for _ in 0..600 {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    panic!(
        "credlint policies did not finish: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A FIFO where `--out` writes a file is refused, never opened to wait for a writer: by the
/// write and by `--check`.
#[test]
fn a_fifo_in_the_out_folder_is_refused_not_waited_on() {
    let dir = common::temp_dir("policies-fifo");
    let out_dir = dir.join("out");
    let out_arg = out_dir.to_string_lossy().into_owned();
    let first = credlint(&["policies", "--out", &out_arg]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let fifo = out_dir.join("kustomization.yaml");
    std::fs::remove_file(&fifo).unwrap();
    let name = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path; mkfifo reads it and keeps nothing.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o644) }, 0);
    let spawn = |extra: &[&str]| {
        common::command()
            .args(["policies", "--out", &out_arg])
            .args(extra)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let written = wait_bounded(spawn(&[]));
    assert_eq!(written.status.code(), Some(2), "{}", stderr(&written));
    assert!(
        stderr(&written).contains("kustomization.yaml (") && stderr(&written).contains("FIFO"),
        "{}",
        stderr(&written)
    );
    use std::os::unix::fs::FileTypeExt;
    assert!(
        std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo()
    );
    let checked = wait_bounded(spawn(&["--check"]));
    assert_eq!(checked.status.code(), Some(1), "{}", stderr(&checked));
    assert!(
        stderr(&checked).contains("kustomization.yaml differs"),
        "{}",
        stderr(&checked)
    );
}
