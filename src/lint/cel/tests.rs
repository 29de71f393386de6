use super::reads::Pattern;
use super::*;
use crate::load::locate::{Seg, span_for};
use crate::load::yaml::{Parsed, parse};

fn root(text: &str) -> Node<'_> {
    match parse(text).into_iter().next() {
        Some(Parsed::Document(d)) => d.root,
        other => panic!("{other:?}"),
    }
}

/// Evaluates `expr` on the object and returns the verdict and the blamed text.
fn run(text: &str, vars: &[(&str, &str)], expr: &str) -> (Verdict, Vec<String>) {
    let cel = Cel::new();
    let node = root(text);
    let variables: Vec<(String, Program)> = vars
        .iter()
        .map(|(n, e)| (n.to_string(), cel.compile(e).unwrap()))
        .collect();
    let program = cel.compile(expr).unwrap();
    let act = cel.activation(&node, &variables, &[]);
    let verdict = act.check(&program);
    let blamed = act
        .blame(&program, &node)
        .iter()
        .map(|p| text[span_for(&node, p).range()].to_string())
        .collect();
    (verdict, blamed)
}

const ROLE: &str = "kind: Role\nrules:\n  - apiGroups: ['']\n    resources: [secrets]\n    verbs: [get, list, patch, watch]\n";

#[test]
fn blames_each_offending_list_item() {
    let (verdict, blamed) = run(
        ROLE,
        &[],
        "object.rules.all(r, r.verbs.all(v, v in ['create', 'get', 'patch', 'delete']))",
    );
    assert_eq!(verdict, Verdict::Deny);
    assert_eq!(blamed, vec!["list", "watch"]);
}

#[test]
fn guards_are_not_blamed_in_an_or() {
    let (_, blamed) = run(
        ROLE,
        &[("permitted", "['create', 'get', 'patch', 'delete']")],
        "object.rules.all(r, !has(r.verbs) || r.verbs.all(v, v == '*' || v in variables.permitted))",
    );
    assert_eq!(blamed, vec!["list", "watch"]);
}

#[test]
fn a_missing_field_is_shown_where_it_should_be() {
    let job = "kind: Job\nspec:\n  template:\n    spec:\n      containers:\n        - name: a\n          securityContext:\n            privileged: false\n        - name: b\n";
    let (verdict, blamed) = run(
        job,
        &[],
        "object.spec.template.spec.containers.all(c, c.?securityContext.?readOnlyRootFilesystem.orValue(false) == true)",
    );
    assert_eq!(verdict, Verdict::Deny);
    assert_eq!(blamed, vec!["securityContext", "name: b"]);
}

#[test]
fn pod_level_values_are_blamed_when_the_container_inherits_them() {
    let job = "kind: Job\nspec:\n  template:\n    spec:\n      securityContext:\n        runAsNonRoot: false\n      containers:\n        - name: a\n";
    let (_, blamed) = run(
        job,
        &[("pod", "object.spec.template.spec")],
        "object.spec.template.spec.containers.all(c, c.?securityContext.?runAsNonRoot.orValue(variables.pod.?securityContext.?runAsNonRoot.orValue(false)) == true)",
    );
    assert_eq!(blamed, vec!["false"]);
}

#[test]
fn variables_that_concatenate_lists_keep_element_paths() {
    let job = "kind: Job\nspec:\n  initContainers:\n    - name: i\n      image: busybox\n  containers:\n    - name: c\n      image: x@sha256:00\n";
    let (_, blamed) = run(
        job,
        &[(
            "all",
            "object.spec.containers + object.spec.?initContainers.orValue([])",
        )],
        "variables.all.all(c, c.image.contains('@sha256:'))",
    );
    assert_eq!(blamed, vec!["busybox"]);
}

#[test]
fn evaluation_errors_are_denials() {
    let (verdict, _) = run(ROLE, &[], "object.missing.field == 1");
    assert!(matches!(verdict, Verdict::Error(_)), "{verdict:?}");
    let (verdict, _) = run(ROLE, &[], "'not a bool'");
    assert!(matches!(verdict, Verdict::Error(_)));
}

