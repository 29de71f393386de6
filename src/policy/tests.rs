//! The generated policies carry the rules' CEL verbatim, in the shape of each flavor.

use super::*;
use crate::load::yaml::{Parsed, parse};

fn options(flavor: Flavor) -> Options {
    Options {
        flavor,
        ..Options::default()
    }
}

fn read_back(text: &str) -> Vec<Y> {
    parse(text)
        .into_iter()
        .map(|p| match p {
            Parsed::Document(d) => Y::from_node(&d.root),
            Parsed::Error(e) | Parsed::Unread(e) => panic!("{e:?}\n{text}"),
        })
        .collect()
}

fn at<'y>(y: &'y Y, path: &[&str]) -> &'y Y {
    path.iter()
        .try_fold(y, |y, k| y.get(k))
        .unwrap_or_else(|| panic!("{path:?} missing in {y:?}"))
}

fn seq(y: &Y) -> &[Y] {
    match y {
        Y::Seq(items) => items,
        other => panic!("not a list: {other:?}"),
    }
}

#[test]
fn one_validating_policy_per_object_rule_with_the_rules_cel_verbatim() {
    let catalog = Catalog::get();
    let all = generate(catalog, &Options::default());
    let object_rules: Vec<&Rule> = catalog
        .rules
        .iter()
        .filter(|r| r.object.is_some())
        .collect();
    assert_eq!(all.len(), object_rules.len());
    for (generated, rule) in all.iter().zip(&object_rules) {
        assert_eq!(generated.rule, rule.id);
        let docs = read_back(&file_text(generated));
        assert_eq!(
            docs, generated.documents,
            "{} reads back as written",
            rule.id
        );
        let doc = &docs[0];
        assert_eq!(
            at(doc, &["apiVersion"]).as_str(),
            Some("policies.kyverno.io/v1")
        );
        assert_eq!(at(doc, &["kind"]).as_str(), Some("ValidatingPolicy"));
        assert_eq!(
            at(doc, &["metadata", "name"]).as_str(),
            Some(rule.id.as_str())
        );
        let actions = match rule.severity {
            Severity::Error => Y::strs(["Deny"]),
            Severity::Warning => Y::strs(["Warn", "Audit"]),
        };
        assert_eq!(at(doc, &["spec", "validationActions"]), &actions);
        assert_eq!(at(doc, &["spec", "failurePolicy"]).as_str(), Some("Fail"));
        let object = rule.object.as_ref().unwrap();
        let validations = seq(at(doc, &["spec", "validations"]));
        assert_eq!(validations.len(), object.validations.len());
        for (v, want) in validations.iter().zip(&object.validations) {
            assert_eq!(
                at(v, &["expression"]).as_str(),
                Some(want.expression.as_str())
            );
            assert_eq!(
                at(v, &["message"]).as_str(),
                Some(one_line(&want.message).as_str())
            );
        }
        if let Some(name) = &object.condition {
            let condition = &seq(at(doc, &["spec", "matchConditions"]))[0];
            assert_eq!(at(condition, &["name"]).as_str(), Some(name.as_str()));
            assert_eq!(
                at(condition, &["expression"]).as_str(),
                catalog.condition(name)
            );
        }
        let variables: Vec<(&str, &str)> = doc
            .get("spec")
            .and_then(|s| s.get("variables"))
            .map(|v| {
                seq(v)
                    .iter()
                    .map(|v| {
                        (
                            at(v, &["name"]).as_str().unwrap(),
                            at(v, &["expression"]).as_str().unwrap(),
                        )
                    })
                    .filter(|(n, _)| *n != IMAGE_VARIABLE)
                    .collect()
            })
            .unwrap_or_default();
        let want: Vec<(&str, &str)> = object
            .variables
            .iter()
            .map(|(n, e)| (n.as_str(), e.as_str()))
            .collect();
        assert_eq!(variables, want, "{}", rule.id);
        let annotations = at(doc, &["metadata", "annotations"]);
        assert_eq!(
            at(annotations, &["policies.kyverno.io/title"]).as_str(),
            Some(rule.title.as_str())
        );
        let description = at(annotations, &["policies.kyverno.io/description"])
            .as_str()
            .unwrap();
        assert!(description.contains(&rule.adr), "{description}");
        let severity = at(annotations, &["policies.kyverno.io/severity"])
            .as_str()
            .unwrap();
        assert_eq!(
            severity,
            if rule.severity == Severity::Error {
                "high"
            } else {
                "medium"
            }
        );
    }
}

