//! Fixtures per rule, beside their expectations, and the clean renderings.
//!
//! `fixtures/<rule-id>/` holds `bad-*` entries (a file, or a folder linted as one input) and
//! `good-*` entries. Every finding of every bad entry is listed in `expect.txt` as
//! `entry:line:column rule`, in output order; each bad entry must show the folder's rule at least
//! once; a good entry yields no finding at all. `options.yaml` may set `credentialsImage` for the
//! folder. For the rules `credlint simulate` decides, an entry's bundles are also simulated and
//! the distinct simulated findings are appended. An entry folder may hold a `policies/` folder:
//! it is applied with `--policy` (the `policy-unsupported` fixtures). `credlint.io/ignore`
//! annotations are applied as `check` applies them: a suppressed finding is not listed, and
//! `ignore-invalid` / `ignore-unused` findings are. `UPDATE_FIXTURES=1 cargo test --test
//! fixtures` rewrites the expect.txt files; review the diff like any code change.

use credlint::cli::settings::Settings;
use credlint::cli::suppress;
use credlint::exec::Executor;
use credlint::lint::Options;
use credlint::lint::catalog::Catalog;
use credlint::load::input;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// Folders of `fixtures/` that belong to no single rule.
const SHARED: &[&str] = &["applications", "clean", "demo", "runtime"];

/// Lints an entry. An entry folder with a `policies/` folder gets it as `--policy`, and its
/// manifests are the rest of the folder.
fn lint(path: &Path, mut options: Options) -> Vec<(String, usize, usize, String)> {
    let policies = path.join("policies");
    let mut exclude = Vec::new();
    if policies.is_dir() {
        let set =
            credlint::lint::kyverno::PolicySet::load(&[policies.to_string_lossy().into_owned()])
                .expect("the fixture's policies can be read");
        options.policies = Some(std::sync::Arc::new(set));
        exclude.push("policies".to_string());
    }
    let collected = input::collect(&[path], &exclude);
    let (files, errors) = (collected.files, collected.errors);
    assert!(errors.is_empty(), "{errors:?}");
    let engine = Executor::new(options).expect("the catalog compiles");
    let mut outcome = engine.run(&files, Vec::new());
    assert!(
        outcome.input_errors.is_empty(),
        "{:?}",
        outcome.input_errors
    );
    Settings::default().apply(
        &mut outcome,
        suppress::Options {
            judge: true,
            not_run: &credlint::runtime::simulate::RULES,
        },
    );
    outcome
        .findings
        .iter()
        .filter(|f| f.suppressed.is_none())
        .map(|f| {
            let file = Path::new(&outcome.files[f.loc.file]);
            let base = path.parent().unwrap_or(path);
            let shown = file
                .strip_prefix(base)
                .unwrap_or(file)
                .to_string_lossy()
                .into_owned();
            (shown, f.loc.line, f.loc.column, f.rule.clone())
        })
        .collect()
}

/// For the rules `credlint simulate` decides: what the simulation of the entry's bundles
/// reports, as a sorted set (the same finding recurs across scenarios and runs).
fn simulate(path: &Path) -> Vec<(String, usize, usize, String)> {
    let collected = input::collect(&[path], &[]);
    let (files, errors) = (collected.files, collected.errors);
    assert!(errors.is_empty(), "{errors:?}");
    let options = Options {
        keep: credlint::model::members::Keep {
            bundles: true,
            programs: true,
        },
        ..Options::default()
    };
    let outcome = Executor::new(options).unwrap().run(&files, Vec::new());
    // The program that never ends is held to a short limit, so the suite does not wait for it;
    // every other program gets room for a loaded machine (at 2 s the reference program timed
    // out under a load average of 24, a false runtime-failed).
    let hangs = path
        .file_name()
        .is_some_and(|n| n.to_string_lossy().contains("hangs"));
    let sim = credlint::runtime::simulate::SimOptions {
        timeout: std::time::Duration::from_secs(if hangs { 2 } else { 60 }),
        ..Default::default()
    };
    let (findings, skipped) = credlint::cli::simulate::run(&outcome.bundles, &sim, &|file| {
        std::fs::read_to_string(&outcome.files[file]).ok()
    })
    .expect("python3 runs");
    assert!(skipped.is_empty(), "{}", path.display());
    let mut out: Vec<_> = findings
        .iter()
        .map(|f| {
            let file = Path::new(&outcome.files[f.loc.file]);
            let base = path.parent().unwrap_or(path);
            let shown = file
                .strip_prefix(base)
                .unwrap_or(file)
                .to_string_lossy()
                .into_owned();
            (shown, f.loc.line, f.loc.column, f.rule.clone())
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with("bad-") || name.starts_with("good-")
        })
        .collect();
    entries.sort();
    entries
}

