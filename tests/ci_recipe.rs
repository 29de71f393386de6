//! The GitHub Actions workflow shipped in docs/ci/github-actions.yml works as written: it parses,
//! asks for what the SARIF upload needs, and each credlint command in it does its job on a
//! render (a clean one passes and writes SARIF; a broken one fails the step and still writes
//! the SARIF the upload step sends).

mod common;

use credlint::load::yaml::{self, Parsed};
use std::path::Path;

const WORKFLOW: &str = "docs/ci/github-actions.yml";

fn workflow() -> String {
    std::fs::read_to_string(common::root().join(WORKFLOW)).unwrap()
}

/// The shell lines of every `run:` step, and the steps themselves as (name, if, run, uses).
fn steps(text: &str) -> Vec<(String, String, String, String)> {
    let parsed = yaml::parse(text);
    let Some(Parsed::Document(doc)) = parsed.first() else {
        panic!("{WORKFLOW} does not parse: {parsed:?}");
    };
    assert_eq!(
        doc.root
            .at(&["permissions", "security-events"])
            .and_then(|n| n.as_str()),
        Some("write"),
        "code scanning's upload needs security-events: write"
    );
    let jobs = doc.root.get("jobs").and_then(|j| j.as_map()).expect("jobs");
    let mut out = Vec::new();
    for job in jobs {
        let steps = job
            .value
            .get("steps")
            .and_then(|s| s.as_seq())
            .expect("steps");
        for step in steps {
            let field = |k: &str| {
                step.get(k)
                    .and_then(|n| n.as_str())
                    .unwrap_or_default()
                    .to_string()
            };
            out.push((field("name"), field("if"), field("run"), field("uses")));
        }
    }
    out
}

fn credlint_lines(steps: &[(String, String, String, String)]) -> Vec<Vec<String>> {
    steps
        .iter()
        .flat_map(|(_, _, run, _)| run.lines())
        .map(str::trim)
        .filter(|line| line.starts_with("credlint "))
        .map(|line| line.split_whitespace().skip(1).map(String::from).collect())
        .collect()
}

fn run(dir: &Path, args: &[String]) -> std::process::Output {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    common::credlint_in(dir, &args)
}

#[test]
fn the_workflow_parses_and_uploads_sarif_whatever_the_verdict() {
    let steps = steps(&workflow());
    let upload = steps
        .iter()
        .find(|(_, _, _, uses)| uses.starts_with("github/codeql-action/upload-sarif@"))
        .expect("a SARIF upload step");
    assert!(
        upload.1.contains("always()"),
        "the upload runs when the lint step failed too: {upload:?}"
    );
    let install = steps
        .iter()
        .find(|(_, _, run, _)| run.contains("cargo install"))
        .expect("an install step");
    assert!(
        install.2.contains("--locked") && install.2.contains("$CREDLINT_REV"),
        "the install is pinned: {install:?}"
    );
    assert!(
        !steps.iter().any(|(_, _, run, _)| run.contains("|| true")),
        "no step turns a failure (exit 2: nothing read) into a success"
    );
}

#[test]
fn the_workflow_commands_pass_a_clean_render_and_fail_a_broken_one() {
    let steps = steps(&workflow());
    let commands = credlint_lines(&steps);
    assert!(commands.len() >= 2, "{commands:?}");
    let lint = commands
        .iter()
        .find(|c| c.first().is_some_and(|c| c == "check"))
        .expect("a check command");
    let sarif_name = lint
        .windows(2)
        .find(|w| w[0] == "--output-file")
        .map(|w| w[1].clone())
        .expect("the SARIF file");

    let dir = common::temp_dir("ci-recipe");
    let rendered = dir.as_path().join("rendered");
    std::fs::create_dir_all(&rendered).unwrap();
    for entry in std::fs::read_dir(common::root().join("fixtures/clean")).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            std::fs::copy(&path, rendered.join(path.file_name().unwrap())).unwrap();
        }
    }
    // A repository that keeps its generated policies, as the last step expects.
    let generated = common::credlint_in(dir.as_path(), &["policies", "--out", "policies"]);
    assert!(generated.status.success(), "{}", common::stderr(&generated));

    for command in &commands {
        let out = run(dir.as_path(), command);
        assert_eq!(
            out.status.code(),
            Some(0),
            "`credlint {}` on a clean render: {}{}",
            command.join(" "),
            common::stdout(&out),
            common::stderr(&out)
        );
    }
    let sarif: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.as_path().join(&sarif_name)).unwrap()).unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    assert_eq!(sarif["runs"][0]["results"].as_array().unwrap().len(), 0);

    std::fs::copy(
        common::root().join("fixtures/demo/broken.yaml"),
        rendered.join("broken.yaml"),
    )
    .unwrap();
    let out = run(dir.as_path(), lint);
    assert_eq!(out.status.code(), Some(1), "{}", common::stderr(&out));
    assert!(
        common::stdout(&out).contains("::error file=rendered/broken.yaml,line=29,"),
        "the annotations reach the log: {}",
        common::stdout(&out)
    );
    let sarif: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.as_path().join(&sarif_name)).unwrap()).unwrap();
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert!(
        results.iter().any(|r| r["ruleId"] == "role-forbidden-verb"
            && r["locations"][0]["physicalLocation"]["region"]["startLine"] == 29),
        "the findings of the broken bundle are uploaded: {results:?}"
    );

    // A render step that wrote nothing is no pass.
    std::fs::remove_dir_all(&rendered).unwrap();
    std::fs::create_dir_all(&rendered).unwrap();
    let out = run(dir.as_path(), lint);
    assert_eq!(out.status.code(), Some(2), "{}", common::stderr(&out));
}
