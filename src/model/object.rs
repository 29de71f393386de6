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

impl<'n, 'a> Object<'n, 'a> {
    /// A mapping with a string `kind` is an object; anything else (a values file, a package.json
    /// found while walking) is not credlint's business.
    pub fn from_node(root: &'n Node<'a>) -> Option<Self> {
        let kind = root.get("kind")?.as_str()?;
        let api_version = root.get("apiVersion").and_then(Node::as_str).unwrap_or("");
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

    /// The node that stands for the object in a finding: its name, else its kind.
    pub fn anchor(&self) -> &'n Node<'a> {
        self.root
            .at(&["metadata", "name"])
            .or_else(|| self.root.get("kind"))
            .unwrap_or(self.root)
    }
}

/// The objects of a document: the document itself, or the items of a list (nested lists too).
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
}
