//! Single-fault mutations, one family per rule of the catalog: each takes a valid draft and
//! breaks exactly what its rule is about (the fault may, by its nature, break a neighbour too:
//! a Role rule without resourceNames is also a schema problem when the key is misspelt).

use super::emit::{Layout, Script};
use super::generate::{BundleDraft, Draft, pinned_image, rename};
use super::render::Spec;
use super::{Case, Choices};
use serde_json::{Value, json};

pub type SpecFault = fn(&mut dyn Choices, &mut Draft);
pub type ObjectFault = fn(&mut dyn Choices, &mut Draft);
pub type LayoutFault = fn(&mut dyn Choices, &Draft, &mut Layout);
pub type TextFault = fn(&mut dyn Choices, &mut Case);

/// How to make a mutant of one rule. The steps run in order: the spec (then the objects are
/// rendered again), the objects, the layout, the text.
pub struct Family {
    pub rule: &'static str,
    pub spec: Option<SpecFault>,
    pub objects: Option<ObjectFault>,
    pub layout: Option<LayoutFault>,
    pub text: Option<TextFault>,
    /// Decided by `credlint simulate` (running the program), not by `check`.
    pub simulate: bool,
}

const fn family(rule: &'static str) -> Family {
    Family {
        rule,
        spec: None,
        objects: None,
        layout: None,
        text: None,
        simulate: false,
    }
}

/// Rules no mutation of a bundle can produce, and why.
pub const UNREACHABLE: &[(&str, &str)] = &[(
    "policy-unsupported",
    "it is about a Kyverno policy file given with `check --policy`, not about a manifest",
)];

pub const FAMILIES: &[Family] = &[
    Family {
        text: Some(yaml_syntax),
        ..family("yaml-syntax")
    },
    Family {
        layout: Some(duplicate_key),
        ..family("yaml-duplicate-key")
    },
    Family {
        objects: Some(schema),
        ..family("schema")
    },
    Family {
        objects: Some(drop_member),
        ..family("bundle-incomplete")
    },
    Family {
        objects: Some(duplicate_member),
        ..family("bundle-duplicate")
    },
    Family {
        objects: Some(plan_invalid),
        ..family("plan-invalid")
    },
    Family {
        objects: Some(role_plan_mismatch),
        ..family("role-plan-mismatch")
    },
    Family {
        objects: Some(rolebinding_wiring),
        ..family("rolebinding-wiring")
    },
    Family {
        objects: Some(job_wiring),
        ..family("job-wiring")
    },
    Family {
        objects: Some(job_name_hash),
        ..family("job-name-hash")
    },
    Family {
        objects: Some(forbidden_verb),
        ..family("role-forbidden-verb")
    },
    Family {
        objects: Some(wildcard),
        ..family("role-wildcard")
    },
    Family {
        objects: Some(unnamed_rule),
        ..family("role-unnamed-rule")
    },
    Family {
        objects: Some(create_named),
        ..family("role-create-named")
    },
    Family {
        objects: Some(unexpected_rule),
        ..family("role-unexpected-rule")
    },
    Family {
        objects: Some(hook_missing),
        ..family("hook-missing")
    },
    Family {
        objects: Some(hook_wave),
        ..family("hook-wave")
    },
    Family {
        objects: Some(hook_delete_policy),
        ..family("hook-delete-policy")
    },
    Family {
        objects: Some(run_as_root),
        ..family("job-run-as-non-root")
    },
    Family {
        objects: Some(writable_root),
        ..family("job-read-only-root-fs")
    },
    Family {
        objects: Some(capabilities),
        ..family("job-drop-all-capabilities")
    },
    Family {
        objects: Some(privilege_escalation),
        ..family("job-privilege-escalation")
    },
    Family {
        objects: Some(literal_env),
        ..family("job-literal-value")
    },
    Family {
        objects: Some(seccomp),
        ..family("job-seccomp")
    },
    Family {
        objects: Some(host_access),
        ..family("job-host-access")
    },
    Family {
        spec: Some(image_not_pinned),
        ..family("job-image-pinned")
    },
    Family {
        objects: Some(no_ttl),
        ..family("job-ttl")
    },
    Family {
        text: Some(pragma_misplaced),
        ..family("pragma-misplaced")
    },
    Family {
        layout: Some(pragma_missing),
        ..family("pragma-missing")
    },
    Family {
        layout: Some(script_not_literal),
        ..family("script-not-literal")
    },
    Family {
        spec: Some(python2),
        ..family("runtime-syntax")
    },
    Family {
        spec: Some(non_stdlib_import),
        ..family("runtime-non-stdlib-import")
    },
    Family {
        spec: Some(forbidden_method),
        ..family("runtime-forbidden-method")
    },
    Family {
        objects: Some(eso_generator),
        ..family("eso-generated-credential")
    },
    Family {
        objects: Some(eso_store),
        ..family("eso-store-unscoped")
    },
    Family {
        text: Some(not_an_object),
        ..family("not-an-object")
    },
    Family {
        objects: Some(bundle_naming),
        ..family("bundle-naming")
    },
    Family {
        objects: Some(secret_rendered),
        ..family("secret-rendered")
    },
    Family {
        objects: Some(eso_targets_planned),
        ..family("eso-targets-planned")
    },
    Family {
        objects: Some(writer_rendered),
        ..family("writer-rendered")
    },
    Family {
        objects: Some(plan_shared_secret),
        ..family("plan-shared-secret")
    },
    Family {
        objects: Some(generator_rendered),
        ..family("generator-rendered")
    },
    Family {
        objects: Some(rbac_extra_binding),
        ..family("rbac-extra-binding")
    },
    Family {
        objects: Some(identity_reused),
        ..family("identity-reused")
    },
    Family {
        objects: Some(plan_holds_value),
        ..family("plan-holds-value")
    },
    Family {
        objects: Some(ignore_invalid),
        ..family("ignore-invalid")
    },
    Family {
        objects: Some(ignore_unused),
        ..family("ignore-unused")
    },
    // Decided by `credlint simulate`: small edits of the reference program.
    Family {
        spec: Some(lists_secrets),
        simulate: true,
        ..family("runtime-unauthorized-request")
    },
    Family {
        spec: Some(background_delete),
        simulate: true,
        ..family("runtime-value-rewritten")
    },
    Family {
        spec: Some(foreign_write),
        simulate: true,
        ..family("runtime-foreign-write")
    },
    Family {
        spec: Some(adopts_remote),
        simulate: true,
        ..family("runtime-adopts-foreign")
    },
    Family {
        spec: Some(crashes),
        simulate: true,
        ..family("runtime-failed")
    },
    Family {
        spec: Some(writes_unchanged),
        simulate: true,
        ..family("runtime-needless-write")
    },
    Family {
        spec: Some(restarts_correct_server),
        simulate: true,
        ..family("runtime-restarts-server")
    },
    Family {
        spec: Some(does_nothing),
        simulate: true,
        ..family("runtime-incomplete")
    },
    Family {
        spec: Some(adopts_out_of_order),
        simulate: true,
        ..family("runtime-adoption-order")
    },
    Family {
        spec: Some(predictable_values),
        simulate: true,
        ..family("runtime-predictable-value")
    },
    Family {
        spec: Some(escapes_sandbox),
        simulate: true,
        ..family("runtime-sandbox-escape")
    },
    Family {
        spec: Some(unguarded_patch),
        simulate: true,
        ..family("runtime-unguarded-patch")
    },
    Family {
        spec: Some(leaks_value),
        simulate: true,
        ..family("runtime-value-leaked")
    },
    // Read from the program's text by `check`, not simulated.
    Family {
        spec: Some(weak_random),
        ..family("runtime-weak-random")
    },
];

