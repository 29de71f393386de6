//! What the integration tests share: running the built binary, reading its JSON, temp folders.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs credlint in `dir` with no credlint.toml of the machine's leaking in unless the test
/// puts one there (the tests' folders live under the system's temp folder).
pub fn credlint_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_credlint"))
        .args(args)
        .current_dir(dir)
        // The report's colour and width follow these; a test sets them when it means to.
        .env_remove("NO_COLOR")
        .env_remove("FORCE_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("CLICOLOR")
        .env_remove("COLUMNS")
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

/// A folder under the system's temp folder, removed when the test ends (passed or failed), so
/// the suite leaves nothing behind.
pub struct TempDir(PathBuf);

impl TempDir {
    /// `<temp>/<prefix>-<pid>`, emptied first.
    pub fn new(prefix: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("{prefix}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl std::ops::Deref for TempDir {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.0
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
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
