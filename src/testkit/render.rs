//! Renders a correct credentials bundle, as the platform's renderer would: the fixtures, the
//! benchmark corpus and the property tests start from it. Not used by `credlint check`.

use crate::lint::checks::bundle_rules::{expected_job_name, h8};
use sha2::Digest;
use std::fmt::Write;

#[derive(Clone, Debug)]
pub struct Spec {
    pub namespace: String,
    pub owner: String,
    /// cache, broker, bucket or component.
    pub kind: String,
    /// Planned Secrets and their keys.
    pub secrets: Vec<(String, Vec<String>)>,
    pub generators: Vec<String>,
    pub pods: Vec<String>,
    pub image: String,
    pub script: String,
}

/// A pinned image for examples (the digest is made up).
pub const EXAMPLE_IMAGE: &str = "registry.example/platform/credentials:1.4.2@sha256:3b1f2c9d8e7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c";

impl Spec {
    /// A typical owner of `kind`: one Secret with a password (a bucket gets access keys), a
    /// retired generator, and a server pod for caches and brokers.
    pub fn example(namespace: &str, owner: &str, kind: &str, script: &str) -> Spec {
        let keys = match kind {
            "bucket" => vec!["accessKey".to_string(), "secretKey".to_string()],
            _ => vec!["password".to_string()],
        };
        Spec {
            namespace: namespace.into(),
            owner: owner.into(),
            kind: kind.into(),
            secrets: vec![(format!("{owner}-app"), keys)],
            generators: vec![format!("{owner}-password")],
            pods: match kind {
                "cache" | "broker" => vec![format!("{owner}-0")],
                _ => Vec::new(),
            },
            image: EXAMPLE_IMAGE.into(),
            script: script.into(),
        }
    }

    pub fn plan_json(&self) -> String {
        let secrets: Vec<serde_json::Value> = self
            .secrets
            .iter()
            .map(|(name, keys)| {
                let keys: serde_json::Map<String, serde_json::Value> = keys
                    .iter()
                    .map(|k| (k.clone(), serde_json::json!({"length": 32})))
                    .collect();
                serde_json::json!({"name": name, "keys": keys})
            })
            .collect();
        let mut plan = serde_json::json!({
            "owner": self.owner,
            "kind": self.kind,
            "secrets": secrets,
        });
        if !self.generators.is_empty() {
            plan["retiredGenerators"] = serde_json::json!(self.generators);
        }
        if !self.pods.is_empty() {
            plan["serverPods"] = serde_json::json!(self.pods);
        }
        let mut text = serde_json::to_string_pretty(&plan).unwrap_or_default();
        text.push('\n');
        text
    }

    pub fn job_name(&self) -> String {
        let mut state = sha2::Sha256::new();
        state.update(self.plan_json().as_bytes());
        state.update(self.script.as_bytes());
        state.update(self.image.as_bytes());
        expected_job_name(&self.owner, &h8(&state.finalize()))
    }

    fn metadata(&self, out: &mut String, name: &str, wave: u8, policy: &str) {
        let _ = write!(
            out,
            "metadata:\n  name: {}\n  namespace: {}\n  annotations:\n    \
             argocd.argoproj.io/hook: PreSync\n    argocd.argoproj.io/sync-wave: \"{wave}\"\n    \
             argocd.argoproj.io/hook-delete-policy: {policy}\n",
            name_scalar(name),
            name_scalar(&self.namespace)
        );
    }

