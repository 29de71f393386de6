//! As root, `simulate` forks a bundle's runs from one interpreter (the zygote, docs/simulate.md)
//! instead of starting a fresh one for each: every report must be byte for byte the one fresh
//! interpreters give (`CREDLINT_ZYGOTE=0`), for the clean renderings, both reference programs
//! and every deliberately broken program, and nothing a run does to its interpreter reaches
//! the next. tests/sandbox.rs and tests/hostile.rs hold each hostile program to both paths.
//! Needs python3 and root; `.ci/run` has both.

mod common;
use common::*;
use std::path::Path;
use std::process::Output;

fn root_and_python_or_skip() -> bool {
    let python = std::process::Command::new("python3")
        .args(["-c", "pass"])
        .status()
        .is_ok_and(|s| s.success());
    if !python {
        skip_unless_required(
            "CREDLINT_REQUIRE_PYTHON",
            "python3 is not installed (simulate runs the programs with it)",
        );
        return false;
    }
    if !common::is_root() {
        eprintln!("SKIPPED the zygote is used only where credlint is root");
        return false;
    }
    true
}

/// Writes `dir/file` with the bundle of `owner` (in namespace `shop`) of `kind`, whose program
/// is `script`.
fn write_bundle(dir: &Path, file: &str, owner: &str, kind: &str, script: &str) {
    let spec = credlint::testkit::render::Spec::example("shop", owner, kind, script);
    std::fs::write(dir.join(file), spec.render()).unwrap();
}

/// The programs in the repository's folder `dir`, in name order.
fn programs_in(dir: &str) -> Vec<std::path::PathBuf> {
    let mut names: Vec<_> = std::fs::read_dir(root().join(dir))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    names.sort();
    names
}

/// `simulate --no-cache --format json --timeout seconds` of `path` with `CREDLINT_ZYGOTE=mode`.
fn simulate(path: &Path, mode: &str, seconds: &str) -> Output {
    command()
        .env("CREDLINT_ZYGOTE", mode)
        .args([
            "simulate",
            "--no-cache",
            "--format",
            "json",
            "--timeout",
            seconds,
        ])
        .arg(path)
        .output()
        .expect("the binary runs")
}

/// Both paths on `path`: the same exit and the same bytes; the report, parsed.
fn same_either_way(path: &Path) -> serde_json::Value {
    same_either_way_within(path, "20")
}

/// [`same_either_way`] with `--timeout seconds`.
fn same_either_way_within(path: &Path, seconds: &str) -> serde_json::Value {
    let forked = simulate(path, "require", seconds);
    let fresh = simulate(path, "0", seconds);
    assert_eq!(
        (forked.status.code(), without_chance(stdout(&forked))),
        (fresh.status.code(), without_chance(stdout(&fresh))),
        "{}\n{}",
        stderr(&forked),
        stderr(&fresh)
    );
    json(&forked)
}

/// `report` without the one figure that chance decides in two runs of the same program: how
/// many distinct characters its random values used, and so the bits per character, where a
/// `runtime-predictable-value` finding measures a narrow alphabet (hex values use 15 of their
/// 16 characters now and then).
fn without_chance(report: String) -> String {
    regex::Regex::new(r"use \d+ distinct characters (where [^:]*): about [\d.]+ random bits")
        .unwrap()
        .replace_all(&report, "use N distinct characters $1: about B random bits")
        .into_owned()
}

#[test]
fn the_clean_renderings_and_both_reference_programs_give_the_same_report() {
    if !root_and_python_or_skip() {
        return;
    }
    let report = same_either_way(&root().join("fixtures/clean"));
    assert_eq!(report["findings"], serde_json::json!([]), "{report}");
    let dir = temp_dir("zygote-alt");
    let alt = std::fs::read_to_string(root().join("fixtures/runtime/create-alt.py")).unwrap();
    for kind in ["cache", "broker", "bucket", "component"] {
        write_bundle(
            &dir,
            &format!("{kind}.yaml"),
            &format!("alt-{kind}"),
            kind,
            &alt,
        );
    }
    let report = same_either_way(&dir);
    assert_eq!(report["summary"]["bundles"], 4, "{report}");
    assert_eq!(report["findings"], serde_json::json!([]), "{report}");
}