#[test]
fn resource_rules_name_every_kind_of_the_rule_by_group_version_and_resource() {
    let all = generate(Catalog::get(), &Options::default());
    let hooks = all.iter().find(|g| g.rule == "hook-missing").unwrap();
    let rules = seq(at(
        &hooks.documents[0],
        &["spec", "matchConstraints", "resourceRules"],
    ));
    let mut seen = Vec::new();
    for r in rules {
        let group = seq(at(r, &["apiGroups"]))[0].as_str().unwrap().to_string();
        assert_eq!(at(r, &["operations"]), &Y::strs(["CREATE", "UPDATE"]));
        for resource in seq(at(r, &["resources"])) {
            seen.push(format!("{group}/{}", resource.as_str().unwrap()));
        }
    }
    seen.sort();
    assert_eq!(
        seen,
        [
            "/configmaps",
            "/serviceaccounts",
            "batch/jobs",
            "rbac.authorization.k8s.io/rolebindings",
            "rbac.authorization.k8s.io/roles"
        ]
    );
    let eso = all
        .iter()
        .find(|g| g.rule == "eso-generated-credential")
        .unwrap();
    let rule = &seq(at(
        &eso.documents[0],
        &["spec", "matchConstraints", "resourceRules"],
    ))[0];
    assert_eq!(at(rule, &["apiVersions"]), &Y::strs(["v1", "v1beta1"]));
    // No membership condition: every ExternalSecret is judged; only the two conditions every
    // policy carries (metadata-only updates, suppressions).
    let conditions = seq(at(&eso.documents[0], &["spec", "matchConditions"]));
    let names: Vec<&Y> = conditions.iter().map(|c| at(c, &["name"])).collect();
    assert_eq!(
        names,
        [
            &Y::str("not-metadata-only-update"),
            &Y::str("not-suppressed")
        ]
    );
}

#[test]
fn audit_and_the_credentials_image_are_baked_in() {
    let image = "registry.example/credentials:1@sha256:ab'c\\";
    let options = Options {
        audit: true,
        credentials_image: image.into(),
        ..Options::default()
    };
    let all = generate(Catalog::get(), &options);
    let pinned = all.iter().find(|g| g.rule == "job-image-pinned").unwrap();
    let doc = &pinned.documents[0];
    assert_eq!(at(doc, &["spec", "validationActions"]), &Y::strs(["Audit"]));
    let first = &seq(at(doc, &["spec", "variables"]))[0];
    assert_eq!(at(first, &["name"]).as_str(), Some("credentialsImage"));
    let literal = at(first, &["expression"]).as_str().unwrap();
    assert_eq!(
        literal,
        "'registry.example/credentials:1@sha256:ab\\'c\\\\'"
    );
    // The literal evaluates back to the image.
    let cel = crate::lint::cel::Cel::new();
    let Parsed::Document(d) = &parse("kind: X\n")[0] else {
        panic!()
    };
    let act = cel.activation(&d.root, &[], &[("x", image)]);
    let same = cel.compile(&format!("{literal} == variables.x")).unwrap();
    assert_eq!(act.check(&same), crate::lint::cel::Verdict::Pass);
    let ttl = all.iter().find(|g| g.rule == "job-ttl").unwrap();
    assert!(
        ttl.documents[0]
            .get("spec")
            .unwrap()
            .get("variables")
            .is_none(),
        "only rules that read it"
    );
    let unset = generate(Catalog::get(), &Options::default());
    let pinned = unset.iter().find(|g| g.rule == "job-image-pinned").unwrap();
    let first = &seq(at(&pinned.documents[0], &["spec", "variables"]))[0];
    assert_eq!(at(first, &["expression"]).as_str(), Some("''"));
}

#[test]
fn the_vap_flavor_binds_each_policy_by_name() {
    for audit in [false, true] {
        let options = Options {
            flavor: Flavor::Vap,
            audit,
            ..Options::default()
        };
        for generated in generate(Catalog::get(), &options) {
            let docs = read_back(&file_text(&generated));
            assert_eq!(docs.len(), 2);
            let (policy, binding) = (&docs[0], &docs[1]);
            assert_eq!(
                at(policy, &["apiVersion"]).as_str(),
                Some("admissionregistration.k8s.io/v1")
            );
            assert_eq!(
                at(policy, &["kind"]).as_str(),
                Some("ValidatingAdmissionPolicy")
            );
            assert!(
                policy
                    .get("spec")
                    .unwrap()
                    .get("validationActions")
                    .is_none(),
                "actions live on the binding"
            );
            assert_eq!(
                at(binding, &["kind"]).as_str(),
                Some("ValidatingAdmissionPolicyBinding")
            );
            assert_eq!(
                at(binding, &["spec", "policyName"]),
                at(policy, &["metadata", "name"])
            );
            let warning =
                Catalog::get().rule(&generated.rule).unwrap().severity == Severity::Warning;
            let expected = match (audit, warning) {
                (true, _) => Y::strs(["Audit"]),
                (false, false) => Y::strs(["Deny"]),
                (false, true) => Y::strs(["Warn", "Audit"]),
            };
            assert_eq!(at(binding, &["spec", "validationActions"]), &expected);
        }
    }
}