    /// The five documents, block style, in apply order.
    pub fn render(&self) -> String {
        let raw_name = format!("{}-credentials", self.owner);
        let name = name_scalar(&raw_name);
        let mut out = String::new();
        out.push_str("apiVersion: v1\nkind: ServiceAccount\n");
        self.metadata(&mut out, &raw_name, 0, "BeforeHookCreation");

        out.push_str("---\napiVersion: rbac.authorization.k8s.io/v1\nkind: Role\n");
        self.metadata(&mut out, &raw_name, 0, "BeforeHookCreation");
        out.push_str("rules:\n");
        let secrets: Vec<String> = self.secrets.iter().map(|(n, _)| name_scalar(n)).collect();
        let secrets: Vec<&str> = secrets.iter().map(String::as_str).collect();
        let rule = |out: &mut String, group: &str, resource: &str, names: &[&str], verbs: &str| {
            let _ = write!(
                out,
                "  - apiGroups: [\"{group}\"]\n    resources: [{resource}]\n"
            );
            if !names.is_empty() {
                let _ = writeln!(out, "    resourceNames: [{}]", names.join(", "));
            }
            let _ = writeln!(out, "    verbs: [{verbs}]");
        };
        rule(&mut out, "", "secrets", &[], "create");
        rule(&mut out, "", "secrets", &secrets, "get, patch");
        rule(
            &mut out,
            "external-secrets.io",
            "externalsecrets",
            &secrets,
            "get, delete",
        );
        let generators: Vec<String> = self.generators.iter().map(|n| name_scalar(n)).collect();
        let generators: Vec<&str> = generators.iter().map(String::as_str).collect();
        if !generators.is_empty() {
            rule(
                &mut out,
                "generators.external-secrets.io",
                "passwords",
                &generators,
                "delete",
            );
        }
        let pods: Vec<String> = self.pods.iter().map(|n| name_scalar(n)).collect();
        let pods: Vec<&str> = pods.iter().map(String::as_str).collect();
        if !pods.is_empty() {
            rule(&mut out, "", "pods", &pods, "get, delete");
        }

        out.push_str("---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\n");
        self.metadata(&mut out, &raw_name, 0, "BeforeHookCreation");
        let _ = write!(
            out,
            "roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: {name}\n\
             subjects:\n  - kind: ServiceAccount\n    name: {name}\n    namespace: {}\n",
            name_scalar(&self.namespace)
        );

        out.push_str("---\napiVersion: v1\nkind: ConfigMap\n");
        self.metadata(&mut out, &raw_name, 0, "BeforeHookCreation");
        out.push_str("data:\n  plan.json: |\n");
        indent(&mut out, &self.plan_json());
        out.push_str("  create.py: |  # pragma: allowlist secret\n");
        indent(&mut out, &self.script);

        out.push_str("---\napiVersion: batch/v1\nkind: Job\n");
        self.metadata(
            &mut out,
            &self.job_name(),
            1,
            "BeforeHookCreation,HookSucceeded",
        );
        let _ = write!(
            out,
            "spec:\n  backoffLimit: 2\n  ttlSecondsAfterFinished: 3600\n  template:\n    spec:\n      \
             serviceAccountName: {name}\n      restartPolicy: Never\n      securityContext:\n        \
             runAsNonRoot: true\n        runAsUser: 65532\n        seccompProfile:\n          \
             type: RuntimeDefault\n      containers:\n        - name: create\n          \
             image: {}\n          command: [python3, /credentials/create.py, /credentials/plan.json]\n          \
             securityContext:\n            allowPrivilegeEscalation: false\n            \
             readOnlyRootFilesystem: true\n            capabilities:\n              drop: [ALL]\n          \
             volumeMounts:\n            - name: credentials\n              mountPath: /credentials\n              \
             readOnly: true\n      volumes:\n        - name: credentials\n          configMap:\n            \
             name: {name}\n",
            self.image
        );
        out
    }
}

/// A name as a plain scalar, quoted when YAML would read it as something else (a namespace
/// `7`, an owner `y`, which go-yaml v2 reads as true).
fn name_scalar(name: &str) -> String {
    match crate::load::yaml::parse(name).first() {
        Some(crate::load::yaml::Parsed::Document(d)) if d.root.as_str() == Some(name) => {
            name.to_string()
        }
        _ => serde_json::Value::from(name).to_string(),
    }
}

