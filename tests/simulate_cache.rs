//! `simulate` keeps each bundle's verdict in `check`'s cache: a warm run reports byte for byte
//! what a fresh one does, an entry follows its bundle to other lines and files, a change to
//! what the simulation reads is simulated again, `--no-cache` touches no cache, and a forged,
//! tampered or copied entry never passes a bad bundle (as tests/hostile_cache.rs holds `check`
//! to).

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Output;

/// A bundle whose program the Role refuses (exit 1), and the folder of clean renderings.
const BROKEN: &str = "fixtures/runtime-unauthorized-request/bad-uses-put.yaml";
const CLEAN: &str = "fixtures/clean";
const CLEAN_BUNDLE: &str = "fixtures/clean/cache.yaml";

fn python_or_skip() -> bool {
    let here = std::process::Command::new("python3")
        .arg("-c")
        .arg("pass")
        .status()
        .is_ok_and(|s| s.success());
    if !here {
        eprintln!("SKIPPED python3 is not installed (simulate runs the programs with it)");
    }
    here
}

/// `simulate --progress always ARGS` with this machine's state folder (its cache key) and the
/// cache in `cache` (`None`: `--no-cache`).
fn simulate(state: &Path, cache: Option<&Path>, args: &[&str]) -> Output {
    let mut command = command();
    command
        .env_remove("CREDLINT_CACHE_KEY")
        .env("XDG_STATE_HOME", state)
        .args(["simulate", "--progress", "always"])
        .args(args);
    if !args.contains(&"--timeout") {
        command.args(["--timeout", "20"]);
    }
    match cache {
        None => command.arg("--no-cache"),
        Some(dir) => command.arg("--cache-dir").arg(dir),
    };
    command.output().expect("the binary runs")
}

/// How many bundles the run took from the cache, from its last progress line.
fn from_cache(out: &Output) -> usize {
    progress(out).1
}

/// The bundles the run simulated or took from the cache, and how many of them it took, from
/// its last progress line: `credlint: simulated 13 of 13 bundles (4 from the cache)`.
fn progress(out: &Output) -> (usize, usize) {
    let err = stderr(out);
    let last = err
        .lines()
        .rfind(|l| l.starts_with("credlint: simulated "))
        .unwrap_or_else(|| panic!("no progress line: {err}"));
    let words: Vec<&str> = last.split(' ').collect();
    let total = words[4].parse().unwrap();
    let cached = last
        .split_once(" (")
        .and_then(|(_, rest)| rest.split_once(' '))
        .map_or(0, |(n, _)| n.parse().unwrap());
    (total, cached)
}

/// The entries of a cache folder: files named by 64 hexadecimal digits.
fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.len() == 64 && name.bytes().all(|b| b.is_ascii_hexdigit())
        })
        .collect();
    out.sort();
    out
}

/// The same verdict: exit code and report.
fn same(name: &str, got: &Output, want: &Output) {
    assert_eq!(
        (got.status.code(), stdout(got)),
        (want.status.code(), stdout(want)),
        "{name}: the cache changed the verdict; stderr: {}",
        stderr(got)
    );
}

