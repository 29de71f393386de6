//! Nothing lost, nothing half-written: every command leaves its inputs as they were (bytes,
//! modification times, no file added); `check` writes the same bytes whatever the thread
//! count; `policies --out` replaces each file atomically (a new file renamed over the old),
//! leaves what it did not generate alone (refusing, before it writes anything, to replace such a
//! file), and a run stopped by an error leaves every file either as it was or as generated.

mod common;

use credlint::testkit;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::SystemTime;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn credlint_in(cwd: &Path, args: &[&str]) -> Output {
    common::command()
        .args(args)
        .current_dir(cwd)
        .env_remove("CREDLINT_CACHE_DIR")
        .output()
        .expect("the binary runs")
}

fn temp_dir(name: &str) -> common::TempDir {
    common::TempDir::new(&format!("credlint-integrity-{name}"))
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Every file under `dir` (hidden ones too) with its bytes and modification time, except the
/// cache `check` keeps in the folder it runs in (`.credlint_cache/`): its own, not an input.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, SystemTime)> {
    let mut out = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    let cache = dir.join(".credlint_cache");
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if path == cache {
                continue;
            }
            if meta.is_dir() {
                pending.push(path);
            } else {
                out.insert(
                    path.clone(),
                    (std::fs::read(&path).unwrap(), meta.modified().unwrap()),
                );
            }
        }
    }
    out
}

#[test]
fn no_command_writes_to_its_inputs() {
    let dir = temp_dir("inputs");
    let fixtures = dir.join("fixtures");
    let policies = dir.join("policies");
    copy_tree(&root().join("fixtures"), &fixtures);
    copy_tree(&root().join("policies"), &policies);
    let before = snapshot(&dir);
    assert!(before.len() > 100, "{} files", before.len());
    let elsewhere = temp_dir("inputs-out");
    let out_dir = elsewhere.join("generated").to_string_lossy().into_owned();
    let runs: Vec<Vec<&str>> = vec![
        vec!["check", "fixtures"],
        vec!["check", "fixtures", "--format", "json"],
        vec!["check", "fixtures", "--format", "sarif"],
        vec!["check", "fixtures", "--format", "github"],
        vec!["check", "fixtures", "--format", "junit"],
        vec!["check", "fixtures", "--policy", "policies"],
        vec!["check", "fixtures/clean", "--threads", "1"],
        vec!["simulate", "fixtures/clean/cache.yaml", "--timeout", "5"],
        vec!["rules", "--format", "markdown"],
        vec!["explain", "job-ttl"],
        vec!["policies"],
        vec![
            "policies",
            "--check",
            "--out",
            "policies",
            "--fixtures",
            "fixtures",
        ],
        vec!["policies", "--out", &out_dir, "--fixtures", "fixtures"],
    ];
    for args in &runs {
        let out = credlint_in(&dir, args);
        assert!(
            matches!(out.status.code(), Some(0..=2)),
            "{args:?}: {:?} {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
        let after = snapshot(&dir);
        let changed: Vec<&PathBuf> = before
            .iter()
            .filter(|(p, v)| after.get(*p) != Some(*v))
            .map(|(p, _)| p)
            .chain(after.keys().filter(|p| !before.contains_key(*p)))
            .collect();
        assert!(
            changed.is_empty(),
            "{args:?} wrote to its inputs: {changed:?}"
        );
    }
    // The one command that writes did write, elsewhere; `check` kept its cache beside.
    assert!(Path::new(&out_dir).join("kustomization.yaml").is_file());
    assert!(dir.join(".credlint_cache/.gitignore").is_file());
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&elsewhere);
}

