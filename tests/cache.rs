//! The cache of `check`: output byte for byte the same with and without it, cold and warm, over
//! every fixture and a generated tree, with edits between runs; pre-commit narrowing on cached
//! facts; damaged and foreign entries ignored and rewritten; where the folder goes.

mod common;
use common::*;
use credlint::testkit;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs credlint in `dir` with the cache in `cache` (`None`: `--no-cache`).
fn run(dir: &Path, cache: Option<&Path>, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_credlint"));
    command
        .args(args)
        .current_dir(dir)
        .env_remove("CREDLINT_CACHE_DIR");
    match cache {
        Some(cache) => command.arg("--cache-dir").arg(cache),
        None => command.arg("--no-cache"),
    };
    command.output().expect("the binary runs")
}

const ALL_FORMATS: [&str; 5] = ["json", "text", "sarif", "github", "junit"];

/// The cache's entries (not its .gitignore and tag).
fn entries(cache: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(cache)
        .map(|l| l.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    out.retain(|p| p.file_name().unwrap().len() == 64);
    out.sort();
    out
}

/// What `--timings` says the cache served: files from it, files in all, and files it knew
/// unchanged without reading them.
fn counts(out: &Output) -> (usize, usize, usize) {
    let text = stderr(out);
    let tail = text
        .split("; ")
        .find(|part| part.contains("files from the cache"))
        .unwrap_or_default()
        .to_string();
    let words: Vec<&str> = tail.split_whitespace().collect();
    let number = |w: &str| w.parse::<usize>().unwrap();
    match words[..] {
        [
            hits,
            "of",
            total,
            "files",
            "from",
            "the",
            "cache,",
            unread,
            "of",
            "them",
            "unread",
        ] => (number(hits), number(total), number(unread)),
        _ => panic!("no cache counts in {text}"),
    }
}

/// Whether `--timings` says the whole run came from the cache.
fn whole(out: &Output) -> bool {
    stderr(out).contains("; the whole run from the cache")
}

/// Every format, and `--pre-commit` on `changed`, gives the same bytes and exit code with the
/// cache (cold and then warm) as without it.
fn same_with_and_without(
    dir: &Path,
    cache: &Path,
    formats: &[&str],
    paths: &[&str],
    changed: &[&str],
) {
    let mut runs: Vec<Vec<&str>> = Vec::new();
    for format in formats {
        let mut args = vec!["check", "--format", format];
        args.extend(paths);
        runs.push(args);
    }
    if !changed.is_empty() {
        let mut args = vec!["check", "--pre-commit", "--format", "json"];
        args.extend(changed);
        runs.push(args);
    }
    for args in &runs {
        let fresh = run(dir, None, args);
        assert!(
            matches!(fresh.status.code(), Some(0..=1)),
            "{args:?}: {}",
            stderr(&fresh)
        );
        for pass in ["cold or partly warm", "warm"] {
            let cached = run(dir, Some(cache), args);
            assert_eq!(cached.status.code(), fresh.status.code(), "{args:?} {pass}");
            assert!(
                cached.stdout == fresh.stdout,
                "{args:?}, {pass}: the cache changed the output\n--- without\n{}\n--- with\n{}",
                stdout(&fresh),
                stdout(&cached)
            );
        }
    }
}

#[test]
fn every_fixture_reads_the_same_from_the_cache() {
    let dir = temp_dir("cache-fixtures");
    copy_in("fixtures", &dir);
    let cache = dir.join("cache");
    same_with_and_without(&dir, &cache, &ALL_FORMATS, &["fixtures"], &[]);
    let n = entries(&cache).len();
    // The warm run was served by the cache: every file, and none on a run without it.
    let warm = run(&dir, Some(&cache), &["check", "fixtures", "--timings"]);
    let (hits, total, _) = counts(&warm);
    assert!(total > 100, "{total} files");
    assert_eq!(hits, total);
    let cold = run(&dir, None, &["check", "fixtures", "--timings"]);
    assert_eq!(counts(&cold), (0, total, 0));
    assert!(n > 100, "one entry per fixture file: {n}");
    assert_eq!(
        std::fs::read_to_string(cache.join(".gitignore"))
            .unwrap()
            .lines()
            .last(),
        Some("*")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A tree of generated bundles, valid and broken, one file per object of some.
fn generated(dir: &Path, seed: u64, cases: usize) {
    testkit::write_tree(dir, seed, cases, 3);
}

/// The generated files, sorted.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for e in std::fs::read_dir(d).unwrap().flatten() {
            if e.path().is_dir() {
                pending.push(e.path());
            } else {
                out.push(e.path());
            }
        }
    }
    out.sort();
    out
}

