//! The generated Kyverno policies agree with the linter: for every object of every fixture file
//! (bad and good entries, the clean renderings, the demo), the ValidatingPolicy of an object rule
//! denies the object exactly when `credlint check` reports that rule on it. The policies are
//! evaluated by credlint's own Kyverno evaluator (resource rules, match conditions, variables,
//! validations, failurePolicy Fail), which reads them back from the generated YAML text.
//!
//! The same holds for the objects as the cluster receives them from Argo CD: with the hook
//! finalizer, the tracking-id annotation, the instance label, the last-applied configuration and
//! managed fields, and what the API server defaults.
//!
//! Objects the API server refuses (a `schema` finding) are left out: no policy ever sees them.

use credlint::cli::policies::{FixtureObject, entries, lint_objects};
use credlint::exec::Executor;
use credlint::lint::Options;
use credlint::lint::catalog::Catalog;
use credlint::lint::cel::{Cel, Program, Verdict as CelVerdict};
use credlint::lint::kyverno::{PolicyFile, PolicySet, Verdict};
use credlint::load::yaml::{Parsed, parse};
use credlint::policy::{self, Y, emit};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// The credentials image a fixture folder is linted with (`options.yaml`), '' when none.
fn image_of(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("options.yaml"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("credentialsImage:"))
        .map(|i| i.trim().trim_matches('"').to_string())
        .unwrap_or_default()
}

/// The generated policies, read back from their YAML text as `kubectl apply` would read them.
fn policies(image: &str) -> PolicySet {
    let options = policy::Options {
        credentials_image: image.to_string(),
        ..policy::Options::default()
    };
    let files = policy::generate(Catalog::get(), &options)
        .iter()
        .map(|g| PolicyFile {
            display: policy::policy_path(&g.rule),
            text: policy::file_text(g),
        })
        .collect();
    let set = PolicySet::new(files);
    assert!(set.unsupported.is_empty(), "{:?}", set.unsupported);
    set
}

/// What `credlint check` lints together: each entry of a rule's folder, a shared folder whole.
fn units() -> Vec<(PathBuf, Vec<PathBuf>)> {
    let mut folders: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    folders.sort();
    let mut out = Vec::new();
    for folder in folders {
        let list = entries(&folder);
        if list.is_empty() {
            out.push((folder.clone(), vec![folder]));
        } else {
            for entry in list {
                out.push((folder.clone(), vec![entry]));
            }
        }
    }
    out
}

fn node_of(y: &Y) -> String {
    emit::document(y)
}

/// Whether the policies' member condition (`credentials-member` in rules/_match.yaml) selects
/// the object: a member it selects is seen by every member policy, so the linter's findings on
/// it are no gap.
fn selected_as_member(cel: &Cel, member: &Program, text: &str) -> bool {
    match parse(text).into_iter().next() {
        Some(Parsed::Document(d)) => {
            matches!(cel.check(member, &cel.bind(&d.root)), CelVerdict::Pass)
        }
        other => panic!("{other:?}\n{text}"),
    }
}

fn decide(set: &PolicySet, index: usize, text: &str) -> Verdict {
    match parse(text).into_iter().next() {
        Some(Parsed::Document(d)) => set.decide(index, &d.root),
        other => panic!("{other:?}\n{text}"),
    }
}

/// Sets `key` only when the mapping lacks it, as defaulting does.
fn default(map: &mut Y, key: &str, value: Y) {
    if matches!(map, Y::Map(_)) && map.get(key).is_none() {
        map.set(key, value);
    }
}

fn each_map(y: Option<&mut Y>, f: impl Fn(&mut Y)) {
    if let Some(Y::Seq(items)) = y {
        for item in items.iter_mut().filter(|i| matches!(i, Y::Map(_))) {
            f(item);
        }
    }
}

