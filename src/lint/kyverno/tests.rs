//! The evaluator against policies and objects written for it: matching, conditions, variables,
//! validations, failure policy, autogen, versions and every reason a policy is unsupported.

use super::*;
use crate::load::yaml::{Parsed, parse};

fn set(policy: &str) -> PolicySet {
    PolicySet::new(vec![PolicyFile {
        display: "policy.yaml".into(),
        text: policy.into(),
    }])
}

fn node(text: &str) -> Node<'_> {
    match parse(text).into_iter().next() {
        Some(Parsed::Document(d)) => d.root,
        other => panic!("{other:?}"),
    }
}

fn decide(policy: &str, object: &str) -> Verdict {
    let set = set(policy);
    assert!(set.unsupported.is_empty(), "{:?}", set.unsupported);
    assert_eq!(set.policies.len(), 1);
    set.decide(0, &node(object))
}

fn unsupported(policy: &str) -> Vec<String> {
    let set = set(policy);
    assert!(set.policies.is_empty(), "evaluated anyway: {policy}");
    set.unsupported.iter().map(|u| u.reason.clone()).collect()
}

const POD_POLICY: &str = r#"
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: no-host-network
spec:
  validationActions: [Deny]
  matchConstraints:
    resourceRules:
      - apiGroups: ['']
        apiVersions: [v1]
        operations: [CREATE, UPDATE]
        resources: [pods]
  validations:
    - expression: "!has(object.spec.hostNetwork) || object.spec.hostNetwork == false"
      message: hostNetwork is not allowed
"#;

const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: ns\nspec:\n  hostNetwork: true\n  containers: [{name: a, image: x}]\n";

#[test]
fn a_validation_that_is_false_denies_with_its_message_at_the_node() {
    let Verdict::Denied(denials) = decide(POD_POLICY, POD) else {
        panic!()
    };
    assert_eq!(denials.len(), 1);
    assert_eq!(denials[0].message, "hostNetwork is not allowed");
    assert!(!denials[0].error);
    let text = POD;
    let root = node(text);
    let span = crate::load::locate::span_for(&root, &denials[0].paths[0]);
    assert_eq!(&text[span.range()], "true");
    let fine = POD.replace("hostNetwork: true", "hostNetwork: false");
    assert_eq!(decide(POD_POLICY, &fine), Verdict::Admitted);
}

#[test]
fn other_resources_and_operations_are_not_matched() {
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n";
    assert_eq!(decide(POD_POLICY, cm), Verdict::NotMatched);
    let update_only = POD_POLICY.replace("[CREATE, UPDATE]", "[UPDATE]");
    assert_eq!(decide(&update_only, POD), Verdict::NotMatched);
    let star = POD_POLICY.replace("[CREATE, UPDATE]", "['*']");
    assert!(decide(&star, POD).denies());
}

const DEPLOYMENT: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n  namespace: ns\nspec:\n  template:\n    metadata:\n      labels: {app: x}\n    spec:\n      hostNetwork: true\n      containers: [{name: a, image: x}]\n";

const CRONJOB: &str = "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: c\n  namespace: ns\nspec:\n  schedule: '* * * * *'\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          hostNetwork: true\n          containers: [{name: a, image: x}]\n";

#[test]
fn pod_policies_apply_to_pod_controllers_through_autogen() {
    let Verdict::Denied(denials) = decide(POD_POLICY, DEPLOYMENT) else {
        panic!("deployment admitted")
    };
    let root = node(DEPLOYMENT);
    let span = crate::load::locate::span_for(&root, &denials[0].paths[0]);
    assert_eq!(&DEPLOYMENT[span.range()], "true");
    assert_eq!(
        span,
        root.at(&["spec", "template", "spec", "hostNetwork"])
            .unwrap()
            .span
    );
    assert!(decide(POD_POLICY, CRONJOB).denies());
    let job = DEPLOYMENT
        .replace("apps/v1", "batch/v1")
        .replace("Deployment", "Job");
    assert!(decide(POD_POLICY, &job).denies());
    let fine = DEPLOYMENT.replace("hostNetwork: true", "hostNetwork: false");
    assert_eq!(decide(POD_POLICY, &fine), Verdict::Admitted);
}

