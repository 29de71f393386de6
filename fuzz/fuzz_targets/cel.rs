//! The CEL evaluation path. Three kinds of input:
//! - `E` and an expression: compiled as an untrusted policy's expression is (length, nesting
//!   and stack limits), evaluated on a credentials Job and Role with blame and as a string,
//!   and run as the validation of a Kyverno ValidatingPolicy through the policy evaluator;
//! - `O` and a manifest (the seeds are the fixtures): every object through the catalog's
//!   compiled rules and their blame, and through the generated policies;
//! - anything else: choices for an arbitrary object (the fields the rules read, any types),
//!   likewise.
//!
//! Properties: no panic; the same verdicts twice; blamed nodes and findings lie inside the
//! text; and the generated policies deny exactly the objects `check` reports their rule on.
#![no_main]

mod common;

use arbitrary::Unstructured;
use common::{ENGINE, Fuzzed};
use credlint::lint::cel::Cel;
use credlint::lint::kyverno::{PolicyFile, PolicySet};
use credlint::load::yaml::{self, Parsed};
use credlint::testkit::Choices;
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

const TARGETS: &str = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: o-credentials-0123abcd\n  \
annotations: {argocd.argoproj.io/hook: PreSync, argocd.argoproj.io/sync-wave: '1'}\nspec:\n  \
template:\n    spec:\n      serviceAccountName: o-credentials\n      containers:\n      - name: c\n        \
image: x@sha256:00\n        securityContext: {runAsNonRoot: true, capabilities: {drop: [ALL]}}\n      \
volumes: [{name: v, configMap: {name: o-credentials}}]\n---\napiVersion: rbac.authorization.k8s.io/v1\n\
kind: Role\nmetadata: {name: o-credentials}\nrules:\n- {apiGroups: [''], resources: [secrets], verbs: [create, list]}\n";

thread_local! {
    static CEL: Cel = Cel::new();
    static POLICIES: PolicySet = {
        let options = credlint::policy::Options::default();
        let text = credlint::policy::stream(&credlint::policy::generate(
            credlint::lint::catalog::Catalog::get(),
            &options,
        ));
        PolicySet::new(vec![PolicyFile { display: "policies.yaml".into(), text }])
    };
}

thread_local! {
    /// The policies' member condition (`credentials-member`), compiled once per thread.
    static MEMBER: (Cel, credlint::lint::cel::Program) = {
        let cel = Cel::new();
        let text = credlint::lint::catalog::Catalog::get()
            .condition("credentials-member")
            .expect("the member condition");
        let member = cel.compile(text).expect("it compiles");
        (cel, member)
    };
}

fuzz_target!(|data: &[u8]| {
    match data {
        [b'E', rest @ ..] => expression(&String::from_utf8_lossy(rest)),
        [b'O', rest @ ..] => objects(&String::from_utf8_lossy(rest)),
        _ => {
            let mut u = Unstructured::new(data);
            let mut c = Fuzzed(&mut u);
            let object = arbitrary_object(&mut c);
            objects(&object.to_string());
        }
    }
});

fn expression(text: &str) {
    let targets = yaml::parse(TARGETS);
    let compiled = CEL.with(|cel| cel.compile_untrusted(text));
    if let Ok(program) = compiled {
        for parsed in &targets {
            let Parsed::Document(doc) = parsed else {
                continue;
            };
            let (a, b, blame, string) = CEL.with(|cel| {
                let activation = cel.activation(&doc.root, &[], &[]);
                let a = activation.check(&program);
                let b = activation.check(&program);
                (
                    a,
                    b,
                    activation.blame(&program, &doc.root),
                    activation.string(&program),
                )
            });
            assert_eq!(a, b, "two verdicts for one expression");
            let _ = string;
            for path in blame {
                let span = credlint::load::locate::span_for(&doc.root, &path);
                assert!(span.end() <= TARGETS.len(), "blame outside the text");
            }
        }
    }
    // The same expression as a team policy's validation, through the policy evaluator.
    let policy = format!(
        "apiVersion: policies.kyverno.io/v1\nkind: ValidatingPolicy\nmetadata:\n  name: fuzz\nspec:\n  \
         matchConstraints:\n    resourceRules:\n    - apiGroups: ['*']\n      apiVersions: ['*']\n      \
         operations: [CREATE]\n      resources: ['*']\n  validations:\n  - expression: {}\n",
        Value::from(text)
    );
    let set = PolicySet::new(vec![PolicyFile {
        display: "fuzz.yaml".into(),
        text: policy,
    }]);
    for parsed in &targets {
        if let Parsed::Document(doc) = parsed
            && !set.policies.is_empty()
        {
            let first = set.decide(0, &doc.root);
            assert_eq!(
                first,
                set.decide(0, &doc.root),
                "two verdicts for one policy"
            );
        }
    }
}