/// A folder of the test's own (removed when the returned guard is dropped) holding a generated
/// tree (`tree/`, its files listed) and a path for the cache (`cache/`).
fn generated_tree(
    name: &str,
    seed: u64,
    cases: usize,
) -> (TempDir, PathBuf, PathBuf, Vec<PathBuf>) {
    let dir = temp_dir(name);
    let tree = dir.join("tree");
    generated(&tree, seed, cases);
    let all = files(&tree);
    let cache = dir.join("cache");
    (dir, tree, cache, all)
}

#[test]
fn a_generated_tree_reads_the_same_through_edits() {
    let (dir, tree, cache, all) = generated_tree("cache-tree", 11, 30);
    let rel: Vec<String> = all
        .iter()
        .map(|p| p.strip_prefix(&dir).unwrap().to_string_lossy().into_owned())
        .collect();
    let first = rel[0].as_str();
    same_with_and_without(&dir, &cache, &ALL_FORMATS, &["tree"], &[first]);
    // Edits between runs: a name changed (the bundle and the Job-name hash see it), a file
    // broken, a file emptied, a file removed, a new file, and one reverted to bytes already
    // cached.
    let original = std::fs::read(&all[1]).unwrap();
    let edits: Vec<Box<dyn Fn()>> = vec![
        Box::new(|| {
            let text = std::fs::read_to_string(&all[0]).unwrap();
            std::fs::write(&all[0], text.replacen("name: ", "name: x", 1)).unwrap();
        }),
        Box::new(|| std::fs::write(&all[1], "apiVersion: v1\nkind: [\n").unwrap()),
        Box::new(|| std::fs::write(&all[2], "").unwrap()),
        Box::new(|| std::fs::remove_file(&all[3]).unwrap()),
        Box::new(|| {
            std::fs::copy(&all[4], tree.join("copy.yaml"))
                .map(|_| ())
                .unwrap()
        }),
        Box::new(|| std::fs::write(&all[1], &original).unwrap()),
    ];
    for edit in &edits {
        edit();
        same_with_and_without(
            &dir,
            &cache,
            &["json", "text"],
            &["tree"],
            &[first, rel[1].as_str()],
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A file that has not changed for a while is known from its metadata on the next run and not
/// read; every edit is still seen, including one that keeps the size and puts the modification
/// time back (`touch -r`), and output stays the same as without the cache.
#[test]
fn settled_files_are_not_read_again_and_every_edit_is_still_seen() {
    let (dir, _, cache, all) = generated_tree("cache-unread", 5, 12);
    let args = ["check", "tree", "--format", "json", "--timings"];
    // Files changed within the last seconds are read on every run (a later write could share
    // their clock tick); these are not yet settled.
    let first = run(&dir, Some(&cache), &args);
    assert_eq!(counts(&first).2, 0);
    std::thread::sleep(std::time::Duration::from_millis(3200));
    // Settled, but modified within the last minute: a write through a shared mapping could
    // still change the bytes without the times showing it, so they are read again.
    let recent = run(&dir, Some(&cache), &args);
    assert_eq!(counts(&recent).2, 0);
    assert_eq!(counts(&run(&dir, Some(&cache), &args)).2, 0, "not recorded");
    // Modification times put back two minutes (which sets the change time to now: settled
    // again after the next seconds).
    for path in &all {
        std::fs::File::options()
            .append(true)
            .open(path)
            .unwrap()
            .set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(120))
            .unwrap();
    }
    std::thread::sleep(std::time::Duration::from_millis(3200));
    let learning = run(&dir, Some(&cache), &args);
    let (hits, total, unread) = counts(&learning);
    assert_eq!((hits, unread), (total, 0), "read, and found in the cache");
    assert!(cache.join(".credlint-files").is_file());
    let warm = run(&dir, Some(&cache), &args);
    assert_eq!(counts(&warm), (total, total, total), "none read");
    assert_eq!(warm.stdout, run(&dir, None, &args).stdout);
    assert!(!whole(&warm), "no run of these very files was kept yet");
    // That run was kept whole: the next one of the same files takes it as it was left, and a
    // pre-commit run of the same tree names the same bundles as without the cache.
    let again = run(&dir, Some(&cache), &args);
    assert!(whole(&again), "{}", stderr(&again));
    assert_eq!(again.stdout, warm.stdout);
    let rel = all[0]
        .strip_prefix(&dir)
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let hook = [
        "check",
        "--pre-commit",
        "--format",
        "json",
        "--timings",
        &rel,
    ];
    let hook_cold = run(&dir, None, &hook);
    let _ = run(&dir, Some(&cache), &hook);
    let hook_warm = run(&dir, Some(&cache), &hook);
    assert!(whole(&hook_warm), "{}", stderr(&hook_warm));
    assert_eq!(hook_warm.stdout, hook_cold.stdout);
    assert_eq!(hook_warm.status.code(), hook_cold.status.code());
    // Same size, other bytes, modification time put back: a change all the same.
    let target = all
        .iter()
        .find(|p| std::fs::read_to_string(p).unwrap().contains("PreSync"))
        .expect("a file with a hook");
    let before = std::fs::metadata(target).unwrap();
    let text = std::fs::read_to_string(target).unwrap();
    // No longer a PreSync hook: the bundle loses a member.
    let edited = text.replacen("PreSync", "PreSynk", 1);
    assert_eq!(edited.len(), text.len());
    assert_ne!(edited, text);
    std::fs::write(target, &edited).unwrap();
    std::fs::File::options()
        .write(true)
        .open(target)
        .unwrap()
        .set_modified(before.modified().unwrap())
        .unwrap();
    assert_eq!(std::fs::metadata(target).unwrap().len(), before.len());
    let after_edit = run(&dir, Some(&cache), &args);
    let (hits, _, unread) = counts(&after_edit);
    assert_eq!(unread, total - 1, "the edited file is read");
    assert_eq!(hits, total - 1, "and linted afresh");
    assert!(
        !whole(&after_edit),
        "a run with an edited file is run again"
    );
    assert_eq!(after_edit.stdout, run(&dir, None, &args).stdout);
    assert_ne!(
        after_edit.stdout, warm.stdout,
        "the edit changed the findings"
    );
    // A file replaced by another (a new inode) is read too, and so is one removed and put
    // back; the rest are still known.
    let other = all.iter().find(|p| *p != target).unwrap();
    let copy = dir.join("replacement.yaml");
    std::fs::copy(other, &copy).unwrap();
    std::fs::rename(&copy, other).unwrap();
    let replaced = run(&dir, Some(&cache), &args);
    assert_eq!(counts(&replaced).2, total - 2);
    assert_eq!(replaced.stdout, run(&dir, None, &args).stdout);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Damage done to an entry, given it and another entry.
type Harm = dyn Fn(&[u8], &[u8]) -> Vec<u8>;

#[test]
fn damaged_and_foreign_entries_are_ignored_and_rewritten() {
    let dir = temp_dir("cache-damaged");
    copy_in("fixtures/clean", &dir);
    let cache = dir.join("cache");
    let args = ["check", "--format", "json", "clean"];
    let fresh = run(&dir, None, &args);
    run(&dir, Some(&cache), &args);
    let list = entries(&cache);
    assert!(list.len() >= 4, "{list:?}");
    let good: Vec<Vec<u8>> = list.iter().map(|p| std::fs::read(p).unwrap()).collect();
    // Truncated, a flipped byte in the body, another entry's bytes, garbage, empty.
    let damage: Vec<Box<Harm>> = vec![
        Box::new(|b, _| b[..b.len() - 1].to_vec()),
        Box::new(|b, _| {
            let mut b = b.to_vec();
            let last = b.len() - 1;
            b[last] ^= 1;
            b
        }),
        Box::new(|_, other| other.to_vec()),
        Box::new(|_, _| b"{\"not\": \"an entry\"}".to_vec()),
        Box::new(|_, _| Vec::new()),
    ];
    for (i, harm) in damage.iter().enumerate() {
        for (j, path) in list.iter().enumerate() {
            std::fs::write(path, harm(&good[j], &good[(j + 1) % good.len()])).unwrap();
        }
        let out = run(&dir, Some(&cache), &args);
        assert!(out.stdout == fresh.stdout, "damage {i}: {}", stdout(&out));
        for (j, path) in list.iter().enumerate() {
            assert_eq!(
                std::fs::read(path).unwrap(),
                good[j],
                "damage {i}: entry {j} rewritten"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_folder_is_in_the_current_one_unless_moved_and_no_cache_writes_none() {
    let dir = temp_dir("cache-where");
    copy_in("fixtures/clean", &dir);
    // --no-cache writes nothing.
    let out = credlint_in(&dir, &["check", "clean", "--no-cache"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!dir.join(".credlint_cache").exists());
    // By default: .credlint_cache/ in the current folder, ignored by git.
    let out = Command::new(env!("CARGO_BIN_EXE_credlint"))
        .args(["check", "clean"])
        .current_dir(&dir)
        .env_remove("CREDLINT_CACHE_DIR")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let default = dir.join(".credlint_cache");
    assert!(!entries(&default).is_empty());
    assert_eq!(
        std::fs::read_to_string(default.join(".gitignore"))
            .unwrap()
            .lines()
            .last(),
        Some("*")
    );
    // CREDLINT_CACHE_DIR moves it; --cache-dir wins over the variable.
    let moved = dir.join("moved");
    let flagged = dir.join("flagged");
    let out = Command::new(env!("CARGO_BIN_EXE_credlint"))
        .args(["check", "clean"])
        .current_dir(&dir)
        .env("CREDLINT_CACHE_DIR", &moved)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(!entries(&moved).is_empty());
    let out = Command::new(env!("CARGO_BIN_EXE_credlint"))
        .args(["check", "clean", "--cache-dir", "flagged"])
        .current_dir(&dir)
        .env("CREDLINT_CACHE_DIR", &moved)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(!entries(&flagged).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_setting_that_changes_verdicts_is_part_of_the_key() {
    let dir = temp_dir("cache-settings");
    copy_in("fixtures/clean", &dir);
    let cache = dir.join("cache");
    let image = [
        "check",
        "clean",
        "--format",
        "json",
        "--credentials-image",
        "registry.example/other:1",
    ];
    let plain = ["check", "clean", "--format", "json"];
    // Warm for one setting, then the other: each gets its own verdicts.
    for args in [&plain[..], &image[..], &plain[..], &image[..]] {
        let fresh = run(&dir, None, args);
        let cached = run(&dir, Some(&cache), args);
        assert!(
            cached.stdout == fresh.stdout,
            "{args:?}: {}",
            stdout(&cached)
        );
    }
    assert_ne!(
        run(&dir, None, &plain).stdout,
        run(&dir, None, &image).stdout,
        "the image matters"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn concurrent_runs_share_one_folder_safely() {
    let dir = temp_dir("cache-concurrent");
    copy_in("fixtures", &dir);
    let cache = dir.join("cache");
    let args = ["check", "fixtures", "--format", "json"];
    let fresh = run(&dir, None, &args);
    // Four cold runs at once write the same entries; each sees whole entries or none.
    let children: Vec<std::process::Child> = (0..4)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_credlint"))
                .args(args)
                .arg("--cache-dir")
                .arg(&cache)
                .current_dir(&dir)
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.stdout == fresh.stdout, "{}", stdout(&out));
    }
    let warm = run(&dir, Some(&cache), &args);
    assert!(warm.stdout == fresh.stdout);
    let temporary: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(".credlint-tmp-")
        })
        .collect();
    assert!(temporary.is_empty(), "left behind: {temporary:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A run of many files leaves a pack of its entries: with every other entry file removed, the
/// next run after an edit still takes every unedited file from the cache (from the pack), and
/// reports what a run without the cache does.
#[test]
fn a_run_after_an_edit_is_served_from_the_pack_of_the_last_one() {
    let (dir, _, cache, all) = generated_tree("cache-pack", 3, 60);
    assert!(all.len() >= 64, "{} files: too few for a pack", all.len());
    let args = ["check", "--format", "json", "--timings", "tree"];
    let first = run(&dir, Some(&cache), &args);
    assert_eq!(counts(&first).0, 0);
    let is_pack = |p: &PathBuf| std::fs::read(p).is_ok_and(|b| b.starts_with(b"credlint-pack01\n"));
    let packs: Vec<PathBuf> = entries(&cache).into_iter().filter(is_pack).collect();
    assert_eq!(packs.len(), 1, "one pack");
    for entry in entries(&cache).iter().filter(|p| !is_pack(p)) {
        std::fs::remove_file(entry).unwrap();
    }
    let text = std::fs::read_to_string(&all[7]).unwrap();
    std::fs::write(&all[7], format!("# edited\n{text}")).unwrap();
    let second = run(&dir, Some(&cache), &args);
    let fresh = run(&dir, None, &["check", "--format", "json", "tree"]);
    assert_eq!(second.stdout, fresh.stdout, "{}", stderr(&second));
    assert_eq!(second.status.code(), fresh.status.code());
    let (hits, total, _) = counts(&second);
    assert_eq!(
        (hits, total),
        (all.len() - 1, all.len()),
        "{}",
        stderr(&second)
    );
    assert!(!whole(&second));
    let _ = std::fs::remove_dir_all(&dir);
}