#[test]
fn a_warm_run_reports_byte_for_byte_what_a_fresh_one_does() {
    if !python_or_skip() {
        return;
    }
    // The broken bundle has the name of one of the clean ones: each is a run of its own.
    for (input, code, least) in [(CLEAN, 0, 13), (BROKEN, 1, 1)] {
        let dir = temp_dir("simulate-cache-same");
        let state = dir.join("state");
        let cache = dir.join("cache");
        // Both formats from each run: the simulations are the slow part.
        let run = |name: &str, cache: Option<&Path>| {
            let json = dir.join(format!("{name}.json"));
            let text = dir.join(format!("{name}.txt"));
            let out = simulate(
                &state,
                cache,
                &[
                    input,
                    "--format",
                    "json",
                    "--output-file",
                    json.to_str().unwrap(),
                    "--format",
                    "text",
                    "--output-file",
                    text.to_str().unwrap(),
                ],
            );
            let reports = (
                String::from_utf8(std::fs::read(&json).unwrap_or_default()).unwrap(),
                String::from_utf8(std::fs::read(&text).unwrap_or_default()).unwrap(),
            );
            (out, reports)
        };
        let (fresh, fresh_reports) = run("fresh", None);
        assert_eq!(
            fresh.status.code(),
            Some(code),
            "{input}: {}",
            stderr(&fresh)
        );
        assert!(!cache.exists(), "{input}: --no-cache made the cache folder");
        let (cold, cold_reports) = run("cold", Some(&cache));
        let (bundles, _) = progress(&cold);
        assert_eq!(progress(&cold), (bundles, 0), "{}", stderr(&cold));
        assert!(bundles >= least, "{input}: {}", stderr(&cold));
        assert_eq!(
            entries(&cache).len(),
            bundles,
            "{input}: an entry per bundle"
        );
        let (warm, warm_reports) = run("warm", Some(&cache));
        assert_eq!(progress(&warm), (bundles, bundles), "{}", stderr(&warm));
        for (name, out, reports) in [
            ("cold", &cold, &cold_reports),
            ("warm", &warm, &warm_reports),
        ] {
            assert_eq!(out.status.code(), Some(code), "{input} {name}");
            assert_eq!(reports.0, fresh_reports.0, "{input} {name}: JSON");
            assert_eq!(reports.1, fresh_reports.1, "{input} {name}: text");
        }
        // The reports are not empty: the counts of what ran, and the broken bundle's finding.
        let report: serde_json::Value = serde_json::from_str(&warm_reports.0).unwrap();
        assert!(report["summary"]["runs"].as_u64().unwrap() >= 2 * bundles as u64);
        assert!(report["summary"]["scenarios"].as_u64().unwrap() >= bundles as u64);
        assert!(
            warm_reports.1.contains("\nsimulated: "),
            "{}",
            warm_reports.1
        );
        let rules: Vec<&str> = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["rule"].as_str().unwrap())
            .collect();
        let want: &[&str] = match code {
            0 => &[],
            _ => &["runtime-unauthorized-request"],
        };
        assert_eq!(rules, want, "{input}");
    }
}

#[test]
fn an_entry_follows_its_bundle_and_a_change_is_simulated_again() {
    if !python_or_skip() {
        return;
    }
    let dir = temp_dir("simulate-cache-moves");
    let state = dir.join("state");
    let cache = dir.join("cache");
    let original = std::fs::read_to_string(root().join(BROKEN)).unwrap();
    let file = dir.join("bundle.yaml");
    let path = file.to_str().unwrap();
    std::fs::write(&file, &original).unwrap();
    let first = simulate(&state, Some(&cache), &[path, "--format", "json"]);
    assert_eq!(first.status.code(), Some(1), "{}", stderr(&first));

    // Lines above the bundle, and another file name: the same bundle, its findings elsewhere.
    let moved = dir.join("moved.yaml");
    std::fs::write(
        &moved,
        format!("# rendered again\n# by another tool\n{original}"),
    )
    .unwrap();
    let moved = moved.to_str().unwrap();
    let warm = simulate(&state, Some(&cache), &[moved, "--format", "json"]);
    assert_eq!(from_cache(&warm), 1, "{}", stderr(&warm));
    let fresh = simulate(&state, None, &[moved, "--format", "json"]);
    same("moved", &warm, &fresh);
    let line = |out: &Output| json(out)["findings"][0]["line"].as_u64().unwrap();
    assert_eq!(line(&warm), line(&first) + 2);

    // Progress is left out when standard error is no terminal, unless asked for.
    let mut quiet = command();
    quiet
        .env_remove("CREDLINT_CACHE_KEY")
        .env("XDG_STATE_HOME", &state)
        .args(["simulate", "--format", "json", "--cache-dir"])
        .arg(&cache)
        .arg(moved);
    let quiet = quiet.output().unwrap();
    same("no progress", &quiet, &fresh);
    assert!(!stderr(&quiet).contains("simulated"), "{}", stderr(&quiet));

    // A change to the program (a comment only) is a new simulation, and a new entry.
    let before = entries(&cache).len();
    std::fs::write(
        &file,
        original.replacen("create.py: |", "create.py: |\n    # a comment", 1),
    )
    .unwrap();
    assert!(std::fs::read_to_string(&file).unwrap() != original);
    let changed = simulate(&state, Some(&cache), &[path, "--format", "json"]);
    assert_eq!(from_cache(&changed), 0, "{}", stderr(&changed));
    assert_eq!(entries(&cache).len(), before + 1);

    // Another timeout is another simulation (the verdict may depend on it).
    let other = simulate(
        &state,
        Some(&cache),
        &[moved, "--format", "json", "--timeout", "19"],
    );
    assert_eq!(from_cache(&other), 0, "{}", stderr(&other));
    same("timeout", &other, &fresh);

    // Another interpreter file, or the same one changed in place, is another simulation.
    let wrapper = dir.join("python");
    let write = |text: &str| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(&wrapper, text).unwrap();
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    write("#!/bin/sh\nexec python3 \"$@\"\n");
    let python = wrapper.to_str().unwrap();
    let args = [moved, "--format", "json", "--python", python];
    let out = simulate(&state, Some(&cache), &args);
    assert_eq!(from_cache(&out), 0, "{}", stderr(&out));
    same("wrapper", &out, &fresh);
    let out = simulate(&state, Some(&cache), &args);
    assert_eq!(from_cache(&out), 1, "{}", stderr(&out));
    write("#!/bin/sh\n# upgraded\nexec python3 \"$@\"\n");
    let out = simulate(&state, Some(&cache), &args);
    assert_eq!(from_cache(&out), 0, "{}", stderr(&out));
    same("changed wrapper", &out, &fresh);
}

