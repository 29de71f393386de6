//! What the integration tests share: running the built binary, reading its JSON, temp folders.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The variables the report's look follows (colour and width), removed where a test means
/// only its own to count.
pub const LOOK: [&str; 6] = [
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR_FORCE",
    "CLICOLOR",
    "COLUMNS",
    "TERM",
];

/// The built binary with the report's colour and width variables cleared (a test sets them when
/// it means to) and the verdict cache kept under cargo's folder for test output, so that no run
/// leaves a `.credlint_cache/` in the repository or the system's temp folder. Tests of the cache's
/// own placement remove the variable.
pub fn command() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_credlint"));
    command
        .current_dir(root())
        .env("CREDLINT_CACHE_DIR", cache_dir());
    for name in LOOK {
        command.env_remove(name);
    }
    command
}

/// Where the tests' runs keep their cache: inside target/, which `cargo clean` removes.
pub fn cache_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("credlint-cache")
}

/// Runs credlint in `dir` with no credlint.toml of the machine's leaking in unless the test
/// puts one there (the tests' folders live under the system's temp folder).
pub fn credlint_in(dir: &Path, args: &[&str]) -> Output {
    command()
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the binary runs")
}

pub fn credlint(args: &[&str]) -> Output {
    credlint_in(&root(), args)
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

pub fn json(output: &Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(output)))
}

/// A fresh folder for one test, named after it and the process.
pub fn temp_dir(name: &str) -> TempDir {
    TempDir::new(&format!("credlint-it-{name}"))
}

pub use credlint::testkit::TempDir;

/// Whether the tests run as root (what credlint may then do: namespaces, mounts, other users).
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Copies a file or folder of the repository into `dir`, under the same name.
pub fn copy_in(from: &str, dir: &Path) -> PathBuf {
    let source = root().join(from);
    let target = dir.join(source.file_name().unwrap());
    copy(&source, &target);
    target
}

fn copy(from: &Path, to: &Path) {
    if from.is_dir() {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            copy(&entry.path(), &to.join(entry.file_name()));
        }
    } else {
        std::fs::copy(from, to).unwrap();
    }
}

/// Says on the terminal, past the test harness's capture, that a test did not run because a
/// tool is missing; where `required` is set to `1` (as `.ci/run` does), fails instead.
pub fn skip_unless_required(required: &str, reason: &str) {
    if std::env::var_os(required).is_some_and(|v| v == "1") {
        panic!("{reason}, and {required}=1 is set");
    }
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "\nSKIPPED: {reason}\n");
}

/// Runs a simulation (`run`, given `env` and one more variable) both ways where credlint is
/// root and `env` does not choose: the runs forked from one interpreter
/// (`CREDLINT_ZYGOTE=require`: a zygote that fails is an error, never a quiet fallback) and a
/// fresh interpreter per run (`CREDLINT_ZYGOTE=0`). `said` gives a run's exit code, report and
/// standard error; the two reports must be the same. The forked run is returned.
pub fn zygote_and_fresh<R>(
    env: &[(&str, &str)],
    run: impl Fn(&[(&str, &str)]) -> R,
    said: impl Fn(&R) -> (Option<i32>, String, String),
) -> R {
    if !is_root() || env.iter().any(|(k, _)| *k == "CREDLINT_ZYGOTE") {
        return run(env);
    }
    let with = |mode| run(&[env, &[("CREDLINT_ZYGOTE", mode)]].concat());
    let (forked, fresh) = (with("require"), with("0"));
    let ((code, report, err), (fresh_code, fresh_report, fresh_err)) =
        (said(&forked), said(&fresh));
    assert_eq!(
        (code, report),
        (fresh_code, fresh_report),
        "the zygote's runs and fresh interpreters disagree\n{err}\n{fresh_err}"
    );
    forked
}
