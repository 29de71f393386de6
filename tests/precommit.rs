//! The pre-commit hook. First `check --pre-commit` itself: the whole tree is linted, the report
//! is narrowed to what the changed files touch. Then the real pre-commit framework in a
//! throwaway git repository that takes this repository as its hook source: a bad bundle is
//! blocked naming the rule, good manifests pass, a one-file change of a split bundle passes, a
//! chart's sources and JSON configuration beside the manifests pass (`pre-commit run
//! --all-files` too) while a bad Role beside them fails, and a stale `policies/` is refused.
//!
//! The framework test runs this repository's `.pre-commit-hooks.yaml` with one change: the
//! `rust` hooks become `unsupported` (pre-commit's "run this command as it is") hooks whose entry
//! is the binary cargo just built, since `language: rust` would `cargo install` credlint into
//! pre-commit's cache on every run (minutes). `CREDLINT_PRE_COMMIT_RUST=1` runs the file
//! unchanged instead, with the real `language: rust` build (see README, "Pre-commit").
//!
//! When pre-commit is not installed the framework test says so on the terminal and skips;
//! with `CREDLINT_REQUIRE_PRE_COMMIT=1` (set by `.ci/run`) it fails instead.

mod common;
use common::*;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A tree with the clean split bundle (five files, one object each) in `rendered/catalog/` and
/// a broken, unrelated bundle in `other/`.
fn tree(name: &str) -> common::TempDir {
    let dir = temp_dir(name);
    std::fs::create_dir_all(dir.join("rendered")).unwrap();
    copy_in("fixtures/clean/split", &dir.join("rendered"));
    std::fs::rename(dir.join("rendered/split"), dir.join("rendered/catalog")).unwrap();
    std::fs::create_dir_all(dir.join("other")).unwrap();
    std::fs::copy(
        root().join("fixtures/role-forbidden-verb/bad-list-watch.yaml"),
        dir.join("other/shop.yaml"),
    )
    .unwrap();
    dir
}

