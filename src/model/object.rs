//! Kubernetes objects in a document: identity (apiVersion, kind, namespace, name), with the
//! items of `kind: List` taken one by one as kubectl does.

use crate::load::yaml::{Node, Value};
use crate::model::ObjectRef;

/// An object inside a document tree.
#[derive(Clone, Copy, Debug)]
pub struct Object<'n, 'a> {
    pub root: &'n Node<'a>,
    pub api_version: &'n str,
    pub kind: &'n str,
    pub name: Option<&'n str>,
    pub namespace: Option<&'n str>,
}

/// The API group of kustomize's configuration files (Kustomization, Component).
const KUSTOMIZE_GROUP: &str = "kustomize.config.k8s.io";

impl<'n, 'a> Object<'n, 'a> {
    /// A mapping with a string `kind` is an object; anything else (a values file, a package.json
    /// found while walking) is not credlint's business. Nor is a kustomization
    /// (`kustomize.config.k8s.io`): kustomize's own configuration, never sent to a cluster.
    pub fn from_node(root: &'n Node<'a>) -> Option<Self> {
        let kind = root.get("kind")?.as_str()?;
        let api_version = root.get("apiVersion").and_then(Node::as_str).unwrap_or("");
        if api_group(api_version) == KUSTOMIZE_GROUP {
            return None;
        }
        let metadata = root.get("metadata");
        let field = |key| metadata.and_then(|m| m.get(key)).and_then(Node::as_str);
        Some(Object {
            root,
            api_version,
            kind,
            name: field("name"),
            namespace: field("namespace").filter(|ns| !ns.is_empty()),
        })
    }

    pub fn reference(&self) -> ObjectRef {
        ObjectRef {
            kind: self.kind.to_string(),
            namespace: self.namespace.map(str::to_string),
            name: self.name.unwrap_or("").to_string(),
        }
    }

    /// The API group of its apiVersion (`""` for the core group, `v1`).
    pub fn group(&self) -> &str {
        api_group(self.api_version)
    }

    /// The node that stands for the object in a finding: its name, else its kind.
    pub fn anchor(&self) -> &'n Node<'a> {
        self.root
            .at(&["metadata", "name"])
            .or_else(|| self.root.get("kind"))
            .unwrap_or(self.root)
    }
}

/// The objects of a document: the document itself, or the items of a list (nested lists too).
/// The API group of an apiVersion: what comes before its last `/` (`""` for `v1`).
pub fn api_group(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

pub fn objects<'n, 'a>(root: &'n Node<'a>, out: &mut Vec<Object<'n, 'a>>) {
    let Some(object) = Object::from_node(root) else {
        return;
    };
    let is_list = object.kind == "List" || object.kind.ends_with("List");
    match (is_list, root.get("items").map(|i| &i.value)) {
        (true, Some(Value::Seq(items))) => {
            for item in items {
                objects(item, out);
            }
        }
        _ => out.push(object),
    }
}

/// The parts of a document that kubectl refuses as no object: the document itself when it is a
/// scalar, a sequence or a mapping without a string `apiVersion` and `kind`, and such items of
/// a `kind: List`. Each with where it starts and what it is. An empty document is none.
pub fn not_objects(root: &Node) -> Vec<(crate::load::yaml::Span, String)> {
    let mut out = Vec::new();
    refused(root, "the document", &mut out);
    out
}

fn refused(node: &Node, what: &str, out: &mut Vec<(crate::load::yaml::Span, String)>) {
    let shown = match &node.value {
        Value::Null => return,
        Value::Seq(_) => "a sequence".to_string(),
        Value::Map(_) => {
            let text = |key| {
                node.get(key)
                    .and_then(Node::as_str)
                    .filter(|s| !s.is_empty())
            };
            let missing: Vec<&str> = ["apiVersion", "kind"]
                .into_iter()
                .filter(|k| text(k).is_none())
                .collect();
            if missing.is_empty() {
                let kind = text("kind").unwrap_or("");
                if kind == "List" || kind.ends_with("List") {
                    for item in node.get("items").and_then(Node::as_seq).unwrap_or_default() {
                        refused(item, "an item of this List", out);
                    }
                }
                return;
            }
            format!("a mapping without {}", missing.join(" or "))
        }
        _ => {
            let value = node.display_for_message().unwrap_or_default();
            format!("{} `{}`", node.type_name(), crate::common::shorten(&value))
        }
    };
    let at = match &node.value {
        Value::Map(_) => crate::load::locate::root_span(node),
        _ => node.span,
    };
    out.push((
        at,
        format!(
            "{what} is {shown}, not a Kubernetes object: kubectl and Argo CD refuse the whole \
             file, so no object in it is applied"
        ),
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::yaml::{Parsed, parse};

    #[test]
    fn lists_are_unpacked_and_non_objects_skipped() {
        let text = "kind: List\nitems:\n  - {kind: Role, metadata: {name: a, namespace: ns}}\n  - {kind: RoleList, items: [{kind: Job, metadata: {name: b}}]}\n  - just a string\n";
        let Parsed::Document(d) = &parse(text)[0] else {
            panic!()
        };
        let mut out = Vec::new();
        objects(&d.root, &mut out);
        let names: Vec<_> = out.iter().map(|o| (o.kind, o.name, o.namespace)).collect();
        assert_eq!(
            names,
            vec![("Role", Some("a"), Some("ns")), ("Job", Some("b"), None)]
        );
        let Parsed::Document(d) = &parse("replicas: 3\n")[0] else {
            panic!()
        };
        let mut out = Vec::new();
        objects(&d.root, &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn documents_that_are_no_objects_are_located() {
        // Each with the text the finding starts at.
        let cases = [
            ("just a note\n", 1, "a string", "just a note"),
            ("- a\n- b\n", 1, "a sequence", "- a"),
            ("replicas: 3\n", 1, "without apiVersion or kind", "replicas"),
            (
                "kind: Role\nmetadata: {name: x}\n",
                1,
                "without apiVersion",
                "Role",
            ),
            (
                "apiVersion: v1\nkind: List\nitems:\n  - 42\n",
                1,
                "an item of this List",
                "42",
            ),
        ];
        for (text, count, says, at) in cases {
            let Parsed::Document(d) = &parse(text)[0] else {
                panic!()
            };
            let found = not_objects(&d.root);
            assert_eq!(found.len(), count, "{text}");
            assert!(found[0].1.contains(says), "{text}: {}", found[0].1);
            let start = found[0].0.start as usize;
            assert!(text[start..].starts_with(at), "{text}: at {start}");
        }
        for text in ["apiVersion: v1\nkind: ConfigMap\n", "# only a comment\n"] {
            let parsed = parse(text);
            if let Some(Parsed::Document(d)) = parsed.first() {
                assert!(not_objects(&d.root).is_empty(), "{text}");
            }
        }
    }
}
