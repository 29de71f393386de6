//! The command line as users and scripts meet it: exit codes, the JSON contract of cli.md,
//! standard input, rule selection, `rules` and `explain`.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn credlint(args: &[&str]) -> Output {
    common::credlint(args)
}

fn credlint_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut child = common::command()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

fn json(output: &Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stdout)))
}

fn temp_dir(name: &str) -> common::TempDir {
    common::TempDir::new(&format!("credlint-cli-{name}"))
}

const BAD: &str = "fixtures/role-forbidden-verb/bad-list-watch.yaml";

#[test]
fn clean_renderings_exit_0_with_the_summary() {
    let out = credlint(&["check", "fixtures/clean", "--format", "json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = json(&out);
    assert_eq!(report["version"], 1);
    assert_eq!(report["summary"]["bundles"], 13);
    assert_eq!(report["summary"]["errors"], 0);
    assert_eq!(report["findings"], serde_json::json!([]));
}

#[test]
fn findings_exit_1_and_follow_the_json_contract() {
    let out = credlint(&["check", BAD, "--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let report = json(&out);
    let first = &report["findings"][0];
    let mut keys: Vec<&str> = first
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort();
    let mut expected = [
        "rule",
        "severity",
        "message",
        "file",
        "line",
        "column",
        "end_line",
        "end_column",
        "object",
        "bundle",
    ];
    expected.sort();
    assert_eq!(keys, expected);
    assert_eq!(first["rule"], "role-forbidden-verb");
    assert_eq!(first["severity"], "error");
    assert_eq!(first["file"], BAD);
    assert_eq!(
        (first["line"].as_u64(), first["column"].as_u64()),
        (Some(27), Some(18))
    );
    assert_eq!(
        (first["end_line"].as_u64(), first["end_column"].as_u64()),
        (Some(27), Some(22))
    );
    assert_eq!(
        first["object"],
        serde_json::json!({"kind": "Role", "namespace": "shop", "name": "shop-sessions-credentials"})
    );
    assert_eq!(first["bundle"], "shop/shop-sessions");
    assert!(first["message"].as_str().unwrap().contains("`list`"));
    let summary = &report["summary"];
    assert_eq!(
        (
            summary["files"].as_u64(),
            summary["documents"].as_u64(),
            summary["objects"].as_u64()
        ),
        (Some(1), Some(5), Some(5))
    );
    assert_eq!(summary["errors"], 2);
}

#[test]
fn the_text_format_shows_rule_node_and_help() {
    let out = credlint(&["check", BAD]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("role-forbidden-verb"), "{text}");
    assert!(text.contains("Role grants `list`"), "{text}");
    assert!(
        text.contains("27 │     verbs: [get, list, patch, watch]"),
        "{text}"
    );
    assert!(text.contains("help: Remove the verb"), "{text}");
    assert!(
        text.contains("2 errors, 0 warnings in 5 documents"),
        "{text}"
    );
}

#[test]
fn a_missing_path_or_nothing_to_lint_exits_2_with_one_line() {
    let out = credlint(&["check", "no/such/path"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no/such/path"), "{err}");
    assert!(out.stdout.is_empty());

    let empty = temp_dir("empty");
    std::fs::write(empty.join("README.md"), "not a manifest").unwrap();
    let out = credlint(&["check", empty.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("nothing to lint"), "{err}");
}

#[test]
fn a_missing_path_beside_a_good_one_still_reports_and_exits_2() {
    let out = credlint(&["check", BAD, "nope.yaml", "--format", "json"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        json(&out)["summary"]["errors"],
        2,
        "the readable file is still linted"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope.yaml"));
}

#[test]
fn standard_input_is_linted_as_dash() {
    let text = std::fs::read(root().join(BAD)).unwrap();
    let out = credlint_stdin(&["check", "-", "--format", "json"], &text);
    assert_eq!(out.status.code(), Some(1));
    let report = json(&out);
    assert_eq!(report["findings"][0]["file"], "-");
    assert_eq!(report["findings"][0]["line"], 27);
    let out = credlint_stdin(&["check", "-"], &text);
    assert!(String::from_utf8_lossy(&out.stdout).contains("verbs: [get, list, patch, watch]"));
}

#[test]
fn select_ignore_and_fail_on() {
    let out = credlint(&["check", BAD, "--ignore", "role-forbidden-verb"]);
    assert_eq!(out.status.code(), Some(0));
    let out = credlint(&["check", BAD, "--select", "job-ttl", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(json(&out)["findings"], serde_json::json!([]));
    let out = credlint(&["check", BAD, "--select", "no-such-rule"]);
    assert_eq!(out.status.code(), Some(2));

    let dir = temp_dir("warning");
    let store = "apiVersion: external-secrets.io/v1\nkind: ClusterSecretStore\nmetadata:\n  name: open\nspec:\n  provider: {}\n";
    std::fs::write(dir.join("store.yaml"), store).unwrap();
    let path = dir.join("store.yaml");
    let out = credlint(&["check", path.to_str().unwrap(), "--format", "json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "a warning does not fail by default"
    );
    assert_eq!(json(&out)["findings"][0]["severity"], "warning");
    let out = credlint(&["check", path.to_str().unwrap(), "--fail-on", "warning"]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn the_configured_image_is_enforced() {
    let other = "registry.example/platform/credentials:1.5.0@sha256:0000000000000000000000000000000000000000000000000000000000000000";
    let out = credlint(&[
        "check",
        "fixtures/clean/cache.yaml",
        "--credentials-image",
        other,
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let report = json(&out);
    assert_eq!(report["findings"][0]["rule"], "job-image-pinned");
}

#[test]
fn output_is_deterministic_and_inputs_are_never_written() {
    let before: Vec<(PathBuf, Vec<u8>, std::time::SystemTime)> =
        walk(&root().join("fixtures/clean"))
            .into_iter()
            .map(|p| {
                let meta = std::fs::metadata(&p).unwrap();
                (
                    p.clone(),
                    std::fs::read(&p).unwrap(),
                    meta.modified().unwrap(),
                )
            })
            .collect();
    let a = credlint(&["check", "fixtures", "--format", "json"]);
    let b = credlint(&["check", "fixtures", "--format", "json"]);
    assert_eq!(a.stdout, b.stdout);
    for (path, bytes, modified) in before {
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "{}", path.display());
        assert_eq!(
            std::fs::metadata(&path).unwrap().modified().unwrap(),
            modified
        );
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn rules_and_explain_come_from_the_catalog() {
    let out = credlint(&["rules", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0));
    let rules = json(&out);
    let ids: Vec<&str> = rules
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    for id in [
        "yaml-syntax",
        "role-forbidden-verb",
        "job-name-hash",
        "pragma-misplaced",
        "eso-store-unscoped",
    ] {
        assert!(ids.contains(&id), "{id}");
    }
    let verb = rules
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "role-forbidden-verb")
        .unwrap();
    assert!(
        verb["cel"]["validations"][0]["expression"]
            .as_str()
            .unwrap()
            .contains("'create'")
    );

    let out = credlint(&["explain", "role-forbidden-verb"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("ADR-072"), "{text}");
    assert!(text.contains("denies unless"), "{text}");
    let out = credlint(&["explain", "forbidden-verb"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("role-forbidden-verb"));
    // The typo hint `check --select` gives, for explain too.
    let out = credlint(&["explain", "job-tll"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "credlint: unknown rule `job-tll` (did you mean `job-ttl`?)\n"
    );
}

#[test]
fn completions_are_generated_for_every_shell() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let out = credlint(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}");
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(script.contains("credlint"), "{shell}");
        // Fish writes long options without their dashes (`-l pre-commit`).
        for word in ["check", "simulate", "pre-commit", "show-suppressed"] {
            assert!(script.contains(word), "{shell} completes {word}");
        }
        if shell == "bash" {
            assert!(script.contains("sarif github junit"), "format values");
        }
    }
    let out = credlint(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn unsuppressed_json_keeps_exactly_the_contract_keys() {
    let out = credlint(&["check", BAD, "--format", "json"]);
    let report = json(&out);
    let mut keys: Vec<&str> = report["summary"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "bundles",
            "documents",
            "errors",
            "files",
            "objects",
            "warnings"
        ]
    );
    let mut top: Vec<&str> = report
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    top.sort();
    assert_eq!(top, ["findings", "summary", "version"]);
}

/// The binary is position-independent (ELF type DYN), so it loads at a random address: C
/// libraries in it (tree-sitter, mimalloc) parse input from the change under review.
#[cfg(target_os = "linux")]
#[test]
fn the_binary_is_position_independent() {
    use std::io::Read;
    let mut binary = [0u8; 18];
    std::fs::File::open(env!("CARGO_BIN_EXE_credlint"))
        .and_then(|mut f| f.read_exact(&mut binary))
        .unwrap();
    assert_eq!(&binary[..4], b"\x7fELF");
    let kind = u16::from_le_bytes([binary[16], binary[17]]);
    assert_eq!(
        kind, 3,
        "ELF type {kind}: 3 is a position-independent executable, 2 one at a fixed address"
    );
}

/// A temporary folder that cannot hold run folders stops `simulate` with exit 2 and a message
/// that names it, before any program runs.
#[test]
fn simulate_names_the_temporary_folder_it_cannot_use() {
    let dir = temp_dir("simulate-tmpdir");
    let missing = dir.join("no-such-folder");
    let output = common::command()
        .env("TMPDIR", &missing)
        .args(["simulate", "--no-cache", "fixtures/clean/cache.yaml"])
        .current_dir(root())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "no run folder can be made in {}",
            missing.display()
        )),
        "{stderr}"
    );
    assert!(!missing.exists());
}