#[test]
fn autogen_follows_the_controllers_list_and_needs_a_pods_only_match() {
    let only_cronjobs = POD_POLICY.replace(
        "  validations:",
        "  autogen:\n    podControllers:\n      controllers: [cronjobs]\n  validations:",
    );
    assert_eq!(decide(&only_cronjobs, DEPLOYMENT), Verdict::NotMatched);
    assert!(decide(&only_cronjobs, CRONJOB).denies());
    let disabled = POD_POLICY.replace(
        "  validations:",
        "  autogen:\n    podControllers:\n      enabled: false\n  validations:",
    );
    assert_eq!(decide(&disabled, DEPLOYMENT), Verdict::NotMatched);
    let two = POD_POLICY.replace("resources: [pods]", "resources: [pods, services]");
    assert_eq!(decide(&two, DEPLOYMENT), Verdict::NotMatched);
    let named = POD_POLICY.replace(
        "resources: [pods]",
        "resources: [pods]\n        resourceNames: [p]",
    );
    assert_eq!(decide(&named, DEPLOYMENT), Verdict::NotMatched);
    assert!(decide(&named, POD).denies());
}

#[test]
fn autogen_keeps_the_controllers_own_name() {
    let policy = POD_POLICY.replace(
        "object.spec.hostNetwork == false\"",
        "object.spec.hostNetwork == false || object.metadata.name == 'd'\"",
    );
    assert_eq!(decide(&policy, DEPLOYMENT), Verdict::Admitted);
}

#[test]
fn older_api_versions_of_the_kind_are_evaluated() {
    for version in ["v1beta1", "v1alpha1"] {
        let policy = POD_POLICY.replace(
            "policies.kyverno.io/v1",
            &format!("policies.kyverno.io/{version}"),
        );
        assert!(decide(&policy, POD).denies(), "{version}");
    }
    let reasons =
        unsupported(&POD_POLICY.replace("policies.kyverno.io/v1", "policies.kyverno.io/v2"));
    assert!(
        reasons[0].contains("apiVersion `policies.kyverno.io/v2`"),
        "{reasons:?}"
    );
}

#[test]
fn match_conditions_variables_and_message_expressions() {
    let policy = r#"
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata: {name: team-label}
spec:
  matchConstraints:
    resourceRules:
      - {apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  matchConditions:
    - name: only-team
      expression: "object.metadata.name.startsWith('team-')"
  variables:
    - name: labels
      expression: "has(object.metadata.labels) ? object.metadata.labels : {}"
    - name: owner
      expression: "'owner' in variables.labels ? variables.labels['owner'] : ''"
  validations:
    - expression: "variables.owner != ''"
      messageExpression: "'configmap ' + object.metadata.name + ' has no owner (' + request.operation + ')'"
      message: fallback
"#;
    assert_eq!(
        decide(
            policy,
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\n"
        ),
        Verdict::NotMatched
    );
    let Verdict::Denied(d) = decide(
        policy,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: team-a}\n",
    ) else {
        panic!()
    };
    assert_eq!(d[0].message, "configmap team-a has no owner (CREATE)");
    assert_eq!(
        decide(
            policy,
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: team-a, labels: {owner: me}}\n"
        ),
        Verdict::Admitted
    );
}

