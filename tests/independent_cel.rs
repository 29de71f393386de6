//! The generated Kyverno policies judged by a CEL engine credlint does not share. The agreement
//! test (`tests/agreement.rs`) evaluates the policies with the Rust CEL crate the linter itself
//! uses; here `tests/independent/cel_agreement.py` evaluates them with cel-python (`celpy`, a
//! pure-Python parser and interpreter) on every object of every fixture file, as Kyverno would
//! at the admission of a CREATE, and each policy must deny exactly the objects on which
//! `credlint check` reports its rule (see README, "Kyverno policies").
//!
//! When cel-python is not installed the test says so on the terminal and passes; with
//! `CREDLINT_REQUIRE_CEL_PYTHON=1` (set by `.ci/run`) it fails instead.

mod common;
use common::*;
use std::io::Write;
use std::process::Command;

const SCRIPT: &str = "tests/independent/cel_agreement.py";

/// Why a Python module cannot be imported here, if it cannot.
fn cannot_import(module: &str) -> Option<String> {
    match Command::new("python3")
        .arg("-c")
        .arg(format!("import {module}"))
        .output()
    {
        Err(e) => Some(format!("python3 cannot be run: {e}")),
        Ok(out) if !out.status.success() => Some(
            stderr(&out)
                .lines()
                .last()
                .unwrap_or("the import fails")
                .to_string(),
        ),
        Ok(_) => None,
    }
}

fn skip(reason: &str) {
    skip_unless_required("CREDLINT_REQUIRE_CEL_PYTHON", reason);
}

/// How many rules of the catalog are object rules, each of which is a policy.
fn object_rules() -> usize {
    let out = credlint(&["rules", "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    json(&out)
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["scope"] == "object")
        .count()
}

#[test]
fn an_independent_cel_engine_agrees_with_the_linter_on_every_fixture_object() {
    if let Some(why) = cannot_import("celpy") {
        skip(&format!(
            "cel-python is not installed ({why}; `python3 -m pip install cel-python==0.5.0` \
             to run {SCRIPT})"
        ));
        return;
    }
    if let Some(why) = cannot_import("yaml") {
        skip(&format!(
            "PyYAML is not installed ({why}; `python3 -m pip install pyyaml` to run {SCRIPT})"
        ));
        return;
    }
    let started = std::time::Instant::now();
    let out = Command::new("python3")
        .arg(root().join(SCRIPT))
        .arg(env!("CARGO_BIN_EXE_credlint"))
        .arg(root())
        .current_dir(root())
        // The script runs `credlint check` in the repository: its cache goes under cargo's
        // folder for test output instead.
        .env("CREDLINT_CACHE_DIR", cache_dir())
        .output()
        .expect("python3 runs");
    let report = stdout(&out);
    let _ = writeln!(
        std::io::stderr(),
        "{}\n  ({:.1} s)",
        report.trim_end(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        out.status.success(),
        "{SCRIPT} exited {:?}:\n{report}{}",
        out.status.code(),
        stderr(&out)
    );
    let summary = report.lines().next().unwrap_or_default();
    let expected = format!("independent CEL: {} policies, ", object_rules());
    assert!(
        summary.starts_with(&expected) && summary.ends_with(" denials, 0 disagreements"),
        "{summary:?} is not {expected:?}... 0 disagreements"
    );
}
