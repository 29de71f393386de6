//! credlint.toml as a repository keeps it: found from the current folder upward, or named with
//! --config; every key changes the run; flags win over the file; a mistake in the file names
//! the key and its line and exits 2.

mod common;
use common::*;
use std::path::Path;

const BAD: &str = "fixtures/role-forbidden-verb/bad-list-watch.yaml";

/// A repository with the bad Role in `rendered/` and `config` as its credlint.toml; the
/// commands run in `rendered/`, one folder below the file.
fn repo(name: &str, config: &str) -> common::TempDir {
    let dir = temp_dir(name);
    std::fs::create_dir_all(dir.join("rendered")).unwrap();
    std::fs::copy(root().join(BAD), dir.join("rendered/shop.yaml")).unwrap();
    std::fs::write(dir.join("credlint.toml"), config).unwrap();
    dir
}

fn rules_of(report: &serde_json::Value) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_file_is_found_upward_and_flags_win_over_it() {
    let dir = repo("upward", "[rules]\nignore = [\"role-forbidden-verb\"]\n");
    let here = dir.join("rendered");
    let out = credlint_in(&here, &["check", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(rules_of(&json(&out)), Vec::<String>::new());

    // A flag replaces the file's list for that key.
    let out = credlint_in(&here, &["check", "--ignore", "job-ttl", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        rules_of(&json(&out)),
        ["role-forbidden-verb", "role-forbidden-verb"]
    );

    let out = credlint_in(&here, &["check", "--no-config"]);
    assert_eq!(out.status.code(), Some(1));

    // --config names another file; the nearest one is then not read.
    std::fs::write(dir.join("strict.toml"), "fail-on = \"warning\"\n").unwrap();
    let out = credlint_in(&here, &["check", "--config", "../strict.toml"]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn severity_overrides_change_findings_and_fail_on_reads_them() {
    let dir = repo(
        "severity",
        "[rules.severity]\nrole-forbidden-verb = \"warning\"\n",
    );
    let out = credlint_in(&dir, &["check", "rendered", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "two warnings do not fail");
    let report = json(&out);
    assert_eq!(report["findings"][0]["severity"], "warning");
    assert_eq!(
        (
            report["summary"]["errors"].as_u64(),
            report["summary"]["warnings"].as_u64()
        ),
        (Some(0), Some(2))
    );
    let out = credlint_in(&dir, &["check", "rendered", "--format", "sarif"]);
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()["runs"][0]["results"][0]
            ["level"],
        "warning"
    );
    std::fs::write(
        dir.join("credlint.toml"),
        "fail-on = \"warning\"\n[rules.severity]\nrole-forbidden-verb = \"warning\"\n",
    )
    .unwrap();
    let out = credlint_in(&dir, &["check", "rendered"]);
    assert_eq!(out.status.code(), Some(1));
    let out = credlint_in(&dir, &["check", "rendered", "--fail-on", "error"]);
    assert_eq!(out.status.code(), Some(0), "the flag wins");
}

#[test]
fn select_exclude_and_the_credentials_image_come_from_the_file() {
    let dir = repo("keys", "[rules]\nselect = [\"job-ttl\"]\n");
    let out = credlint_in(&dir, &["check", "rendered"]);
    assert_eq!(out.status.code(), Some(0));

    std::fs::write(dir.join("credlint.toml"), "exclude = [\"rendered\"]\n").unwrap();
    std::fs::create_dir_all(dir.join("other")).unwrap();
    std::fs::copy(
        root().join("fixtures/clean/cache.yaml"),
        dir.join("other/cache.yaml"),
    )
    .unwrap();
    let out = credlint_in(&dir, &["check", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert_eq!(json(&out)["summary"]["files"], 1, "rendered/ is not walked");
    let out = credlint_in(&dir, &["check", "--exclude", "other", "--format", "json"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the flag replaces the file's exclude"
    );

    let image = "registry.example/platform/credentials:9.9.9@sha256:1111111111111111111111111111111111111111111111111111111111111111";
    std::fs::write(
        dir.join("credlint.toml"),
        format!("credentials-image = \"{image}\"\n"),
    )
    .unwrap();
    let out = credlint_in(&dir, &["check", "other", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(rules_of(&json(&out)), ["job-image-pinned"]);
}

#[test]
fn a_mistake_in_the_file_names_the_key_and_its_line_and_exits_2() {
    let dir = repo(
        "mistake",
        "# credlint settings\n[rules]\nslect = [\"job-ttl\"]\n",
    );
    let out = credlint_in(&dir, &["check", "rendered"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        out.stdout.is_empty(),
        "no report from a run that could not start"
    );
    assert_eq!(
        stderr(&out),
        "credlint: credlint.toml:3: unknown key `slect` in [rules] (did you mean `select`?)\n"
    );

    std::fs::write(
        dir.join("credlint.toml"),
        "fail-on = 1\n[rules]\nignore = [\"job-tll\"]\n",
    )
    .unwrap();
    let out = credlint_in(&dir, &["check", "rendered"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        "credlint: credlint.toml:1: `fail-on` must be \"error\" or \"warning\", not integer\n\
         credlint: credlint.toml:3: unknown rule `job-tll` (did you mean `job-ttl`?)\n"
    );

    std::fs::write(dir.join("credlint.toml"), [0xff, 0xfe, b'[']).unwrap();
    let out = credlint_in(&dir, &["check", "rendered"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("credlint.toml: the file is not UTF-8"));

    std::fs::write(dir.join("credlint.toml"), "[rules\n").unwrap();
    let out = credlint_in(&dir, &["check", "rendered"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with("credlint: credlint.toml:1: not valid TOML"),
        "{}",
        stderr(&out)
    );

    let out = credlint_in(&dir, &["check", "rendered", "--config", "missing.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        "credlint: missing.toml: no such file or folder\n"
    );
}

#[test]
fn unknown_rules_on_the_command_line_get_a_suggestion() {
    let out = credlint_in(Path::new(&root()), &["check", BAD, "--select", "job-tll"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("unknown rule `job-tll` (did you mean `job-ttl`?)"));
}
