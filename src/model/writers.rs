//! The other writers in a render: objects that are no bundle member but can write a planned
//! Secret, recreate a retired generator or give the credentials ServiceAccount more rights
//! (bundle.md section 1, "One writer"). Each leaves a few located facts while its file's text
//! is at hand; the bundle checks compare them with the plans once every file is read.

use crate::load::source::{At, Source};
use crate::load::yaml::Node;
use crate::model::ObjectRef;
use crate::model::object::Object;

/// What kind of writer an object is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriterKind {
    Secret,
    ExternalSecret,
    /// A Password generator, or a ClusterGenerator wrapping one.
    Password {
        cluster: bool,
    },
    RoleBinding,
    ClusterRoleBinding,
}

/// A subject of a binding.
#[derive(Clone, Debug)]
pub struct Subject {
    pub kind: String,
    pub name: String,
    /// As written; `None` or empty means the binding's own namespace (for a RoleBinding).
    pub namespace: Option<String>,
    pub loc: At,
}

#[derive(Clone, Debug)]
pub struct Writer {
    pub kind: WriterKind,
    pub object: ObjectRef,
    /// The object's own namespace, as written.
    pub namespace: Option<String>,
    /// The name it writes or is known by: the Secret's, the ExternalSecret's target, the
    /// generator's, the binding's.
    pub name: String,
    /// The node that makes it a writer: the name, or the ExternalSecret's target.
    pub loc: At,
    /// For an ExternalSecret, whether a generator backs it (else a store).
    pub generated: bool,
    pub subjects: Vec<Subject>,
}

/// The writer an object is, if it is one.
pub fn writer(obj: &Object, source: &Source) -> Option<Writer> {
    let kind = match (obj.group(), obj.kind) {
        ("", "Secret") => WriterKind::Secret,
        ("external-secrets.io", "ExternalSecret") => WriterKind::ExternalSecret,
        ("generators.external-secrets.io", "Password") => WriterKind::Password { cluster: false },
        // A ClusterGenerator is a wrapper: only one that wraps a Password is one.
        ("generators.external-secrets.io", "ClusterGenerator")
            if obj.root.at(&["spec", "kind"]).and_then(Node::as_str) == Some("Password") =>
        {
            WriterKind::Password { cluster: true }
        }
        ("rbac.authorization.k8s.io", "RoleBinding") => WriterKind::RoleBinding,
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => WriterKind::ClusterRoleBinding,
        _ => return None,
    };
    let name_node = obj.root.at(&["metadata", "name"]);
    let mut name = obj.name.unwrap_or("").to_string();
    let mut node = name_node.unwrap_or_else(|| obj.anchor());
    let mut generated = false;
    if kind == WriterKind::ExternalSecret {
        // The target defaults to the ExternalSecret's own name.
        if let Some(target) = obj
            .root
            .at(&["spec", "target", "name"])
            .filter(|n| n.as_str().is_some_and(|s| !s.is_empty()))
        {
            name = target.as_str().unwrap_or("").to_string();
            node = target;
        }
        generated = ["data", "dataFrom"].iter().any(|list| {
            obj.root
                .at(&["spec", list])
                .and_then(Node::as_seq)
                .unwrap_or_default()
                .iter()
                .any(|d| d.at(&["sourceRef", "generatorRef"]).is_some())
        });
    }
    if name.is_empty() {
        return None;
    }
    let subjects = match kind {
        WriterKind::RoleBinding | WriterKind::ClusterRoleBinding => obj
            .root
            .get("subjects")
            .and_then(Node::as_seq)
            .unwrap_or_default()
            .iter()
            .map(|s| {
                let text = |key| s.get(key).and_then(Node::as_str).unwrap_or("").to_string();
                Subject {
                    kind: text("kind"),
                    name: text("name"),
                    namespace: Some(text("namespace")).filter(|n| !n.is_empty()),
                    loc: source.at(s.get("name").map_or(s.span, |n| n.span)),
                }
            })
            .collect(),
        _ => Vec::new(),
    };
    Some(Writer {
        kind,
        object: obj.reference(),
        namespace: obj.namespace.map(str::to_string),
        name,
        loc: source.at(node.span),
        generated,
        subjects,
    })
}

/// Whether two namespaces can be the same once applied: an object without one lands in the
/// destination namespace of its Argo CD Application, which the render does not show.
pub fn may_meet(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    }
}

/// The groups every ServiceAccount of `namespace` belongs to.
pub fn holds_account(group: &str, namespace: Option<&str>) -> bool {
    match group {
        "system:serviceaccounts" | "system:authenticated" => true,
        _ => group
            .strip_prefix("system:serviceaccounts:")
            .is_some_and(|ns| namespace.is_none_or(|n| n == ns)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_that_hold_a_service_account() {
        assert!(holds_account("system:serviceaccounts", Some("shop")));
        assert!(holds_account("system:authenticated", Some("shop")));
        assert!(holds_account("system:serviceaccounts:shop", Some("shop")));
        assert!(!holds_account("system:serviceaccounts:other", Some("shop")));
        assert!(!holds_account("system:unauthenticated", Some("shop")));
        assert!(!holds_account("system:masters", Some("shop")));
    }

    #[test]
    fn namespaces_meet_unless_both_are_given_and_differ() {
        assert!(may_meet(Some("a"), Some("a")));
        assert!(!may_meet(Some("a"), Some("b")));
        assert!(may_meet(None, Some("b")));
    }
}