#[test]
fn a_failing_variable_fails_what_uses_it_only() {
    let (verdict, _) = run(ROLE, &[("bad", "object.nope")], "variables.bad == 1");
    assert!(matches!(verdict, Verdict::Error(_)));
    let (verdict, _) = run(ROLE, &[("bad", "object.nope")], "object.kind == 'Role'");
    assert_eq!(verdict, Verdict::Pass);
}

#[test]
fn map_keys_are_blamed_at_the_key() {
    let text = "kind: X\nmetadata:\n  annotations:\n    ok: a\n    bad key: b\n";
    let (_, blamed) = run(
        text,
        &[],
        "object.metadata.annotations.all(k, !k.contains(' '))",
    );
    assert_eq!(blamed, vec!["bad key"]);
}

#[test]
fn annotations_through_optional_index() {
    let text = "kind: X\nmetadata:\n  annotations:\n    argocd.argoproj.io/hook: Sync\n";
    let (_, blamed) = run(
        text,
        &[],
        "object.metadata.?annotations[?'argocd.argoproj.io/hook'].orValue('') == 'PreSync'",
    );
    assert_eq!(blamed, vec!["Sync"]);
    let text = "kind: X\nmetadata:\n  name: a\n";
    let (_, blamed) = run(
        text,
        &[],
        "object.metadata.?annotations[?'argocd.argoproj.io/hook'].orValue('') == 'PreSync'",
    );
    assert_eq!(blamed, vec!["metadata"]);
}

#[test]
fn integers_stay_integers() {
    let (verdict, _) = run("kind: X\ncount: 1\n", &[], "object.count + 1 == 2");
    assert_eq!(verdict, Verdict::Pass);
    let _ = Seg::Index(0);
}

/// The Pratt parser credlint compiles with gives the same trees as the crate's ANTLR parser for
/// every expression credlint ships: conditions, variables and validations, as written and with
/// variables inlined (node ids aside).
#[test]
fn both_parsers_agree_on_every_shipped_expression() {
    // The ANTLR parser recurses deeply on long expressions; an unoptimised
    // build overflows the test harness's 2 MiB thread stack.
    std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(parsers_agree)
        .unwrap()
        .join()
        .unwrap();
}