#[test]
fn the_clusterpolicy_flavor_uses_validate_cel_and_a_failure_action_per_rule() {
    for audit in [false, true] {
        let options = Options {
            flavor: Flavor::ClusterPolicy,
            audit,
            ..Options::default()
        };
        let all = generate(Catalog::get(), &options);
        let verbs = all
            .iter()
            .find(|g| g.rule == "role-forbidden-verb")
            .unwrap();
        let doc = &read_back(&file_text(verbs))[0];
        assert_eq!(at(doc, &["apiVersion"]).as_str(), Some("kyverno.io/v1"));
        assert_eq!(at(doc, &["kind"]).as_str(), Some("ClusterPolicy"));
        let rule = &seq(at(doc, &["spec", "rules"]))[0];
        assert_eq!(
            at(rule, &["validate", "failureAction"]).as_str(),
            Some(if audit { "Audit" } else { "Enforce" })
        );
        assert_eq!(
            at(
                &seq(at(rule, &["match", "any"]))[0],
                &["resources", "kinds"]
            ),
            &Y::strs(["Role"])
        );
        assert_eq!(
            at(&seq(at(rule, &["celPreconditions"]))[0], &["name"]).as_str(),
            Some("credentials-object")
        );
        let expr = at(
            &seq(at(rule, &["validate", "cel", "expressions"]))[0],
            &["expression"],
        );
        let want = &Catalog::get()
            .rule("role-forbidden-verb")
            .unwrap()
            .object
            .as_ref()
            .unwrap()
            .validations[0]
            .expression;
        assert_eq!(expr.as_str(), Some(want.as_str()));
    }
}

#[test]
fn output_is_byte_stable_and_sorted() {
    let catalog = Catalog::get();
    for flavor in [Flavor::ValidatingPolicy, Flavor::ClusterPolicy, Flavor::Vap] {
        let a = stream(&generate(catalog, &options(flavor)));
        let b = stream(&generate(catalog, &options(flavor)));
        assert_eq!(a, b);
        assert!(a.starts_with(MARKER));
    }
    let all = generate(catalog, &Options::default());
    let ids: Vec<&str> = all.iter().map(|g| g.rule.as_str()).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted);
    let k = read_back(&kustomization(&all));
    assert_eq!(
        at(&k[0], &["resources"]),
        &Y::strs(ids.iter().map(|id| policy_path(id)))
    );
}

/// What Kubernetes 1.30+ (ValidatingAdmissionPolicy) and Kyverno 1.17+ both evaluate: the
/// standard operators, macros and functions, and the strings extension.
const PORTABLE: &[&str] = &[
    "_&&_",
    "_||_",
    "_?_:_",
    "!_",
    "-_",
    "_==_",
    "_!=_",
    "_<_",
    "_<=_",
    "_>_",
    "_>=_",
    "_+_",
    "_-_",
    "_*_",
    "_/_",
    "_%_",
    "_[_]",
    "@in",
    "@not_strictly_false",
    "size",
    "int",
    "uint",
    "double",
    "string",
    "bool",
    "type",
    "matches",
    "contains",
    "startsWith",
    "endsWith",
    "charAt",
    "indexOf",
    "lastIndexOf",
    "lowerAscii",
    "upperAscii",
    "replace",
    "split",
    "substring",
    "trim",
    "join",
];

