//! The cache folder as a hostile change would leave it: forged entries, a clean file's entry
//! copied under a bad file's key, a cache restored from a run with another secret, a pack whose
//! directory points a bad file at a clean entry, a committed cache folder, a cache folder that is a symbolic link, and files named like entries that the
//! cache did not write. Each run ends with the verdict `--no-cache` gives, writes nothing
//! outside the folders it was told, and deletes nothing the cache did not write.

mod common;
use common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

/// The bundle with two findings (exit 1 without a cache), and a clean one.
const BAD: &str = "fixtures/role-forbidden-verb/bad-list-watch.yaml";
const CLEAN: &str = "fixtures/clean/cache.yaml";

/// A machine: its own state folder, where credlint keeps its cache key.
struct Machine {
    state: PathBuf,
}

impl Machine {
    fn new(base: &Path, name: &str) -> Machine {
        let state = base.join(format!("state-{name}"));
        std::fs::create_dir_all(&state).unwrap();
        Machine { state }
    }

    /// `check ARGS --format json` in `dir` with the cache in `cache` (`None`: `--no-cache`;
    /// `Some(None)`: the default folder in `dir`).
    fn check(&self, dir: &Path, cache: Option<Option<&Path>>, args: &[&str]) -> Output {
        let mut command = command();
        command
            .current_dir(dir)
            .env_remove("CREDLINT_CACHE_DIR")
            .env_remove("CREDLINT_CACHE_KEY")
            .env("XDG_STATE_HOME", &self.state)
            .arg("check")
            .args(args)
            .args(["--format", "json"]);
        match cache {
            None => command.arg("--no-cache"),
            Some(None) => &mut command,
            Some(Some(path)) => command.arg("--cache-dir").arg(path),
        };
        command.output().expect("the binary runs")
    }
}

/// Every file under `dir` (links not followed) with its bytes (a link: its target, marked).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let Ok(listing) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in listing.flatten() {
        let path = e.path();
        let kind = e.file_type().unwrap();
        if kind.is_symlink() {
            let target = std::fs::read_link(&path).unwrap();
            out.insert(path, format!("-> {}", target.display()).into_bytes());
        } else if kind.is_dir() {
            out.extend(snapshot(&path));
        } else {
            let bytes = std::fs::read(&path).unwrap();
            out.insert(path, bytes);
        }
    }
    out
}

/// The same verdict: exit code and report.
fn same_verdict(name: &str, cached: &Output, fresh: &Output) {
    assert_eq!(
        (cached.status.code(), stdout(cached)),
        (fresh.status.code(), stdout(fresh)),
        "{name}: the cache changed the verdict; stderr: {}",
        stderr(cached)
    );
}