#[test]
fn evaluation_errors_deny_under_fail_and_are_ignored_under_ignore() {
    let policy = POD_POLICY.replace(
        "\"!has(object.spec.hostNetwork) || object.spec.hostNetwork == false\"",
        "object.spec.missing == 1",
    );
    let Verdict::Denied(d) = decide(&policy, POD) else {
        panic!()
    };
    assert!(
        d[0].error && d[0].message.contains("failurePolicy is Fail"),
        "{d:?}"
    );
    let ignore = policy.replace(
        "  validationActions",
        "  failurePolicy: Ignore\n  validationActions",
    );
    assert_eq!(decide(&ignore, POD), Verdict::Admitted);
    let condition = POD_POLICY.replace(
        "  validations:",
        "  matchConditions:\n    - name: broken\n      expression: object.nothing == 1\n  validations:",
    );
    let Verdict::Denied(d) = decide(&condition, POD) else {
        panic!()
    };
    assert!(d[0].message.contains("match condition `broken`"), "{d:?}");
    let ignored = condition.replace(
        "  validationActions",
        "  failurePolicy: Ignore\n  validationActions",
    );
    assert_eq!(decide(&ignored, POD), Verdict::NotMatched);
}

#[test]
fn audit_only_policies_are_warnings() {
    let s = set(&POD_POLICY.replace("[Deny]", "[Audit]"));
    assert_eq!(s.policies[0].severity, Severity::Warning);
    let s = set(POD_POLICY);
    assert_eq!(s.policies[0].severity, Severity::Error);
    let s = set(&POD_POLICY.replace("  validationActions: [Deny]\n", ""));
    assert_eq!(
        s.policies[0].severity,
        Severity::Error,
        "Deny is the default"
    );
}

#[test]
fn selectors_and_exclusions() {
    let selected = POD_POLICY.replace(
        "    resourceRules:",
        "    objectSelector:\n      matchLabels: {team: a}\n    namespaceSelector:\n      matchExpressions:\n        - {key: kubernetes.io/metadata.name, operator: NotIn, values: [kube-system]}\n    resourceRules:",
    );
    assert_eq!(decide(&selected, POD), Verdict::NotMatched, "no team label");
    let labelled = POD.replace("  name: p\n", "  name: p\n  labels: {team: a}\n");
    assert!(decide(&selected, &labelled).denies());
    let system = labelled.replace("namespace: ns", "namespace: kube-system");
    assert_eq!(decide(&selected, &system), Verdict::NotMatched);
    // Without a namespace the object goes to the destination namespace: a selector that only
    // leaves namespaces out judges it; one that picks namespaces cannot be decided.
    let nameless = labelled.replace("  namespace: ns\n", "");
    assert!(decide(&selected, &nameless).denies());
    let picking = selected.replace("operator: NotIn", "operator: In");
    assert!(matches!(
        decide(&picking, &nameless),
        Verdict::Undecidable(_)
    ));
    assert_eq!(decide(&picking, &labelled), Verdict::NotMatched);
    let excluded = POD_POLICY.replace(
        "    resourceRules:",
        "    excludeResourceRules:\n      - {apiGroups: [''], apiVersions: [v1], operations: ['*'], resources: [pods], resourceNames: [p]}\n    resourceRules:",
    );
    assert_eq!(decide(&excluded, POD), Verdict::NotMatched);
}