/// Every broken program of fixtures/runtime/broken, each a cache bundle of its own (a cache
/// goes through every scenario), in one tree: the same findings, byte for byte, either way.
#[test]
fn every_broken_program_is_caught_the_same_way() {
    if !root_and_python_or_skip() {
        return;
    }
    let dir = temp_dir("zygote-broken");
    let mut count = 0;
    let mut names = programs_in("fixtures/runtime/broken");
    // The program that hangs, once per scenario for the whole timeout, has a test of its own.
    names.retain(|p| !p.ends_with("hangs.py"));
    for (i, path) in names.iter().enumerate() {
        let script = std::fs::read_to_string(path).unwrap();
        write_bundle(
            &dir,
            &format!("b{i}.yaml"),
            &format!("b{i}"),
            "cache",
            &script,
        );
        count += 1;
    }
    let report = same_either_way(&dir);
    assert_eq!(report["summary"]["bundles"], count, "{report}");
    let flagged: std::collections::BTreeSet<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["bundle"].as_str())
        .collect();
    // Each broken program is caught (its own rules are held in the unit tests).
    assert_eq!(flagged.len(), count, "{report}");
}

/// A run that changes its interpreter (a module's attribute, a builtin, the environment, the
/// random generator's state, a cached import) leaves nothing for the next: each run is forked
/// from the zygote as it was before any run, as each fresh interpreter starts from nothing. A
/// program that misbehaves until it finds its own mark gets the verdict of the program that
/// always does.
#[test]
fn nothing_a_run_does_to_its_interpreter_reaches_the_next() {
    if !root_and_python_or_skip() {
        return;
    }
    let fixtures = root().join("fixtures/runtime");
    let correct = std::fs::read_to_string(fixtures.join("create.py")).unwrap();
    let faulty = std::fs::read_to_string(fixtures.join("broken/overwrite-value.py")).unwrap();
    let marked = format!(
        "import builtins, json, os, random, sys\n\
         seen = (getattr(json, '_seen', False) or hasattr(builtins, '_seen')\n\
         \x20       or os.environ.get('SEEN') == '1' or 'seen_module' in sys.modules\n\
         \x20       or getattr(sys, '_seen', False))\n\
         json._seen = True\n\
         builtins._seen = True\n\
         sys._seen = True\n\
         os.environ['SEEN'] = '1'\n\
         sys.modules['seen_module'] = json\n\
         source = {correct:?} if seen else {faulty:?}\n\
         exec(compile(source, __file__, 'exec'), {{'__name__': '__main__', '__file__': __file__}})\n"
    );
    let always = temp_dir("zygote-state-always");
    write_bundle(&always, "bundle.yaml", "shop-db", "component", &faulty);
    let marks = temp_dir("zygote-state-marked");
    write_bundle(&marks, "bundle.yaml", "shop-db", "component", &marked);
    let rules = |report: &serde_json::Value| -> std::collections::BTreeSet<String> {
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["rule"].as_str().unwrap().to_string())
            .collect()
    };
    let baseline = json(&simulate(&always, "require", "20"));
    assert!(
        rules(&baseline).contains("runtime-value-rewritten"),
        "{baseline}"
    );
    let forked = json(&simulate(&marks, "require", "20"));
    assert_eq!(rules(&forked), rules(&baseline), "{forked}");
}

/// What the zygote keeps to itself is not the program's: the folder its runs' logs come from,
/// the foreign-function module it confines them with, its own code in the hook's module, its
/// own process (the program is process 1 of a namespace of its own, and its parent is outside
/// it) and its command line (the program's is the pod's). Nothing here reads a file the
/// audit hook would report.
#[test]
fn the_program_sees_nothing_of_the_zygote() {
    if !root_and_python_or_skip() {
        return;
    }
    let dir = temp_dir("zygote-unseen");
    let probe = "import os as _o, sys as _s, sitecustomize as _sc\n\
        _seen = []\n\
        if any(_o.path.exists('/tmp/' + n) for n in ('credentials', 'site', 'termination-log')):\n\
        \x20   _seen.append('the run folders')\n\
        if any(n == 'ctypes' or n.startswith('ctypes.') for n in _s.modules):\n\
        \x20   _seen.append('ctypes')\n\
        if any(hasattr(_sc, n) for n in ('_zygote', '_serve', '_install_audit', '_clock_reset', '_run_main', '_main_code')):\n\
        \x20   _seen.append('the zygote code')\n\
        if _o.getpid() != 1 or _o.getppid() != 0:\n\
        \x20   _seen.append('pid %d parent %d' % (_o.getpid(), _o.getppid()))\n\
        if _s.orig_argv[1:] != ['/credentials/create.py', '/credentials/plan.json']:\n\
        \x20   _seen.append('the command line')\n\
        if _seen:\n\
        \x20   raise SystemExit('ESCAPED saw ' + ', '.join(_seen))\n";
    let script = format!(
        "{probe}\n{}",
        std::fs::read_to_string(root().join("fixtures/runtime/create.py")).unwrap()
    );
    write_bundle(&dir, "bundle.yaml", "shop-db", "component", &script);
    let report = same_either_way(&dir);
    assert_eq!(report["findings"], serde_json::json!([]), "{report}");
}

