//! The contract, on generated bundles (`credlint::testkit`):
//!
//! 1. every valid bundle, in every rendering style and split across files at random, yields
//!    no finding at all;
//! 2. every single-fault mutant yields its rule (at least), for every rule of the catalog but
//!    those listed in `testkit::UNREACHABLE`; the rules `credlint simulate` decides are
//!    checked by simulating the mutant;
//! 3. the generated Kyverno policies (`credlint policies`, evaluated by `credlint::lint::kyverno`)
//!    deny exactly the objects on which `check` reports their rule, on every object generated.
//!
//! Cases come from a fixed seed, so a run is repeatable. `CREDLINT_PROP_CASES=N` sets the
//! number of cases per property (default 100), `CREDLINT_PROP_SEED=S` the seed,
//! `CREDLINT_PROP_FAMILY=<rule>` runs one mutation family alone; a failure
//! prints the seed, the case number and every file of the case.

use credlint::exec::Executor;
use credlint::lint::Options;
use credlint::lint::catalog::Catalog;
use credlint::lint::kyverno::{PolicyFile, PolicySet};
use credlint::load::yaml::{self, Parsed};
use credlint::model::outcome::Outcome;
use credlint::testkit::{self, Case, FAMILIES, Rng, UNREACHABLE};
use std::collections::{BTreeMap, BTreeSet, HashMap};

