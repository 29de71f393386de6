//! Which objects a policy's `matchConstraints` select, as the API server decides for an admission
//! request that creates the object: resource rules by API group, version, resource and operation
//! (`*` wildcards, `resourceNames`, `scope`), exclusions, the object selector and a namespace
//! selector by namespace name.

use super::spec::{MatchResources, ResourceRule, Selector};
use crate::load::yaml::Node;
use crate::model::object::Object;

/// The operation a manifest stands for: applying it creates the object (Argo CD re-creates hooks).
pub const OPERATION: &str = "CREATE";

/// The label every Namespace carries with its own name (Kubernetes 1.22+).
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// An object as an admission request names it.
#[derive(Clone, Debug)]
pub struct Target {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub resource: String,
    pub namespaced: bool,
    pub name: String,
    pub namespace: Option<String>,
    pub labels: Vec<(String, String)>,
    /// CREATE for a manifest; UPDATE where a test asks what an update would meet.
    pub operation: &'static str,
}

impl Target {
    pub fn of(obj: &Object) -> Target {
        let (group, version) = match obj.api_version.rsplit_once('/') {
            Some((g, v)) => (g.to_string(), v.to_string()),
            None => (String::new(), obj.api_version.to_string()),
        };
        let (resource, namespaced) = resource_of(&group, obj.kind, obj.namespace.is_some());
        let labels = obj
            .root
            .at(&["metadata", "labels"])
            .and_then(Node::as_map)
            .map(|entries| {
                entries
                    .iter()
                    .filter_map(|e| Some((e.key.to_string(), e.value.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        Target {
            group,
            version,
            kind: obj.kind.to_string(),
            resource,
            namespaced,
            name: obj.name.unwrap_or("").to_string(),
            namespace: obj.namespace.map(str::to_string),
            labels,
            operation: OPERATION,
        }
    }
}

/// Kinds whose resource name is not the kind lowercased with an `s`, or that are cluster-scoped:
/// `(group, kind, resource, namespaced)`.
const KINDS: &[(&str, &str, &str, bool)] = &[
    ("", "Endpoints", "endpoints", true),
    ("", "Namespace", "namespaces", false),
    ("", "Node", "nodes", false),
    ("", "PersistentVolume", "persistentvolumes", false),
    ("", "ComponentStatus", "componentstatuses", false),
    (
        "rbac.authorization.k8s.io",
        "ClusterRole",
        "clusterroles",
        false,
    ),
    (
        "rbac.authorization.k8s.io",
        "ClusterRoleBinding",
        "clusterrolebindings",
        false,
    ),
    (
        "apiextensions.k8s.io",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        false,
    ),
    ("apiregistration.k8s.io", "APIService", "apiservices", false),
    (
        "admissionregistration.k8s.io",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicy",
        "validatingadmissionpolicies",
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicyBinding",
        "validatingadmissionpolicybindings",
        false,
    ),
    ("storage.k8s.io", "StorageClass", "storageclasses", false),
    ("storage.k8s.io", "CSIDriver", "csidrivers", false),
    ("storage.k8s.io", "CSINode", "csinodes", false),
    (
        "storage.k8s.io",
        "VolumeAttachment",
        "volumeattachments",
        false,
    ),
    (
        "scheduling.k8s.io",
        "PriorityClass",
        "priorityclasses",
        false,
    ),
    ("networking.k8s.io", "IngressClass", "ingressclasses", false),
    ("node.k8s.io", "RuntimeClass", "runtimeclasses", false),
    (
        "certificates.k8s.io",
        "CertificateSigningRequest",
        "certificatesigningrequests",
        false,
    ),
    ("kyverno.io", "ClusterPolicy", "clusterpolicies", false),
    (
        "policies.kyverno.io",
        "ValidatingPolicy",
        "validatingpolicies",
        false,
    ),
    (
        "external-secrets.io",
        "ClusterSecretStore",
        "clustersecretstores",
        false,
    ),
    (
        "external-secrets.io",
        "ClusterExternalSecret",
        "clusterexternalsecrets",
        false,
    ),
];

/// The resource (plural) of a kind, and whether it is namespaced. Kinds the table does not know
/// are pluralized as kubectl guesses (`Policy` -> `policies`, `Ingress` -> `ingresses`), and are
/// namespaced unless they carry no namespace and are named `Cluster...`.
pub fn resource_of(group: &str, kind: &str, has_namespace: bool) -> (String, bool) {
    if let Some((_, _, resource, namespaced)) =
        KINDS.iter().find(|(g, k, _, _)| *g == group && *k == kind)
    {
        return (resource.to_string(), *namespaced);
    }
    let lower = kind.to_ascii_lowercase();
    let plural = if lower.ends_with('s') {
        format!("{lower}es")
    } else if let Some(stem) = lower.strip_suffix('y') {
        format!("{stem}ies")
    } else {
        format!("{lower}s")
    };
    (plural, has_namespace || !kind.starts_with("Cluster"))
}

fn listed(list: &[String], value: &str) -> bool {
    list.iter().any(|v| v == "*" || v == value)
}

fn rule_matches(rule: &ResourceRule, t: &Target, equivalent: bool) -> bool {
    let resource = rule
        .resources
        .iter()
        .any(|r| r == "*" || r == "*/*" || *r == t.resource);
    let version = listed(&rule.versions, &t.version) || (equivalent && !rule.versions.is_empty());
    let scope = match rule.scope.as_deref() {
        Some("Cluster") => !t.namespaced,
        Some("Namespaced") => t.namespaced,
        _ => true,
    };
    listed(&rule.groups, &t.group)
        && version
        && resource
        && listed(&rule.operations, t.operation)
        && scope
        && (rule.names.is_empty() || rule.names.contains(&t.name))
}

/// Whether the constraints select the target. `Err` when the answer needs what the manifest
/// does not say (the namespace of an object that names none).
pub fn matches(m: &MatchResources, t: &Target) -> Result<bool, String> {
    let equivalent = !m.exact;
    if !m.rules.iter().any(|r| rule_matches(r, t, equivalent))
        || m.exclude.iter().any(|r| rule_matches(r, t, equivalent))
    {
        return Ok(false);
    }
    if !m.object_selector.selects(&t.labels) {
        return Ok(false);
    }
    namespace_selected(&m.namespace_selector, t)
}

/// A namespace selector on `kubernetes.io/metadata.name` alone can be decided from the object's
/// namespace; cluster-scoped objects are never skipped by it, and a Namespace is matched on its
/// own labels (as Kubernetes does).
fn namespace_selected(selector: &Selector, t: &Target) -> Result<bool, String> {
    if selector.is_empty() {
        return Ok(true);
    }
    if t.kind == "Namespace" && t.group.is_empty() {
        let mut labels = t.labels.clone();
        if !labels.iter().any(|(k, _)| k == NAMESPACE_NAME_LABEL) {
            labels.push((NAMESPACE_NAME_LABEL.to_string(), t.name.clone()));
        }
        return Ok(selector.selects(&labels));
    }
    if !t.namespaced {
        return Ok(true);
    }
    match &t.namespace {
        Some(ns) => Ok(selector.selects(&[(NAMESPACE_NAME_LABEL.to_string(), ns.clone())])),
        // Argo CD puts such an object in the Application's destination namespace. A selector
        // that only leaves some namespaces out (the generated policies' exempt namespaces)
        // applies there unless the destination is one of them: judged, never passed unread.
        None if selector.labels.is_empty()
            && selector.expressions.iter().all(|(_, op, _)| op == "NotIn") =>
        {
            Ok(true)
        }
        None => Err("the policy selects namespaces and this object names no namespace, so credlint cannot tell whether the policy applies".into()),
    }
}

/// Whether a namespace selector reads only the namespace's name, which the manifest gives.
pub fn namespace_selector_supported(selector: &Selector) -> bool {
    selector.keys().all(|k| k == NAMESPACE_NAME_LABEL)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_kinds_are_pluralized_as_kubectl_guesses() {
        assert_eq!(
            resource_of("networking.k8s.io", "Ingress", true).0,
            "ingresses"
        );
        assert_eq!(resource_of("kyverno.io", "Policy", true).0, "policies");
        assert_eq!(resource_of("apps", "Deployment", true).0, "deployments");
        assert_eq!(resource_of("", "Endpoints", true).0, "endpoints");
        assert_eq!(
            resource_of("x.io", "ClusterThing", false),
            ("clusterthings".into(), false)
        );
        assert_eq!(
            resource_of("", "Namespace", false),
            ("namespaces".into(), false)
        );
    }
}
