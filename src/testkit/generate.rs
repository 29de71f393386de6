//! Random valid bundles: owners of every kind, names up to their limits, planned Secrets,
//! retired generators and server pods, and the variations Argo CD and Kubernetes accept
//! (rule, verb and name order; Helm hook annotations; sign and zero-padded waves; delete
//! policies with spaces and repeats; security settings at pod or container level; command
//! and args split; an init container; no namespace at all).

use super::emit::Layout;
use super::{Case, Choices, Rng};
use crate::testkit::render::{Spec, objects_as_json};
use serde_json::{Value, json};

const KINDS: &[&str] = &["cache", "broker", "bucket", "component"];
const ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";

/// A DNS-1123 label-like name of `len` characters: lowercase letters, digits and `-`,
/// starting and ending with a letter or digit.
pub fn name(c: &mut dyn Choices, len: usize) -> String {
    let mut out = String::with_capacity(len);
    for i in 0..len {
        let edge = i == 0 || i + 1 == len;
        if !edge && c.chance(6) {
            out.push('-');
        } else {
            // Mostly letters, so that names read as names.
            let pool = if c.chance(4) { ALNUM } else { &ALNUM[..26] };
            out.push(*c.pick(pool) as char);
        }
    }
    out
}

/// A length for a name whose limit is `max`: mostly short, often at the edges that matter
/// (the 42 characters the Job name keeps of the owner, 63, the limit itself).
fn length(c: &mut dyn Choices, max: usize) -> usize {
    let edges = [1, 41, 42, 43, 62, 63, 64, max - 1, max];
    if c.chance(3) {
        (*c.pick(&edges)).clamp(1, max)
    } else {
        c.between(1, 24.min(max))
    }
}

fn hex(c: &mut dyn Choices, len: usize) -> String {
    (0..len)
        .map(|_| *c.pick(b"0123456789abcdef") as char)
        .collect()
}

/// A pinned image of a random registry path and digest.
pub fn pinned_image(c: &mut dyn Choices) -> String {
    let tag = if c.chance(2) {
        format!(":{}.{}.{}", c.below(4), c.below(20), c.below(10))
    } else {
        String::new()
    };
    let len = c.between(1, 12);
    format!(
        "registry.example/{}/credentials{tag}@sha256:{}",
        name(c, len),
        hex(c, 64)
    )
}

/// The reference program, sometimes with comment lines of its own (which change the hash).
fn script(c: &mut dyn Choices) -> String {
    let mut script = crate::testkit::render::clean_script();
    for _ in 0..c.below(3) {
        let n = c.between(1, 40);
        script.push_str(&format!("# note {}\n", name(c, n)));
    }
    script
}

/// A random owner.
pub fn spec(c: &mut dyn Choices, namespace: &str) -> Spec {
    let kind = *c.pick(KINDS);
    // `<owner>-credentials` is at most 253 characters; its Secrets add a suffix of their own.
    let len = length(c, 241 - 4);
    let owner = name(c, len);
    let mut spec = Spec::example(namespace, &owner, kind, "");
    spec.script = script(c);
    spec.image = pinned_image(c);
    let suffixes = ["app", "tls", "db", "admin", "s3"];
    let mut secrets = Vec::new();
    for _ in 0..c.between(1, 3) {
        let mut secret = format!("{owner}-{}", c.pick(&suffixes));
        while secrets.iter().any(|(s, _)| *s == secret) {
            secret.push('x');
        }
        if secret.len() > 253 {
            continue;
        }
        let keys: Vec<String> = (0..c.between(1, 3)).map(|i| format!("key{i}")).collect();
        secrets.push((secret, keys));
    }
    if secrets.is_empty() {
        secrets.push((format!("{owner}-a"), vec!["password".into()]));
    }
    spec.secrets = secrets;
    spec.generators = (0..c.below(3))
        .map(|i| format!("{owner}-password{i}"))
        .collect();
    spec.pods = match kind {
        "cache" | "broker" => (0..c.below(3)).map(|i| format!("{owner}-{i}")).collect(),
        _ => Vec::new(),
    };
    spec
}