fn cases(default: usize) -> usize {
    std::env::var("CREDLINT_PROP_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn seed() -> u64 {
    std::env::var("CREDLINT_PROP_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x00c0_ffee)
}

/// The generator for case `n` of a property: independent of the other cases.
fn rng(property: u64, n: usize) -> Rng {
    let mut base = Rng::new(seed() ^ property.wrapping_mul(0x9E37_79B9));
    for _ in 0..=n % 7 {
        base.next_u64();
    }
    Rng::new(base.next_u64() ^ (n as u64).wrapping_mul(0xD1B5_4A32_D192_ED03))
}

fn engine(case: &Case) -> Executor {
    Executor::new(Options {
        credentials_image: case.credentials_image.clone(),
        ..Options::default()
    })
    .expect("the catalog compiles")
}

/// What `check` reports: the engine's findings, then the `credlint.io/ignore` annotations
/// applied and judged.
fn lint(case: &Case) -> Outcome {
    let mut outcome = engine(case).run(&case.inputs(), Vec::new());
    credlint::cli::suppress::apply(
        &mut outcome,
        credlint::cli::suppress::Options {
            judge: true,
            not_run: &credlint::runtime::simulate::RULES,
        },
    );
    outcome
}

fn failure(property: &str, n: usize, case: &Case, what: String) -> String {
    format!(
        "{property}: case {n} (CREDLINT_PROP_SEED={}):\n{what}\n{}",
        seed(),
        case.show()
    )
}

fn findings(outcome: &Outcome) -> String {
    outcome
        .findings
        .iter()
        .map(|f| {
            format!(
                "{}:{}:{} {} {}",
                outcome.files[f.loc.file], f.loc.line, f.loc.column, f.rule, f.message
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_valid_bundle_yields_no_finding() {
    let n = cases(100);
    let mut bundles = 0;
    let mut files = 0;
    for i in 0..n {
        let mut c = rng(1, i);
        let case = testkit::valid(&mut c);
        let outcome = lint(&case);
        assert!(
            outcome.findings.is_empty() && outcome.input_errors.is_empty(),
            "{}",
            failure("valid", i, &case, findings(&outcome))
        );
        assert!(outcome.summary.bundles >= 1, "{}", case.show());
        bundles += outcome.summary.bundles;
        files += case.files.len();
    }
    eprintln!("valid: {n} cases, {bundles} bundles in {files} files, no finding");
}

#[test]
fn every_rule_has_a_mutation_family_or_a_reason() {
    let catalog = Catalog::get();
    let mut seen = BTreeSet::new();
    for f in FAMILIES {
        assert!(catalog.rule(f.rule).is_some(), "{} is not a rule", f.rule);
        assert!(seen.insert(f.rule), "{} has two families", f.rule);
    }
    for (rule, why) in UNREACHABLE {
        assert!(catalog.rule(rule).is_some(), "{rule} is not a rule");
        assert!(!seen.contains(rule), "{rule} is both reachable and not");
        assert!(!why.is_empty());
    }
    let missing: Vec<&str> = catalog
        .rules
        .iter()
        .map(|r| r.id.as_str())
        .filter(|id| !seen.contains(id) && !UNREACHABLE.iter().any(|(u, _)| u == id))
        .collect();
    assert!(
        missing.is_empty(),
        "rules without a mutation family: {missing:?}"
    );
}

#[test]
fn every_mutant_yields_its_rule() {
    // CREDLINT_PROP_FAMILY=<rule> runs that family alone.
    let only = std::env::var("CREDLINT_PROP_FAMILY").ok();
    let families: Vec<&testkit::Family> = FAMILIES
        .iter()
        .filter(|f| !f.simulate && only.as_deref().is_none_or(|r| r == f.rule))
        .collect();
    let n = cases(100).max(families.len());
    let mut produced: BTreeMap<&str, usize> = BTreeMap::new();
    for i in 0..n {
        let family = families[i % families.len()];
        let mut c = rng(2, i);
        let case = testkit::mutant(&mut c, family);
        let outcome = lint(&case);
        assert!(
            outcome.findings.iter().any(|f| f.rule == family.rule),
            "{}",
            failure(
                family.rule,
                i,
                &case,
                format!("no {} finding; found:\n{}", family.rule, findings(&outcome))
            )
        );
        *produced.entry(family.rule).or_default() += 1;
    }
    assert_eq!(produced.len(), families.len());
    eprintln!("mutants: {n} cases over {} families", families.len());
}

/// The rules `credlint simulate` decides: the mutant's program runs against the fake API
/// server. Each simulation takes seconds, so by default one mutant per rule, and the valid
/// program once; `CREDLINT_PROP_SIMULATIONS=N` runs N mutants per rule (a family's variants
/// are picked by the case's seed, so a few cover them all).
#[test]
fn every_program_mutant_fails_its_simulation() {
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: no python3 to simulate with");
        return;
    }
    let per_rule: usize = std::env::var("CREDLINT_PROP_SIMULATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    // CREDLINT_PROP_FAMILY=<rule> simulates that family's mutants alone.
    let only = std::env::var("CREDLINT_PROP_FAMILY").ok();
    let families: Vec<&testkit::Family> = FAMILIES
        .iter()
        .filter(|f| f.simulate && only.as_deref().is_none_or(|r| r == f.rule))
        .collect();
    let mut work: Vec<(Option<&testkit::Family>, usize)> = vec![(None, 0)];
    for f in &families {
        for k in 0..per_rule {
            work.push((Some(f), k));
        }
    }
    let failures: Vec<String> = std::thread::scope(|s| {
        let chunks: Vec<_> = work
            .chunks(work.len().div_ceil(2))
            .map(|chunk| {
                s.spawn(move || {
                    let mut failures = Vec::new();
                    for (i, (family, k)) in chunk.iter().enumerate() {
                        let mut c = rng(3, i * 31 + k);
                        let case = match family {
                            Some(f) => testkit::mutant(&mut c, f),
                            None => testkit::valid(&mut c),
                        };
                        let found = simulate(&case);
                        let ok = match family {
                            Some(f) => found.iter().any(|r| r == f.rule),
                            None => found.is_empty(),
                        };
                        if !ok {
                            failures.push(failure(
                                family.map_or("simulate (valid)", |f| f.rule),
                                i,
                                &case,
                                format!("simulate found {found:?}"),
                            ));
                        }
                    }
                    failures
                })
            })
            .collect();
        chunks
            .into_iter()
            .flat_map(|h| h.join().expect("no panic"))
            .collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

fn simulate(case: &Case) -> Vec<String> {
    let options = Options {
        keep: credlint::model::members::Keep {
            bundles: true,
            programs: true,
        },
        credentials_image: case.credentials_image.clone(),
        ..Options::default()
    };
    let outcome = Executor::new(options)
        .unwrap()
        .run(&case.inputs(), Vec::new());
    // No family hangs, so the limit only has to outlast a loaded machine: at 5 s the valid
    // program timed out (runtime-failed) under a load average of 24.
    let sim = credlint::runtime::simulate::SimOptions {
        timeout: std::time::Duration::from_secs(60),
        ..Default::default()
    };
    let (findings, _) = credlint::cli::simulate::run(&outcome.bundles, &sim, &|file| {
        std::fs::read_to_string(&outcome.files[file]).ok()
    })
    .expect("python3 runs");
    findings.into_iter().map(|f| f.rule).collect()
}

/// What `credlint policies [--credentials-image REF]` prints, read back as Kyverno reads it.
fn policies(image: Option<&str>) -> PolicySet {
    let options = credlint::policy::Options {
        credentials_image: image.unwrap_or_default().to_string(),
        ..Default::default()
    };
    let text = credlint::policy::stream(&credlint::policy::generate(Catalog::get(), &options));
    let set = PolicySet::new(vec![PolicyFile {
        display: "policies.yaml".into(),
        text,
    }]);
    assert!(set.unsupported.is_empty(), "{:?}", set.unsupported);
    set
}

#[test]
fn the_policies_command_prints_what_the_agreement_evaluates() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_credlint"))
        .arg("policies")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let printed = String::from_utf8(out.stdout).unwrap();
    let options = credlint::policy::Options::default();
    assert_eq!(
        printed,
        credlint::policy::stream(&credlint::policy::generate(Catalog::get(), &options))
    );
}

#[test]
fn the_policies_agree_with_the_linter_on_every_generated_object() {
    let catalog = Catalog::get();
    let object_rules: BTreeSet<&str> = catalog
        .rules
        .iter()
        .filter(|r| r.object.is_some())
        .map(|r| r.id.as_str())
        .collect();
    let families: Vec<&testkit::Family> = FAMILIES.iter().filter(|f| !f.simulate).collect();
    let mut sets: HashMap<Option<String>, PolicySet> = HashMap::new();
    let cel = credlint::lint::cel::Cel::new();
    let member = cel
        .compile(Catalog::get().condition("credentials-member").unwrap())
        .unwrap();
    let (mut objects, mut verdicts, mut denied) = (0, 0, 0);
    let mut denied_rules = BTreeSet::new();
    let n = cases(100);
    for i in 0..n {
        let mut c = rng(4, i);
        let case = if i % 3 == 0 {
            testkit::valid(&mut c)
        } else {
            testkit::mutant(&mut c, families[i % families.len()])
        };
        let set = sets
            .entry(case.credentials_image.clone())
            .or_insert_with(|| policies(case.credentials_image.as_deref()));
        let outcome = lint(&case);
        for (file, (path, text)) in case.files.iter().enumerate() {
            for parsed in yaml::parse(text) {
                let Parsed::Document(doc) = parsed else {
                    continue;
                };
                let mut list = Vec::new();
                credlint::model::object::objects(&doc.root, &mut list);
                for obj in list {
                    // A finding names its object; an alias may place it in another one's text.
                    let reported = testkit::invariants::rules_on(&outcome, file, &obj);
                    // The API server refuses these before any policy sees them.
                    if reported.contains("schema") || reported.contains("yaml-syntax") {
                        continue;
                    }
                    objects += 1;
                    for (index, policy) in set.policies.iter().enumerate() {
                        verdicts += 1;
                        let verdict = set.decide(index, obj.root);
                        let flagged = reported.contains(policy.name.as_str());
                        if verdict.denies() {
                            denied += 1;
                            denied_rules.insert(policy.name.clone());
                        }
                        // A member only the linter recognises (by the references between
                        // objects) is selected by no policy: the README's stated gap.
                        // It must then be one the member condition does not select.
                        let gap = flagged
                            && matches!(verdict, credlint::lint::kyverno::Verdict::NotMatched)
                            && !matches!(
                                cel.check(&member, &cel.bind(obj.root)),
                                credlint::lint::cel::Verdict::Pass
                            );
                        assert!(
                            verdict.denies() == flagged || gap,
                            "{}",
                            failure(
                                "agreement",
                                i,
                                &case,
                                format!(
                                    "{path}: {} {}: policy {} {} but check {} it ({verdict:?})\n{}",
                                    obj.kind,
                                    obj.name.unwrap_or_default(),
                                    policy.name,
                                    if verdict.denies() { "denies" } else { "admits" },
                                    if flagged {
                                        "reports"
                                    } else {
                                        "does not report"
                                    },
                                    findings(&outcome)
                                )
                            )
                        );
                    }
                }
            }
        }
        assert!(object_rules.len() >= set.policies.len());
    }
    eprintln!(
        "agreement: {n} cases, {objects} objects, {verdicts} verdicts, {denied} denials by {} policies",
        denied_rules.len()
    );
    // Not vacuous: the mutants make most policies deny something.
    assert!(denied > 0);
}