/// The entries of `cache` (files named by 64 hexadecimal digits).
fn entries(cache: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(cache)
        .map(|l| {
            l.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.len() == 64)
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// A folder `tree/` holding `bad.yaml` with the bad bundle; `clean/` holding a `bad.yaml` of the
/// clean bundle (the same name, so only the bytes differ in the key).
fn trees(base: &Path) -> (PathBuf, PathBuf) {
    let tree = base.join("tree");
    let clean = base.join("clean");
    for (dir, from) in [(&tree, BAD), (&clean, CLEAN)] {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::copy(root().join(from), dir.join("bad.yaml")).unwrap();
    }
    (tree, clean)
}

/// The attacker's cache: a clean file's entry, and the name the bad file's entry has (keys are
/// public: the settings and the bytes). Returns the cache, the clean entry's bytes and the bad
/// file's entry name.
fn attackers_cache(base: &Path, attacker: &Machine) -> (PathBuf, Vec<u8>, String) {
    let (tree, clean) = trees(base);
    let cache = base.join("restored");
    let out = attacker.check(&clean, Some(Some(&cache)), &["."]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let clean_names = entries(&cache);
    assert_eq!(clean_names.len(), 1);
    let clean_entry = std::fs::read(cache.join(&clean_names[0])).unwrap();
    let out = attacker.check(&tree, Some(Some(&cache)), &["."]);
    assert_eq!(out.status.code(), Some(1));
    let bad_name = entries(&cache)
        .into_iter()
        .find(|n| *n != clean_names[0])
        .expect("the bad file's entry");
    (cache, clean_entry, bad_name)
}

/// A clean file's entry copied under the bad file's name, in a cache shared or restored from
/// elsewhere (`--cache-dir`, `CREDLINT_CACHE_DIR`), and the same with its key field rewritten:
/// on the machine that wrote it and on another, the verdict is `--no-cache`'s, and the entry is
/// rewritten with the true result.
#[test]
fn a_copied_or_rewritten_entry_does_not_pass_a_bad_file() {
    let base = temp_dir("hostile-cache-copied");
    let attacker = Machine::new(&base, "attacker");
    let victim = Machine::new(&base, "victim");
    let (cache, clean_entry, bad_name) = attackers_cache(&base, &attacker);
    let tree = base.join("tree");
    let fresh = victim.check(&tree, None, &["."]);
    assert_eq!(fresh.status.code(), Some(1), "the bad bundle fails");
    let mut rewritten = clean_entry.clone();
    let bad_key: Vec<u8> = (0..32)
        .map(|i| u8::from_str_radix(&bad_name[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    rewritten[16..48].copy_from_slice(&bad_key);
    for (what, bytes) in [("copied", &clean_entry), ("key rewritten", &rewritten)] {
        for (who, machine) in [("attacker", &attacker), ("victim", &victim)] {
            for args in [&["."][..], &["--pre-commit", "bad.yaml"][..]] {
                std::fs::write(cache.join(&bad_name), bytes).unwrap();
                let outside = snapshot(&base.join("clean"));
                let run = machine.check(&tree, Some(Some(&cache)), args);
                same_verdict(
                    &format!("{what}, {who}, {args:?}"),
                    &run,
                    &victim.check(&tree, None, args),
                );
                assert_ne!(
                    &std::fs::read(cache.join(&bad_name)).unwrap(),
                    bytes,
                    "{what}, {who}: the entry is rewritten"
                );
                assert_eq!(snapshot(&base.join("clean")), outside);
            }
        }
    }
    // What the victim's cache holds now serves the victim, with the same verdict.
    same_verdict(
        "rewritten by the victim",
        &victim.check(&tree, Some(Some(&cache)), &["."]),
        &fresh,
    );
}

/// Entries forged from scratch (the old format's header with a valid checksum could be
/// computed by anyone; a made-up tag) and a whole cache written under another secret: misses.
#[test]
fn a_forged_entry_or_another_machines_cache_is_a_miss() {
    let base = temp_dir("hostile-cache-forged");
    let attacker = Machine::new(&base, "attacker");
    let victim = Machine::new(&base, "victim");
    let (cache, clean_entry, bad_name) = attackers_cache(&base, &attacker);
    let tree = base.join("tree");
    let fresh = victim.check(&tree, None, &["."]);
    // The clean entry's body under a header of the bad key, with tags of zeros, of the clean
    // entry, and of random bytes.
    let bad_key: Vec<u8> = (0..32)
        .map(|i| u8::from_str_radix(&bad_name[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    let mut forgeries = Vec::new();
    for fill in [0u8, 0xff] {
        let mut forged = clean_entry.clone();
        forged[16..48].copy_from_slice(&bad_key);
        for b in &mut forged[56..120] {
            *b = fill;
        }
        forgeries.push(forged);
    }
    for (i, forged) in forgeries.iter().enumerate() {
        std::fs::write(cache.join(&bad_name), forged).unwrap();
        for (who, machine) in [("attacker", &attacker), ("victim", &victim)] {
            same_verdict(
                &format!("forgery {i}, {who}"),
                &machine.check(&tree, Some(Some(&cache)), &["."]),
                &fresh,
            );
        }
    }
    // The victim's runs over the restored cache: the clean tree still passes (the restored
    // entries are misses, linted afresh, and rewritten under the victim's secret).
    let clean = base.join("clean");
    let clean_fresh = victim.check(&clean, None, &["."]);
    same_verdict(
        "restored clean entry",
        &victim.check(&clean, Some(Some(&cache)), &["."]),
        &clean_fresh,
    );
    assert_eq!(clean_fresh.status.code(), Some(0));
}

/// A committed `.credlint_cache/` (with a forged entry and another program's file named like
/// an entry): not read, not written, not pruned, and one note says why.
#[test]
fn a_committed_cache_folder_is_not_used() {
    if which_git().is_none() {
        skip_unless_required("CREDLINT_REQUIRE_GIT", "no git on this machine");
        return;
    }
    let base = temp_dir("hostile-cache-committed");
    let attacker = Machine::new(&base, "attacker");
    let victim = Machine::new(&base, "victim");
    let (cache, clean_entry, bad_name) = attackers_cache(&base, &attacker);
    let repo = base.join("tree");
    let committed = repo.join(".credlint_cache");
    std::fs::create_dir_all(&committed).unwrap();
    std::fs::write(committed.join(&bad_name), &clean_entry).unwrap();
    let blob = format!("{:064x}", 7);
    std::fs::write(committed.join(&blob), b"another program's").unwrap();
    let _ = cache;
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "-A", "-f"]);
    git(
        &repo,
        &[
            "-c",
            "user.name=a",
            "-c",
            "user.email=a@example.com",
            "commit",
            "-q",
            "-m",
            "a change",
        ],
    );
    let before = snapshot(&committed);
    let fresh = victim.check(&repo, None, &["."]);
    for args in [&["."][..], &["--pre-commit", "bad.yaml"][..]] {
        let run = victim.check(&repo, Some(None), args);
        same_verdict(
            &format!("committed cache, {args:?}"),
            &run,
            &victim.check(&repo, None, args),
        );
        let note = stderr(&run);
        assert!(
            note.contains(".credlint_cache") && note.contains("git tracks"),
            "{note}"
        );
        assert_eq!(snapshot(&committed), before, "the folder is left as it was");
    }
    assert_eq!(fresh.status.code(), Some(1));
}

/// A committed `.credlint_cache -> ../elsewhere` link: nothing is written or pruned there.
#[test]
fn a_cache_folder_that_is_a_link_is_not_followed() {
    let base = temp_dir("hostile-cache-link");
    let victim = Machine::new(&base, "victim");
    let (tree, _) = trees(&base);
    let elsewhere = base.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    for i in 0..3 {
        std::fs::write(elsewhere.join(format!("{i:064x}")), vec![b'x'; 100]).unwrap();
    }
    std::os::unix::fs::symlink("../elsewhere", tree.join(".credlint_cache")).unwrap();
    let before = snapshot(&elsewhere);
    let fresh = victim.check(&tree, None, &["."]);
    let run = victim.check(&tree, Some(None), &["."]);
    same_verdict("linked cache", &run, &fresh);
    assert!(stderr(&run).contains("symbolic link"), "{}", stderr(&run));
    assert_eq!(snapshot(&elsewhere), before);
    // Named with --cache-dir, the same.
    let run = victim.check(&tree, Some(Some(&tree.join(".credlint_cache"))), &["."]);
    same_verdict("linked cache named", &run, &fresh);
    assert_eq!(snapshot(&elsewhere), before);
}

/// Files named like entries that the cache did not write, large enough that pruning would
/// have removed them to make room (sparse: they take no disk), are never counted nor removed.
#[test]
fn pruning_never_deletes_what_the_cache_did_not_write() {
    let base = temp_dir("hostile-cache-prune");
    let victim = Machine::new(&base, "victim");
    let (tree, _) = trees(&base);
    let cache = base.join("shared");
    std::fs::create_dir_all(&cache).unwrap();
    let mut theirs = Vec::new();
    for i in 0..2u64 {
        let path = cache.join(format!("{:064x}", 0xb10b0 + i));
        let f = std::fs::File::create(&path).unwrap();
        f.set_len(200 << 20).unwrap();
        f.set_modified(std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1))
            .unwrap();
        theirs.push(path);
    }
    // No ledger: the first writing run lists the folder.
    let run = victim.check(&tree, Some(Some(&cache)), &["."]);
    same_verdict("shared folder", &run, &victim.check(&tree, None, &["."]));
    for path in &theirs {
        assert_eq!(
            std::fs::metadata(path).unwrap().len(),
            200 << 20,
            "{path:?}"
        );
    }
    assert!(
        entries(&cache).len() > theirs.len(),
        "its own entry is written"
    );
}

/// The key is kept in the state folder, 0600, outside the cache; one given too short in
/// `CREDLINT_CACHE_KEY` is refused with a note (and the run goes without a cache).
#[test]
fn the_key_is_private_and_kept_outside_the_cache() {
    use std::os::unix::fs::PermissionsExt;
    let base = temp_dir("hostile-cache-key");
    let victim = Machine::new(&base, "victim");
    let (tree, _) = trees(&base);
    let cache = base.join("cache");
    let fresh = victim.check(&tree, None, &["."]);
    same_verdict(
        "first run",
        &victim.check(&tree, Some(Some(&cache)), &["."]),
        &fresh,
    );
    let key = victim.state.join("credlint").join("cache-key");
    let meta = std::fs::metadata(&key).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(meta.len(), 32);
    // A key readable by others is refused: no cache, a note, the same verdict.
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let run = victim.check(&tree, Some(Some(&cache)), &["."]);
    same_verdict("shared key file", &run, &fresh);
    assert!(stderr(&run).contains("0600"), "{}", stderr(&run));
    let short = command()
        .current_dir(&tree)
        .env_remove("CREDLINT_CACHE_DIR")
        .env("CREDLINT_CACHE_KEY", "short")
        .args(["check", ".", "--format", "json", "--cache-dir"])
        .arg(&cache)
        .output()
        .unwrap();
    same_verdict("short key", &short, &fresh);
    assert!(stderr(&short).contains("CREDLINT_CACHE_KEY"));
}

fn which_git() -> Option<PathBuf> {
    std::process::Command::new("git")
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| PathBuf::from("git"))
}

fn git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
}

/// The pack (one file holding a run's entries) as an attacker with write access to the folder
/// but not the key would edit it: the bad file's slot pointed at the clean file's entry, and
/// that entry's key field rewritten to the bad file's key. Every entry file but the pack is
/// gone, so only the pack could serve: the verdict is still `--no-cache`'s.
#[test]
fn a_pack_pointing_a_bad_file_at_a_clean_entry_does_not_pass_it() {
    let base = temp_dir("hostile-cache-pack");
    let machine = Machine::new(&base, "victim");
    let tree = base.join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::copy(root().join(BAD), tree.join("bad.yaml")).unwrap();
    // Enough files for a pack: copies of the clean bundle (one entry, one key, for all).
    for i in 0..70 {
        std::fs::copy(root().join(CLEAN), tree.join(format!("clean-{i:02}.yaml"))).unwrap();
    }
    let cache = base.join("cache");
    let fresh = machine.check(&tree, None, &["."]);
    assert_eq!(fresh.status.code(), Some(1), "the bad bundle fails");
    let first = machine.check(&tree, Some(Some(&cache)), &["."]);
    same_verdict("first run", &first, &fresh);
    let is_pack = |name: &String| {
        std::fs::read(cache.join(name)).is_ok_and(|b| b.starts_with(b"credlint-pack01\n"))
    };
    let (packs, others): (Vec<String>, Vec<String>) =
        entries(&cache).into_iter().partition(is_pack);
    assert_eq!(packs.len(), 1, "one pack");
    let pack_path = cache.join(&packs[0]);
    let pack = std::fs::read(&pack_path).unwrap();
    // The directory: the count at 80, then 48-byte slots (key, offset, length) from 88.
    let count = u64::from_le_bytes(pack[80..88].try_into().unwrap()) as usize;
    assert_eq!(count, 2, "the bad file's entry and the clean files' one");
    let slot = |i: usize| 88 + i * 48;
    let field = |at: usize| u64::from_le_bytes(pack[at..at + 8].try_into().unwrap()) as usize;
    // Which slot is the bad file's: the entry whose findings name the forbidden verbs.
    let body_of = |i: usize| &pack[field(slot(i) + 32)..field(slot(i) + 32) + field(slot(i) + 40)];
    let bad = (0..2)
        .find(|&i| body_of(i).windows(5).any(|w| w == b"watch"))
        .expect("the bad entry names its finding");
    let clean = 1 - bad;
    let bad_key = pack[slot(bad)..slot(bad) + 32].to_vec();
    let mut pointed = pack.clone();
    pointed.copy_within(slot(clean) + 32..slot(clean) + 48, slot(bad) + 32);
    let mut rekeyed = pointed.clone();
    let clean_at = field(slot(clean) + 32);
    rekeyed[clean_at + 16..clean_at + 48].copy_from_slice(&bad_key);
    for name in &others {
        std::fs::remove_file(cache.join(name)).unwrap();
    }
    for (what, bytes) in [("pointed", &pointed), ("pointed and rekeyed", &rekeyed)] {
        for args in [&["."][..], &["--pre-commit", "bad.yaml"][..]] {
            std::fs::write(&pack_path, bytes).unwrap();
            for name in entries(&cache).iter().filter(|n| !is_pack(n)) {
                std::fs::remove_file(cache.join(name)).unwrap();
            }
            same_verdict(
                &format!("{what}, {args:?}"),
                &machine.check(&tree, Some(Some(&cache)), args),
                &machine.check(&tree, None, args),
            );
        }
    }
}
