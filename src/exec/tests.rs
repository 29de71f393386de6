use super::*;
use crate::load::input::Origin;
use crate::load::yaml::{self, Node, Parsed};
use crate::model::members::Keep;
use crate::model::outcome::MemoKey;
use crate::testkit::lint::check_text;
use std::collections::HashMap;

fn located(outcome: &Outcome) -> Vec<(String, usize, usize)> {
    let mut found: Vec<(String, usize, usize)> = outcome
        .findings
        .iter()
        .map(|f| (f.rule.clone(), f.loc.line, f.loc.column))
        .collect();
    found.sort();
    found
}

/// A create.py another thread is still analysing is taken up after the file's other documents;
/// its findings are the same, at the same places, as when it is checked on the spot.
#[test]
fn a_program_analysed_elsewhere_is_reported_after_the_rest_in_place() {
    let path = "fixtures/runtime-non-stdlib-import/bad-requests.yaml";
    let text = std::fs::read_to_string(path).unwrap();
    let script = yaml::parse(&text)
        .into_iter()
        .find_map(|p| match p {
            Parsed::Document(d) => d
                .root
                .at(&["data", "create.py"])
                .and_then(Node::as_str)
                .map(str::to_string),
            Parsed::Error(_) | Parsed::Unread(_) => None,
        })
        .unwrap();
    crate::runtime::python::claim(&script);
    let waited = check_text("bad-requests.yaml", &text, Options::default()).unwrap();
    let on_the_spot = check_text("bad-requests.yaml", &text, Options::default()).unwrap();
    let waited = located(&waited);
    assert_eq!(waited, located(&on_the_spot));
    let imports: Vec<_> = waited
        .iter()
        .filter(|(rule, _, _)| rule == "runtime-non-stdlib-import")
        .map(|(_, line, column)| (*line, *column))
        .collect();
    assert_eq!(imports, [(97, 12), (98, 10)]);
}

/// Objects named like members but belonging to no bundle are none of credlint's business: a
/// ServiceAccount and a Role named `*-credentials` without a hook annotation, alone, make no
/// bundle and no finding (the Role would grant `list`). The same ServiceAccount carrying a hook
/// annotation is marked as a member, so its missing bundle is reported.
#[test]
fn candidates_without_a_bundle_are_dropped_with_their_findings() {
    let sa = "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: ci-credentials\n  namespace: shop\n";
    let role = "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: ci-credentials\n  namespace: shop\nrules:\n  - apiGroups: [\"\"]\n    resources: [configmaps]\n    verbs: [get, list]\n";
    let alone = check_text("app.yaml", &format!("{sa}---\n{role}"), Options::default()).unwrap();
    assert_eq!(located(&alone), []);
    assert_eq!(alone.summary.bundles, 0);
    let hooked = sa.replace(
        "  namespace: shop\n",
        "  namespace: shop\n  annotations:\n    argocd.argoproj.io/hook: PreSync\n",
    );
    let marked = check_text("app.yaml", &hooked, Options::default()).unwrap();
    let rules: Vec<&str> = marked.findings.iter().map(|f| f.rule.as_str()).collect();
    assert!(rules.contains(&"bundle-incomplete"), "{rules:?}");
}

/// A bundle named `<owner>-creds` is assembled by its references (the Job's ConfigMap and
/// ServiceAccount, the binding's subject and role) and linted in full: the Role's `list` is
/// reported, and each member's name is a `bundle-naming` finding.
#[test]
fn a_bundle_named_otherwise_is_linked_by_its_references() {
    let text = std::fs::read_to_string("fixtures/bundle-naming/bad-creds-names.yaml").unwrap();
    let outcome = check_text("creds.yaml", &text, Options::default()).unwrap();
    assert_eq!(outcome.summary.bundles, 1);
    let naming = outcome
        .findings
        .iter()
        .filter(|f| f.rule == "bundle-naming")
        .count();
    assert_eq!(naming, 5);
    assert!(
        outcome
            .findings
            .iter()
            .any(|f| f.rule == "role-forbidden-verb"
                && f.bundle.as_deref() == Some("shop/shop-sessions"))
    );
    assert!(
        !outcome
            .findings
            .iter()
            .any(|f| f.rule == "bundle-incomplete" || f.rule == "job-wiring"),
        "{:?}",
        located(&outcome)
    );
}