fn parsers_agree() {
    let catalog = crate::lint::catalog::Catalog::get();
    let mut texts: Vec<String> = catalog.conditions.iter().map(|(_, t)| t.clone()).collect();
    for rule in &catalog.rules {
        let Some(object) = &rule.object else { continue };
        let mut local = Vec::new();
        for (name, expr) in &object.variables {
            texts.push(expr.clone());
            local.push((
                name.clone(),
                format!("({})", super::inline::variables(expr, &local)),
            ));
        }
        for v in &object.validations {
            texts.push(v.expression.clone());
            texts.push(super::inline::variables(&v.expression, &local));
        }
    }
    let ids = ::regex::Regex::new(r"id: \d+").unwrap();
    let mut env = cel::Env::stdlib();
    env.add_extension(cel::extensions::strings).unwrap();
    for text in &texts {
        let antlr = env.compile(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        let pratt = super::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        let a = ids
            .replace_all(&format!("{:?}", antlr.expression()), "id: _")
            .into_owned();
        let b = ids
            .replace_all(&format!("{:?}", pratt.expression()), "id: _")
            .into_owned();
        assert_eq!(a, b, "{text}");
    }
    assert!(texts.len() > 60, "{}", texts.len());
}

#[test]
fn a_result_that_is_not_a_boolean_is_described_the_same_every_time() {
    // A map's entries come out of a hash map: printing them gave a message that changed from
    // run to run, and so did the report of `check --policy`.
    let object = "spec: {a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8}\n";
    let messages: std::collections::BTreeSet<String> = (0..20)
        .map(|_| match run(object, &[], "object.spec").0 {
            Verdict::Error(e) => e,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        messages.into_iter().collect::<Vec<_>>(),
        vec!["the expression gave a map of 8 entries, not a boolean".to_string()]
    );
    let (verdict, _) = run(object, &[], "[object.spec, 1]");
    assert_eq!(
        verdict,
        Verdict::Error("the expression gave a list of 2 items, not a boolean".into())
    );
}

/// Every shipped program, compiled as the engine compiles it.
fn shipped_programs(cel: &Cel) -> (RuleSet, Vec<(String, super::ruleset::Compiled)>) {
    let catalog = crate::lint::catalog::Catalog::get();
    let mut rules = RuleSet::default();
    let mut programs = Vec::new();
    for (name, text) in &catalog.conditions {
        let program = cel.compile(text).unwrap();
        programs.push((name.clone(), rules.prepare(program, text)));
    }
    for rule in &catalog.rules {
        let Some(object) = &rule.object else { continue };
        let texts: Vec<&str> = object
            .validations
            .iter()
            .map(|v| v.expression.as_str())
            .collect();
        let compiled = rules
            .add(cel, &object.variables, &[("credentialsImage", "")], &texts)
            .unwrap();
        for (i, c) in compiled.validations.into_iter().enumerate() {
            programs.push((format!("{}#{i}", rule.id), c));
        }
    }
    (rules, programs)
}

/// The projection is a sound cache key: on every object of every fixture, and on copies renamed
/// so that names alone differ, two objects with one key get one verdict from the full
/// evaluation. And it is a useful key: credentials objects of different owners share one.
#[test]
fn equal_projections_give_equal_verdicts_on_every_fixture_object() {
    let cel = Cel::new();
    let (rules, programs) = shipped_programs(&cel);
    let texts = fixture_texts();
    let objects = objects_of(&texts);
    let mut shared = 0;
    for (name, compiled) in &programs {
        let mut seen: std::collections::HashMap<Vec<u8>, Verdict> = Default::default();
        for object in &objects {
            let mut key = Vec::new();
            reads::key(object, &compiled.pattern, &mut key);
            let mut bound = cel.bind(object);
            rules.bind(&mut bound, &compiled.needs);
            let verdict = bound.check(&compiled.program);
            match seen.get(&key) {
                Some(v) => assert_eq!(*v, verdict, "{name}: {}", compiled.program.text()),
                None => {
                    seen.insert(key, verdict);
                }
            }
        }
        shared += objects.len() - seen.len();
    }
    assert!(shared > 0);
    let object = |name: &str| root_owned(&format!("kind: Role\nmetadata: {{name: {name}}}\n"));
    let (_, member) = programs
        .iter()
        .find(|(n, _)| n == "credentials-object")
        .unwrap();
    let keys: Vec<Vec<u8>> = ["a-credentials", "b-credentials", "b-credential"]
        .iter()
        .map(|n| {
            let mut key = Vec::new();
            reads::key(&object(n), &member.pattern, &mut key);
            key
        })
        .collect();
    assert_eq!(keys[0], keys[1]);
    assert_ne!(keys[1], keys[2]);
}

/// Every fixture file's text, and copies renamed so that names alone differ: owners renamed,
/// and names that are no longer credentials names.
fn fixture_texts() -> Vec<String> {
    crate::testkit::fixture_texts()
        .into_iter()
        .flat_map(|text| {
            [
                text.replace("-credentials", "x-credentials"),
                text.replace("-credentials", "-credential"),
                text,
            ]
        })
        .collect()
}

fn objects_of(texts: &[String]) -> Vec<Node<'_>> {
    let mut objects = Vec::new();
    for text in texts {
        for parsed in parse(text) {
            if let Parsed::Document(d) = parsed {
                objects.push(d.root);
            }
        }
    }
    assert!(objects.len() > 500, "{}", objects.len());
    objects
}

/// The engine looks an object's verdicts up once, by its key on the union of what its programs
/// read: that key must decide every program's own key. Checked for the union of all shipped
/// programs and of each rule's, on every fixture object and renamed copies. Making a union
/// forget a test on a name (e.g. `Tests` merging to the first set) fails it.
#[test]
fn a_key_on_a_union_decides_the_key_of_each_part() {
    let cel = Cel::new();
    let (_, programs) = shipped_programs(&cel);
    let texts = fixture_texts();
    let objects = objects_of(&texts);
    let mut groups: Vec<Vec<&Pattern>> = vec![programs.iter().map(|(_, c)| &c.pattern).collect()];
    let mut by_rule: std::collections::BTreeMap<&str, Vec<&Pattern>> = Default::default();
    for (name, compiled) in &programs {
        let rule = name.split('#').next().unwrap_or(name);
        by_rule.entry(rule).or_default().push(&compiled.pattern);
    }
    groups.extend(by_rule.into_values());
    let mut shared = 0;
    for parts in &groups {
        let union = Pattern::union(parts.iter().copied());
        let mut seen: std::collections::HashMap<Vec<u8>, Vec<Vec<u8>>> = Default::default();
        for object in &objects {
            let mut key = Vec::new();
            reads::key(object, &union, &mut key);
            let keys: Vec<Vec<u8>> = parts
                .iter()
                .map(|p| {
                    let mut k = Vec::new();
                    reads::key(object, p, &mut k);
                    k
                })
                .collect();
            match seen.get(&key) {
                Some(first) => assert_eq!(*first, keys, "{union:?}"),
                None => {
                    seen.insert(key, keys);
                }
            }
        }
        shared += objects.len() - seen.len();
    }
    assert!(shared > objects.len(), "{shared}");
}

fn root_owned(text: &str) -> Node<'static> {
    root(Box::leak(text.to_string().into_boxed_str()))
}