#[test]
fn policies_that_need_the_cluster_or_unknown_functions_are_unsupported() {
    let with = |expr: &str| {
        POD_POLICY.replace(
            "\"!has(object.spec.hostNetwork) || object.spec.hostNetwork == false\"",
            &format!("\"{expr}\""),
        )
    };
    let cases = [
        (
            "resource.Get('v1', 'configmaps', 'ns', 'x').data.a == 'b'",
            "reads the cluster",
        ),
        ("http.Get('https://x').ok", "network"),
        (
            "namespaceObject.metadata.labels.x == 'y'",
            "Namespace object",
        ),
        ("request.userInfo.username == 'me'", "who applies"),
        ("quantity('1Gi').isGreaterThan(quantity('1Mi'))", "quantity"),
        ("sets.contains(['a'], ['a'])", "sets library"),
        ("params.x == 1", "paramRef"),
        (
            "authorizer.group('').resource('pods').check('get').allowed()",
            "authorizer",
        ),
        ("foo == 1", "not a variable"),
        (
            "object.spec.containers.all(c, c.image.find('x') == 'x')",
            "regex library",
        ),
        ("object.spec.x == (", "does not compile"),
    ];
    for (expr, reason) in cases {
        let reasons = unsupported(&with(expr));
        assert!(
            reasons.iter().any(|r| r.contains(reason)),
            "{expr}: {reasons:?}"
        );
    }
    let fields = [
        (
            "  paramKind: {apiVersion: v1, kind: ConfigMap}\n",
            "parameters",
        ),
        ("  evaluation: {mode: JSON}\n", "JSON payloads"),
        ("  frobnicate: true\n", "spec.frobnicate"),
    ];
    for (field, reason) in fields {
        let policy = POD_POLICY.replace("  validations:", &format!("{field}  validations:"));
        let reasons = unsupported(&policy);
        assert!(
            reasons.iter().any(|r| r.contains(reason)),
            "{field}: {reasons:?}"
        );
    }
    let unmatched = POD_POLICY
        .replace("  matchConstraints:", "  unused:")
        .replace("    resourceRules:", "    x:");
    assert!(
        unsupported(&unmatched)
            .iter()
            .any(|r| r.contains("no spec.matchConstraints"))
    );
    let ns = POD_POLICY.replace(
        "    resourceRules:",
        "    namespaceSelector:\n      matchLabels: {env: prod}\n    resourceRules:",
    );
    assert!(unsupported(&ns)[0].contains("namespace labels"));
    let vars_in_condition = POD_POLICY.replace(
        "  validations:",
        "  matchConditions:\n    - {name: c, expression: variables.x == 1}\n  validations:",
    );
    assert!(unsupported(&vars_in_condition)[0].contains("match condition"));
}

#[test]
fn other_policy_kinds_are_reported_and_other_documents_ignored() {
    let text = "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata: {name: old}\nspec: {}\n---\napiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: vap}\n---\n: bad: yaml\n";
    let s = set(text);
    assert_eq!(s.policies.len(), 0);
    let reasons: Vec<&str> = s.unsupported.iter().map(|u| u.reason.as_str()).collect();
    assert_eq!(reasons.len(), 3, "{reasons:?}");
    assert!(reasons[0].contains("ClusterPolicy"));
    assert!(reasons[1].contains("ValidatingAdmissionPolicy"));
    assert!(reasons[2].contains("does not parse"));
}

#[test]
fn hostile_policies_do_not_panic() {
    // On a stack the size of the engine's workers, where policies are evaluated.
    std::thread::Builder::new()
        .stack_size(16 << 20)
        .spawn(hostile_policies_on_this_thread)
        .unwrap()
        .join()
        .unwrap();
}

fn hostile_policies_on_this_thread() {
    let inputs = [
        "",
        "kind: ValidatingPolicy",
        "apiVersion: policies.kyverno.io/v1\nkind: ValidatingPolicy\nmetadata: {name: x}\nspec: 3\n",
        "apiVersion: policies.kyverno.io/v1\nkind: ValidatingPolicy\nmetadata: {name: x}\nspec: {validations: [1, {expression: 2}], matchConstraints: {resourceRules: [null, {resources: 3}]}}\n",
        "apiVersion: policies.kyverno.io/v1\nkind: ValidatingPolicy\nmetadata: {name: x}\nspec: {variables: [{name: a}], matchConditions: 1, autogen: {podControllers: {controllers: 1}}}\n",
    ];
    for text in inputs {
        let s = set(text);
        for i in 0..s.policies.len() {
            let _ = s.decide(i, &node(POD));
        }
    }
    let deep = format!("{}{}", "(".repeat(400), ")".repeat(400));
    let policy = POD_POLICY.replace(
        "\"!has(object.spec.hostNetwork) || object.spec.hostNetwork == false\"",
        &format!("\"{deep}\""),
    );
    assert!(unsupported(&policy)[0].contains("nests brackets"));
    // A long chain of `+` is deep without brackets: refused past the limit, evaluated below it.
    let chain = |n: usize| vec!["1"; n].join(" + ");
    let long = POD_POLICY.replace(
        "\"!has(object.spec.hostNetwork) || object.spec.hostNetwork == false\"",
        &format!("\"{} > 0\"", chain(200)),
    );
    assert!(unsupported(&long)[0].contains("levels deep"));
    let fine = POD_POLICY.replace(
        "\"!has(object.spec.hostNetwork) || object.spec.hostNetwork == false\"",
        &format!("\"{} > 0\"", chain(support::MAX_DEPTH - 2)),
    );
    assert_eq!(decide(&fine, POD), Verdict::Admitted);
}