/// Bundles held to the end of a run (all of them where they are kept) and checked on the pool
/// leave the same outcome, in the same order, as one thread checking them one by one; so do
/// bundles checked as they complete while the next window is linted. Generated cases, mutants
/// among them, so that there are findings to compare.
#[test]
fn a_run_on_the_pool_leaves_what_one_thread_leaves() {
    let mut c = crate::testkit::Rng::new(16);
    let mut inputs = Vec::new();
    for i in 0..120 {
        let family = &crate::testkit::FAMILIES[i % crate::testkit::FAMILIES.len()];
        let case = if i % 3 == 0 || family.simulate {
            crate::testkit::valid(&mut c)
        } else {
            crate::testkit::mutant(&mut c, family)
        };
        for (j, (_, text)) in case.files.into_iter().enumerate() {
            inputs.push(InputFile {
                display: format!("case-{i}-{j}.yaml"),
                origin: Origin::Memory(std::sync::Arc::new(text.into_bytes())),
            });
        }
    }
    for keep in [false, true] {
        let options = || Options {
            keep: Keep {
                bundles: keep,
                programs: false,
            },
            ..Options::default()
        };
        let outcome = |threads: usize| {
            let run = Executor::new(options())
                .unwrap()
                .threads(Some(threads))
                .run(&inputs, Vec::new());
            (
                format!("{:?}", run.findings),
                run.summary.clone(),
                run.bundles.len(),
            )
        };
        let alone = outcome(1);
        assert!(alone.1.bundles >= 64, "{} bundles", alone.1.bundles);
        assert!(alone.1.errors > 2, "no findings to compare");
        assert_eq!(outcome(2), alone, "keep bundles: {keep}");
        assert_eq!(outcome(3), alone, "keep bundles: {keep}");
    }
}

/// A file large enough to be read, scanned and linted in pieces on the pool gives what one
/// thread gives: the clean renderings and every fixture, concatenated past the piece size,
/// with a byte that is not UTF-8 in the middle.
#[test]
fn a_large_file_in_pieces_leaves_what_one_thread_leaves() {
    let mut text = String::new();
    let fixtures = crate::testkit::fixture_texts();
    while text.len() < PIECES_FROM + 3 * PIECE {
        for f in &fixtures {
            text.push_str(f);
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str("---\n");
        }
    }
    let mut bytes = text.into_bytes();
    let middle = bytes.len() / 2;
    let at = middle + bytes[middle..].iter().position(|&b| b == b'#').unwrap_or(0);
    bytes[at] = 0xFF;
    let dir = crate::testkit::TempDir::new("credlint-exec-large");
    let path = dir.join("large.yaml");
    std::fs::write(&path, &bytes).unwrap();
    let inputs = [InputFile {
        display: "large.yaml".into(),
        origin: Origin::File(path),
    }];
    let outcome = |threads: usize| {
        let run = Executor::new(Options::default())
            .unwrap()
            .threads(Some(threads))
            .run(&inputs, Vec::new());
        (format!("{:?}", run.findings), run.summary.clone())
    };
    let alone = outcome(1);
    assert!(alone.0.contains("not UTF-8"), "the broken byte is found");
    assert_eq!(outcome(2), alone);
}

/// A memo that holds every file linted so far, in memory.
#[derive(Default)]
struct Remembered(std::sync::Mutex<HashMap<[u8; 32], FileOut>>);

impl Memo for Remembered {
    fn key(&self, _: bool, bytes: &[u8]) -> MemoKey {
        let mut state = crate::common::sha256::Sha256State::default();
        state.update(bytes);
        let key = state.finalize();
        MemoKey { key, content: key }
    }
    fn recall(&self, key: &MemoKey, _: usize) -> Option<FileOut> {
        let held = self.0.lock().unwrap();
        let out = held.get(&key.key)?;
        Some(FileOut {
            findings: out.findings.clone(),
            documents: out.documents,
            objects: out.objects,
            ..FileOut::default()
        })
    }
    fn remember(&self, key: &MemoKey, _: usize, out: &FileOut) {
        let kept = FileOut {
            findings: out.findings.clone(),
            documents: out.documents,
            objects: out.objects,
            ..FileOut::default()
        };
        self.0.lock().unwrap().insert(key.key, kept);
    }
}