/// One bundle being generated: its spec, the valid variations chosen for it (replayed from a
/// seed when the spec changes), and its objects.
#[derive(Clone, Debug)]
pub struct BundleDraft {
    pub spec: Spec,
    pub namespaced: bool,
    variation_seed: u64,
    pub objects: Vec<Value>,
}

impl BundleDraft {
    pub(super) fn new(c: &mut dyn Choices, spec: Spec, namespaced: bool) -> BundleDraft {
        let variation_seed = (c.below(1 << 30) as u64) << 30 | c.below(1 << 30) as u64;
        let mut b = BundleDraft {
            spec,
            namespaced,
            variation_seed,
            objects: Vec::new(),
        };
        b.rebuild();
        b
    }

    pub fn rebuild(&mut self) {
        let mut objects = objects_as_json(&self.spec.render());
        let mut rng = Rng::new(self.variation_seed);
        let rng: &mut dyn Choices = &mut rng;
        for obj in &mut objects {
            vary(rng, obj, self.namespaced);
        }
        rng.shuffle(&mut objects);
        self.objects = objects;
    }

    pub fn owner(&self) -> &str {
        &self.spec.owner
    }
}

/// What a case is made of before it is laid out in files.
#[derive(Clone, Debug)]
pub struct Draft {
    /// The bundle the faults go to.
    pub bundle: BundleDraft,
    /// Objects beside it: a second, valid bundle, or what a fault adds.
    pub others: Vec<Value>,
    pub credentials_image: Option<String>,
}

/// A random draft: one bundle, sometimes a second one beside it, sometimes a configured
/// credentials image (which each Job then runs).
pub fn draft(c: &mut dyn Choices) -> Draft {
    let namespaced = !c.chance(5);
    let len = length(c, 63);
    let namespace = name(c, len);
    let first = spec(c, &namespace);
    let configured = c.chance(4);
    let mut others = Vec::new();
    if c.chance(3) {
        let namespace = if c.chance(2) {
            namespace.clone()
        } else {
            let len = length(c, 63);
            name(c, len)
        };
        let mut second = spec(c, &namespace);
        if second.owner == first.owner {
            let owner = format!("{}0", &second.owner[..second.owner.len().min(200)]);
            second = rename(Spec { owner, ..second });
        }
        if configured {
            second.image = first.image.clone();
        }
        others = BundleDraft::new(c, second, namespaced).objects;
    }
    let credentials_image = configured.then(|| first.image.clone());
    Draft {
        bundle: BundleDraft::new(c, first, namespaced),
        others,
        credentials_image,
    }
}

/// A spec whose owner changed: its derived names follow.
pub(super) fn rename(spec: Spec) -> Spec {
    let owner = spec.owner.clone();
    let mut out = Spec::example(&spec.namespace, &owner, &spec.kind, &spec.script);
    out.image = spec.image;
    out.secrets = spec
        .secrets
        .iter()
        .enumerate()
        .map(|(i, (_, keys))| (format!("{owner}-s{i}"), keys.clone()))
        .collect();
    out.generators = (0..spec.generators.len())
        .map(|i| format!("{owner}-password{i}"))
        .collect();
    out.pods = (0..spec.pods.len())
        .map(|i| format!("{owner}-{i}"))
        .collect();
    out
}

impl Draft {
    /// Rebuilds the bundle's objects from its spec (after a fault changed the spec).
    pub fn rebuild(&mut self) {
        self.bundle.rebuild();
    }

    /// Nothing left to settle; kept as the step between spec and objects.
    pub fn finish(&mut self) {}

    /// The bundle's object of `kind` (the first, when a fault added a second).
    pub fn object_mut(&mut self, kind: &str) -> Option<&mut Value> {
        self.bundle.objects.iter_mut().find(|o| o["kind"] == kind)
    }

    pub fn object(&self, kind: &str) -> Option<&Value> {
        self.bundle.objects.iter().find(|o| o["kind"] == kind)
    }