#[test]
fn the_catalog_expressions_are_far_from_the_depth_limit() {
    let catalog = crate::lint::catalog::Catalog::get();
    let cel = Cel::new();
    let mut deepest = (0, String::new());
    let mut texts: Vec<(String, &str)> = catalog
        .conditions
        .iter()
        .map(|(n, t)| (n.clone(), t.as_str()))
        .collect();
    for rule in &catalog.rules {
        if let Some(o) = &rule.object {
            texts.extend(
                o.variables
                    .iter()
                    .map(|(n, e)| (format!("{} {n}", rule.id), e.as_str())),
            );
            texts.extend(
                o.validations
                    .iter()
                    .map(|v| (rule.id.clone(), v.expression.as_str())),
            );
        }
    }
    for (name, text) in texts {
        let depth = cel.compile(text).unwrap().usage().depth;
        if depth > deepest.0 {
            deepest = (depth, name);
        }
    }
    assert!(deepest.0 * 2 <= support::MAX_DEPTH, "{deepest:?}");
}

#[test]
fn mangled_policies_never_panic() {
    // Every line of a valid policy dropped, or its value replaced by something of another type.
    let lines: Vec<&str> = POD_POLICY.lines().collect();
    let junk = [
        "",
        "null",
        "[]",
        "{}",
        "3",
        "'*'",
        "[1, [2]]",
        "{a: {b: c}}",
        "!!binary aGk=",
        "&a [*a]",
    ];
    let objects = [
        POD,
        DEPLOYMENT,
        CRONJOB,
        "kind: Pod\n",
        "apiVersion: v1\nkind: Pod\nmetadata: 3\nspec: []\n",
    ];
    for i in 0..lines.len() {
        let mut variants = vec![
            lines
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, l)| *l)
                .collect::<Vec<_>>()
                .join("\n"),
        ];
        if let Some((key, _)) = lines[i].split_once(':') {
            for j in junk {
                let mut copy: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
                copy[i] = format!("{key}: {j}");
                variants.push(copy.join("\n"));
            }
        }
        for text in variants {
            let s = set(&text);
            for index in 0..s.policies.len() {
                for object in objects {
                    let _ = s.decide(index, &node(object));
                }
            }
            let _ = report::unsupported_findings(&s, 0);
        }
    }
    let bytes =
        b"apiVersion: policies.kyverno.io/v1\nkind: ValidatingPolicy\nmetadata: {name: \xff\xfe}\n";
    let s = PolicySet::new(vec![PolicyFile {
        display: "x".into(),
        text: lossy(bytes),
    }]);
    let _ = report::unsupported_findings(&s, 0);
}

/// A pod policy with one validation, failing closed.
fn pod_policy(name: &str, expression: &str) -> String {
    POD_POLICY
        .replace("no-host-network", name)
        .replace(
            "\"!has(object.spec.hostNetwork) || object.spec.hostNetwork == false\"",
            &format!("{expression:?}"),
        )
        .replace("  validations:", "  failurePolicy: Fail\n  validations:")
}

