//! The layout of `src/` shows the pipeline: one folder per stage, each opening with a line that
//! says what it holds, and no module importing from a stage that stands above its own.

use std::path::{Path, PathBuf};

/// The stages, lowest first (the order `src/lib.rs` and the README give).
const STAGES: &[&str] = &[
    "common", "load", "model", "runtime", "lint", "cache", "report", "policy", "exec", "cli",
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The stage named right after each `crate::` in `text`.
fn imported_stages(text: &str) -> Vec<&str> {
    text.match_indices("crate::")
        .map(|(at, _)| {
            let rest = &text[at + "crate::".len()..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            &rest[..end]
        })
        .collect()
}

#[test]
fn no_module_imports_from_a_stage_above_its_own() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut wrong = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(src()).unwrap();
        let Some(stage) = relative
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
        else {
            continue;
        };
        let Some(rank) = STAGES.iter().position(|s| *s == stage) else {
            continue;
        };
        let text = std::fs::read_to_string(file).unwrap();
        for imported in imported_stages(&text) {
            if let Some(other) = STAGES.iter().position(|s| *s == imported)
                && other > rank
            {
                wrong.push(format!("{} imports crate::{imported}", relative.display()));
            }
        }
    }
    assert!(wrong.is_empty(), "imports from a higher stage: {wrong:#?}");
}

#[test]
fn a_fault_in_the_order_is_seen() {
    // The check above reads the stage after `crate::`; make sure it reads it whole.
    assert_eq!(
        imported_stages("use crate::cli::settings; x(crate::lint::engine::run)"),
        vec!["cli", "lint"]
    );
}

#[test]
fn src_holds_few_files_and_every_stage_says_what_it_holds() {
    let mut top_files = Vec::new();
    let mut folders = Vec::new();
    for entry in std::fs::read_dir(src()).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            folders.push(path);
        } else {
            top_files.push(path.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    assert!(top_files.len() <= 6, "src/ holds {top_files:?}");
    for folder in folders {
        let name = folder.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            STAGES.contains(&name.as_str()) || name == "testkit",
            "src/{name} is not a stage: add it to STAGES, lib.rs and docs/development.md"
        );
        let head = std::fs::read_to_string(folder.join("mod.rs")).unwrap();
        assert!(
            head.starts_with("//! "),
            "src/{name}/mod.rs does not open with a line saying what it holds"
        );
    }
}

#[test]
fn the_development_page_names_every_stage() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/development.md"))
            .unwrap();
    for stage in STAGES.iter().chain(&["testkit"]) {
        assert!(
            readme.contains(&format!("src/{stage}/")),
            "docs/development.md does not name src/{stage}/"
        );
    }
}