#[test]
fn a_forged_or_copied_entry_never_passes_a_bad_bundle() {
    if !python_or_skip() {
        return;
    }
    let dir = temp_dir("simulate-cache-hostile");
    let state = dir.join("state");
    let fresh = simulate(&state, None, &[BROKEN, "--format", "json"]);
    assert_eq!(fresh.status.code(), Some(1), "{}", stderr(&fresh));

    // The bad bundle's entry, and a clean bundle's, each alone in a cache.
    let bad_cache = dir.join("bad");
    let out = simulate(&state, Some(&bad_cache), &[BROKEN, "--format", "json"]);
    same("cold", &out, &fresh);
    let [bad_entry] = entries(&bad_cache).try_into().unwrap();
    let clean_cache = dir.join("clean");
    let out = simulate(
        &state,
        Some(&clean_cache),
        &[CLEAN_BUNDLE, "--format", "json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let [clean_entry] = entries(&clean_cache).try_into().unwrap();
    let genuine = std::fs::read(&bad_entry).unwrap();

    let attempts: Vec<(&str, Vec<u8>)> = vec![
        // A clean bundle's verdict copied under the bad bundle's key.
        ("copied", std::fs::read(&clean_entry).unwrap()),
        // The bad entry's header with the clean verdict's body: the tags no longer verify.
        ("spliced", {
            let clean = std::fs::read(&clean_entry).unwrap();
            let mut forged = genuine[..120].to_vec();
            forged[48..56].copy_from_slice(&((clean.len() - 120) as u64).to_le_bytes());
            forged.extend_from_slice(&clean[120..]);
            forged
        }),
        // The bad entry with its findings cut off: no findings, the counts kept.
        ("emptied", {
            let mut forged = genuine[..120].to_vec();
            let body = &genuine[120..];
            let mut short = body[..12].to_vec();
            short.extend_from_slice(&0u32.to_le_bytes());
            forged[48..56].copy_from_slice(&(short.len() as u64).to_le_bytes());
            forged.extend_from_slice(&short);
            forged
        }),
    ];
    for (name, bytes) in attempts {
        std::fs::write(&bad_entry, &bytes).unwrap();
        let out = simulate(&state, Some(&bad_cache), &[BROKEN, "--format", "json"]);
        same(name, &out, &fresh);
        assert_eq!(from_cache(&out), 0, "{name}: {}", stderr(&out));
        // Refused, and rewritten with the bundle's own verdict.
        assert_eq!(std::fs::read(&bad_entry).unwrap(), genuine, "{name}");
    }

    // Another machine's cache (another key) holds the very entry: a miss here.
    let elsewhere = dir.join("state-elsewhere");
    let out = simulate(&elsewhere, Some(&bad_cache), &[BROKEN, "--format", "json"]);
    same("another key", &out, &fresh);
    assert_eq!(from_cache(&out), 0, "{}", stderr(&out));

    // A cache folder that is a link is not used (and nothing is written where it points).
    let link = dir.join("link");
    std::os::unix::fs::symlink(&clean_cache, &link).unwrap();
    let before = entries(&clean_cache);
    let out = simulate(&state, Some(&link), &[BROKEN, "--format", "json"]);
    same("linked folder", &out, &fresh);
    assert!(stderr(&out).contains("symbolic link"), "{}", stderr(&out));
    assert_eq!(entries(&clean_cache), before);
}