/// The shapes of the four Kyverno library policies whose test suites `check --policy` once
/// disagreed with: `orValue` called on a list or map reached with `.field`, not an optional.
/// Kyverno 1.19+ evaluates it to that value, so these objects are admitted or denied on their
/// merits, never denied for an evaluation error.
#[test]
fn or_value_on_plain_values_decides_as_kyverno_does() {
    let capabilities = pod_policy(
        "drop-all",
        "object.spec.containers.orValue([]).all(c, has(c.securityContext) && \
         has(c.securityContext.capabilities) && \
         c.securityContext.capabilities.drop.orValue([]).exists(d, d == 'ALL'))",
    );
    let read_only_host_path = pod_policy(
        "read-only-host-path",
        "object.spec.volumes.orValue([]).filter(v, has(v.hostPath)).all(v, \
         object.spec.containers.all(c, !has(c.volumeMounts) || \
         c.volumeMounts.orValue([]).filter(m, m.name == v.name).all(m, has(m.readOnly) && m.readOnly)))",
    );
    let empty_dir_limits = pod_policy(
        "empty-dir-limits",
        "!object.spec.volumes.orValue([]).exists(v, has(v.emptyDir)) || \
         object.spec.containers.all(c, has(c.resources) && has(c.resources.limits) && \
         'ephemeral-storage' in c.resources.limits.orValue({}))",
    );
    let guaranteed = pod_policy(
        "guaranteed",
        "object.spec.containers.all(c, has(c.resources) && has(c.resources.requests) && \
         has(c.resources.limits) && c.resources.requests.orValue({}) == c.resources.limits.orValue({}))",
    );
    let pod = |spec: &str| {
        format!("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: ns\nspec:\n{spec}")
    };
    let cases = [
        (
            &capabilities,
            "  containers:\n  - name: a\n    securityContext:\n      capabilities:\n        drop: [ALL]\n",
            false,
        ),
        (
            &capabilities,
            "  containers:\n  - name: a\n    securityContext:\n      capabilities:\n        drop: [NET_RAW]\n",
            true,
        ),
        (
            &read_only_host_path,
            "  volumes:\n  - name: h\n    hostPath: {path: /x}\n  containers:\n  - name: a\n    volumeMounts:\n    - {name: h, mountPath: /x, readOnly: true}\n",
            false,
        ),
        (
            &read_only_host_path,
            "  volumes:\n  - name: h\n    hostPath: {path: /x}\n  containers:\n  - name: a\n    volumeMounts:\n    - {name: h, mountPath: /x}\n",
            true,
        ),
        (
            &empty_dir_limits,
            "  volumes:\n  - name: e\n    emptyDir: {}\n  containers:\n  - name: a\n    resources:\n      limits: {ephemeral-storage: 1Gi}\n",
            false,
        ),
        (
            &empty_dir_limits,
            "  volumes:\n  - name: e\n    emptyDir: {}\n  containers:\n  - name: a\n    resources:\n      limits: {memory: 1Gi}\n",
            true,
        ),
        (
            &guaranteed,
            "  containers:\n  - name: a\n    resources:\n      requests: {cpu: '1', memory: 1Gi}\n      limits: {cpu: '1', memory: 1Gi}\n",
            false,
        ),
        (
            &guaranteed,
            "  containers:\n  - name: a\n    resources:\n      requests: {cpu: '1'}\n      limits: {cpu: '2'}\n",
            true,
        ),
    ];
    for (policy, spec, denied) in cases {
        let verdict = decide(policy, &pod(spec));
        match (&verdict, denied) {
            (Verdict::Admitted, false) => {}
            (Verdict::Denied(d), true) => {
                assert!(
                    d.iter()
                        .all(|d| !d.message.contains("could not be evaluated")),
                    "denied for an error, not on its merits: {d:?}"
                );
            }
            _ => panic!("{policy}\n{spec}: {verdict:?}"),
        }
    }
}