/// The object as Argo CD creates it and the API server stores it before admission.
fn as_admitted(original: &Y) -> Y {
    let mut y = original.clone();
    let kind = y.get("kind").and_then(Y::as_str).unwrap_or("").to_string();
    let name = y
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Y::as_str)
        .unwrap_or("")
        .to_string();
    let Some(metadata) = y.get_mut("metadata") else {
        return y;
    };
    if !matches!(metadata, Y::Map(_)) {
        return y;
    }
    // Argo CD: the hook finalizer, annotation tracking and the instance label.
    match metadata.get_mut("finalizers") {
        Some(Y::Seq(items)) => items.push(Y::str("argocd.argoproj.io/hook-finalizer")),
        _ => metadata.set("finalizers", Y::strs(["argocd.argoproj.io/hook-finalizer"])),
    }
    let tracking = format!("shop:/{kind}:shop/{name}");
    let applied = "{\"apiVersion\":\"v1\"}";
    match metadata.get_mut("annotations") {
        Some(a @ Y::Map(_)) => {
            a.set("argocd.argoproj.io/tracking-id", Y::str(&tracking));
            a.set(
                "kubectl.kubernetes.io/last-applied-configuration",
                Y::str(applied),
            );
        }
        Some(_) => {}
        None => metadata.set(
            "annotations",
            Y::map([
                ("argocd.argoproj.io/tracking-id", Y::str(&tracking)),
                (
                    "kubectl.kubernetes.io/last-applied-configuration",
                    Y::str(applied),
                ),
            ]),
        ),
    }
    default(
        metadata,
        "managedFields",
        Y::Seq(vec![Y::map([
            ("manager", Y::str("argocd-controller")),
            ("operation", Y::str("Apply")),
            ("fieldsType", Y::str("FieldsV1")),
        ])]),
    );
    match metadata.get_mut("labels") {
        Some(l @ Y::Map(_)) => default(l, "app.kubernetes.io/instance", Y::str("shop")),
        Some(_) => {}
        None => metadata.set(
            "labels",
            Y::map([("app.kubernetes.io/instance", Y::str("shop"))]),
        ),
    }
    // The API server.
    default(
        metadata,
        "uid",
        Y::str("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"),
    );
    default(
        metadata,
        "creationTimestamp",
        Y::str("2025-01-01T00:00:00Z"),
    );
    default(metadata, "resourceVersion", Y::str("1"));
    default(metadata, "generation", Y::Int(1));
    if kind == "RoleBinding" {
        each_map(y.get_mut("subjects"), |s| {
            if s.get("kind").and_then(Y::as_str) == Some("ServiceAccount") {
                default(s, "apiGroup", Y::str(""));
            }
        });
    }
    if kind == "Job"
        && let Some(spec @ Y::Map(_)) = y.get_mut("spec")
    {
        default(spec, "backoffLimit", Y::Int(6));
        default(spec, "completions", Y::Int(1));
        default(spec, "parallelism", Y::Int(1));
        default(spec, "completionMode", Y::str("NonIndexed"));
        default(spec, "suspend", Y::Bool(false));
        default(spec, "podReplacementPolicy", Y::str("TerminatingOrFailed"));
        if let Some(template @ Y::Map(_)) = spec.get_mut("template") {
            default(template, "metadata", Y::Map(Vec::new()));
            if let Some(meta @ Y::Map(_)) = template.get_mut("metadata") {
                default(meta, "labels", Y::Map(Vec::new()));
                if let Some(labels @ Y::Map(_)) = meta.get_mut("labels") {
                    default(labels, "batch.kubernetes.io/job-name", Y::str(&name));
                    default(labels, "job-name", Y::str(&name));
                }
            }
            if let Some(pod @ Y::Map(_)) = template.get_mut("spec") {
                default(pod, "dnsPolicy", Y::str("ClusterFirst"));
                default(pod, "schedulerName", Y::str("default-scheduler"));
                default(pod, "terminationGracePeriodSeconds", Y::Int(30));
                default(pod, "securityContext", Y::Map(Vec::new()));
                for list in ["containers", "initContainers"] {
                    each_map(pod.get_mut(list), |c| {
                        default(c, "terminationMessagePath", Y::str("/dev/termination-log"));
                        default(c, "terminationMessagePolicy", Y::str("File"));
                        default(c, "imagePullPolicy", Y::str("IfNotPresent"));
                        default(c, "resources", Y::Map(Vec::new()));
                        each_map(c.get_mut("ports"), |p| {
                            default(p, "protocol", Y::str("TCP"))
                        });
                    });
                }
                each_map(pod.get_mut("volumes"), |v| {
                    if let Some(cm @ Y::Map(_)) = v.get_mut("configMap") {
                        default(cm, "defaultMode", Y::Int(420));
                    }
                });
            }
        }
    }
    y
}