fn options_for(dir: &Path) -> Options {
    let mut options = Options::default();
    if let Ok(text) = std::fs::read_to_string(dir.join("options.yaml")) {
        for line in text.lines() {
            if let Some(image) = line.strip_prefix("credentialsImage:") {
                options.credentials_image = Some(image.trim().trim_matches('"').to_string());
            }
        }
    }
    options
}

#[test]
fn every_rule_has_fixtures_and_every_fixture_folder_a_rule() {
    let catalog = Catalog::get();
    let mut folders = BTreeSet::new();
    for entry in std::fs::read_dir(fixtures()).unwrap() {
        let entry = entry.unwrap();
        if entry.path().is_dir() {
            folders.insert(entry.file_name().to_string_lossy().into_owned());
        }
    }
    for folder in &folders {
        if SHARED.contains(&folder.as_str()) {
            continue;
        }
        assert!(
            catalog.rule(folder).is_some(),
            "fixtures/{folder} names no rule"
        );
    }
    for rule in &catalog.rules {
        assert!(
            folders.contains(&rule.id),
            "rule {} has no fixtures/{}/",
            rule.id,
            rule.id
        );
        let all = entries(&fixtures().join(&rule.id));
        let name = |p: &PathBuf| p.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            all.iter().any(|p| name(p).starts_with("bad-")),
            "{} has no bad fixture",
            rule.id
        );
        assert!(
            all.iter().any(|p| name(p).starts_with("good-")),
            "{} has no good fixture",
            rule.id
        );
    }
}

