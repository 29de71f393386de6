use super::*;
use crate::load::yaml::{Parsed, parse};

const SERVICE_ACCOUNT: &str = "\
apiVersion: v1
kind: ServiceAccount
metadata:
  name: shop-sessions-credentials
  namespace: shop
  labels:
    app.kubernetes.io/name: shop-sessions
    app.kubernetes.io/component: credentials
  annotations:
    argocd.argoproj.io/hook: PreSync
    argocd.argoproj.io/sync-wave: \"0\"
    argocd.argoproj.io/hook-delete-policy: BeforeHookCreation
automountServiceAccountToken: true
";

const ROLE: &str = "\
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: shop-sessions-credentials
  namespace: shop
  annotations:
    argocd.argoproj.io/hook: PreSync
    argocd.argoproj.io/sync-wave: \"0\"
    argocd.argoproj.io/hook-delete-policy: BeforeHookCreation
rules:
- apiGroups: [\"\"]
  resources: [secrets]
  verbs: [create]
- apiGroups: [\"\"]
  resources: [secrets]
  resourceNames: [shop-sessions-app]
  verbs: [get, patch]
- apiGroups: [external-secrets.io]
  resources: [externalsecrets]
  resourceNames: [shop-sessions-app]
  verbs: [get, delete]
- apiGroups: [generators.external-secrets.io]
  resources: [passwords]
  resourceNames: [shop-sessions-password]
  verbs: [delete]
- apiGroups: [\"\"]
  resources: [pods]
  resourceNames: [shop-sessions-0]
  verbs: [get, delete]
";

const ROLE_BINDING: &str = "\
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: shop-sessions-credentials
  namespace: shop
  annotations:
    argocd.argoproj.io/hook: PreSync
    argocd.argoproj.io/sync-wave: \"0\"
    argocd.argoproj.io/hook-delete-policy: BeforeHookCreation
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: shop-sessions-credentials
subjects:
- kind: ServiceAccount
  name: shop-sessions-credentials
  namespace: shop
";

// `binaryData` is a block scalar wrapped at 76 columns, as `base64` writes it: the API server
// skips the line breaks.
const CONFIG_MAP: &str = "\
apiVersion: v1
kind: ConfigMap
metadata:
  name: shop-sessions-credentials
  namespace: shop
  annotations:
    argocd.argoproj.io/hook: PreSync
    argocd.argoproj.io/sync-wave: \"0\"
    argocd.argoproj.io/hook-delete-policy: BeforeHookCreation
immutable: false
data:
  plan.json: |
    {\"owner\": \"shop-sessions\", \"kind\": \"cache\",
     \"secrets\": [{\"name\": \"shop-sessions-app\", \"keys\": {\"password\": {\"length\": 32}}}],
     \"retiredGenerators\": [\"shop-sessions-password\"], \"serverPods\": [\"shop-sessions-0\"]}
  create.py: |
    #!/usr/bin/env python3
    import json, sys
    plan = json.load(open(sys.argv[1]))
binaryData:
  seed.bin: |
    AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4
    OTo7PD0+P0BBQkNERUZHSElKS0xNTk9QUVJTVFVWV1hZWltcXV5fYGFiY2RlZmdoaWprbG1ub3Bx
    cnN0dXZ3eA==
  empty.bin: \"\"
";

const JOB: &str = "\
apiVersion: batch/v1
kind: Job
metadata:
  name: shop-sessions-credentials-0123abcd
  namespace: shop
  creationTimestamp: null
  labels:
    app.kubernetes.io/name: shop-sessions
  annotations:
    argocd.argoproj.io/hook: PreSync
    argocd.argoproj.io/sync-wave: \"1\"
    argocd.argoproj.io/hook-delete-policy: BeforeHookCreation,HookSucceeded
spec:
  backoffLimit: 2
  activeDeadlineSeconds: 600
  ttlSecondsAfterFinished: 3600
  template:
    metadata:
      creationTimestamp: null
      labels:
        app.kubernetes.io/name: shop-sessions
    spec:
      serviceAccountName: shop-sessions-credentials
      restartPolicy: Never
      automountServiceAccountToken: true
      hostNetwork: false
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
        runAsGroup: 65532
        fsGroup: 65532
        seccompProfile:
          type: RuntimeDefault
      containers:
      - name: create
        image: registry.example/credentials@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
        imagePullPolicy: IfNotPresent
        command: [python3]
        args: [/credentials/create.py, /credentials/plan.json]
        env:
        - name: POD_NAMESPACE
          valueFrom:
            fieldRef:
              fieldPath: metadata.namespace
        resources:
          requests: {cpu: 50m, memory: 64Mi}
          limits: {cpu: 1, memory: 128Mi, ephemeral-storage: 0.5Gi}
        securityContext:
          allowPrivilegeEscalation: false
          privileged: false
          readOnlyRootFilesystem: true
          runAsNonRoot: true
          capabilities:
            drop: [ALL]
        volumeMounts:
        - name: credentials
          mountPath: /credentials
          readOnly: true
        - name: tmp
          mountPath: /tmp
      volumes:
      - name: credentials
        configMap:
          name: shop-sessions-credentials
          defaultMode: 0444
          items:
          - key: create.py
            path: create.py
          - key: plan.json
            path: plan.json
      - name: tmp
        emptyDir:
          sizeLimit: 16Mi
status: {}
";

/// One issue, with the text it points at and where that starts (1-based line and column).
#[derive(Debug)]
struct Found {
    text: String,
    line: usize,
    column: usize,
    message: String,
}

/// Lints every checked document of `text` with the real loader, so spans are real.
fn lint(text: &str) -> Vec<Found> {
    let mut out = Vec::new();
    for parsed in parse(text) {
        let Parsed::Document(d) = parsed else {
            panic!("test input does not parse: {parsed:?}")
        };
        let field = |k: &str| d.root.get(k).and_then(Node::as_str).unwrap_or("");
        for issue in check(&d.root, field("apiVersion"), field("kind")) {
            let before = &text[..issue.span.start()];
            out.push(Found {
                text: text[issue.span.range()].to_string(),
                line: before.matches('\n').count() + 1,
                column: before.chars().rev().take_while(|&c| c != '\n').count() + 1,
                message: issue.message,
            });
        }
    }
    out
}

fn lint_one(text: &str) -> Found {
    let mut found = lint(text);
    assert_eq!(found.len(), 1, "{found:#?}");
    found.remove(0)
}

/// `base` with `old` (which must occur exactly once) replaced.
fn edit(base: &str, old: &str, new: &str) -> String {
    assert_eq!(base.matches(old).count(), 1, "`{old}` must occur once");
    base.replacen(old, new, 1)
}

#[test]
fn a_correct_bundle_has_no_issue() {
    for object in [SERVICE_ACCOUNT, ROLE, ROLE_BINDING, CONFIG_MAP, JOB] {
        let Some(Parsed::Document(d)) = parse(object).into_iter().next() else {
            panic!()
        };
        let field = |k: &str| d.root.get(k).and_then(Node::as_str).unwrap_or("");
        // Not passing by being skipped.
        assert!(is_checked(field("apiVersion"), field("kind")));
        let issues = check(&d.root, field("apiVersion"), field("kind"));
        assert!(issues.is_empty(), "{issues:#?}");
    }
    let stream = [SERVICE_ACCOUNT, ROLE, ROLE_BINDING, CONFIG_MAP, JOB].join("---\n");
    assert!(lint(&stream).is_empty());
}

#[test]
fn a_misspelt_field_is_reported_at_its_key_with_the_right_name() {
    let text = edit(
        ROLE,
        "  resourceNames: [shop-sessions-password]",
        "  resourceName: [shop-sessions-password]",
    );
    let found = lint_one(&text);
    assert_eq!(found.text, "resourceName");
    assert_eq!((found.line, found.column), (24, 3));
    assert_eq!(
        found.message,
        "unknown field `resourceName` in `rules[3]` (the API server rejects unknown fields); \
         did you mean `resourceNames`?"
    );
}

#[test]
fn an_unknown_field_deep_in_a_container_names_its_place() {
    let text = edit(
        JOB,
        "          readOnlyRootFilesystem: true\n",
        "          readOnlyRootFileSystem: true\n",
    );
    let found = lint_one(&text);
    assert_eq!(found.text, "readOnlyRootFileSystem");
    assert!(
        found.message.starts_with(
            "unknown field `readOnlyRootFileSystem` in \
             `spec.template.spec.containers[0].securityContext`"
        ),
        "{}",
        found.message
    );
    assert!(
        found
            .message
            .ends_with("did you mean `readOnlyRootFilesystem`?")
    );
    // No suggestion when nothing is close; top-level fields are "in the Kind".
    let text = edit(
        CONFIG_MAP,
        "immutable: false\n",
        "immutable: false\nspec: {}\n",
    );
    let found = lint_one(&text);
    assert_eq!(found.text, "spec");
    assert_eq!(
        found.message,
        "unknown field `spec` in the ConfigMap (the API server rejects unknown fields)"
    );
}

#[test]
fn an_unknown_field_is_reported_whatever_its_value() {
    let text = edit(
        ROLE,
        "  verbs: [create]\n",
        "  verbs: [create]\n  resourceName: ~\n",
    );
    assert_eq!(lint_one(&text).text, "resourceName");
}

#[test]
fn a_quoted_boolean_is_reported_at_the_value() {
    let text = edit(
        JOB,
        "          readOnlyRootFilesystem: true\n",
        "          readOnlyRootFilesystem: 'true'\n",
    );
    let found = lint_one(&text);
    assert_eq!(found.text, "'true'");
    assert_eq!((found.line, found.column), (51, 35));
    assert_eq!(
        found.message,
        "`spec.template.spec.containers[0].securityContext.readOnlyRootFilesystem` must be a \
         boolean, found a string `'true'`; the API server rejects the Job"
    );
}

#[test]
fn an_unquoted_annotation_value_is_reported_at_the_value() {
    let text = edit(
        SERVICE_ACCOUNT,
        "argocd.argoproj.io/sync-wave: \"0\"",
        "argocd.argoproj.io/sync-wave: 1",
    );
    let found = lint_one(&text);
    assert_eq!(found.text, "1");
    assert_eq!((found.line, found.column), (11, 35));
    assert_eq!(
        found.message,
        "annotation values must be strings, found an integer `1` at \
         `metadata.annotations[\"argocd.argoproj.io/sync-wave\"]` (quote it); \
         the API server rejects the ServiceAccount"
    );
    // `yes` is a boolean to Kubernetes.
    let text = edit(SERVICE_ACCOUNT, "component: credentials", "component: yes");
    let found = lint_one(&text);
    assert_eq!(found.text, "yes");
    assert!(
        found
            .message
            .starts_with("label values must be strings, found a boolean `true`")
    );
}

#[test]
fn integers_must_be_integers() {
    let text = edit(
        JOB,
        "ttlSecondsAfterFinished: 3600",
        "ttlSecondsAfterFinished: \"100\"",
    );
    let found = lint_one(&text);
    assert_eq!(found.text, "\"100\"");
    assert_eq!(
        found.message,
        "`spec.ttlSecondsAfterFinished` must be an integer, found a string `\"100\"`; \
         the API server rejects the Job"
    );
    let text = edit(JOB, "runAsUser: 65532", "runAsUser: 1.5");
    let found = lint_one(&text);
    assert_eq!(found.text, "1.5");
    assert!(found.message.starts_with(
        "`spec.template.spec.securityContext.runAsUser` must be an integer, found a number `1.5`"
    ));
    // An int32 field refuses what does not fit in 32 bits.
    let text = edit(JOB, "backoffLimit: 2", "backoffLimit: 3000000000");
    let found = lint_one(&text);
    assert_eq!(found.text, "3000000000");
    assert!(
        found
            .message
            .contains("must be an integer from -2147483648 to 2147483647")
    );
}

#[test]
fn what_the_api_server_accepts_passes() {
    let accepted = [
        // kubectl sends a whole float as an integer.
        ("runAsUser: 65532", "runAsUser: 65532.0"),
        ("backoffLimit: 2", "backoffLimit: 2e0"),
        // null is Go's zero value, for any field.
        ("hostNetwork: false", "hostNetwork: null"),
        ("privileged: false", "privileged: ~"),
        (
            "    metadata:\n      creationTimestamp: null\n      labels:\n        app.kubernetes.io/name: shop-sessions\n",
            "    metadata: ~\n",
        ),
        (
            "args: [/credentials/create.py, /credentials/plan.json]",
            "args: [null]",
        ),
        ("fieldPath: metadata.namespace", "fieldPath: null"),
        ("memory: 64Mi}", "memory: null}"),
        // Empty collections.
        ("status: {}", "status: {conditions: []}"),
        (
            "  labels:\n    app.kubernetes.io/name: shop-sessions\n  annotations:",
            "  labels: {}\n  annotations:",
        ),
        // Quantities as numbers, and every suffix form.
        ("cpu: 50m", "cpu: 0.05"),
        ("memory: 64Mi}", "memory: 64e6}"),
        ("sizeLimit: 16Mi", "sizeLimit: +1.5E-3"),
        ("sizeLimit: 16Mi", "sizeLimit: \".5k\""),
    ];
    for (old, new) in accepted {
        let text = edit(JOB, old, new);
        let found = lint(&text);
        assert!(found.is_empty(), "{new}: {found:#?}");
    }
    let text = edit(
        ROLE_BINDING,
        "ServiceAccount\n  name: shop-sessions-credentials\n  namespace: shop\n",
        "ServiceAccount\n  name: shop-sessions-credentials\n  namespace: ~\n  apiGroup: \"\"\n",
    );
    assert!(lint(&text).is_empty());
    let text = edit(
        CONFIG_MAP,
        "  empty.bin: \"\"\n",
        "  empty.bin: ~\n  short.bin: YQ==\n",
    );
    assert!(lint(&text).is_empty());
}

#[test]
fn every_error_of_an_object_is_reported_in_order() {
    let text = edit(JOB, "backoffLimit: 2", "backoffLimit: two");
    let text = edit(
        &text,
        "runAsNonRoot: true\n        runAsUser",
        "runAsNonRoot: 1\n        runAsUser",
    );
    let text = edit(
        &text,
        "drop: [ALL]",
        "drop: [ALL, 7]\n            dorp: [ALL]",
    );
    let text = edit(&text, "readOnly: true", "readOnly: \"true\"");
    let found = lint(&text);
    let texts: Vec<&str> = found.iter().map(|f| f.text.as_str()).collect();
    assert_eq!(texts, ["two", "1", "7", "dorp", "\"true\""], "{found:#?}");
    assert!(found[2].message.starts_with(
        "`spec.template.spec.containers[0].securityContext.capabilities.drop[1]` must be a \
         string, found an integer `7` (quote it)"
    ));
    assert!(found[3].message.ends_with("did you mean `drop`?"));
}

#[test]
fn quantities_int_or_strings_and_times_have_their_formats() {
    let text = edit(JOB, "memory: 128Mi", "memory: 128MB");
    let found = lint_one(&text);
    assert_eq!(found.text, "128MB");
    assert_eq!(
        found.message,
        "values of `spec.template.spec.containers[0].resources.limits` must each be a quantity \
         (a number, or a string such as `250m`, `1.5` or `64Mi`), found a string `128MB` at \
         `spec.template.spec.containers[0].resources.limits.memory`; the API server rejects the Job"
    );
    let text = edit(JOB, "sizeLimit: 16Mi", "sizeLimit: true");
    let found = lint_one(&text);
    assert_eq!(found.text, "true");
    assert!(
        found.message.contains("must be a quantity"),
        "{}",
        found.message
    );

    let probe = "        imagePullPolicy: IfNotPresent\n        startupProbe:\n          httpGet: {path: /healthz, port: PORT}\n";
    let with_port = |port: &str| {
        edit(
            JOB,
            "        imagePullPolicy: IfNotPresent\n",
            &probe.replace("PORT", port),
        )
    };
    assert!(lint(&with_port("8080")).is_empty());
    assert!(lint(&with_port("http")).is_empty());
    let found = lint_one(&with_port("80.5"));
    assert_eq!(found.text, "80.5");
    assert!(
        found.message.ends_with(
            "httpGet.port` must be an integer or a string, found a number `80.5`; \
             the API server rejects the Job"
        ),
        "{}",
        found.message
    );
    let found = lint_one(&with_port("4294967296"));
    assert!(
        found
            .message
            .contains("must be a 32-bit integer, found an integer `4294967296`"),
        "{}",
        found.message
    );

    let text = edit(
        JOB,
        "  creationTimestamp: null\n  labels",
        "  creationTimestamp: \"2024-05-01T12:00:00Z\"\n  labels",
    );
    assert!(lint(&text).is_empty());
    let text = edit(
        JOB,
        "  creationTimestamp: null\n  labels",
        "  creationTimestamp: yesterday\n  labels",
    );
    let found = lint_one(&text);
    assert_eq!(found.text, "yesterday");
    assert_eq!(
        found.message,
        "`metadata.creationTimestamp` must be an RFC 3339 time such as `2024-05-01T12:00:00Z`, \
         found a string `yesterday`; the API server rejects the Job"
    );
}

#[test]
fn binary_data_must_be_base64() {
    let text = edit(
        CONFIG_MAP,
        "  empty.bin: \"\"\n",
        "  bad.bin: not base64!\n",
    );
    let found = lint_one(&text);
    assert_eq!(found.text, "not base64!");
    assert_eq!(
        found.message,
        "`binaryData[\"bad.bin\"]` must be base64 (standard alphabet, padded with `=`), found a \
         string `not base64!`; the API server rejects the ConfigMap"
    );
    for bad in ["YQ", "YQ=", "YQ==YQ==", "Y===", "YQ==\n=", "-_8="] {
        let text = edit(
            CONFIG_MAP,
            "  empty.bin: \"\"\n",
            &format!("  bad.bin: {bad:?}\n"),
        );
        assert_eq!(lint(&text).len(), 1, "{bad:?}");
    }
    let text = edit(CONFIG_MAP, "  empty.bin: \"\"\n", "  bad.bin: 12\n");
    assert!(
        lint_one(&text)
            .message
            .starts_with("values of `binaryData` must be base64 strings, found an integer `12`")
    );
    let text = edit(
        CONFIG_MAP,
        "  empty.bin: \"\"\n",
        "  bad.bin: [a]\n  typo.bin: YQ==\nimutable: true\n",
    );
    let texts: Vec<String> = lint(&text).into_iter().map(|f| f.text).collect();
    assert_eq!(texts, ["[a]", "imutable"]);
    // A binaryData that is no mapping is a plain type error.
    let text = edit(
        CONFIG_MAP,
        "immutable: false\n",
        "immutable: false\nbinaryData: x\n",
    );
    let text = text.replacen("binaryData:\n", "moreData:\n", 1);
    let found = lint(&text);
    assert!(
        found
            .iter()
            .any(|f| f.text == "x" && f.message.contains("must be a mapping")),
        "{found:#?}"
    );
}

#[test]
fn data_values_must_be_strings() {
    let text = edit(
        CONFIG_MAP,
        "immutable: false\n",
        "immutable: false\ndata:\n  count: 1\n",
    );
    let text = text.replacen("data:\n  plan.json", "otherData:\n  plan.json", 1);
    let found: Vec<Found> = lint(&text).into_iter().filter(|f| f.text == "1").collect();
    assert_eq!(found.len(), 1);
    assert_eq!(
        found[0].message,
        "values of `data` must be strings, found an integer `1` at `data.count` (quote it); \
         the API server rejects the ConfigMap"
    );
    let text = edit(ROLE, "verbs: [create]", "verbs: [create, 1]");
    let found = lint_one(&text);
    assert_eq!(found.text, "1");
    assert!(
        found
            .message
            .starts_with("`rules[0].verbs[1]` must be a string")
    );
}

#[test]
fn other_kinds_are_not_this_rules_business() {
    let list =
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  spam: 1\n";
    assert!(lint(list).is_empty());
    assert!(!is_checked("v1", "List"));
    assert!(!is_checked("v1", "Secret"));
    // The same kind in another group or version is another schema.
    assert!(!is_checked("batch/v1beta1", "Job"));
    assert!(!is_checked("rbac.authorization.k8s.io/v1", "ClusterRole"));
    let Some(Parsed::Document(d)) = parse(JOB).into_iter().next() else {
        panic!()
    };
    assert!(check(&d.root, "v1", "Job").is_empty());
    // Unchecked kinds do not even look at the object.
    let Some(Parsed::Document(d)) = parse("spam: [1]\n").into_iter().next() else {
        panic!()
    };
    assert!(check(&d.root, "v1", "Pod").is_empty());
    assert_eq!(check(&d.root, "v1", "ConfigMap").len(), 1);
}

#[test]
fn odd_shapes_give_issues_not_panics() {
    let shapes = [
        "~",
        "[]",
        "1",
        "x",
        "[{a: 1}]",
        "{metadata: [], spec: 1, rules: {}, data: []}",
        "{metadata: {annotations: [1], labels: 1}}",
        "{spec: {template: {spec: {containers: [1, [], ~]}}}}",
        "{spec: {template: {spec: {containers: [{resources: {limits: [1]}}]}}}}",
        "{rules: [[], ~, {verbs: {a: 1}}], subjects: 1, roleRef: []}",
        "{binaryData: {a: [], b: {c: 1}, c: ~}}",
    ];
    for shape in shapes {
        let Some(Parsed::Document(d)) = parse(shape).into_iter().next() else {
            panic!()
        };
        for (version, kind) in [
            ("v1", "ServiceAccount"),
            ("v1", "ConfigMap"),
            ("rbac.authorization.k8s.io/v1", "Role"),
            ("rbac.authorization.k8s.io/v1", "RoleBinding"),
            ("batch/v1", "Job"),
        ] {
            let issues = check(&d.root, version, kind);
            if shape != "~" && shape != "{}" {
                assert!(
                    !issues.is_empty() || shape.starts_with("{binaryData"),
                    "{shape} {kind}"
                );
            }
        }
    }
}

#[test]
fn closest_needs_a_near_name() {
    let known = [
        "resourceNames",
        "verbs",
        "apiGroups",
        "resources",
        "nonResourceURLs",
    ];
    assert_eq!(closest("resourceName", &known), Some("resourceNames"));
    assert_eq!(closest("verb", &known), Some("verbs"));
    assert_eq!(closest("vrebs", &known), Some("verbs"));
    assert_eq!(closest("APIGroups", &known), Some("apiGroups"));
    assert_eq!(closest("names", &known), None);
    assert_eq!(closest("x", &known), None);
    assert_eq!(closest(&"v".repeat(500), &known), None);
}

#[test]
fn quantity_grammar() {
    for ok in [
        "1", "0.5", ".5", "5.", "+1", "-1", "250m", "64Mi", "1Ei", "1e3", "1E-3", "2k", "3M",
    ] {
        assert!(is_quantity(ok), "{ok}");
    }
    for bad in [
        "", "m", ".", "1.2.3", "1MB", "1mi", "1e", "1e+", "1 Gi", "Gi1", "1K", "--1", "1ee3",
    ] {
        assert!(!is_quantity(bad), "{bad}");
    }
}

/// A copy of `node` with every string `f` rewrites replaced (keys stay).
fn rewrite<'a>(node: &Node<'a>, f: &dyn Fn(&str) -> Option<String>) -> Node<'a> {
    let value = match &node.value {
        Value::Str(s) => match f(s) {
            Some(new) => Value::Str(new.into()),
            None => node.value.clone(),
        },
        Value::Seq(items) => Value::Seq(items.iter().map(|n| rewrite(n, f)).collect()),
        Value::Map(entries) => Value::Map(
            entries
                .iter()
                .map(|e| crate::load::yaml::Entry {
                    value: rewrite(&e.value, f),
                    ..e.clone()
                })
                .collect(),
        ),
        other => other.clone(),
    };
    Node {
        value,
        ..node.clone()
    }
}

/// `shape` is a sound key for the schema verdict: on every object of every fixture and of this
/// file's tests, and on copies whose strings were rewritten in every way the shape does not see
/// (other letters, none of the original text) or does (a leading digit), objects of one shape
/// are all clean or all not. Without the text of digit-led strings, `128MB` and `128Mi` would
/// share a shape and this fails.
#[test]
fn objects_of_one_shape_get_one_verdict() {
    let mut texts = vec![
        SERVICE_ACCOUNT.to_string(),
        ROLE.to_string(),
        JOB.to_string(),
        edit(JOB, "memory: 128Mi", "memory: 128MB"),
        edit(JOB, "sizeLimit: 16Mi", "sizeLimit: sixteen"),
        edit(
            JOB,
            "  creationTimestamp: null\n  labels",
            "  creationTimestamp: \"2024-05-01T12:00:00Z\"\n  labels",
        ),
        edit(
            JOB,
            "  creationTimestamp: null\n  labels",
            "  creationTimestamp: \"2024-05-01T12:00:00\"\n  labels",
        ),
        edit(
            JOB,
            "  creationTimestamp: null\n  labels",
            "  creationTimestamp: yesterday\n  labels",
        ),
    ];
    texts.extend(crate::testkit::fixture_texts());
    let letter_led = |s: &str| s.starts_with(|c: char| c.is_ascii_alphabetic());
    type Rewrite<'f> = &'f dyn Fn(&str) -> Option<String>;
    let variants: [Rewrite; 4] = [
        &|_| None,
        &|s| letter_led(s).then(|| "z".to_string()),
        &|s| letter_led(s).then(|| format!("Q{}:=!", s.len())),
        &|s| letter_led(s).then(|| format!("1{s}")),
    ];
    let mut seen: std::collections::HashMap<Vec<u8>, (bool, String)> = Default::default();
    let (mut objects, mut clean, mut dirty) = (0, 0, 0);
    let roots: Vec<Node> = texts
        .iter()
        .flat_map(|text| parse(text))
        .filter_map(|parsed| match parsed {
            Parsed::Document(d) => Some(d.root),
            Parsed::Error(_) | Parsed::Unread(_) => None,
        })
        .collect();
    let mut found = Vec::new();
    for root in &roots {
        crate::model::object::objects(root, &mut found);
    }
    let checked = found
        .iter()
        .filter(|o| is_checked(o.api_version, o.kind) && has_shape(o.root));
    for obj in checked {
        let (api_version, kind) = (obj.api_version, obj.kind);
        for variant in variants {
            // The object's own apiVersion and kind pick the type and are in the key.
            let object = rewrite(obj.root, &|s| {
                (s != api_version && s != kind)
                    .then(|| variant(s))
                    .flatten()
            });
            let mut key = Vec::new();
            shape(&object, api_version, kind, &mut key);
            let verdict = check(&object, api_version, kind).is_empty();
            objects += 1;
            if verdict {
                clean += 1;
            } else {
                dirty += 1;
            }
            let first = seen
                .entry(key)
                .or_insert_with(|| (verdict, format!("{object:?}")));
            assert_eq!(
                first.0, verdict,
                "one shape, two verdicts:\n{}\n{object:?}",
                first.1
            );
        }
    }
    assert!(
        objects > 400 && clean > 100 && dirty > 20,
        "{objects} {clean} {dirty}"
    );
    // The key is useful: renamed copies share their original's shape.
    assert!(seen.len() * 2 < objects, "{} shapes", seen.len());
}