#[test]
fn check_writes_the_same_bytes_whatever_the_thread_count() {
    // The fixtures, and generated bundles spread over many files.
    let dir = temp_dir("threads");
    testkit::write_tree(&dir, 7, 24, 2);
    let generated = dir.to_string_lossy().into_owned();
    for paths in [vec!["fixtures"], vec![generated.as_str()]] {
        for format in ["json", "text"] {
            let mut outputs = Vec::new();
            for threads in ["1", "2", "8"] {
                // Without the cache: each run lints with its own thread count.
                let mut args = vec![
                    "check",
                    "--no-cache",
                    "--format",
                    format,
                    "--threads",
                    threads,
                ];
                args.extend(&paths);
                let out = credlint_in(&root(), &args);
                assert!(matches!(out.status.code(), Some(0..=2)), "{args:?}");
                outputs.push((threads, out.status.code(), out.stdout));
            }
            let mut args = vec!["check", "--no-cache", "--format", format];
            args.extend(&paths);
            let out = credlint_in(&root(), &args);
            outputs.push(("default", out.status.code(), out.stdout));
            let (_, code, first) = &outputs[0];
            assert!(!first.is_empty());
            for (threads, other_code, other) in &outputs[1..] {
                assert_eq!(code, other_code, "{paths:?} {format} --threads {threads}");
                assert!(
                    first == other,
                    "{paths:?} --format {format}: --threads 1 and {threads} differ"
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(unix)]
fn inode(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).unwrap().ino()
}

#[test]
fn policies_out_replaces_atomically_and_an_error_leaves_nothing_half_written() {
    let dir = temp_dir("atomic");
    let out = dir.join("policies");
    let out_arg = out.to_string_lossy().into_owned();
    let fixtures = root().join("fixtures").to_string_lossy().into_owned();
    let run = |dir: &Path| {
        credlint_in(
            dir,
            &["policies", "--out", &out_arg, "--fixtures", &fixtures],
        )
    };
    assert_eq!(run(&dir).status.code(), Some(0));
    let generated = snapshot(&out);
    // A generated file made stale by hand.
    let stale = out.join("job-ttl/job-ttl.yaml");
    let text = std::fs::read_to_string(&stale).unwrap();
    std::fs::write(
        &stale,
        text.replace("validationActions: [Deny]", "validationActions: [Audit]"),
    )
    .unwrap();
    let before = inode(&stale);
    let edited = std::fs::read_to_string(&stale).unwrap();
    // A foreign file, and a folder where a generated file goes: credlint refuses to replace
    // what it did not generate, and says so before it writes anything.
    let foreign = out.join("team/guardrails.yaml");
    std::fs::create_dir_all(foreign.parent().unwrap()).unwrap();
    std::fs::write(&foreign, "apiVersion: v1\nkind: ConfigMap\n").unwrap();
    let blocked = out.join("role-wildcard/role-wildcard.yaml");
    std::fs::remove_file(&blocked).unwrap();
    std::fs::create_dir_all(blocked.join("in-the-way")).unwrap();

    let failed = run(&dir);
    assert_eq!(
        failed.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&failed.stderr)
    );
    assert!(String::from_utf8_lossy(&failed.stderr).contains("role-wildcard.yaml"));
    assert_eq!(
        std::fs::read_to_string(&stale).unwrap(),
        edited,
        "a refused run writes nothing, not even the files it could"
    );
    assert_eq!(inode(&stale), before, "the stale file was not touched");
    // Every file is whole: as generated, or as the test left it; no temporary file remains.
    for (path, (bytes, _)) in snapshot(&out) {
        let name = path.to_string_lossy();
        assert!(!name.contains(".tmp"), "left behind: {name}");
        if path == foreign {
            assert_eq!(bytes, b"apiVersion: v1\nkind: ConfigMap\n");
        } else if path == stale {
            assert_eq!(bytes, edited.as_bytes());
        } else {
            assert_eq!(
                Some(&bytes),
                generated.get(&path).map(|(b, _)| b),
                "{name} is not what was generated"
            );
        }
    }
    // Once the way is clear, the run completes and the foreign file is still there.
    std::fs::remove_dir_all(&blocked).unwrap();
    assert_eq!(run(&dir).status.code(), Some(0));
    assert!(foreign.is_file());
    // A stale generated file is replaced by a new file renamed over it, not rewritten in
    // place: a reader sees the old text or the new, never a mix.
    assert_eq!(std::fs::read_to_string(&stale).unwrap(), text);
    assert_ne!(
        inode(&stale),
        before,
        "replaced by a rename, not rewritten in place"
    );
    let now = snapshot(&out);
    for (path, (bytes, _)) in &generated {
        assert_eq!(
            Some(bytes),
            now.get(path).map(|(b, _)| b),
            "{}",
            path.display()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