#[derive(Default)]
struct Figures {
    policies: usize,
    objects: usize,
    refused: usize,
    verdicts: usize,
    selected: usize,
    denied: usize,
    /// Findings on members no policy selects (the linter's structural recognition).
    unselected_members: usize,
}

fn place(obj: &FixtureObject) -> String {
    format!(
        "{} ({} {})",
        obj.file,
        obj.kind,
        obj.name.as_deref().unwrap_or("<no name>")
    )
}

#[test]
fn every_policy_denies_exactly_the_objects_the_linter_reports_it_on() {
    let catalog = Catalog::get();
    let cel = Cel::new();
    let member = cel
        .compile(catalog.condition("credentials-member").unwrap())
        .unwrap();
    let mut sets: BTreeMap<String, PolicySet> = BTreeMap::new();
    let mut figures = Figures::default();
    let mut failures = Vec::new();
    let mut denied_by: BTreeMap<String, usize> = BTreeMap::new();
    for (folder, paths) in units() {
        let image = image_of(&folder);
        let set = sets
            .entry(image.clone())
            .or_insert_with(|| policies(&image));
        figures.policies = set.policies.len();
        let engine = Executor::new(Options {
            credentials_image: Some(image.clone()).filter(|i| !i.is_empty()),
            ..Options::default()
        })
        .unwrap();
        for obj in lint_objects(&engine, &paths) {
            figures.objects += 1;
            if obj.refused() {
                figures.refused += 1;
                continue;
            }
            let text = node_of(&obj.root);
            let admitted_text = node_of(&as_admitted(&obj.root));
            for (index, policy) in set.policies.iter().enumerate() {
                figures.verdicts += 1;
                let verdict = decide(set, index, &text);
                if !matches!(verdict, Verdict::NotMatched) {
                    figures.selected += 1;
                }
                let flagged = obj.rules.contains(&policy.name);
                if verdict.denies() {
                    figures.denied += 1;
                    *denied_by.entry(policy.name.clone()).or_default() += 1;
                }
                // What one object cannot show: the linter follows the references between
                // objects and knows members the policy's match condition does not select (the
                // README says which). The policy must then not select the object at all.
                let gap = flagged
                    && matches!(verdict, Verdict::NotMatched)
                    && !selected_as_member(&cel, &member, &text);
                if gap {
                    figures.unselected_members += 1;
                }
                if verdict.denies() != flagged && !gap {
                    failures.push(format!(
                        "{}: policy {} {} but credlint check {} it ({verdict:?})",
                        place(&obj),
                        policy.name,
                        if verdict.denies() { "denies" } else { "admits" },
                        if flagged {
                            "reports"
                        } else {
                            "does not report"
                        },
                    ));
                }
                let in_cluster = decide(set, index, &admitted_text);
                if in_cluster.denies() != verdict.denies() {
                    failures.push(format!(
                        "{}: policy {} decides otherwise once Argo CD and the API server have added their fields ({in_cluster:?})",
                        place(&obj),
                        policy.name
                    ));
                }
            }
        }
    }
    eprintln!(
        "agreement: {} policies x {} objects = {} verdicts ({} selected, {} denied); {} objects the API server refuses left out",
        figures.policies,
        figures.objects - figures.refused,
        figures.verdicts,
        figures.selected,
        figures.denied,
        figures.refused
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Not vacuous: every object rule whose fixtures hold a bad entry has its policy deny.
    for rule in catalog.rules.iter().filter(|r| r.object.is_some()) {
        let has_bad = entries(&fixtures().join(&rule.id)).iter().any(|e| {
            e.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("bad-"))
        });
        if has_bad {
            assert!(
                denied_by.get(&rule.id).copied().unwrap_or(0) > 0,
                "the policy {} denies no fixture object",
                rule.id
            );
        }
    }
    assert!(figures.denied > 0 && figures.selected > figures.denied);
}