    /// Renames the Job after the plan, program and image it runs now (a fault that changes
    /// plan.json would otherwise make the name stale too).
    pub fn sync_job_name(&mut self) {
        let (Some(cm), Some(job)) = (self.object("ConfigMap"), self.object("Job")) else {
            return;
        };
        let plan = cm["data"]["plan.json"].as_str().unwrap_or_default();
        let script = cm["data"]["create.py"].as_str().unwrap_or_default();
        let image = job["spec"]["template"]["spec"]["containers"][0]["image"]
            .as_str()
            .unwrap_or_default();
        let name = job_name(&self.bundle.spec.owner, plan, script, image);
        if let Some(job) = self.object_mut("Job") {
            job["metadata"]["name"] = Value::from(name);
        }
    }

    /// Every object, the bundle's first.
    pub fn all_objects(&self) -> Vec<&Value> {
        self.bundle.objects.iter().chain(&self.others).collect()
    }

    pub fn case(&self, layout: &Layout) -> Case {
        Case {
            files: super::emit::render_files(layout, &self.all_objects()),
            credentials_image: self.credentials_image.clone(),
        }
    }
}

/// `O[:42]-credentials-<h8>` for what the Job runs.
pub fn job_name(owner: &str, plan: &str, script: &str, image: &str) -> String {
    use sha2::Digest;
    // Hashed here with sha2 itself, not the linter's resumable state: an independent check.
    let mut state = sha2::Sha256::new();
    state.update(plan.as_bytes());
    state.update(script.as_bytes());
    state.update(image.as_bytes());
    crate::lint::checks::bundle_rules::expected_job_name(
        owner,
        &crate::lint::checks::bundle_rules::h8(&state.finalize()),
    )
}

/// Valid variations of one object of a rendered bundle.
fn vary(c: &mut dyn Choices, obj: &mut Value, namespaced: bool) {
    let kind = obj["kind"].as_str().unwrap_or_default().to_string();
    let is_job = kind == "Job";
    if !namespaced {
        if let Some(m) = obj["metadata"].as_object_mut() {
            m.remove("namespace");
        }
        if let Some(subjects) = obj.get_mut("subjects").and_then(Value::as_array_mut) {
            for s in subjects {
                if let Some(s) = s.as_object_mut() {
                    s.remove("namespace");
                }
            }
        }
    } else if kind == "RoleBinding" && c.chance(4) {
        // No namespace, or an empty one, is the binding's own.
        if let Some(s) = obj["subjects"][0].as_object_mut() {
            if c.chance(2) {
                s.remove("namespace");
            } else {
                s.insert("namespace".into(), Value::from(""));
            }
        }
    }
    vary_annotations(c, obj, is_job);
    if c.chance(4) {
        obj["metadata"]["labels"] = json!({"app.kubernetes.io/instance": "platform"});
    }
    if c.chance(5) {
        obj["metadata"]["finalizers"] = json!(["argocd.argoproj.io/hook-finalizer"]);
    }
    match kind.as_str() {
        "Role" => {
            if let Some(rules) = obj["rules"].as_array_mut() {
                c.shuffle(rules);
                for rule in rules.iter_mut() {
                    for key in ["verbs", "resourceNames"] {
                        if let Some(list) = rule.get_mut(key).and_then(Value::as_array_mut) {
                            c.shuffle(list);
                        }
                    }
                }
            }
        }
        "Job" => vary_job(c, obj),
        _ => {}
    }
}