#[test]
fn every_generated_expression_is_portable_to_kubernetes_and_kyverno() {
    let catalog = Catalog::get();
    let cel = crate::lint::cel::Cel::new();
    let mut problems = Vec::new();
    for rule in catalog.rules.iter().filter(|r| r.object.is_some()) {
        let object = rule.object.as_ref().unwrap();
        let mut defined = vec![IMAGE_VARIABLE.to_string()];
        let mut texts: Vec<(String, &str, bool)> = Vec::new();
        if let Some(c) = &object.condition {
            texts.push((
                format!("condition {c}"),
                catalog.condition(c).unwrap(),
                true,
            ));
        }
        for (name, e) in &object.variables {
            texts.push((format!("variable {name}"), e.as_str(), false));
        }
        for v in &object.validations {
            texts.push(("validation".into(), v.expression.as_str(), false));
        }
        let variable_names: Vec<&str> = object.variables.iter().map(|(n, _)| n.as_str()).collect();
        for (what, text, is_condition) in texts {
            let usage = cel.compile(text).unwrap().usage();
            let mut say = |p: String| problems.push(format!("{} {what}: {p}", rule.id));
            for f in usage
                .functions
                .iter()
                .filter(|f| !PORTABLE.contains(&f.as_str()))
            {
                say(format!("function `{f}`"));
            }
            for (root, f) in &usage.calls_on_identifiers {
                say(format!("call `{root}.{f}`"));
            }
            if usage.optional {
                say("optional syntax".into());
            }
            let allowed: &[&str] = if is_condition {
                &["object"]
            } else {
                &["object", "variables"]
            };
            for id in usage
                .identifiers
                .iter()
                .filter(|i| !allowed.contains(&i.as_str()))
            {
                say(format!("identifier `{id}`"));
            }
            for (root, field) in &usage.fields {
                if root == "variables" && !defined.contains(field) {
                    say(format!(
                        "`variables.{field}` is not defined before it is used"
                    ));
                }
            }
            if let Some(name) = what.strip_prefix("variable ") {
                defined.push(name.to_string());
            } else if !is_condition {
                // Validations see every variable.
                defined.extend(variable_names.iter().map(|n| n.to_string()));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_warning_rule_warns_and_audits_instead_of_denying_in_every_flavor() {
    let warning = Catalog::get()
        .rules
        .iter()
        .find(|r| r.severity == Severity::Warning && r.object.is_some())
        .expect("an object rule that is a warning");
    let error = Catalog::get()
        .rules
        .iter()
        .find(|r| r.severity == Severity::Error && r.object.is_some())
        .unwrap();
    let actions = |flavor: Flavor, severity: Vec<(String, Severity)>, rule: &str| {
        let options = Options {
            flavor,
            severity,
            ..Options::default()
        };
        let all = generate(Catalog::get(), &options);
        let generated = all.iter().find(|g| g.rule == rule).unwrap();
        let docs = read_back(&file_text(generated));
        match flavor {
            Flavor::ValidatingPolicy => at(&docs[0], &["spec", "validationActions"]).clone(),
            Flavor::Vap => at(&docs[1], &["spec", "validationActions"]).clone(),
            Flavor::ClusterPolicy => at(
                &seq(at(&docs[0], &["spec", "rules"]))[0],
                &["validate", "failureAction"],
            )
            .clone(),
        }
    };
    for flavor in [Flavor::ValidatingPolicy, Flavor::Vap] {
        assert_eq!(
            actions(flavor, Vec::new(), &warning.id),
            Y::strs(["Warn", "Audit"]),
            "{flavor:?}"
        );
        assert_eq!(actions(flavor, Vec::new(), &error.id), Y::strs(["Deny"]));
        // [rules.severity] turns them round.
        let swapped = vec![
            (warning.id.clone(), Severity::Error),
            (error.id.clone(), Severity::Warning),
        ];
        assert_eq!(
            actions(flavor, swapped.clone(), &warning.id),
            Y::strs(["Deny"])
        );
        assert_eq!(
            actions(flavor, swapped, &error.id),
            Y::strs(["Warn", "Audit"])
        );
    }
    assert_eq!(
        actions(Flavor::ClusterPolicy, Vec::new(), &warning.id),
        Y::str("Audit")
    );
    assert_eq!(
        actions(Flavor::ClusterPolicy, Vec::new(), &error.id),
        Y::str("Enforce")
    );
}

#[test]
fn every_flavor_leaves_the_exempt_namespaces_alone() {
    let catalog = Catalog::get();
    for (exempt, expected) in [
        (None, SYSTEM_NAMESPACES.to_vec()),
        (Some(vec!["infra".to_string()]), vec!["infra"]),
        (Some(Vec::new()), Vec::new()),
    ] {
        for flavor in [Flavor::ValidatingPolicy, Flavor::Vap, Flavor::ClusterPolicy] {
            let options = Options {
                flavor,
                exempt_namespaces: exempt.clone(),
                ..Options::default()
            };
            for generated in generate(catalog, &options) {
                let doc = &read_back(&file_text(&generated))[0];
                let found: Vec<String> = if flavor == Flavor::ClusterPolicy {
                    let rule = &seq(at(doc, &["spec", "rules"]))[0];
                    rule.get("exclude").map_or_else(Vec::new, |e| {
                        let any = &seq(at(e, &["any"]))[0];
                        seq(at(any, &["resources", "namespaces"]))
                            .iter()
                            .map(|y| y.as_str().unwrap().to_string())
                            .collect()
                    })
                } else {
                    at(doc, &["spec", "matchConstraints"])
                        .get("namespaceSelector")
                        .map_or_else(Vec::new, |s| {
                            let test = &seq(at(s, &["matchExpressions"]))[0];
                            assert_eq!(
                                at(test, &["key"]).as_str(),
                                Some("kubernetes.io/metadata.name")
                            );
                            assert_eq!(at(test, &["operator"]).as_str(), Some("NotIn"));
                            seq(at(test, &["values"]))
                                .iter()
                                .map(|y| y.as_str().unwrap().to_string())
                                .collect()
                        })
                };
                assert_eq!(found, expected, "{} ({flavor:?})", generated.rule);
            }
        }
    }
}
