//! A bundle is checked as soon as its five objects are read and then dropped (unless a command
//! keeps bundles); the findings must be the same either way, including for members that arrive
//! after their bundle was complete. The verdict cache must not change findings either.

use credlint::exec::Executor;
use credlint::lint::Options;
use credlint::load::input;
use credlint::model::members::Keep;
use std::path::{Path, PathBuf};

fn findings(paths: &[PathBuf], keep: bool, threads: usize) -> Vec<String> {
    let args: Vec<String> = paths
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let files = input::collect(&args, &[]).files;
    let options = Options {
        keep: Keep {
            bundles: keep,
            programs: false,
        },
        ..Options::default()
    };
    let outcome = Executor::new(options)
        .unwrap()
        .threads(Some(threads))
        .run(&files, Vec::new());
    outcome
        .findings
        .iter()
        .map(|f| {
            let labels: Vec<String> = f
                .labels
                .iter()
                .map(|l| {
                    format!(
                        "{}:{}:{}",
                        outcome.files[l.loc.file], l.loc.line, l.loc.column
                    )
                })
                .collect();
            format!(
                "{}:{}:{} {} {:?} {:?} {}",
                outcome.files[f.loc.file],
                f.loc.line,
                f.loc.column,
                f.rule,
                f.bundle,
                labels,
                f.message
            )
        })
        .collect()
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

#[test]
fn checking_bundles_on_completion_changes_no_finding() {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && !p.ends_with("runtime"))
        .collect();
    dirs.sort();
    for dir in dirs {
        let kept = findings(std::slice::from_ref(&dir), true, 1);
        let streamed = findings(std::slice::from_ref(&dir), false, 1);
        assert_eq!(streamed, kept, "{}", dir.display());
        let parallel = findings(std::slice::from_ref(&dir), false, 2);
        assert_eq!(parallel, kept, "{} with two threads", dir.display());
    }
}

#[test]
fn a_member_after_its_complete_bundle_is_a_duplicate_with_its_first() {
    // Removed when the test ends, passed or failed.
    let temp = credlint::testkit::TempDir::new("credlint-late");
    let dir = temp.to_path_buf();
    let bundle = std::fs::read_to_string(fixtures().join("clean/cache.yaml")).unwrap();
    std::fs::write(dir.join("a.yaml"), &bundle).unwrap();
    // A second ConfigMap of the same owner, in a later file.
    let cm_start = bundle.find("apiVersion: v1\nkind: ConfigMap").unwrap();
    let cm_end = cm_start + bundle[cm_start..].find("\n---\n").unwrap();
    std::fs::write(dir.join("b.yaml"), &bundle[cm_start..cm_end]).unwrap();
    for keep in [true, false] {
        let found = findings(std::slice::from_ref(&dir), keep, 2);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].contains("b.yaml:4:9 bundle-duplicate"),
            "{found:?}"
        );
        assert!(
            found[0].contains("a.yaml:"),
            "labelled with the first: {found:?}"
        );
    }
}