fn findings(out: &Output) -> Vec<(String, String)> {
    json(out)["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap().to_string(),
                f["file"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn edit(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{}: no {from:?}", path.display());
    std::fs::write(path, text.replacen(from, to, 1)).unwrap();
}

#[test]
fn one_file_of_a_valid_split_bundle_passes_where_a_plain_check_cannot() {
    let dir = tree("pc-valid");
    let role = "rendered/catalog/2-role.yml";
    // Alone, the file is an incomplete bundle: the reason the hook does not lint only it.
    let out = credlint_in(&dir, &["check", role, "--format", "json"]);
    assert_eq!(findings(&out)[0].0, "bundle-incomplete");

    let out = credlint_in(&dir, &["check", "--pre-commit", role, "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert_eq!(
        findings(&out),
        vec![],
        "other/ is not touched by the change"
    );
    let report = json(&out);
    assert_eq!(report["summary"]["bundles"], 2, "the whole tree was linted");

    let out = credlint_in(&dir, &["check", "--pre-commit", "other/shop.yaml", role]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("role-forbidden-verb"));
}

#[test]
fn a_change_reports_its_bundle_wherever_the_finding_points() {
    let dir = tree("pc-bundle");
    // A new plan changes the hash the Job name must carry: the finding is on the Job, in a file
    // the commit did not touch, and it is reported because the bundle was touched.
    edit(
        &dir.join("rendered/catalog/4-configmap.yaml"),
        "\"kind\":",
        "\"note\": \"v2\", \"kind\":",
    );
    let out = credlint_in(
        &dir,
        &[
            "check",
            "--pre-commit",
            "rendered/catalog/4-configmap.yaml",
            "--format",
            "json",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert_eq!(
        findings(&out),
        [(
            "job-name-hash".to_string(),
            "rendered/catalog/5-job.yaml".to_string()
        )]
    );

    // A member removed in the tree: the bundle of a changed member is incomplete.
    std::fs::remove_file(dir.join("rendered/catalog/5-job.yaml")).unwrap();
    let out = credlint_in(
        &dir,
        &[
            "check",
            "--pre-commit",
            "rendered/catalog/2-role.yml",
            "--format",
            "json",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(findings(&out)[0].0, "bundle-incomplete");
}

#[test]
fn excluded_folders_and_standard_input_in_pre_commit_mode() {
    let dir = tree("pc-exclude");
    std::fs::write(dir.join("credlint.toml"), "exclude = [\"other\"]\n").unwrap();
    let out = credlint_in(&dir, &["check", "--pre-commit", "other/shop.yaml"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "a changed file in an excluded folder is not linted: {}",
        stdout(&out)
    );
    let out = credlint_in(&dir, &["check", "--pre-commit", "-"]);
    assert_eq!(out.status.code(), Some(2));
    let out = credlint_in(&dir, &["check", "--pre-commit", "gone.yaml"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "a changed file that cannot be read"
    );
}

/// Writes the files of a GitOps repository that are no manifests into `dir`: a chart (its
/// Chart.yaml, a values.yaml with Helm's empty fields and a duplicate key, unrendered templates
/// under `templates/`), a kustomization, Renovate's and npm's JSON.
fn no_manifests(dir: &Path) {
    let chart = dir.join("charts/web");
    std::fs::create_dir_all(chart.join("templates/tests")).unwrap();
    let files = [
        (
            "charts/web/Chart.yaml",
            "apiVersion: v2\nname: web\ntype: application\nversion: 2.7.1\nappVersion: \"4.12.0\"\n\
             dependencies:\n  - name: redis\n    version: 19.6.4\n    repository: oci://registry.example/charts\n",
        ),
        (
            "charts/web/values.yaml",
            "replicaCount: 2\nimage:\n  repository: ghcr.io/example/web\n  tag: \"\"\n\
             hostNetwork:\npodSecurityContext: {}\ncontroller:\n  kind: Deployment\n\
             replicaCount: 3\n",
        ),
        (
            "charts/web/templates/deployment.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ include \"web.fullname\" . }}\n\
             spec:\n  replicas: {{ .Values.replicaCount }}\n",
        ),
        (
            "charts/web/templates/tests/connection.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: \"{{ .Release.Name }}-test\"\n  annotations:\n    \"helm.sh/hook\": test\n",
        ),
        (
            "kustomization.yaml",
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - rendered/\n",
        ),
        (
            "renovate.json",
            "{\n  \"extends\": [\"config:recommended\"],\n  \"kubernetes\": {\"fileMatch\": [\"rendered/.+\\\\.yaml$\"]}\n}\n",
        ),
        (
            "package.json",
            "{\"name\": \"gitops\", \"private\": true, \"scripts\": {\"render\": \"helm template charts/web\"}}\n",
        ),
    ];
    for (path, text) in files {
        std::fs::write(dir.join(path), text).unwrap();
    }
}

#[test]
fn files_that_are_no_manifests_give_no_finding() {
    let dir = temp_dir("pc-no-manifests");
    no_manifests(&dir);
    // Alone: nothing to lint, except in pre-commit mode, where a commit may touch no manifest.
    let out = credlint_in(&dir, &["check", "."]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(stderr(&out).contains("nothing to lint"), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("charts/web/templates: a Helm chart's templates"),
        "{}",
        stderr(&out)
    );
    let out = credlint_in(
        &dir,
        &[
            "check",
            "--pre-commit",
            "charts/web/values.yaml",
            "package.json",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    // Beside rendered manifests: the bundle is linted, the rest gives no finding.
    std::fs::create_dir_all(dir.join("rendered")).unwrap();
    copy_in("fixtures/clean/cache.yaml", &dir.join("rendered"));
    let out = credlint_in(&dir, &["check", ".", "--format", "json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert_eq!(json(&out)["summary"]["bundles"], 1);
    // A template named on the command line is left out with the same warning.
    let out = credlint_in(
        &dir,
        &[
            "check",
            "--pre-commit",
            "charts/web/templates/deployment.yaml",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("a Helm chart's templates"),
        "{}",
        stderr(&out)
    );
    // A file that holds an object is a manifest: its other documents are findings, and a
    // manifest too broken to read an object from is still a finding.
    std::fs::write(
        dir.join("rendered/extra.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\nreplicaCount: 2\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("rendered/broken.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  labels: {x: [}\n",
    )
    .unwrap();
    let out = credlint_in(&dir, &["check", ".", "--format", "json"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    let found = findings(&out);
    assert_eq!(
        found,
        vec![
            (
                "yaml-syntax".to_string(),
                "rendered/broken.yaml".to_string()
            ),
            (
                "not-an-object".to_string(),
                "rendered/extra.yaml".to_string()
            ),
        ]
    );
    // Standard input holding a lone scalar is no manifest: nothing to lint.
    let mut child = command()
        .args(["check", "-"])
        .current_dir(&dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"hello\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(stderr(&out).contains("nothing to lint"), "{}", stderr(&out));
}

// The framework, end to end.

/// How to run pre-commit here, if it is installed.
fn pre_commit() -> Option<Vec<String>> {
    let candidates = [
        vec!["pre-commit".to_string()],
        vec![
            "python3".to_string(),
            "-m".to_string(),
            "pre_commit".to_string(),
        ],
    ];
    candidates.into_iter().find(|c| {
        Command::new(&c[0])
            .args(&c[1..])
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

fn skip(reason: &str) {
    skip_unless_required(
        "CREDLINT_REQUIRE_PRE_COMMIT",
        &format!(
            "the_real_pre_commit_framework_blocks_bad_bundles_only: {reason} \
             (`python3 -m pip install pre-commit` to run it)"
        ),
    );
}

/// A git command in `dir`, isolated from the machine's git configuration.
fn git(dir: &Path, args: &[&str]) -> Output {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .envs(git_env())
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}{}",
        stdout(&out),
        stderr(&out)
    );
    out
}

fn git_env() -> Vec<(&'static str, String)> {
    vec![
        ("GIT_CONFIG_GLOBAL", "/dev/null".into()),
        ("GIT_CONFIG_NOSYSTEM", "1".into()),
        ("GIT_AUTHOR_NAME", "credlint test".into()),
        ("GIT_AUTHOR_EMAIL", "test@credlint.invalid".into()),
        ("GIT_COMMITTER_NAME", "credlint test".into()),
        ("GIT_COMMITTER_EMAIL", "test@credlint.invalid".into()),
    ]
}

/// A git repository holding the hook definitions at a commit; returns its path and the commit.
fn hook_source(base: &Path, real_rust: bool) -> (PathBuf, String) {
    let dir = base.join("hooks");
    std::fs::create_dir_all(&dir).unwrap();
    git(&dir, &["init", "-q"]);
    let manifest = std::fs::read_to_string(root().join(".pre-commit-hooks.yaml")).unwrap();
    if real_rust {
        // This checkout as it is now (tracked and new files), committed in the copy.
        let listed = git(
            &root(),
            &[
                "ls-files",
                "-z",
                "--cached",
                "--others",
                "--exclude-standard",
            ],
        );
        for path in listed.stdout.split(|&b| b == 0).filter(|p| !p.is_empty()) {
            let path = String::from_utf8_lossy(path).into_owned();
            let from = root().join(&path);
            if !from.is_file() {
                continue;
            }
            let to = dir.join(&path);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(&from, &to).unwrap();
        }
    } else {
        let binary = env!("CARGO_BIN_EXE_credlint");
        assert_eq!(manifest.matches("language: rust").count(), 2, "{manifest}");
        assert!(manifest.contains("entry: credlint check --pre-commit\n"));
        assert!(manifest.contains("entry: credlint policies --check\n"));
        let local = manifest
            .replace("language: rust", "language: unsupported")
            .replace("entry: credlint ", &format!("entry: {binary} "));
        std::fs::write(dir.join(".pre-commit-hooks.yaml"), local).unwrap();
    }
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-q", "-m", "hooks"]);
    let head = git(&dir, &["rev-parse", "HEAD"]);
    (dir, stdout(&head).trim().to_string())
}

#[test]
fn the_real_pre_commit_framework_blocks_bad_bundles_only() {
    let Some(pre_commit) = pre_commit() else {
        skip("pre-commit is not installed");
        return;
    };
    let started = std::time::Instant::now();
    let real_rust = std::env::var_os("CREDLINT_PRE_COMMIT_RUST").is_some();
    let base = temp_dir("pc-framework");
    let (hooks, rev) = hook_source(&base, real_rust);
    let repo = base.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    std::fs::write(
        repo.join(".pre-commit-config.yaml"),
        format!(
            "repos:\n  - repo: {}\n    rev: {rev}\n    hooks:\n      - id: credlint\n      - id: credlint-policies\n",
            hooks.display()
        ),
    )
    .unwrap();
    let mut env = git_env();
    env.push((
        "PRE_COMMIT_HOME",
        base.join("cache").to_string_lossy().into_owned(),
    ));
    if real_rust {
        // Shared with later manual runs, so that only the first one builds everything.
        env.push((
            "CARGO_TARGET_DIR",
            root()
                .join("target/pre-commit-hook")
                .to_string_lossy()
                .into_owned(),
        ));
    }
    let run = |args: &[&str]| -> Output {
        Command::new(&pre_commit[0])
            .args(&pre_commit[1..])
            .args(args)
            .current_dir(&repo)
            .envs(env.clone())
            .output()
            .expect("pre-commit runs")
    };
    let commit = |message: &str| -> Output {
        Command::new("git")
            .args(["commit", "-q", "-m", message])
            .current_dir(&repo)
            .envs(env.clone())
            .output()
            .expect("git runs")
    };
    let commits = || {
        stdout(&git(&repo, &["rev-list", "--count", "--all"]))
            .trim()
            .to_string()
    };

    let installed = run(&["install"]);
    assert!(installed.status.success(), "{}", stderr(&installed));
    // The repository keeps the generated policies, so the second hook has something to check.
    let policies = credlint_in(&repo, &["policies", "--out", "policies"]);
    assert!(policies.status.success(), "{}", stderr(&policies));

    // 1. Good manifests: a bundle split over five files, committed together.
    std::fs::create_dir_all(repo.join("rendered")).unwrap();
    copy_in("fixtures/clean/split", &repo.join("rendered"));
    git(&repo, &["add", "-A"]);
    let out = commit("good bundle");
    assert!(
        out.status.success(),
        "the good bundle is blocked:\n{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert_eq!(commits(), "1");

    // 2. One file of the split bundle changes (a label on the Role): only that file is passed
    //    to the hook, and the bundle is still judged whole.
    edit(
        &repo.join("rendered/split/2-role.yml"),
        "  name: catalog-search-credentials\n",
        "  labels:\n    team: catalog\n  name: catalog-search-credentials\n",
    );
    git(&repo, &["add", "rendered/split/2-role.yml"]);
    let out = commit("label the Role");
    assert!(
        out.status.success(),
        "a one-file change of a valid split bundle is blocked:\n{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert_eq!(commits(), "2");

    // 3. A chart, a kustomization and JSON configuration beside the manifests: the commit that
    //    adds them passes, and so does a run over every file; a bad Role beside them fails it.
    no_manifests(&repo);
    git(&repo, &["add", "-A"]);
    let out = commit("chart sources and configuration");
    assert!(
        out.status.success(),
        "files that are no manifests are blocked:\n{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert_eq!(commits(), "3");
    let out = run(&["run", "--all-files"]);
    assert!(
        out.status.success(),
        "pre-commit run --all-files fails:\n{}{}",
        stdout(&out),
        stderr(&out)
    );
    std::fs::copy(
        root().join("fixtures/role-forbidden-verb/bad-list-watch.yaml"),
        repo.join("rendered/shop.yaml"),
    )
    .unwrap();
    git(&repo, &["add", "rendered/shop.yaml"]);
    let out = run(&["run", "--all-files"]);
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(!out.status.success(), "the bad Role passed:\n{said}");
    assert!(said.contains("role-forbidden-verb"), "{said}");
    assert!(!said.contains("not-an-object"), "{said}");
    git(&repo, &["reset", "-q", "rendered/shop.yaml"]);
    std::fs::remove_file(repo.join("rendered/shop.yaml")).unwrap();

    // 4. A bad bundle: the Role grants list and watch. Blocked, naming the rule and the line.
    std::fs::copy(
        root().join("fixtures/role-forbidden-verb/bad-list-watch.yaml"),
        repo.join("rendered/shop.yaml"),
    )
    .unwrap();
    git(&repo, &["add", "rendered/shop.yaml"]);
    let out = commit("bad bundle");
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(!out.status.success(), "the bad bundle passed:\n{said}");
    assert!(said.contains("role-forbidden-verb"), "{said}");
    assert!(said.contains("rendered/shop.yaml:27:"), "{said}");
    assert!(!said.contains("bundle-incomplete"), "{said}");
    assert_eq!(commits(), "3", "nothing was committed");
    git(&repo, &["reset", "-q", "rendered/shop.yaml"]);
    std::fs::remove_file(repo.join("rendered/shop.yaml")).unwrap();

    // 5. A hand-edited policy: the policies hook refuses the commit.
    let policy = repo.join("policies/job-ttl/job-ttl.yaml");
    let text = std::fs::read_to_string(&policy).unwrap();
    std::fs::write(&policy, format!("{text}# edited by hand\n")).unwrap();
    git(&repo, &["add", "-A"]);
    let out = commit("edit a policy");
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(!out.status.success(), "the stale policy passed:\n{said}");
    assert!(said.contains("credlint policies are current"), "{said}");
    assert!(said.contains("job-ttl"), "{said}");
    assert_eq!(commits(), "3");

    let _ = writeln!(
        std::io::stderr(),
        "pre-commit end to end ({}): {:.1} s",
        if real_rust {
            "language: rust"
        } else {
            "built binary"
        },
        started.elapsed().as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&base);
}