/// A deferred executor compiles its rules for the first file the memo does not hold, and not at
/// all for a run whose every file the memo holds; the findings are the same either way.
#[test]
fn a_deferred_executor_compiles_only_when_a_file_needs_it() {
    // Removed when the test ends, passed or failed.
    let dir = crate::testkit::TempDir::new("credlint-deferred");
    let path = dir.join("a.yaml");
    std::fs::write(
        &path,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {a: b}\n---\nkind: [\n",
    )
    .unwrap();
    let inputs = [InputFile {
        display: "a.yaml".into(),
        origin: Origin::File(path.clone()),
    }];
    let memo = Remembered::default();
    let first = Executor::deferred(Options::default());
    assert!(!first.linter().is_compiled());
    let linted = first.run_with(&inputs, Vec::new(), Some(&memo));
    assert!(first.linter().is_compiled());
    let second = Executor::deferred(Options::default());
    let recalled = second.run_with(&inputs, Vec::new(), Some(&memo));
    assert!(
        !second.linter().is_compiled(),
        "every file came from the memo"
    );
    assert_eq!(recalled.timings.cached, 1);
    assert_eq!(located(&recalled), located(&linted));
    assert!(
        located(&linted)
            .iter()
            .any(|(rule, line, _)| rule == "yaml-syntax" && *line == 6)
    );
}

/// The bundles a marked run names as touched are those with a member in a marked file, as the
/// bundles kept to the end of a run show them: for every fixture file marked in turn.
#[test]
fn a_marked_run_names_the_bundles_its_marked_files_touch() {
    let inputs = crate::testkit::fixture_inputs(&[
        "fixtures/bundle-duplicate",
        "fixtures/bundle-naming",
        "fixtures/clean",
    ]);
    assert!(inputs.len() > 5);
    let kept = Executor::new(Options {
        keep: Keep {
            bundles: true,
            programs: false,
        },
        ..Options::default()
    })
    .unwrap()
    .run_with(&inputs, Vec::new(), None);
    let compact = Executor::new(Options::default()).unwrap();
    let mut some = 0;
    for i in 0..inputs.len() {
        let marked = std::collections::HashSet::from([i]);
        let expected: std::collections::HashSet<String> = kept
            .bundles
            .iter()
            .filter(|b| {
                b.members
                    .values()
                    .flatten()
                    .any(|m| crate::load::source::Loc::from(&m.loc).file == i)
            })
            .map(|b| b.id())
            .collect();
        let run = compact.run_marking(&inputs, Vec::new(), None, &marked);
        assert!(run.bundles.is_empty());
        assert_eq!(run.touched, expected, "{}", inputs[i].display);
        assert_eq!(located(&run), located(&kept), "{}", inputs[i].display);
        some += usize::from(!expected.is_empty());
    }
    assert!(some > 3, "{some} files touch a bundle");
}

/// A large file is linted in segments, each scanning its own lines for misplaced pragmas: a
/// pragma in a segment with no bundle member is still reported, at its line and in its object,
/// once another segment shows the file holds a member, whichever comes first; a file of no
/// member at all is scanned only when every file is judged.
#[test]
fn pragmas_in_every_segment_of_a_large_file_are_found_where_the_file_needs_them() {
    let bundle = std::fs::read_to_string("fixtures/pragma-misplaced/good-bundle.yaml").unwrap();
    // Application objects, several segments' worth, one of them carrying a pragma.
    let app = |i: usize, pragma: bool| {
        let note = if pragma {
            "  # pragma: allowlist secret\n"
        } else {
            ""
        };
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-{i}\n  namespace: shop\n\
             data:\n{note}  settings: \"{}\"\n",
            "x".repeat(2000)
        )
    };
    let filler = |marked: usize| -> Vec<String> {
        (0..3 * SEGMENT_BYTES / 2000)
            .map(|i| app(i, i == marked))
            .collect()
    };
    let lines_of = |text: &str| -> Vec<(String, usize, Option<String>)> {
        text.lines()
            .enumerate()
            .filter(|(_, l)| *l == "  # pragma: allowlist secret")
            .map(|(i, _)| ("pragma-misplaced".to_string(), i + 1, None))
            .collect()
    };
    let found = |text: &str, everywhere: bool| -> Vec<(String, usize, Option<String>)> {
        let options = Options {
            pragma_everywhere: everywhere,
            ..Options::default()
        };
        let outcome = check_text("app.yaml", text, options).unwrap();
        let mut found: Vec<_> = outcome
            .findings
            .iter()
            .filter(|f| f.rule == "pragma-misplaced")
            .map(|f| {
                (
                    f.rule.clone(),
                    f.loc.line,
                    f.object.as_ref().map(|o| o.name.clone()),
                )
            })
            .collect();
        found.sort();
        found
    };
    let expect = |text: &str, names: &[&str]| {
        let mut want = lines_of(text);
        for (w, name) in want.iter_mut().zip(names) {
            w.2 = Some(name.to_string());
        }
        want
    };
    let last = 3 * SEGMENT_BYTES / 2000 - 1;
    // The member first, the pragma two segments on; the pragma first, the member last.
    let after = [vec![bundle.clone()], filler(last)].concat().join("---\n");
    let before = [filler(1), vec![bundle.clone()]].concat().join("---\n");
    assert!(after.len() > 2 * SEGMENT_BYTES);
    let app_name = |i: usize| format!("app-{i}");
    assert_eq!(found(&after, false), expect(&after, &[&app_name(last)]));
    assert_eq!(found(&before, false), expect(&before, &[&app_name(1)]));
    // No member anywhere: judged only when asked for every file.
    let alone = filler(last).join("---\n");
    assert_eq!(found(&alone, false), []);
    assert_eq!(found(&alone, true), expect(&alone, &[&app_name(last)]));
}