const MEMBERS: &[&str] = &["ServiceAccount", "Role", "RoleBinding", "ConfigMap", "Job"];

fn member<'d>(c: &mut dyn Choices, draft: &'d mut Draft) -> &'d mut Value {
    let kind = *c.pick(MEMBERS);
    draft.object_mut(kind).expect("a valid draft has all five")
}

fn job(draft: &mut Draft) -> &mut Value {
    draft.object_mut("Job").expect("a valid draft has a Job")
}

fn container(draft: &mut Draft) -> &mut Value {
    &mut job(draft)["spec"]["template"]["spec"]["containers"][0]
}

fn pod(draft: &mut Draft) -> &mut Value {
    &mut job(draft)["spec"]["template"]["spec"]
}

fn rules(draft: &mut Draft) -> &mut Vec<Value> {
    draft
        .object_mut("Role")
        .and_then(|r| r["rules"].as_array_mut())
        .expect("a valid draft has a Role with rules")
}

/// A Role rule with resourceNames.
fn named_rule<'d>(c: &mut dyn Choices, draft: &'d mut Draft) -> &'d mut Value {
    let rules = rules(draft);
    let named: Vec<usize> = (0..rules.len())
        .filter(|&i| rules[i].get("resourceNames").is_some())
        .collect();
    let i = *c.pick(&named);
    &mut rules[i]
}

fn create_rule(draft: &mut Draft) -> &mut Value {
    rules(draft)
        .iter_mut()
        .find(|r| r["verbs"] == json!(["create"]))
        .expect("a valid Role has the create rule")
}

fn annotations(obj: &mut Value) -> &mut serde_json::Map<String, Value> {
    if !obj["metadata"]["annotations"].is_object() {
        obj["metadata"]["annotations"] = json!({});
    }
    obj["metadata"]["annotations"]
        .as_object_mut()
        .expect("just made a mapping")
}

fn newline(text: &str) -> &'static str {
    if text.contains("\r\n") { "\r\n" } else { "\n" }
}

fn yaml_syntax(c: &mut dyn Choices, case: &mut Case) {
    let i = c.below(case.files.len());
    let (path, text) = &mut case.files[i];
    if path.ends_with(".json") && c.chance(2) {
        // A JSON file cut short.
        let end = text.rfind('}').unwrap_or(1).max(1);
        let cut = c.between(1, end);
        let mut cut = cut.min(end);
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut.max(1));
    } else {
        let nl = newline(text);
        let broken = *c.pick(&["kind: [Role", "metadata: {name: x", "a: b: c", "\tkey: 1"]);
        if !text.ends_with('\n') {
            text.push_str(nl);
        }
        text.push_str(&format!("---{nl}{broken}{nl}"));
    }
}

fn duplicate_key(c: &mut dyn Choices, draft: &Draft, layout: &mut Layout) {
    let i = c.below(draft.bundle.objects.len());
    if let Some(o) = layout.object_mut(i) {
        o.duplicate_first_key = true;
    }
}

fn schema(c: &mut dyn Choices, draft: &mut Draft) {
    match c.below(4) {
        0 => {
            let rule = named_rule(c, draft);
            let names = rule
                .as_object_mut()
                .and_then(|r| r.remove("resourceNames"))
                .unwrap_or_default();
            rule["resourceName"] = names;
        }
        1 => container(draft)["securityContext"]["readOnlyRootFilesystem"] = json!("true"),
        2 => job(draft)["spec"]["ttlSecondsAfterFinished"] = json!("3600"),
        _ => {
            let obj = member(c, draft);
            annotations(obj).insert("credentials.example/revision".into(), json!(7));
        }
    }
}

fn drop_member(c: &mut dyn Choices, draft: &mut Draft) {
    let kind = *c.pick(MEMBERS);
    draft.bundle.objects.retain(|o| o["kind"] != kind);
}

fn duplicate_member(c: &mut dyn Choices, draft: &mut Draft) {
    let copy = member(c, draft).clone();
    let mut copy = copy;
    if copy["kind"] == "Job" {
        // A second Job of the owner, for another run of the program.
        let name = copy["metadata"]["name"].as_str().unwrap_or_default();
        let head = &name[..name.len().saturating_sub(8)];
        copy["metadata"]["name"] = Value::from(format!("{head}00000000"));
    }
    draft.bundle.objects.push(copy);
}