/// Appends `text` indented as the content of a block scalar under a key at column 2.
fn indent(out: &mut String, text: &str) {
    for line in text.lines() {
        if line.is_empty() {
            out.push('\n');
        } else {
            out.push_str("    ");
            out.push_str(line);
            out.push('\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lint::Options;
    use crate::testkit::lint::check_text;

    #[test]
    fn a_rendered_bundle_is_clean_for_every_kind() {
        for kind in ["cache", "broker", "bucket", "component"] {
            let spec = Spec::example(
                "shop",
                "shop-sessions",
                kind,
                "import json\nprint(json.dumps({}))\n",
            );
            let text = spec.render();
            let outcome = check_text("b.yaml", &text, Options::default()).unwrap();
            assert_eq!(outcome.findings, vec![], "{kind}:\n{text}");
            assert_eq!(outcome.summary.bundles, 1);
            assert_eq!(outcome.summary.objects, 5);
        }
    }
}

/// How the renderings of the clean examples write their scalars.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quote {
    Plain,
    Single,
    Double,
}

/// The objects of a YAML text as JSON values (through credlint's own loader).
pub fn objects_as_json(yaml_text: &str) -> Vec<serde_json::Value> {
    crate::load::yaml::parse(yaml_text)
        .iter()
        .filter_map(|p| match p {
            crate::load::yaml::Parsed::Document(d) if !d.root.is_null() => Some(node_json(&d.root)),
            _ => None,
        })
        .collect()
}

fn node_json(node: &crate::load::yaml::Node) -> serde_json::Value {
    use crate::load::yaml::Value as V;
    match &node.value {
        V::Null => serde_json::Value::Null,
        V::Bool(b) => (*b).into(),
        V::Int(i) => (*i).into(),
        V::Float(f) => serde_json::Number::from_f64(*f).map_or(serde_json::Value::Null, Into::into),
        V::Str(s) => s.as_ref().into(),
        V::Seq(items) => items.iter().map(node_json).collect(),
        V::Map(entries) => entries
            .iter()
            .map(|e| (e.key.to_string(), node_json(&e.value)))
            .collect::<serde_json::Map<_, _>>()
            .into(),
    }
}

/// Writes a value in block style. Multi-line strings become literal blocks; the block under
/// `create.py` carries the allowlist pragma on its header line.
pub fn emit_block(value: &serde_json::Value, quote: Quote) -> String {
    let mut out = String::new();
    block(&mut out, value, 0, quote, false);
    out
}

fn block(out: &mut String, value: &serde_json::Value, indent: usize, quote: Quote, in_seq: bool) {
    use serde_json::Value as J;
    let pad = " ".repeat(indent);
    match value {
        J::Object(map) => {
            for (i, (k, v)) in map.iter().enumerate() {
                if !(in_seq && i == 0) {
                    out.push_str(&pad);
                }
                out.push_str(&scalar(k, quote));
                out.push(':');
                match v {
                    J::Object(m) if !m.is_empty() => {
                        out.push('\n');
                        block(out, v, indent + 2, quote, false);
                    }
                    J::Array(a) if !a.is_empty() => {
                        out.push('\n');
                        block(out, v, indent + 2, quote, false);
                    }
                    J::String(s) if s.contains('\n') => {
                        out.push_str(" |");
                        if !s.ends_with('\n') {
                            out.push('-');
                        }
                        if k == "create.py" {
                            out.push_str("  # pragma: allowlist secret");
                        }
                        out.push('\n');
                        for line in s.lines() {
                            if !line.is_empty() {
                                out.push_str(&pad);
                                out.push_str("  ");
                                out.push_str(line);
                            }
                            out.push('\n');
                        }
                    }
                    _ => {
                        out.push(' ');
                        out.push_str(&flow(v, quote));
                        out.push('\n');
                    }
                }
            }
        }
        J::Array(items) => {
            for item in items {
                out.push_str(&pad);
                out.push_str("- ");
                match item {
                    J::Object(m) if !m.is_empty() => block(out, item, indent + 2, quote, true),
                    _ => {
                        out.push_str(&flow(item, quote));
                        out.push('\n');
                    }
                }
            }
        }
        _ => {
            out.push_str(&flow(value, quote));
            out.push('\n');
        }
    }
}

/// A value on one line: flow collections, scalars quoted as asked.
pub fn flow(value: &serde_json::Value, quote: Quote) -> String {
    use serde_json::Value as J;
    match value {
        J::Object(map) => {
            let items: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", scalar(k, quote), flow(v, quote)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        J::Array(items) => {
            let items: Vec<String> = items.iter().map(|v| flow(v, quote)).collect();
            format!("[{}]", items.join(", "))
        }
        J::String(s) => scalar(s, quote),
        other => other.to_string(),
    }
}

fn scalar(s: &str, quote: Quote) -> String {
    let needs_quotes = s.is_empty()
        || s.contains([
            '"', '\'', '#', ':', '{', '}', '[', ']', ',', '&', '*', '!', '|', '>', '%', '@', '`',
            '\n',
        ])
        || s.starts_with(['-', '?', ' '])
        || s.ends_with(' ')
        || !matches!(
            crate::load::yaml::parse(s).first(),
            Some(crate::load::yaml::Parsed::Document(d)) if d.root.as_str() == Some(s)
        );
    match quote {
        Quote::Single if !s.contains('\n') => format!("'{}'", s.replace('\'', "''")),
        Quote::Double => serde_json::Value::from(s).to_string(),
        _ if needs_quotes => serde_json::Value::from(s).to_string(),
        _ => s.to_string(),
    }
}

fn documents(text: &str) -> String {
    text.to_string()
}

fn split_objects(spec: &Spec) -> Vec<serde_json::Value> {
    objects_as_json(&spec.render())
}

/// Every rendering style users produce, as (path under `fixtures/clean/`, content). Each one is
/// a valid bundle (or several) that must yield no finding at all.
pub fn clean_renderings(script: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let header = "# Generated by `cargo run --example fixtures`; a test keeps it current.\n";

    // Block style, plain scalars, as the renderer writes it.
    let cache = Spec::example("shop", "shop-sessions", "cache", script);
    out.push((
        "cache.yaml".into(),
        format!("{header}{}", documents(&cache.render())),
    ));

    // Flow style with double-quoted scalars (the ConfigMap keeps its literal blocks).
    let broker = Spec::example("messaging", "orders-broker", "broker", script);
    let mut text = String::from(header);
    for (i, obj) in split_objects(&broker).iter().enumerate() {
        if i > 0 {
            text.push_str("---\n");
        }
        if obj["kind"] == "ConfigMap" {
            text.push_str(&emit_block(obj, Quote::Double));
        } else {
            text.push_str(&flow(obj, Quote::Double));
            text.push('\n');
        }
    }
    out.push(("broker.yaml".into(), text));

    // Block style, single-quoted scalars.
    let bucket = Spec::example("media", "media-uploads", "bucket", script);
    let objects: Vec<String> = split_objects(&bucket)
        .iter()
        .map(|o| emit_block(o, Quote::Single))
        .collect();
    out.push((
        "bucket.yml".into(),
        format!("{header}{}", objects.join("---\n")),
    ));

    // A component with two planned Secrets and no retired generator.
    let mut component = Spec::example("shop", "checkout-api", "component", script);
    component
        .secrets
        .push(("checkout-api-signing".into(), vec!["key".into()]));
    component.generators.clear();
    let objects: Vec<String> = split_objects(&component)
        .iter()
        .map(|o| emit_block(o, Quote::Plain))
        .collect();
    out.push((
        "component.yaml".into(),
        format!("{header}{}", objects.join("---\n")),
    ));

    // JSON files (one object each, and a List); the ConfigMap stays YAML for its literal block.
    let json = Spec::example("billing", "invoices-cache", "cache", script);
    let objects = split_objects(&json);
    for obj in &objects {
        let kind = obj["kind"].as_str().unwrap_or("object").to_lowercase();
        if kind == "configmap" {
            out.push((
                format!("json/{kind}.yaml"),
                format!("{header}{}", emit_block(obj, Quote::Plain)),
            ));
        } else if kind != "rolebinding" && kind != "role" {
            out.push((format!("json/{kind}.json"), pretty(obj)));
        }
    }
    let rbac: Vec<serde_json::Value> = objects
        .iter()
        .filter(|o| o["kind"] == "Role" || o["kind"] == "RoleBinding")
        .cloned()
        .collect();
    out.push((
        "json/rbac-list.json".into(),
        pretty(&serde_json::json!({"apiVersion": "v1", "kind": "List", "items": rbac})),
    ));

    // A YAML `kind: List`.
    let list = Spec::example("search", "search-index", "component", script);
    let list_value =
        serde_json::json!({"apiVersion": "v1", "kind": "List", "items": split_objects(&list)});
    out.push((
        "list.yaml".into(),
        format!("{header}{}", emit_block(&list_value, Quote::Plain)),
    ));

    // Anchors, aliases and a merge key in one List.
    out.push((
        "anchors.yaml".into(),
        format!(
            "{header}{}",
            anchored(&Spec::example(
                "analytics",
                "events-broker",
                "broker",
                script
            ))
        ),
    ));

    // Windows line ends.
    let crlf = Spec::example("payments", "payments-cache", "cache", script);
    out.push((
        "crlf.yaml".into(),
        format!("{header}{}", crlf.render()).replace('\n', "\r\n"),
    ));

    // One object per file, in mixed formats.
    let split = Spec::example("catalog", "catalog-search", "cache", script);
    for (i, obj) in split_objects(&split).iter().enumerate() {
        let kind = obj["kind"].as_str().unwrap_or("object").to_lowercase();
        let (name, text) = match kind.as_str() {
            "rolebinding" => (format!("split/{}-{kind}.json", i + 1), pretty(obj)),
            "role" => (
                format!("split/{}-{kind}.yml", i + 1),
                format!("{header}{}", emit_block(obj, Quote::Plain)),
            ),
            _ => (
                format!("split/{}-{kind}.yaml", i + 1),
                format!("{header}{}", emit_block(obj, Quote::Plain)),
            ),
        };
        out.push((name, text));
    }

    // An owner longer than 42 characters: the Job name carries its first 42.
    let long = Spec::example(
        "inventory",
        "inventory-reservations-projection-cache-primary",
        "cache",
        script,
    );
    out.push((
        "long-owner.yaml".into(),
        format!("{header}{}", long.render()),
    ));

    // The same owner name in two namespaces: two bundles.
    let a = Spec::example("team-a", "sessions", "cache", script);
    let b = Spec::example("team-b", "sessions", "cache", script);
    out.push((
        "two-namespaces.yaml".into(),
        format!("{header}{}---\n{}", a.render(), b.render()),
    ));

    // Helm hook annotations, which Argo CD maps (pre-install -> PreSync, hook-weight -> wave).
    let helm = Spec::example("legacy", "legacy-queue", "broker", script);
    let text = helm
        .render()
        .replace(
            "argocd.argoproj.io/hook: PreSync",
            "helm.sh/hook: pre-install,pre-upgrade",
        )
        .replace("argocd.argoproj.io/sync-wave:", "helm.sh/hook-weight:")
        .replace(
            "argocd.argoproj.io/hook-delete-policy: BeforeHookCreation,HookSucceeded",
            "helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded",
        )
        .replace(
            "argocd.argoproj.io/hook-delete-policy: BeforeHookCreation",
            "helm.sh/hook-delete-policy: before-hook-creation",
        );
    out.push(("helm-annotations.yaml".into(), format!("{header}{text}")));

    out.push(("unrelated.yaml".into(), format!("{header}{UNRELATED}")));
    out
}

fn pretty(value: &serde_json::Value) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}

/// A bundle written with anchors for the shared metadata and a merge key for the Job's.
fn anchored(spec: &Spec) -> String {
    let objects = split_objects(spec);
    let find = |kind: &str| {
        objects
            .iter()
            .find(|o| o["kind"] == kind)
            .cloned()
            .unwrap_or_default()
    };
    let role = find("Role");
    let cm = find("ConfigMap");
    let job = find("Job");
    let mut job_spec = job.clone();
    let job_spec = job_spec["spec"].take();
    let plan = cm["data"]["plan.json"].as_str().unwrap_or_default();
    let script = cm["data"]["create.py"].as_str().unwrap_or_default();
    let block_lines = |text: &str| -> String {
        text.lines()
            .map(|l| {
                if l.is_empty() {
                    "\n".to_string()
                } else {
                    format!("          {l}\n")
                }
            })
            .collect()
    };
    let mut job_block = String::new();
    block(&mut job_block, &job_spec, 6, Quote::Plain, false);
    format!(
        "apiVersion: v1\nkind: List\nitems:\n  - apiVersion: v1\n    kind: ServiceAccount\n    metadata: &meta\n      \
         name: {name}\n      namespace: &ns {ns}\n      annotations: &hook\n        argocd.argoproj.io/hook: PreSync\n        \
         argocd.argoproj.io/sync-wave: \"0\"\n        argocd.argoproj.io/hook-delete-policy: BeforeHookCreation\n  \
         - apiVersion: rbac.authorization.k8s.io/v1\n    kind: Role\n    metadata: *meta\n    rules: {rules}\n  \
         - apiVersion: rbac.authorization.k8s.io/v1\n    kind: RoleBinding\n    metadata: *meta\n    roleRef:\n      \
         apiGroup: rbac.authorization.k8s.io\n      kind: Role\n      name: {name}\n    subjects:\n      \
         - kind: ServiceAccount\n        name: {name}\n        namespace: *ns\n  \
         - apiVersion: v1\n    kind: ConfigMap\n    metadata: *meta\n    data:\n      plan.json: |\n{plan}      \
         create.py: |  # pragma: allowlist secret\n{script}  \
         - apiVersion: batch/v1\n    kind: Job\n    metadata:\n      name: {job_name}\n      namespace: *ns\n      \
         annotations:\n        <<: *hook\n        argocd.argoproj.io/sync-wave: \"1\"\n        \
         argocd.argoproj.io/hook-delete-policy: BeforeHookCreation,HookSucceeded\n    spec:\n{job_block}",
        name = format!("{}-credentials", spec.owner),
        ns = spec.namespace,
        rules = flow(&role["rules"], Quote::Plain),
        plan = block_lines(plan),
        script = block_lines(script),
        job_name = spec.job_name(),
    )
}

/// Objects of an application beside its bundles: none of credlint's business, whatever they
/// grant.
const UNRELATED: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: storefront
  namespace: shop
spec:
  replicas: 3
  selector:
    matchLabels: {app: storefront}
  template:
    metadata:
      labels: {app: storefront}
    spec:
      containers:
        - name: web
          image: registry.example/shop/storefront:2.4.1
          envFrom:
            - secretRef:
                name: shop-sessions-app
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: storefront-reader
  namespace: shop
rules:
  - apiGroups: [""]
    resources: [secrets, configmaps]
    verbs: [get, list, watch]
  - apiGroups: ["*"]
    resources: ["*"]
    verbs: [update]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: storefront-settings
  namespace: shop
data:
  settings.json: '{"theme": "dark"}'
---
apiVersion: batch/v1
kind: Job
metadata:
  name: storefront-migrate
  namespace: shop
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: migrate
          image: registry.example/shop/storefront:2.4.1
          command: [./migrate]
---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata:
  name: checkout-db
  namespace: shop
spec:
  refreshInterval: 1h
  secretStoreRef:
    kind: ClusterSecretStore
    name: aws-prod
  target:
    name: checkout-db
  data:
    - secretKey: password
      remoteRef:
        key: prod/checkout/database
        property: password
---
apiVersion: external-secrets.io/v1
kind: ClusterSecretStore
metadata:
  name: aws-prod
spec:
  provider:
    aws:
      service: SecretsManager
      region: eu-west-1
  conditions:
    - namespaceSelector:
        matchLabels:
          env: prod
"#;

/// The program the clean examples carry: the reference implementation of ADR-072 points 2-4.
pub fn clean_script() -> String {
    include_str!("../../fixtures/runtime/create.py").to_string()
}