#[test]
fn rules_fire_where_the_fixtures_say_and_nowhere_else() {
    let catalog = Catalog::get();
    let update = std::env::var_os("UPDATE_FIXTURES").is_some();
    let mut failures = Vec::new();
    for rule in &catalog.rules {
        let dir = fixtures().join(&rule.id);
        if !dir.is_dir() {
            continue;
        }
        let mut actual = Vec::new();
        for entry in entries(&dir) {
            let name = entry.file_name().unwrap().to_string_lossy().into_owned();
            let mut findings = lint(&entry, options_for(&dir));
            if credlint::runtime::simulate::RULES.contains(&rule.id.as_str()) {
                findings.extend(simulate(&entry));
            }
            if name.starts_with("good-") {
                if !findings.is_empty() {
                    failures.push(format!("{}/{name} should be clean: {findings:?}", rule.id));
                }
                continue;
            }
            if !findings.iter().any(|f| f.3 == rule.id) {
                failures.push(format!("{}/{name} does not show {}", rule.id, rule.id));
            }
            actual.extend(
                findings
                    .iter()
                    .map(|(file, line, col, r)| format!("{file}:{line}:{col} {r}")),
            );
        }
        let expect_path = dir.join("expect.txt");
        if update {
            let mut text = actual.join("\n");
            text.push('\n');
            std::fs::write(&expect_path, text).unwrap();
            continue;
        }
        let expected: Vec<String> = std::fs::read_to_string(&expect_path)
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .map(str::to_string)
            .collect();
        if expected != actual {
            failures.push(format!(
                "{}/expect.txt differs\n  expected: {expected:#?}\n  actual:   {actual:#?}",
                rule.id
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn clean_renderings_are_current() {
    let root = fixtures().join("clean");
    let script = credlint::testkit::render::clean_script();
    for (path, content) in credlint::testkit::render::clean_renderings(&script) {
        let on_disk = std::fs::read_to_string(root.join(&path)).unwrap_or_default();
        assert!(
            on_disk == content,
            "fixtures/clean/{path} is stale: run `cargo run --example fixtures`"
        );
    }
}

#[test]
fn every_clean_rendering_yields_no_finding() {
    let root = fixtures().join("clean");
    let all = lint(&root, Options::default());
    assert_eq!(all, vec![], "fixtures/clean as a whole");
    for entry in std::fs::read_dir(&root).unwrap() {
        let path = entry.unwrap().path();
        // Each file holds whole bundles, except the folders that split one across files.
        let findings = lint(&path, Options::default());
        assert_eq!(findings, vec![], "{}", path.display());
    }
    let engine = Executor::new(Options::default()).unwrap();
    let files = input::collect(&[root], &[]).files;
    let outcome = engine.run(&files, Vec::new());
    assert_eq!(
        outcome.summary.bundles, 13,
        "every rendering is recognised as a bundle"
    );
}

/// Application objects (fixtures/applications/README.md) are no bundle members, whatever their
/// names and commands: nothing is reported on any file, on a folder, or on all of them together,
/// and the one real bundle beside them is still recognised (and only it).
#[test]
fn application_objects_yield_no_finding() {
    let root = fixtures().join("applications");
    assert_eq!(
        lint(&root, Options::default()),
        vec![],
        "fixtures/applications"
    );
    let mut inputs = 0;
    for entry in std::fs::read_dir(&root).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            continue;
        }
        inputs += 1;
        assert_eq!(
            lint(&path, Options::default()),
            vec![],
            "{}",
            path.display()
        );
    }
    assert!(inputs >= 6, "{inputs} inputs");
    // Each chart's render alone too (charts/ holds one `helm template` output a file).
    let mut charts = 0;
    for entry in std::fs::read_dir(root.join("charts")).unwrap() {
        let path = entry.unwrap().path();
        charts += 1;
        assert_eq!(
            lint(&path, Options::default()),
            vec![],
            "{}",
            path.display()
        );
    }
    assert!(charts >= 3, "{charts} chart renders");
    let engine = Executor::new(Options::default()).unwrap();
    let files = input::collect(&[root], &[]).files;
    let outcome = engine.run(&files, Vec::new());
    assert_eq!(outcome.summary.bundles, 1, "only the copied clean bundle");
    assert!(outcome.summary.objects >= 30, "{}", outcome.summary.objects);
}

/// Each chart render of fixtures/applications/charts beside a credentials bundle in the chart's
/// own namespace: the one-writer and one-identity checks, which compare objects, find nothing
/// between the chart's hook Jobs, Roles and bindings and the bundle, and the bundle is still
/// recognised.
#[test]
fn chart_renders_beside_a_bundle_in_their_namespace_yield_no_finding() {
    let bundle = std::fs::read_to_string(fixtures().join("clean/cache.yaml")).unwrap();
    let mut renders = 0;
    for entry in std::fs::read_dir(fixtures().join("applications/charts")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        // The chart's namespace, as its first namespaced object names it (none: the bundle
        // keeps its own, and the chart's objects go wherever it is applied).
        let namespace = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("namespace: "))
            .map(|n| n.trim_matches('"').to_string());
        let moved = match &namespace {
            Some(ns) => bundle.replace("  namespace: shop\n", &format!("  namespace: {ns}\n")),
            None => bundle.clone(),
        };
        if let Some(ns) = &namespace {
            assert!(moved.contains(&format!("namespace: {ns}\n")), "{ns}");
            assert!(!moved.contains("namespace: shop\n"), "{ns}");
        }
        // Removed when the test ends, passed or failed.
        let temp = credlint::testkit::TempDir::new("credlint-chart-beside");
        let dir = temp.to_path_buf();
        std::fs::write(dir.join("bundle.yaml"), &moved).unwrap();
        std::fs::write(dir.join(path.file_name().unwrap()), &text).unwrap();
        assert_eq!(
            lint(&dir, Options::default()),
            vec![],
            "{} beside a bundle in {namespace:?}",
            path.display()
        );
        let engine = Executor::new(Options::default()).unwrap();
        let files = input::collect(&[&dir], &[]).files;
        assert_eq!(
            engine.run(&files, Vec::new()).summary.bundles,
            1,
            "{}",
            path.display()
        );
        renders += 1;
    }
    assert!(renders >= 3, "{renders} chart renders");
}