fn plan_invalid(c: &mut dyn Choices, draft: &mut Draft) {
    let kind = draft.bundle.spec.kind.clone();
    let owner = draft.bundle.spec.owner.clone();
    let cm = draft.object_mut("ConfigMap").expect("a ConfigMap");
    let plan_text = cm["data"]["plan.json"].as_str().unwrap_or_default();
    let mut plan: Value = serde_json::from_str(plan_text).unwrap_or_default();
    let text = match c.below(5) {
        0 => format!("{}\n", &plan_text[..plan_text.len() / 2]),
        1 => {
            plan["kind"] = json!("database");
            format!(
                "{}\n",
                serde_json::to_string_pretty(&plan).unwrap_or_default()
            )
        }
        2 => {
            plan["owner"] = json!(format!("{owner}x"));
            format!(
                "{}\n",
                serde_json::to_string_pretty(&plan).unwrap_or_default()
            )
        }
        3 if kind == "bucket" || kind == "component" => {
            plan["serverPods"] = json!([format!("{owner}-0")]);
            format!(
                "{}\n",
                serde_json::to_string_pretty(&plan).unwrap_or_default()
            )
        }
        _ => {
            plan.as_object_mut().map(|p| p.remove("secrets"));
            format!(
                "{}\n",
                serde_json::to_string_pretty(&plan).unwrap_or_default()
            )
        }
    };
    cm["data"]["plan.json"] = Value::from(text);
    draft.sync_job_name();
}

fn role_plan_mismatch(c: &mut dyn Choices, draft: &mut Draft) {
    let owner = draft.bundle.spec.owner.clone();
    let kind = draft.bundle.spec.kind.clone();
    let choice = c.below(3);
    if choice == 2 && (kind == "bucket" || kind == "component") {
        rules(draft).push(json!({
            "apiGroups": [""], "resources": ["pods"],
            "resourceNames": [format!("{owner}-0")], "verbs": ["get", "delete"]
        }));
        return;
    }
    let rule = named_rule(c, draft);
    let names = rule["resourceNames"].as_array_mut().expect("named");
    if choice == 1 && names.len() > 1 {
        names.pop();
    } else {
        names.push(json!(format!("{owner}-unplanned")));
    }
}

fn rolebinding_wiring(c: &mut dyn Choices, draft: &mut Draft) {
    let owner = draft.bundle.spec.owner.clone();
    let namespaced = draft.bundle.namespaced;
    let rb = draft.object_mut("RoleBinding").expect("a RoleBinding");
    match c.below(4) {
        0 => rb["roleRef"]["name"] = json!(format!("{owner}-admin")),
        1 => rb["roleRef"]["kind"] = json!("ClusterRole"),
        2 => rb["subjects"][0]["name"] = json!("default"),
        _ if namespaced => rb["subjects"][0]["namespace"] = json!("kube-system"),
        _ => {
            if let Some(s) = rb["subjects"].as_array_mut() {
                s.push(json!({"kind": "ServiceAccount", "name": "default"}));
            }
        }
    }
}

fn job_wiring(c: &mut dyn Choices, draft: &mut Draft) {
    let owner = draft.bundle.spec.owner.clone();
    match c.below(10) {
        // A Job that cannot do its job although every name is right.
        4 => pod(draft)["automountServiceAccountToken"] = json!(false),
        5 => {
            if let Some(sa) = draft.object_mut("ServiceAccount") {
                sa["automountServiceAccountToken"] = json!(false);
            }
        }
        6 => {
            let key = *c.pick(&["create.py", "plan.json"]);
            pod(draft)["volumes"][0]["configMap"]["items"] = json!([{"key": key, "path": key}]);
        }
        7 => pod(draft)["volumes"][0]["configMap"]["optional"] = json!(true),
        8 => {
            let mode = *c.pick(&[0o400, 0o600, 0o700, 0o440]);
            pod(draft)["volumes"][0]["configMap"]["defaultMode"] = json!(mode);
        }
        9 => {
            let key = *c.pick(&["create.py", "plan.json"]);
            let mount = &mut container(draft)["volumeMounts"][0];
            mount["mountPath"] = json!(format!("/credentials/{key}"));
            mount["subPath"] = json!(key);
        }
        0 => pod(draft)["serviceAccountName"] = json!(format!("{owner}-runner")),
        1 => container(draft)["volumeMounts"][0]["mountPath"] = json!("/etc/credentials"),
        2 => {
            let cont = container(draft);
            if let Some(c) = cont.as_object_mut() {
                c.remove("args");
            }
            cont["command"] = json!(["python3", "/credentials/create.py"]);
        }
        _ => pod(draft)["volumes"][0]["configMap"]["name"] = json!("shared-scripts"),
    }
}

