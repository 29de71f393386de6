//! Renders a correct credentials bundle, as the platform's renderer would: the fixtures, the
//! benchmark corpus and the property tests start from it. Not used by `credlint check`.

use crate::checks::bundle_rules::{expected_job_name, job_hash};
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
        expected_job_name(&self.owner, &job_hash(&state, &self.image))
    }

    fn metadata(&self, out: &mut String, name: &str, wave: u8, policy: &str) {
        let _ = write!(
            out,
            "metadata:\n  name: {name}\n  namespace: {}\n  annotations:\n    \
             argocd.argoproj.io/hook: PreSync\n    argocd.argoproj.io/sync-wave: \"{wave}\"\n    \
             argocd.argoproj.io/hook-delete-policy: {policy}\n",
            self.namespace
        );
    }

    /// The five documents, block style, in apply order.
    pub fn render(&self) -> String {
        let name = format!("{}-credentials", self.owner);
        let mut out = String::new();
        out.push_str("apiVersion: v1\nkind: ServiceAccount\n");
        self.metadata(&mut out, &name, 0, "BeforeHookCreation");

        out.push_str("---\napiVersion: rbac.authorization.k8s.io/v1\nkind: Role\n");
        self.metadata(&mut out, &name, 0, "BeforeHookCreation");
        out.push_str("rules:\n");
        let secrets: Vec<&str> = self.secrets.iter().map(|(n, _)| n.as_str()).collect();
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
        let generators: Vec<&str> = self.generators.iter().map(String::as_str).collect();
        if !generators.is_empty() {
            rule(
                &mut out,
                "generators.external-secrets.io",
                "passwords",
                &generators,
                "delete",
            );
        }
        let pods: Vec<&str> = self.pods.iter().map(String::as_str).collect();
        if !pods.is_empty() {
            rule(&mut out, "", "pods", &pods, "get, delete");
        }

        out.push_str("---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\n");
        self.metadata(&mut out, &name, 0, "BeforeHookCreation");
        let _ = write!(
            out,
            "roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: {name}\n\
             subjects:\n  - kind: ServiceAccount\n    name: {name}\n    namespace: {}\n",
            self.namespace
        );

        out.push_str("---\napiVersion: v1\nkind: ConfigMap\n");
        self.metadata(&mut out, &name, 0, "BeforeHookCreation");
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
    use crate::engine::{Options, check_text};

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