#[test]
fn clean_renderings_are_admitted_as_argo_cd_sends_them() {
    let set = policies("");
    let engine = Executor::new(Options::default()).unwrap();
    let objects = lint_objects(&engine, &[fixtures().join("clean")]);
    assert!(objects.len() >= 5 * 13, "{} objects", objects.len());
    let mut selected = 0;
    for obj in &objects {
        assert!(obj.rules.is_empty(), "{}: {:?}", place(obj), obj.rules);
        let text = node_of(&as_admitted(&obj.root));
        assert!(text.contains("argocd.argoproj.io/hook-finalizer"));
        for (index, policy) in set.policies.iter().enumerate() {
            let verdict = decide(&set, index, &text);
            assert!(
                !verdict.denies(),
                "{}: {} {verdict:?}",
                place(obj),
                policy.name
            );
            selected += usize::from(verdict == Verdict::Admitted);
        }
    }
    assert!(selected > 0);
}

#[test]
fn a_configured_credentials_image_is_enforced_by_the_policy() {
    let image = format!(
        "registry.example/platform/credentials:1.4.2@sha256:{}",
        "a".repeat(64)
    );
    let set = policies(&image);
    let index = set
        .policies
        .iter()
        .position(|p| p.name == "job-image-pinned")
        .unwrap();
    let job = |img: &str| {
        format!(
            "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: shop-credentials-0123abcd\nspec:\n  template:\n    spec:\n      containers:\n        - name: create\n          image: {img}\n          command: [python3, /credentials/create.py, /credentials/plan.json]\n"
        )
    };
    assert_eq!(decide(&set, index, &job(&image)), Verdict::Admitted);
    let other = format!("registry.example/other@sha256:{}", "b".repeat(64));
    let Verdict::Denied(d) = decide(&set, index, &job(&other)) else {
        panic!("another pinned image is admitted")
    };
    assert!(
        d[0].message.contains("configured credentials image"),
        "{d:?}"
    );
    let unset = policies("");
    assert_eq!(decide(&unset, index, &job(&other)), Verdict::Admitted);
}

/// Application objects (fixtures/applications) are no members: the linter reports nothing on
/// them and no policy denies one, as written or as Argo CD sends it.
#[test]
fn application_objects_are_admitted_by_every_policy() {
    let set = policies("");
    let engine = Executor::new(Options::default()).unwrap();
    let objects = lint_objects(&engine, &[fixtures().join("applications")]);
    assert!(objects.len() >= 30, "{} objects", objects.len());
    let mut verdicts = 0;
    for obj in &objects {
        assert!(obj.rules.is_empty(), "{}: {:?}", place(obj), obj.rules);
        for text in [node_of(&obj.root), node_of(&as_admitted(&obj.root))] {
            for (index, policy) in set.policies.iter().enumerate() {
                let verdict = decide(&set, index, &text);
                assert!(
                    !verdict.denies(),
                    "{}: {} {verdict:?}",
                    place(obj),
                    policy.name
                );
                verdicts += 1;
            }
        }
    }
    assert!(verdicts > 0);
}

fn update(set: &PolicySet, index: usize, old: &str, new: &str) -> Verdict {
    match (parse(old).into_iter().next(), parse(new).into_iter().next()) {
        (Some(Parsed::Document(o)), Some(Parsed::Document(n))) => set
            .update(&o.root, &n.root)
            .map_or(Verdict::NotMatched, |s| set.decide_for(index, &s)),
        other => panic!("{other:?}"),
    }
}