fn job_name_hash(c: &mut dyn Choices, draft: &mut Draft) {
    let job = job(draft);
    let name = job["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let (head, hash) = name.split_at(name.len() - 8);
    let at = c.below(8);
    let old = hash.as_bytes()[at];
    let new = if old == b'0' { '1' } else { '0' };
    let mut hash: Vec<char> = hash.chars().collect();
    hash[at] = new;
    job["metadata"]["name"] = json!(format!("{head}{}", hash.iter().collect::<String>()));
}

fn forbidden_verb(c: &mut dyn Choices, draft: &mut Draft) {
    let verb = *c.pick(&[
        "update",
        "list",
        "watch",
        "deletecollection",
        "escalate",
        "bind",
        "impersonate",
    ]);
    let rules = rules(draft);
    let i = c.below(rules.len());
    if let Some(verbs) = rules[i]["verbs"].as_array_mut() {
        let at = c.below(verbs.len() + 1);
        verbs.insert(at, json!(verb));
    }
}

fn wildcard(c: &mut dyn Choices, draft: &mut Draft) {
    let key = *c.pick(&["apiGroups", "resources", "verbs", "resourceNames"]);
    let rule = if key == "resourceNames" {
        named_rule(c, draft)
    } else {
        let rules = rules(draft);
        let i = c.below(rules.len());
        &mut rules[i]
    };
    if let Some(list) = rule.get_mut(key).and_then(Value::as_array_mut) {
        let at = c.below(list.len());
        list[at] = json!("*");
    }
}

fn unnamed_rule(c: &mut dyn Choices, draft: &mut Draft) {
    let choice = c.below(3);
    let rule = named_rule(c, draft);
    match choice {
        0 => {
            rule.as_object_mut().map(|r| r.remove("resourceNames"));
        }
        1 => rule["resourceNames"] = json!([]),
        _ => rule["resourceNames"] = json!([""]),
    }
}

fn create_named(_: &mut dyn Choices, draft: &mut Draft) {
    let secret = draft.bundle.spec.secrets[0].0.clone();
    create_rule(draft)["resourceNames"] = json!([secret]);
}

fn unexpected_rule(c: &mut dyn Choices, draft: &mut Draft) {
    let owner = draft.bundle.spec.owner.clone();
    let rule = match c.below(3) {
        0 => json!({"apiGroups": [""], "resources": ["configmaps"],
                    "resourceNames": [format!("{owner}-settings")], "verbs": ["get"]}),
        1 => json!({"apiGroups": [""], "resources": ["secrets/status"],
                    "resourceNames": [format!("{owner}-app")], "verbs": ["get"]}),
        _ => json!({"nonResourceURLs": ["/healthz"], "verbs": ["get"]}),
    };
    let rules = rules(draft);
    let at = c.below(rules.len() + 1);
    rules.insert(at, rule);
}

/// Removes every hook annotation an object has, Argo CD's and Helm's.
fn clear(a: &mut serde_json::Map<String, Value>, keys: &[&str]) {
    for k in keys {
        a.remove(*k);
    }
}

const HOOK: &[&str] = &["argocd.argoproj.io/hook", "helm.sh/hook"];
const WAVE: &[&str] = &["argocd.argoproj.io/sync-wave", "helm.sh/hook-weight"];
const POLICY: &[&str] = &[
    "argocd.argoproj.io/hook-delete-policy",
    "helm.sh/hook-delete-policy",
];

fn hook_missing(c: &mut dyn Choices, draft: &mut Draft) {
    let value = *c.pick(&[
        None,
        Some("Sync"),
        Some("presync"),
        Some("PreSync,PostSync"),
        Some(""),
    ]);
    let a = annotations(member(c, draft));
    clear(a, HOOK);
    if let Some(v) = value {
        a.insert(HOOK[0].into(), json!(v));
    }
}

fn hook_wave(c: &mut dyn Choices, draft: &mut Draft) {
    let obj = member(c, draft);
    let is_job = obj["kind"] == "Job";
    let value = *c.pick(&[
        if is_job { "0" } else { "1" },
        "-1",
        "2",
        "one",
        " 0",
        "1.0",
    ]);
    let a = annotations(obj);
    clear(a, WAVE);
    a.insert(WAVE[0].into(), json!(value));
}

fn hook_delete_policy(c: &mut dyn Choices, draft: &mut Draft) {
    let obj = member(c, draft);
    let is_job = obj["kind"] == "Job";
    let value = if is_job {
        *c.pick(&[
            "BeforeHookCreation",
            "HookSucceeded",
            "BeforeHookCreation,HookFailed",
        ])
    } else {
        *c.pick(&[
            "HookSucceeded",
            "BeforeHookCreation,HookSucceeded",
            "BeforeHookCreation,Always",
        ])
    };
    let a = annotations(obj);
    clear(a, POLICY);
    a.insert(POLICY[0].into(), json!(value));
}

fn run_as_root(c: &mut dyn Choices, draft: &mut Draft) {
    let ctx = &mut container(draft)["securityContext"];
    if c.chance(2) {
        ctx["runAsNonRoot"] = json!(false);
    } else {
        ctx["runAsUser"] = json!(0);
    }
}

fn writable_root(c: &mut dyn Choices, draft: &mut Draft) {
    let ctx = &mut container(draft)["securityContext"];
    if c.chance(2) {
        ctx["readOnlyRootFilesystem"] = json!(false);
    } else {
        ctx.as_object_mut()
            .map(|m| m.remove("readOnlyRootFilesystem"));
    }
}

fn capabilities(c: &mut dyn Choices, draft: &mut Draft) {
    let caps = &mut container(draft)["securityContext"]["capabilities"];
    if c.chance(2) {
        caps["drop"] = json!(["NET_RAW"]);
    } else {
        caps["add"] = json!(["NET_ADMIN"]);
    }
}

fn privilege_escalation(c: &mut dyn Choices, draft: &mut Draft) {
    let ctx = &mut container(draft)["securityContext"];
    match c.below(3) {
        0 => ctx["allowPrivilegeEscalation"] = json!(true),
        1 => {
            ctx.as_object_mut()
                .map(|m| m.remove("allowPrivilegeEscalation"));
        }
        _ => ctx["privileged"] = json!(true),
    }
}

fn literal_env(c: &mut dyn Choices, draft: &mut Draft) {
    let literal = json!({"name": "ADMIN_PASSWORD", "value": *c.pick(&["hunter2", "0", "true"])});
    let from_cluster = json!({"name": "POD_NAMESPACE",
        "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}});
    // The literal entry alone, or after one that is fine.
    container(draft)["env"] = if c.chance(2) {
        json!([literal])
    } else {
        json!([from_cluster, literal])
    };
}

fn seccomp(c: &mut dyn Choices, draft: &mut Draft) {
    let kind = *c.pick(&["Unconfined", "unconfined"]);
    container(draft)["securityContext"]["seccompProfile"] = json!({ "type": kind });
}

fn host_access(c: &mut dyn Choices, draft: &mut Draft) {
    match c.below(5) {
        0 => pod(draft)["hostNetwork"] = json!(true),
        1 => pod(draft)["hostPID"] = json!(true),
        2 => pod(draft)["hostIPC"] = json!(true),
        3 => {
            if let Some(v) = pod(draft)["volumes"].as_array_mut() {
                v.push(json!({"name": "host", "hostPath": {"path": "/var/run"}}));
            }
        }
        _ => {
            container(draft)["ports"] = json!([{"containerPort": 8080, "hostPort": 8080}]);
        }
    }
}

fn image_not_pinned(c: &mut dyn Choices, draft: &mut Draft) {
    let spec = &mut draft.bundle.spec;
    if draft.credentials_image.is_some() && c.chance(2) {
        // Pinned, but not the configured image.
        spec.image = pinned_image(c);
    } else {
        let base = spec.image.split('@').next().unwrap_or_default().to_string();
        spec.image = if c.chance(2) {
            base
        } else {
            format!("{base}@sha256:1234")
        };
    }
}

fn no_ttl(_: &mut dyn Choices, draft: &mut Draft) {
    job(draft)["spec"]
        .as_object_mut()
        .map(|s| s.remove("ttlSecondsAfterFinished"));
}

fn pragma_misplaced(c: &mut dyn Choices, case: &mut Case) {
    let yaml: Vec<usize> = (0..case.files.len())
        .filter(|&i| !case.files[i].0.ends_with(".json"))
        .collect();
    let i = *c.pick(&yaml);
    let text = &mut case.files[i].1;
    let nl = newline(text);
    let comment = *c.pick(&[
        "# pragma: allowlist secret",
        "# pragma: allowlist nextline secret",
        "# pragma: whitelist secret",
    ]);
    if c.chance(2) {
        text.insert_str(0, &format!("{comment}{nl}"));
    } else {
        if !text.ends_with('\n') {
            text.push_str(nl);
        }
        text.push_str(&format!("{comment}{nl}"));
    }
}

fn pragma_missing(_: &mut dyn Choices, _: &Draft, layout: &mut Layout) {
    layout.script = Script::LiteralWithoutPragma;
}

fn script_not_literal(_: &mut dyn Choices, _: &Draft, layout: &mut Layout) {
    layout.script = Script::DoubleQuoted;
}

fn python2(c: &mut dyn Choices, draft: &mut Draft) {
    let line = *c.pick(&["print \"done\"\n", "exec \"pass\"\n", "def f(:\n    pass\n"]);
    draft.bundle.spec.script.push_str(line);
}

fn non_stdlib_import(c: &mut dyn Choices, draft: &mut Draft) {
    let module = *c.pick(&["requests", "yaml", "kubernetes", "boto3"]);
    let script = &mut draft.bundle.spec.script;
    *script = script.replacen(
        "import base64\n",
        &format!("import base64\nimport {module}\n"),
        1,
    );
}

fn forbidden_method(c: &mut dyn Choices, draft: &mut Draft) {
    // Forms the text shows (a list through a helper that builds the path is for `simulate`).
    let call = *c.pick(&[
        "        api.call(\"PUT\", path, current)\n",
        "        api.call(\"GET\", \"/api/v1/namespaces/\" + api.namespace + \"/secrets\")\n",
        "        api.call(\"GET\", path + \"?watch=true\")\n",
    ]);
    edit(
        draft,
        "        ops = patch_ops(current, planned)\n",
        call,
        true,
    );
}

/// Inserts `text` after (or replaces) the first occurrence of `at` in the bundle's program.
fn edit(draft: &mut Draft, at: &str, text: &str, after: bool) {
    let script = &mut draft.bundle.spec.script;
    assert!(script.contains(at), "the reference program has {at:?}");
    let replacement = if after {
        format!("{at}{text}")
    } else {
        text.to_string()
    };
    *script = script.replacen(at, &replacement, 1);
}

fn lists_secrets(_: &mut dyn Choices, draft: &mut Draft) {
    edit(
        draft,
        "    api = Api()\n",
        "    api.call(\"GET\", api.path(\"v1\", \"secrets\"))\n",
        true,
    );
}

fn background_delete(_: &mut dyn Choices, draft: &mut Draft) {
    edit(
        draft,
        "\"propagationPolicy\": \"Orphan\"}",
        "\"propagationPolicy\": \"Background\"}",
        false,
    );
}

fn foreign_write(_: &mut dyn Choices, draft: &mut Draft) {
    edit(
        draft,
        "    repair_servers(api, plan, data_by_secret)\n",
        "    api.call(\"POST\", api.path(\"v1\", \"secrets\"), \
         {\"metadata\": {\"name\": plan[\"owner\"] + \"-debug\"}, \"data\": {}})\n",
        true,
    );
}

fn adopts_remote(_: &mut dyn Choices, draft: &mut Draft) {
    edit(
        draft,
        "        if not generator_backed(es):\n",
        "        if not generator_backed(es) and False:\n",
        false,
    );
}

fn crashes(_: &mut dyn Choices, draft: &mut Draft) {
    edit(
        draft,
        "ensure_secret(api, planned).get(\"data\") or {}",
        "ensure_secret(api, planned)[\"dta\"]",
        false,
    );
}

fn writes_unchanged(_: &mut dyn Choices, draft: &mut Draft) {
    edit(
        draft,
        "        if len(ops) == 1:\n",
        "        if len(ops) == 0:\n",
        false,
    );
}

fn restarts_correct_server(c: &mut dyn Choices, draft: &mut Draft) {
    let spec = &mut draft.bundle.spec;
    if spec.kind != "cache" && spec.kind != "broker" {
        spec.kind = (*c.pick(&["cache", "broker"])).to_string();
    }
    if spec.pods.is_empty() {
        spec.pods.push(format!("{}-0", spec.owner));
    }
    edit(
        draft,
        "        if answer != \"refused\":\n",
        "        if answer == \"unknown\":\n",
        false,
    );
}

fn does_nothing(_: &mut dyn Choices, draft: &mut Draft) {
    edit(draft, "    api = Api()\n", "    return 0\n", true);
}

/// Point 3's order broken one of three ways: Secrets written before the adoption, no wait for
/// the ExternalSecret to go, or the retired generators deleted while it still exists.
fn adopts_out_of_order(c: &mut dyn Choices, draft: &mut Draft) {
    match c.below(3) {
        0 => {
            edit(draft, "    adopt(api, plan)\n", "", false);
            edit(
                draft,
                "    repair_servers(api, plan, data_by_secret)\n",
                "    adopt(api, plan)\n    repair_servers(api, plan, data_by_secret)\n",
                false,
            );
        }
        1 => edit(
            draft,
            "        wait_until_gone(api, path, name)\n",
            "        pass\n",
            false,
        ),
        _ => {
            // Only a plan that retires generators has any to delete too early.
            let spec = &mut draft.bundle.spec;
            if spec.generators.is_empty() {
                spec.generators.push(format!("{}-password0", spec.owner));
            }
            // Before the loop that deletes the ExternalSecrets, instead of after the wait.
            let at = "    for name, path, es in found:\n";
            let early = "    for generator in plan[\"retiredGenerators\"]:\n        \
                 api.expect(\"DELETE\", api.path(\"generators.external-secrets.io/v1alpha1\", \
                 \"passwords\", generator), (200, 202, 404))\n";
            edit(draft, at, &format!("{early}{at}"), false);
        }
    }
}

/// Values of the planned length that are not random enough: hex, digits only, or a fixed part.
fn predictable_values(c: &mut dyn Choices, draft: &mut Draft) {
    let body = *c.pick(&[
        "    return secrets.token_hex(length)[:length]\n",
        "    return \"\".join(secrets.choice(string.digits) for _ in range(length))\n",
        "    return (\"Kx9\" + \"\".join(secrets.choice(ALPHABET) for _ in range(length)))[:length]\n",
    ]);
    edit(
        draft,
        "    return \"\".join(secrets.choice(ALPHABET) for _ in range(length))\n",
        body,
        false,
    );
}

/// A reach beyond the run folder and the fake servers, made as the program starts.
fn escapes_sandbox(c: &mut dyn Choices, draft: &mut Draft) {
    let line = *c.pick(&[
        "socket.socket().connect_ex((\"127.0.0.1\", 9))\n",
        "os.listdir(\"/\")\n",
        "os.system(\"true\")\n",
    ]);
    edit(draft, "import urllib.request\n", line, true);
}

/// A patch whose first operation does not test the resourceVersion, or a second write.
fn unguarded_patch(c: &mut dyn Choices, draft: &mut Draft) {
    match c.below(3) {
        0 => edit(
            draft,
            "\"path\": \"/metadata/resourceVersion\", \"value\": meta.get(\"resourceVersion\")}]",
            "\"path\": \"/metadata/name\", \"value\": meta.get(\"name\")}]",
            false,
        ),
        1 => edit(
            draft,
            "        status, patched = api.expect(\"PATCH\"",
            "        ops.append(ops.pop(0))\n        status, patched = api.expect(\"PATCH\"",
            false,
        ),
        _ => edit(
            draft,
            "            log(\"created Secret %s\" % name)\n",
            "            ops = [{\"op\": \"test\", \"path\": \"/metadata/resourceVersion\", \
             \"value\": created[\"metadata\"][\"resourceVersion\"]}, {\"op\": \"add\", \
             \"path\": \"/metadata/labels/credentials-created\", \"value\": \"true\"}]\n            \
             created = api.expect(\"PATCH\", path, (200,), ops, \"application/json-patch+json\")[1]\n",
            true,
        ),
    }
}

/// A created value on standard error (base64 or a 12-character part) or in the exit message.
fn leaks_value(c: &mut dyn Choices, draft: &mut Draft) {
    let line = *c.pick(&[
        "            log(\"created Secret %s: %s\" % (name, body[\"data\"]))\n",
        "            log(\"created Secret %s (%s...)\" % (name, \
         base64.b64decode(next(iter(body[\"data\"].values()))).decode()[:12]))\n",
        "            log(\"created Secret %s\" % name)\n            \
         open(\"/dev/termination-log\", \"w\").write(json.dumps(body[\"data\"]))\n",
    ]);
    edit(
        draft,
        "            log(\"created Secret %s\" % name)\n",
        line,
        false,
    );
}

/// Generation from a source the text shows to be predictable.
fn weak_random(c: &mut dyn Choices, draft: &mut Draft) {
    let (module, body) = *c.pick(&[
        (
            "random",
            "    return \"\".join(random.choice(ALPHABET) for _ in range(length))\n",
        ),
        ("uuid", "    return (uuid.uuid1().hex * 4)[:length]\n"),
        (
            "hashlib",
            "    return (hashlib.sha256(str(time.time()).encode()).hexdigest() * 4)[:length]\n",
        ),
    ]);
    edit(
        draft,
        "import base64\n",
        &format!("import {module}\n"),
        true,
    );
    edit(
        draft,
        "    return \"\".join(secrets.choice(ALPHABET) for _ in range(length))\n",
        body,
        false,
    );
}

fn eso_generator(c: &mut dyn Choices, draft: &mut Draft) {
    let secret = draft.bundle.spec.secrets[0].0.clone();
    let generator = format!("{}-password", draft.bundle.spec.owner);
    let version = *c.pick(&["v1", "v1beta1"]);
    let mut es = json!({
        "apiVersion": format!("external-secrets.io/{version}"),
        "kind": "ExternalSecret",
        "metadata": {"name": secret},
        "spec": {
            "refreshInterval": "0",
            "target": {"name": secret},
            "dataFrom": [{"sourceRef": {"generatorRef": {
                "apiVersion": "generators.external-secrets.io/v1alpha1",
                "kind": "Password", "name": generator}}}]
        }
    });
    if draft.bundle.namespaced {
        es["metadata"]["namespace"] = json!(draft.bundle.spec.namespace);
    }
    draft.others.push(es);
}

fn eso_store(c: &mut dyn Choices, draft: &mut Draft) {
    let mut store = json!({
        "apiVersion": "external-secrets.io/v1",
        "kind": "ClusterSecretStore",
        "metadata": {"name": "shared-store"},
        "spec": {"provider": {"aws": {"service": "SecretsManager", "region": "eu-west-1"}}}
    });
    if c.chance(2) {
        store["spec"]["conditions"] = json!([]);
    }
    draft.others.push(store);
}

const IGNORE: &str = "credlint.io/ignore";

fn ignore_invalid(c: &mut dyn Choices, draft: &mut Draft) {
    let value = *c.pick(&[
        "role-wildcard",
        "no-such-rule: the platform team accepts it",
        ": no rule named",
        "role-wildcard:",
        "ignore-unused: the annotation rules cannot be ignored",
    ]);
    annotations(member(c, draft)).insert(IGNORE.into(), json!(value));
}

fn ignore_unused(c: &mut dyn Choices, draft: &mut Draft) {
    let rule = *c.pick(&["role-wildcard", "job-ttl", "hook-wave", "bundle-duplicate"]);
    annotations(member(c, draft)).insert(
        IGNORE.into(),
        json!(format!(
            "{rule}: accepted by the platform team until the next release"
        )),
    );
}

fn not_an_object(c: &mut dyn Choices, case: &mut Case) {
    let document = *c.pick(&[
        "just a note",
        "- one\n- two",
        "replicas: 3",
        "kind: ConfigMap\nmetadata: {name: settings}",
        "apiVersion: v1\nkind: List\nitems:\n  - 42",
    ]);
    let yaml: Vec<usize> = (0..case.files.len())
        .filter(|&i| !case.files[i].0.ends_with(".json"))
        .collect();
    if yaml.is_empty() {
        case.files
            .push(("notes.yaml".into(), format!("{document}\n")));
        return;
    }
    let (_, text) = &mut case.files[*c.pick(&yaml)];
    let nl = newline(text);
    if !text.ends_with('\n') {
        text.push_str(nl);
    }
    text.push_str(&format!("---{nl}{}{nl}", document.replace('\n', nl)));
}

fn bundle_naming(c: &mut dyn Choices, draft: &mut Draft) {
    let owner = draft.bundle.spec.owner.clone();
    if c.chance(2) {
        // The ConfigMap as a renderer that names it <owner>-creds writes it; the Job follows.
        let name = format!("{owner}-creds");
        if let Some(cm) = draft.object_mut("ConfigMap") {
            cm["metadata"]["name"] = json!(name);
        }
        pod(draft)["volumes"][0]["configMap"]["name"] = json!(name);
    } else {
        // A kustomize nameSuffix on the Job.
        let job = job(draft);
        let name = job["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        job["metadata"]["name"] = json!(format!("{name}-prod"));
    }
}

/// An object of the bundle's namespace (none when the bundle has none), named `name`.
fn beside(draft: &Draft, api_version: &str, kind: &str, name: &str) -> Value {
    let mut obj = json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name}});
    if draft.bundle.namespaced {
        obj["metadata"]["namespace"] = json!(draft.bundle.spec.namespace);
    }
    obj
}

fn secret_rendered(c: &mut dyn Choices, draft: &mut Draft) {
    let i = c.below(draft.bundle.spec.secrets.len());
    let name = draft.bundle.spec.secrets[i].0.clone();
    let mut secret = beside(draft, "v1", "Secret", &name);
    secret["type"] = json!("Opaque");
    secret["stringData"] = json!({"password": "committed-by-mistake"});
    if c.chance(3) {
        // Without a namespace it lands in the destination namespace, maybe the bundle's.
        secret["metadata"]
            .as_object_mut()
            .map(|m| m.remove("namespace"));
    }
    draft.others.push(secret);
}

fn eso_targets_planned(c: &mut dyn Choices, draft: &mut Draft) {
    let i = c.below(draft.bundle.spec.secrets.len());
    let target = draft.bundle.spec.secrets[i].0.clone();
    let version = *c.pick(&["external-secrets.io/v1", "external-secrets.io/v1beta1"]);
    let by_default = c.chance(2);
    let name = if by_default {
        target.clone()
    } else {
        "from-the-store".to_string()
    };
    let mut es = beside(draft, version, "ExternalSecret", &name);
    es["spec"] = json!({
        "refreshInterval": "1h",
        "secretStoreRef": {"kind": "ClusterSecretStore", "name": "vault"},
        "data": [{"secretKey": "password", "remoteRef": {"key": "shared/password"}}]
    });
    if !by_default {
        es["spec"]["target"] = json!({"name": target});
    }
    draft.others.push(es);
}

/// Another controller's object that writes a planned Secret in the bundle's namespace.
fn writer_rendered(c: &mut dyn Choices, draft: &mut Draft) {
    let i = c.below(draft.bundle.spec.secrets.len());
    let name = draft.bundle.spec.secrets[i].0.clone();
    let namespace = draft.bundle.spec.namespace.clone();
    let obj = match c.below(4) {
        0 => {
            // Named like the Secret, or carrying its name in the template.
            let by_template = c.chance(2);
            let own = if by_template { "sealed" } else { name.as_str() };
            let mut sealed = beside(draft, "bitnami.com/v1alpha1", "SealedSecret", own);
            sealed["spec"] = json!({"encryptedData": {"password": "AgBy3i4OJSWK+PiTySYZZA=="}});
            if by_template {
                sealed["spec"]["template"] = json!({"metadata": {"name": name}});
            }
            sealed
        }
        1 => {
            let target = if draft.bundle.namespaced {
                json!(namespace)
            } else {
                json!("{{request.object.metadata.name}}")
            };
            json!({
                "apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
                "metadata": {"name": "generate-defaults"},
                "spec": {"rules": [{
                    "name": "defaults",
                    "match": {"any": [{"resources": {"kinds": ["Namespace"]}}]},
                    "generate": {
                        "synchronize": c.chance(2), "apiVersion": "v1", "kind": "Secret",
                        "name": name, "namespace": target,
                        "data": {"stringData": {"password": "changeme"}}
                    }
                }]}
            })
        }
        2 => {
            let mut policy = beside(draft, "kyverno.io/v1", "Policy", "copy-secret");
            policy["spec"] = json!({"rules": [{
                "name": "copy",
                "match": {"any": [{"resources": {"kinds": ["ConfigMap"]}}]},
                "generate": {
                    "apiVersion": "v1", "kind": "Secret", "name": name,
                    "clone": {"namespace": "platform", "name": "template"}
                }
            }]});
            policy
        }
        _ => {
            let reach = if c.chance(2) {
                json!({"namespaces": ["elsewhere", namespace]})
            } else {
                json!({"namespaceSelector": {"matchExpressions": [{
                    "key": "kubernetes.io/metadata.name", "operator": "In",
                    "values": [namespace]
                }]}})
            };
            let mut spec = json!({
                "externalSecretSpec": {
                    "secretStoreRef": {"kind": "ClusterSecretStore", "name": "vault"},
                    "target": {"name": name},
                    "data": [{"secretKey": "password", "remoteRef": {"key": "shared/password"}}]
                }
            });
            if let (Some(spec), Some(reach)) = (spec.as_object_mut(), reach.as_object()) {
                spec.extend(reach.clone());
            }
            json!({
                "apiVersion": "external-secrets.io/v1", "kind": "ClusterExternalSecret",
                "metadata": {"name": "shared-password"}, "spec": spec
            })
        }
    };
    draft.others.push(obj);
}

/// A second bundle, of another owner, that plans one of the bundle's Secrets too.
fn plan_shared_secret(c: &mut dyn Choices, draft: &mut Draft) {
    let first = &draft.bundle.spec;
    let i = c.below(first.secrets.len());
    let shared = first.secrets[i].0.clone();
    let mut second: Spec = rename(Spec {
        owner: format!("{}x9", first.owner),
        ..first.clone()
    });
    let j = c.below(second.secrets.len());
    second.secrets[j].0 = shared;
    let objects = BundleDraft::new(c, second, draft.bundle.namespaced).objects;
    draft.others.extend(objects);
}

fn generator_rendered(c: &mut dyn Choices, draft: &mut Draft) {
    if draft.bundle.spec.generators.is_empty() {
        let name = format!("{}-password", draft.bundle.spec.owner);
        draft.bundle.spec.generators.push(name);
        draft.rebuild();
    }
    let i = c.below(draft.bundle.spec.generators.len());
    let name = draft.bundle.spec.generators[i].clone();
    let version = *c.pick(&["v1alpha1", "v1"]);
    let api_version = format!("generators.external-secrets.io/{version}");
    let generator = if c.chance(3) {
        json!({
            "apiVersion": api_version, "kind": "ClusterGenerator", "metadata": {"name": name},
            "spec": {"kind": "Password", "generator": {"passwordSpec": {"length": 32}}}
        })
    } else {
        let mut password = beside(draft, &api_version, "Password", &name);
        password["spec"] = json!({"length": 32});
        password
    };
    draft.others.push(generator);
}

fn rbac_extra_binding(c: &mut dyn Choices, draft: &mut Draft) {
    let account = format!("{}-credentials", draft.bundle.spec.owner);
    let namespace = draft.bundle.spec.namespace.clone();
    let subject = match c.below(4) {
        0 if draft.bundle.namespaced => {
            json!({"kind": "ServiceAccount", "name": account, "namespace": namespace})
        }
        // The name RBAC authorizes the ServiceAccount's requests under.
        3 if draft.bundle.namespaced => json!({
            "kind": "User", "apiGroup": "rbac.authorization.k8s.io",
            "name": format!("system:serviceaccount:{namespace}:{account}")
        }),
        1 if draft.bundle.namespaced => json!({
            "kind": "Group", "apiGroup": "rbac.authorization.k8s.io",
            "name": format!("system:serviceaccounts:{namespace}")
        }),
        _ => json!({
            "kind": "Group", "apiGroup": "rbac.authorization.k8s.io",
            "name": *c.pick(&["system:serviceaccounts", "system:authenticated"])
        }),
    };
    let binding = if c.chance(2) {
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "extra-rights"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [subject]
        })
    } else {
        let mut rb = beside(
            draft,
            "rbac.authorization.k8s.io/v1",
            "RoleBinding",
            "extra-rights",
        );
        rb["roleRef"] =
            json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"});
        rb["subjects"] = json!([subject]);
        rb
    };
    draft.others.push(binding);
}