/// A memo that knows every file unread (from its bytes, read behind the run's back), keeps no
/// file's result, and keeps whole runs, counting those it gives back.
#[derive(Default)]
struct KeptWhole {
    runs: std::sync::Mutex<HashMap<[u8; 32], RunOut>>,
    given: std::sync::atomic::AtomicUsize,
}

impl Memo for KeptWhole {
    fn key(&self, _: bool, bytes: &[u8]) -> MemoKey {
        Remembered::default().key(false, bytes)
    }
    fn key_unread(&self, path: &std::path::Path, yaml_name: bool) -> Option<MemoKey> {
        Some(self.key(yaml_name, &std::fs::read(path).ok()?))
    }
    fn recall(&self, _: &MemoKey, _: usize) -> Option<FileOut> {
        None
    }
    fn remember(&self, _: &MemoKey, _: usize, _: &FileOut) {}
    fn recall_run(&self, key: &[u8; 32], files: usize) -> Option<RunOut> {
        let held = self.runs.lock().unwrap();
        let run = held.get(key).filter(|r| r.summary.files == files)?;
        self.given
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Some(RunOut {
            findings: run.findings.clone(),
            summary: run.summary.clone(),
            ignores: run.ignores.clone(),
            bundle_files: run.bundle_files.clone(),
        })
    }
    fn remember_run(&self, key: &[u8; 32], out: &Outcome) {
        let kept = RunOut {
            findings: out.findings.clone(),
            summary: out.summary.clone(),
            ignores: out.ignores.clone(),
            bundle_files: out.bundle_files.clone(),
        };
        self.runs.lock().unwrap().insert(*key, kept);
    }
}

/// A run the memo kept whole is given back whole for the very same files, whichever of them a
/// pre-commit run marks, with the findings, counts and touched bundles of a run without the
/// memo; a run of other files, or of the same files under other names, is run again.
#[test]
fn a_run_kept_whole_is_the_same_run_for_every_marked_file() {
    let inputs = crate::testkit::fixture_inputs(&[
        "fixtures/bundle-duplicate",
        "fixtures/bundle-incomplete",
        "fixtures/bundle-naming",
        "fixtures/identity-reused",
        "fixtures/ignore-unused",
        "fixtures/clean",
    ]);
    let executor = Executor::new(Options::default()).unwrap();
    let memo = KeptWhole::default();
    let none = std::collections::HashSet::new();
    let first = executor.run_marking(&inputs, Vec::new(), Some(&memo), &none);
    assert_eq!(memo.given.load(std::sync::atomic::Ordering::Relaxed), 0);
    assert!(!first.timings.whole);
    assert!(!first.ignores.is_empty() && first.summary.errors > 0);
    let mut touching = 0;
    for i in 0..inputs.len() {
        let marked = std::collections::HashSet::from([i]);
        let fresh = executor.run_marking(&inputs, Vec::new(), None, &marked);
        let kept = executor.run_marking(&inputs, Vec::new(), Some(&memo), &marked);
        assert!(kept.timings.whole, "{}", inputs[i].display);
        assert_eq!(kept.touched, fresh.touched, "{}", inputs[i].display);
        assert_eq!(
            format!("{:?}", kept.findings),
            format!("{:?}", fresh.findings)
        );
        assert_eq!(kept.summary, fresh.summary);
        assert_eq!(kept.ignores, fresh.ignores);
        assert_eq!(kept.files, fresh.files);
        touching += usize::from(!fresh.touched.is_empty());
    }
    assert!(touching > 5, "{touching} files touch a bundle");
    let given = memo.given.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(given, inputs.len());
    // One file fewer, and one file under another name: neither is the kept run.
    let fewer = executor.run_marking(&inputs[1..], Vec::new(), Some(&memo), &none);
    let mut renamed = inputs.clone();
    renamed[0].display.push_str(".again");
    let other = executor.run_marking(&renamed, Vec::new(), Some(&memo), &none);
    assert!(!fewer.timings.whole && !other.timings.whole);
    assert_eq!(memo.given.load(std::sync::atomic::Ordering::Relaxed), given);
}