/// In the cluster, a policy meets UPDATEs too. A controller removing its finalizer from an
/// object that was non-compliant before the policy arrived (External Secrets' cleanup
/// finalizer on a 5.4 ExternalSecret the Job deletes, say) is admitted by every policy; an
/// UPDATE that changes what the rules read (the content, or annotations and labels) is judged as
/// the object would be at a CREATE, so one that breaks a compliant object is denied.
#[test]
fn metadata_only_updates_are_admitted_and_content_updates_are_judged() {
    let set = policies("");
    let engine = Executor::new(Options::default()).unwrap();
    let (mut judged, mut denied_updates, mut finalizer_updates) = (0, 0, 0);
    let mut failures = Vec::new();
    for (folder, paths) in units() {
        if !image_of(&folder).is_empty() {
            continue;
        }
        for obj in lint_objects(&engine, &paths) {
            if obj.refused() {
                continue;
            }
            let new = node_of(&obj.root);
            let mut finalized = obj.root.clone();
            if let Some(meta) = finalized.get_mut("metadata") {
                meta.set(
                    "finalizers",
                    Y::strs(["external-secrets.io/externalsecret-cleanup"]),
                );
            }
            let mut relabelled = obj.root.clone();
            if let Some(meta) = relabelled.get_mut("metadata") {
                meta.set("labels", Y::map([("credlint.io/test-before", Y::str("1"))]));
            }
            let (finalized, relabelled) = (node_of(&finalized), node_of(&relabelled));
            for (index, policy) in set.policies.iter().enumerate() {
                let created = decide(&set, index, &new);
                let freed = update(&set, index, &finalized, &new);
                finalizer_updates += 1;
                if freed.denies() {
                    failures.push(format!(
                        "{}: policy {} denies the removal of a finalizer ({freed:?})",
                        place(&obj),
                        policy.name
                    ));
                }
                let changed = update(&set, index, &relabelled, &new);
                judged += 1;
                if changed.denies() {
                    denied_updates += 1;
                }
                if changed.denies() != created.denies() {
                    failures.push(format!(
                        "{}: policy {} decides an UPDATE of the content otherwise than a CREATE ({changed:?} vs {created:?})",
                        place(&obj),
                        policy.name
                    ));
                }
            }
        }
    }
    eprintln!(
        "updates: {finalizer_updates} finalizer removals admitted, {judged} content updates judged ({denied_updates} denied)"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        denied_updates > 0,
        "an UPDATE that breaks the rules is denied"
    );
}

/// A finding accepted with `credlint.io/ignore` is accepted by the cluster's policy too, and an
/// annotation `check` calls `ignore-invalid` (no reason, an unknown id) accepts nothing there.
#[test]
fn suppressed_findings_are_admitted_by_their_policy() {
    let set = policies("");
    let engine = Executor::new(Options::default()).unwrap();
    let (mut accepted, mut refused) = (0, 0);
    let mut failures = Vec::new();
    for (folder, paths) in units() {
        if !image_of(&folder).is_empty() {
            continue;
        }
        for obj in lint_objects(&engine, &paths) {
            if obj.refused() {
                continue;
            }
            for (index, policy) in set.policies.iter().enumerate() {
                let text = node_of(&obj.root);
                if !decide(&set, index, &text).denies() {
                    continue;
                }
                let annotate = |value: &str| {
                    let mut y = obj.root.clone();
                    if let Some(meta) = y.get_mut("metadata") {
                        if meta.get("annotations").is_none() {
                            meta.set("annotations", Y::Map(Vec::new()));
                        }
                        if let Some(a) = meta.get_mut("annotations") {
                            a.set("credlint.io/ignore", Y::str(value));
                        }
                    }
                    node_of(&y)
                };
                let name = &policy.name;
                for value in [
                    format!("{name}: accepted until PLAT-12"),
                    format!("job-ttl , {name} ,policy:local-x: kept: see PLAT-12"),
                ] {
                    accepted += 1;
                    let v = decide(&set, index, &annotate(&value));
                    if v.denies() {
                        failures.push(format!("{}: `{value}` not honoured by {name}", place(&obj)));
                    }
                }
                for value in [
                    name.to_string(),
                    format!("{name}:   "),
                    format!("{name}, no-such-rule: why"),
                    format!("{name}x: why"),
                ] {
                    refused += 1;
                    let v = decide(&set, index, &annotate(&value));
                    if !v.denies() {
                        failures.push(format!(
                            "{}: `{value}` accepted by {name}, which check calls ignore-invalid",
                            place(&obj)
                        ));
                    }
                }
            }
        }
    }
    eprintln!("suppressions: {accepted} honoured, {refused} invalid ones refused");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(accepted > 0);
}