fn identity_reused(c: &mut dyn Choices, draft: &mut Draft) {
    let account = format!("{}-credentials", draft.bundle.spec.owner);
    let obj = match c.below(3) {
        0 => {
            let kind = *c.pick(&["Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"]);
            let field = *c.pick(&["serviceAccountName", "serviceAccount"]);
            let mut pod = json!({"containers": [{"name": "app", "image": "busybox:1.36"}]});
            pod[field] = json!(account);
            let mut w = beside(draft, "apps/v1", kind, "storefront");
            w["spec"] = json!({
                "selector": {"matchLabels": {"app": "storefront"}},
                "template": {"metadata": {"labels": {"app": "storefront"}}, "spec": pod}
            });
            w
        }
        1 => {
            let mut secret = beside(draft, "v1", "Secret", "borrowed-token");
            secret["type"] = json!("kubernetes.io/service-account-token");
            secret["metadata"]["annotations"] =
                json!({"kubernetes.io/service-account.name": account});
            secret
        }
        _ => {
            let mut rb = beside(
                draft,
                "rbac.authorization.k8s.io/v1",
                "RoleBinding",
                "borrowed-rights",
            );
            rb["roleRef"] = json!({
                "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": account
            });
            rb["subjects"] = json!([{
                "kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice@example.org"
            }]);
            rb
        }
    };
    draft.others.push(obj);
}

fn plan_holds_value(c: &mut dyn Choices, draft: &mut Draft) {
    let cm = draft.object_mut("ConfigMap").expect("a ConfigMap");
    let plan_text = cm["data"]["plan.json"].as_str().unwrap_or_default();
    let mut plan: Value = serde_json::from_str(plan_text).unwrap_or_default();
    let secret = &mut plan["secrets"][0];
    let key = secret["keys"]
        .as_object()
        .and_then(|k| k.keys().next().cloned())
        .unwrap_or_else(|| "password".into());
    match c.below(3) {
        0 => secret["keys"][&key] = json!("c2Vzc2lvbnMtcGFzc3dvcmQ="),
        1 => {
            let field = *c.pick(&["value", "data", "password", "default"]);
            secret["keys"][&key][field] = json!("hunter2hunter2");
        }
        _ => secret["stringData"] = json!({key: "hunter2hunter2"}),
    }
    cm["data"]["plan.json"] = Value::from(format!(
        "{}\n",
        serde_json::to_string_pretty(&plan).unwrap_or_default()
    ));
    draft.sync_job_name();
}