/// A program that hangs is killed at the timeout with its zygote (every process of the run is
/// in the zygote's PID namespace); the scenario stops there, the next one starts on a fresh
/// interpreter, and the report is the one fresh interpreters give.
#[test]
fn a_run_that_hangs_is_killed_with_its_zygote_and_the_rest_goes_on() {
    if !root_and_python_or_skip() {
        return;
    }
    let dir = temp_dir("zygote-hangs");
    let script = std::fs::read_to_string(root().join("fixtures/runtime/broken/hangs.py")).unwrap();
    write_bundle(&dir, "bundle.yaml", "shop-db", "component", &script);
    let report = same_either_way_within(&dir, "1");
    let timed_out = report["findings"].as_array().unwrap().iter().any(|f| {
        f["message"]
            .as_str()
            .unwrap_or_default()
            .contains("was killed")
    });
    assert!(timed_out, "{report}");
}

/// The messages of a report's findings about `bundle`, joined.
fn messages_of(report: &serde_json::Value, bundle: &str) -> String {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["bundle"].as_str().is_some_and(|b| b.contains(bundle)))
        .filter_map(|f| f["message"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// How the interpreter ends a program (fixtures/runtime/shutdown: exit codes and messages,
/// uncaught exceptions and exception hooks, threads, atexit, finalizers, output that cannot
/// be flushed, what `__main__` holds): a zygote's run does what the interpreter does around
/// the program, so the reports are byte for byte the same; each program's `# shows:` text is
/// in the report, so each path was taken.
#[test]
fn a_program_starts_and_ends_as_in_a_fresh_interpreter() {
    if !root_and_python_or_skip() {
        return;
    }
    let dir = temp_dir("zygote-shutdown");
    let names = programs_in("fixtures/runtime/shutdown");
    let mut shows = Vec::new();
    for (i, path) in names.iter().enumerate() {
        let script = std::fs::read_to_string(path).unwrap();
        let expected = script
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# shows: "))
            .unwrap_or_else(|| panic!("{} has no `# shows:` line", path.display()))
            .to_string();
        write_bundle(
            &dir,
            &format!("s{i}.yaml"),
            &format!("end{i}"),
            "component",
            &script,
        );
        shows.push((format!("end{i}"), path.clone(), expected));
    }
    assert!(shows.len() >= 10, "{shows:?}");
    let report = same_either_way(&dir);
    for (owner, path, expected) in shows {
        let said = messages_of(&report, &owner);
        assert!(
            said.contains(&expected),
            "{}: {expected:?} not in\n{said}",
            path.display()
        );
    }
}

/// The one thing a run forked from the zygote shows differently: the program's module runs on
/// the zygote's runner (which ran the program compiled once per bundle) rather than on nothing.
/// This holds the runs to that path: without it every other test here would pass on the
/// slower one.
#[test]
fn the_zygote_runs_the_program_it_compiled_once() {
    if !root_and_python_or_skip() {
        return;
    }
    let dir = temp_dir("zygote-runner");
    let script = "import sys\n\
        sys.exit('module frame on %s' % ('nothing' if sys._getframe().f_back is None else 'a runner'))\n";
    write_bundle(&dir, "bundle.yaml", "shop-db", "component", script);
    let forked = json(&simulate(&dir, "require", "20"));
    let fresh = json(&simulate(&dir, "0", "20"));
    assert!(
        messages_of(&forked, "shop-db").contains("module frame on a runner"),
        "{forked}"
    );
    assert!(
        messages_of(&fresh, "shop-db").contains("module frame on nothing"),
        "{fresh}"
    );
}