/// Fields a renderer leaves empty (`hostNetwork:` with nothing after it, `add: null`) are absent
/// to the cluster: the API server decodes null as unset. Every policy (the linter's CEL, the same
/// text) decides every fixture object alike with such fields added and without them.
#[test]
fn null_fields_are_judged_as_absent() {
    let set = policies("");
    let engine = Executor::new(Options::default()).unwrap();
    let nulls: [&[&str]; 8] = [
        &["spec", "template", "spec", "hostNetwork"],
        &["spec", "template", "spec", "hostPID"],
        &["spec", "template", "spec", "hostIPC"],
        &[
            "spec",
            "template",
            "spec",
            "securityContext",
            "seccompProfile",
        ],
        &["spec", "template", "spec", "automountServiceAccountToken"],
        &["metadata", "labels"],
        &["spec", "activeDeadlineSeconds"],
        &["spec", "target"],
    ];
    let (mut compared, mut failures) = (0, Vec::new());
    for (folder, paths) in units() {
        if !image_of(&folder).is_empty() {
            continue;
        }
        for obj in lint_objects(&engine, &paths) {
            if obj.refused() {
                continue;
            }
            let plain = node_of(&obj.root);
            let mut nulled = obj.root.clone();
            for path in nulls {
                let (last, parents) = path.split_last().unwrap();
                let mut at = Some(&mut nulled);
                for key in parents {
                    at = at.and_then(|y| y.get_mut(key));
                }
                if let Some(parent) = at
                    && matches!(parent, Y::Map(_))
                    && parent.get(last).is_none()
                {
                    parent.set(last, Y::Null);
                }
            }
            // Every container's optional security fields left empty too.
            if let Some(containers) = nulled
                .get_mut("spec")
                .and_then(|s| s.get_mut("template"))
                .and_then(|t| t.get_mut("spec"))
                .and_then(|s| s.get_mut("containers"))
            {
                each_map(Some(containers), |c| {
                    if c.get("securityContext").is_none() {
                        return;
                    }
                    let sc = c.get_mut("securityContext").unwrap();
                    for key in ["seccompProfile", "privileged", "runAsUser"] {
                        if matches!(sc, Y::Map(_)) && sc.get(key).is_none() {
                            sc.set(key, Y::Null);
                        }
                    }
                });
            }
            let nulled = node_of(&nulled);
            for (index, policy) in set.policies.iter().enumerate() {
                compared += 1;
                let (a, b) = (decide(&set, index, &plain), decide(&set, index, &nulled));
                if a.denies() != b.denies() {
                    failures.push(format!(
                        "{}: policy {} decides otherwise with empty fields ({b:?} vs {a:?})",
                        place(&obj),
                        policy.name
                    ));
                }
            }
        }
    }
    eprintln!("nulls: {compared} verdicts compared with empty fields added");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The policies leave the system namespaces alone (`exempt-namespaces` of credlint.toml, by
/// default kube-system, kube-public and kube-node-lease): an object every policy would deny in
/// its own namespace is not even selected there, and any other namespace is judged as before.
#[test]
fn exempt_namespaces_are_left_alone_and_others_judged() {
    let set = policies("");
    let engine = Executor::new(Options::default()).unwrap();
    let (mut denied, mut failures) = (0, Vec::new());
    for (folder, paths) in units() {
        if !image_of(&folder).is_empty() {
            continue;
        }
        for obj in lint_objects(&engine, &paths) {
            if obj.refused()
                || obj
                    .root
                    .get("metadata")
                    .and_then(|m| m.get("namespace"))
                    .is_none()
            {
                continue;
            }
            let moved = |namespace: &str| {
                let mut y = obj.root.clone();
                y.get_mut("metadata")
                    .unwrap()
                    .set("namespace", Y::str(namespace));
                node_of(&y)
            };
            let (system, other) = (moved("kube-system"), moved("payments-eu"));
            for (index, policy) in set.policies.iter().enumerate() {
                if !decide(&set, index, &node_of(&obj.root)).denies() {
                    continue;
                }
                denied += 1;
                if !matches!(decide(&set, index, &system), Verdict::NotMatched) {
                    failures.push(format!(
                        "{}: policy {} looks at the object in kube-system",
                        place(&obj),
                        policy.name
                    ));
                }
                if !decide(&set, index, &other).denies() {
                    failures.push(format!(
                        "{}: policy {} admits the object in another namespace",
                        place(&obj),
                        policy.name
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        denied > 0,
        "no fixture object is denied: the test says nothing"
    );
}