fn vary_annotations(c: &mut dyn Choices, obj: &mut Value, is_job: bool) {
    let Some(a) = obj["metadata"]["annotations"].as_object_mut() else {
        return;
    };
    let wave = if is_job { "1" } else { "0" };
    let helm = c.chance(6);
    a.remove("argocd.argoproj.io/hook");
    a.remove("argocd.argoproj.io/sync-wave");
    a.remove("argocd.argoproj.io/hook-delete-policy");
    if helm {
        let hook = *c.pick(&["pre-install", "pre-upgrade", "pre-install,pre-upgrade"]);
        a.insert("helm.sh/hook".into(), hook.into());
        if is_job || c.chance(2) {
            a.insert("helm.sh/hook-weight".into(), wave.into());
        }
        let policy = if is_job {
            *c.pick(&[
                "before-hook-creation,hook-succeeded",
                "hook-succeeded,before-hook-creation",
            ])
        } else {
            "before-hook-creation"
        };
        if is_job || c.chance(2) {
            a.insert("helm.sh/hook-delete-policy".into(), policy.into());
        }
    } else {
        let hook = *c.pick(&["PreSync", " PreSync", "PreSync "]);
        a.insert("argocd.argoproj.io/hook".into(), hook.into());
        let waves: &[&str] = if is_job {
            &["1", "+1", "01"]
        } else {
            &["0", "+0", "-0", "00"]
        };
        // The four may leave the wave out (it is 0 then).
        if is_job || !c.chance(4) {
            a.insert(
                "argocd.argoproj.io/sync-wave".into(),
                (*c.pick(waves)).into(),
            );
        }
        let policy = if is_job {
            *c.pick(&[
                "BeforeHookCreation,HookSucceeded",
                "HookSucceeded, BeforeHookCreation",
                "HookSucceeded,BeforeHookCreation,HookSucceeded",
                " BeforeHookCreation , HookSucceeded ",
            ])
        } else {
            *c.pick(&[
                "BeforeHookCreation",
                " BeforeHookCreation",
                "BeforeHookCreation,BeforeHookCreation",
            ])
        };
        // With no delete policy at all, Argo CD uses BeforeHookCreation.
        if is_job || !c.chance(4) {
            a.insert(
                "argocd.argoproj.io/hook-delete-policy".into(),
                policy.into(),
            );
        }
    }
    if c.chance(4) {
        a.insert(
            "argocd.argoproj.io/tracking-id".into(),
            "platform:/Object:ns/name".into(),
        );
    }
}

fn vary_job(c: &mut dyn Choices, job: &mut Value) {
    let spec = &mut job["spec"];
    spec["ttlSecondsAfterFinished"] = Value::from(*c.pick(&[0, 60, 3600, 86_400]));
    if c.chance(3) {
        spec.as_object_mut().map(|s| s.remove("backoffLimit"));
    }
    let pod = &mut spec["template"]["spec"];
    let container = &mut pod["containers"][0];
    if c.chance(3) {
        container["command"] = json!(["python3"]);
        container["args"] = json!(["/credentials/create.py", "/credentials/plan.json"]);
    }
    if c.chance(3) {
        container["volumeMounts"][0]
            .as_object_mut()
            .map(|m| m.remove("readOnly"));
    }
    if c.chance(3) {
        let name = format!("v{}", c.below(100));
        container["volumeMounts"][0]["name"] = Value::from(name.clone());
        pod["volumes"][0]["name"] = Value::from(name);
    }
    // Security settings the pod sets may stand on the container instead.
    if c.chance(3) {
        let pod_ctx = pod["securityContext"].take();
        let container = &mut pod["containers"][0];
        if let Some(fields) = pod_ctx.as_object() {
            for (k, v) in fields {
                container["securityContext"][k] = v.clone();
            }
        }
        if c.chance(2) {
            pod.as_object_mut().map(|p| p.remove("securityContext"));
        } else {
            pod["securityContext"] = json!({});
        }
    }
    if c.chance(5) {
        let mut init = pod["containers"][0].clone();
        init["name"] = Value::from("wait");
        init["command"] = json!(["python3", "-c", "pass"]);
        if let Some(i) = init.as_object_mut() {
            i.remove("args");
            i.remove("volumeMounts");
        }
        // The pod-level settings the main container may rely on.
        for (k, v) in [
            ("runAsNonRoot", json!(true)),
            ("runAsUser", json!(65532)),
            ("seccompProfile", json!({"type": "RuntimeDefault"})),
        ] {
            init["securityContext"][k] = v;
        }
        pod["initContainers"] = json!([init]);
    }
}