fn objects(text: &str) {
    let files = vec![("objects.yaml".to_string(), text.to_string())];
    let outcome = ENGINE.with(|e| common::lint_twice(e, &files));
    let parsed_all = yaml::parse(text);
    let mut references = Vec::new();
    for parsed in &parsed_all {
        if let Parsed::Document(doc) = parsed {
            let mut list = Vec::new();
            credlint::model::object::objects(&doc.root, &mut list);
            references.extend(list.iter().map(|o| o.reference()));
        }
    }
    POLICIES.with(|set| {
        for parsed in parsed_all {
            let Parsed::Document(doc) = parsed else {
                continue;
            };
            let mut list = Vec::new();
            credlint::model::object::objects(&doc.root, &mut list);
            for obj in list {
                let reference = obj.reference();
                let reported = credlint::testkit::invariants::rules_on(&outcome, 0, &obj);
                // The API server refuses these before any policy sees them: a schema problem,
                // a document that does not parse, an object without a name.
                if reported.contains("schema")
                    || reported.contains("yaml-syntax")
                    || obj.name.is_none_or(str::is_empty)
                {
                    continue;
                }
                // Objects are told apart by kind, namespace and name: skip a repeated one.
                if references.iter().filter(|r| **r == reference).count() > 1 {
                    continue;
                }
                for (index, policy) in set.policies.iter().enumerate() {
                    let verdict = set.decide(index, obj.root);
                    // A member only the linter recognises, by the references between objects
                    // (a Role named `-creds`), is selected by no policy: the README's stated
                    // gap, excused only where the member condition does not select the object.
                    let gap = matches!(verdict, credlint::lint::kyverno::Verdict::NotMatched)
                        && !matches!(
                            MEMBER.with(|(cel, member)| cel.check(member, &cel.bind(obj.root))),
                            credlint::lint::cel::Verdict::Pass
                        );
                    if gap {
                        continue;
                    }
                    assert_eq!(
                        verdict.denies(),
                        reported.contains(policy.name.as_str()),
                        "policy {} and check disagree on {} {:?}: {verdict:?}",
                        policy.name,
                        obj.kind,
                        obj.name
                    );
                }
            }
        }
    });
}

const KINDS: &[(&str, &str)] = &[
    ("rbac.authorization.k8s.io/v1", "Role"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ("v1", "ServiceAccount"),
    ("v1", "ConfigMap"),
    ("batch/v1", "Job"),
    ("external-secrets.io/v1", "ExternalSecret"),
    ("external-secrets.io/v1", "ClusterSecretStore"),
];

const KEYS: &[&str] = &[
    "metadata",
    "name",
    "namespace",
    "annotations",
    "argocd.argoproj.io/hook",
    "argocd.argoproj.io/sync-wave",
    "argocd.argoproj.io/hook-delete-policy",
    "helm.sh/hook",
    "helm.sh/hook-weight",
    "helm.sh/hook-delete-policy",
    "rules",
    "apiGroups",
    "resources",
    "resourceNames",
    "verbs",
    "nonResourceURLs",
    "spec",
    "template",
    "containers",
    "initContainers",
    "ephemeralContainers",
    "securityContext",
    "runAsNonRoot",
    "runAsUser",
    "readOnlyRootFilesystem",
    "capabilities",
    "drop",
    "add",
    "allowPrivilegeEscalation",
    "privileged",
    "seccompProfile",
    "type",
    "hostNetwork",
    "hostPID",
    "hostIPC",
    "volumes",
    "hostPath",
    "ports",
    "hostPort",
    "image",
    "ttlSecondsAfterFinished",
    "dataFrom",
    "sourceRef",
    "generatorRef",
    "conditions",
    "namespaceSelector",
    "configMap",
    "serviceAccountName",
    "jobTemplate",
    "data",
];

const STRINGS: &[&str] = &[
    "",
    "*",
    "PreSync",
    "Sync",
    "0",
    "1",
    "x",
    "ALL",
    "NET_ADMIN",
    "RuntimeDefault",
    "Localhost",
    "Unconfined",
    "create",
    "get",
    "patch",
    "delete",
    "list",
    "secrets",
    "pods",
    "passwords",
    "externalsecrets",
    "external-secrets.io",
    "generators.external-secrets.io",
    "BeforeHookCreation",
    "HookSucceeded",
    "BeforeHookCreation,HookSucceeded",
    "pre-install",
    "o-credentials",
    "o-credentials-0123abcd",
    "x@sha256:00",
    "reg/x@sha256:aaaaaaaaaaaaaaaa\
    aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
];

fn arbitrary_object(c: &mut dyn Choices) -> Value {
    let (api, kind) = *c.pick(KINDS);
    let mut object = json!({"apiVersion": api, "kind": kind});
    let name = if kind == "Job" {
        "o-credentials-0123abcd"
    } else {
        "o-credentials"
    };
    object["metadata"] = json!({"name": name});
    for _ in 0..c.below(6) {
        let key = *c.pick(&["metadata", "rules", "spec", "roleRef", "subjects", "data"]);
        object[key] = value(c, 4);
    }
    if c.chance(2) && object["metadata"].is_object() {
        object["metadata"]["name"] = json!(name);
    }
    object
}

fn value(c: &mut dyn Choices, depth: usize) -> Value {
    match if depth == 0 { c.below(5) } else { c.below(8) } {
        0 => Value::Null,
        1 => json!(c.chance(2)),
        2 => json!(c.below(70_000) as i64 - 1),
        3 => json!(*c.pick(STRINGS)),
        4 => json!(0.5),
        5 | 6 => {
            let mut map = serde_json::Map::new();
            for _ in 0..c.below(5) {
                map.insert((*c.pick(KEYS)).to_string(), value(c, depth - 1));
            }
            Value::Object(map)
        }
        _ => Value::Array((0..c.below(4)).map(|_| value(c, depth - 1)).collect()),
    }
}
