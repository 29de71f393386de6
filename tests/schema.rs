//! The `schema` rule through the public API, as the linter will call it.

use credlint::lint::schema::{self, SchemaIssue};
use credlint::load::yaml::{self, Node, Parsed};

// The signatures other modules rely on.
const CHECK: fn(&Node, &str, &str) -> Vec<SchemaIssue> = schema::check;
const IS_CHECKED: fn(&str, &str) -> bool = schema::is_checked;

/// (document index, text at the span, message) for every issue in a stream.
fn lint(text: &str) -> Vec<(usize, String, String)> {
    let mut out = Vec::new();
    for (i, parsed) in yaml::parse(text).into_iter().enumerate() {
        let Parsed::Document(d) = parsed else {
            continue;
        };
        let field = |k: &str| {
            d.root
                .get(k)
                .and_then(Node::as_str)
                .unwrap_or("")
                .to_string()
        };
        let (version, kind) = (field("apiVersion"), field("kind"));
        if !IS_CHECKED(&version, &kind) {
            continue;
        }
        for issue in CHECK(&d.root, &version, &kind) {
            out.push((i, text[issue.span.range()].to_string(), issue.message));
        }
    }
    out
}

#[test]
fn a_stream_is_checked_document_by_document() {
    let text = "\
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: ConfigMap, spam: 1}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: a-credentials}
rules:
- apiGroups: ['']
  resources: [secrets]
  resourceName: [a-app]
  verbs: [get]
---
this: is [not
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: a-credentials
  annotations: {argocd.argoproj.io/sync-wave: 0}
";
    let found = lint(text);
    assert_eq!(found.len(), 2, "{found:#?}");
    assert_eq!((found[0].0, found[0].1.as_str()), (1, "resourceName"));
    assert!(found[0].2.contains("did you mean `resourceNames`?"));
    assert_eq!((found[1].0, found[1].1.as_str()), (3, "0"));
    assert!(
        found[1]
            .2
            .starts_with("annotation values must be strings, found an integer `0`")
    );
}