/// `orValue` on a value that is not optional, as Kyverno (1.19+) evaluates it: the value
/// itself; both sides are evaluated, so an error in either is the result.
#[test]
fn or_value_on_a_plain_value_is_that_value() {
    let pod = "kind: Pod\nspec:\n  containers:\n    - name: a\n      securityContext:\n        capabilities:\n          drop: [ALL]\n";
    let verdict = |expr: &str| run(pod, &[], expr).0;
    for (expr, expected) in [
        // A list and a map reached with `.field` are plain values.
        (
            "object.spec.containers.orValue([]).size() == 1",
            Verdict::Pass,
        ),
        (
            "object.spec.containers.all(c, c.securityContext.capabilities.drop.orValue([]).exists(d, d == 'ALL'))",
            Verdict::Pass,
        ),
        (
            "object.spec.orValue({}).containers.size() == 1",
            Verdict::Pass,
        ),
        ("'x'.orValue('y') == 'x'", Verdict::Pass),
        ("1.orValue(2) == 1", Verdict::Pass),
        // Optionals keep their meaning.
        ("optional.of(1).orValue(2) == 1", Verdict::Pass),
        ("optional.none().orValue(2) == 2", Verdict::Pass),
        (
            "object.spec.?hostPID.orValue(false) == false",
            Verdict::Pass,
        ),
    ] {
        assert_eq!(verdict(expr), expected, "{expr}");
    }
    // An error on either side is the result, as is a missing field before `orValue`.
    for expr in [
        "object.spec.containers.orValue(1 / 0).size() == 1",
        "object.spec.hostPID.orValue(false) == false",
        "(1 / 0).orValue(2) == 2",
    ] {
        assert!(matches!(verdict(expr), Verdict::Error(_)), "{expr}");
    }
    // The other optional functions stay errors on a plain value.
    for expr in [
        "object.spec.containers.hasValue()",
        "object.spec.containers.value().size() == 1",
        "object.spec.containers.or(optional.none()).hasValue()",
    ] {
        assert!(matches!(verdict(expr), Verdict::Error(_)), "{expr}");
    }
}

/// A long string enters a verdict key as its digest: two values that differ anywhere still get
/// different keys, the same value the same key, and the key stays small.
#[test]
fn long_strings_are_keyed_by_digest_and_still_told_apart() {
    let long = "x".repeat(200_000);
    let mut changed = long.clone();
    changed.replace_range(150_000..150_001, "y");
    let key_of = |value: &str| {
        let text = format!("data:\n  k: {value}\n");
        let mut key = Vec::new();
        reads::key(&root(&text), &Pattern::Whole, &mut key);
        key
    };
    let (a, b, c) = (key_of(&long), key_of(&changed), key_of(&long));
    assert_eq!(a, c);
    assert_ne!(a, b);
    assert!(a.len() < 100, "{} bytes", a.len());
    // Short strings are still keyed by their bytes.
    assert!(
        key_of("short-value")
            .windows(11)
            .any(|w| w == b"short-value")
    );
}
