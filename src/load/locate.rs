//! Paths into an object's tree, and the span a finding shows for a path: the value itself when
//! it exists, else the nearest thing that does (the key of the mapping that lacks the field).

use crate::load::yaml::{Node, Span, Value};

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Seg {
    Key(String),
    Index(usize),
    /// The key itself rather than its value (a comprehension over a map's keys).
    KeyOf(String),
}

pub type Path = Vec<Seg>;

/// What a path reaches in a tree.
pub struct Reach<'n, 'a> {
    /// The deepest node the path reaches.
    pub node: &'n Node<'a>,
    /// How many segments exist.
    pub depth: usize,
    /// Whether the whole path exists.
    pub complete: bool,
    /// The span of the key that led to `node`, when it was reached through a key.
    pub key_span: Option<Span>,
}

pub fn reach<'n, 'a>(root: &'n Node<'a>, path: &[Seg]) -> Reach<'n, 'a> {
    let mut node = root;
    let mut key_span = None;
    for (depth, seg) in path.iter().enumerate() {
        let next = match seg {
            Seg::Key(k) | Seg::KeyOf(k) => node.entry(k).map(|e| (&e.value, Some(e.key_span))),
            Seg::Index(i) => node
                .as_seq()
                .and_then(|items| items.get(*i))
                .map(|n| (n, None)),
        };
        match next {
            Some((n, ks)) => {
                if let Seg::KeyOf(_) = seg {
                    // The key is the target: report it as a complete reach with the key's span.
                    return Reach {
                        node: n,
                        depth: depth + 1,
                        complete: depth + 1 == path.len(),
                        key_span: ks,
                    };
                }
                node = n;
                key_span = ks;
            }
            None => {
                return Reach {
                    node,
                    depth,
                    complete: false,
                    key_span,
                };
            }
        }
    }
    Reach {
        node,
        depth: path.len(),
        complete: true,
        key_span,
    }
}

/// The span to show for a path. A scalar that exists is shown itself; a collection or a missing
/// field is shown by the key that holds it (or that lacks the field); a list item by its first
/// line; the object root by its `kind`.
pub fn span_for(root: &Node, path: &[Seg]) -> Span {
    let r = reach(root, path);
    if r.complete && matches!(path.last(), Some(Seg::KeyOf(_))) {
        return r.key_span.unwrap_or(r.node.span);
    }
    let is_collection = matches!(r.node.value, Value::Seq(_) | Value::Map(_));
    if r.complete && !is_collection {
        return r.node.span;
    }
    if let Some(key) = r.key_span {
        return key;
    }
    if r.depth == 0 {
        return root_span(root);
    }
    first_line_of(r.node)
}

/// A short span that stands for a whole object: its `kind` value.
pub fn root_span(root: &Node) -> Span {
    root.get("kind")
        .map(|k| k.span)
        .or_else(|| root.as_map().and_then(|m| m.first()).map(|e| e.key_span))
        .unwrap_or(root.span)
}

/// A mapping item of a list (`- name: x`) shown by its first entry; anything else by itself.
fn first_line_of(node: &Node) -> Span {
    match node.as_map().and_then(|m| m.first()) {
        Some(first) => {
            let end = if matches!(first.value.value, Value::Seq(_) | Value::Map(_)) {
                first.key_span.end()
            } else {
                first.value.span.end()
            };
            Span::new(first.key_span.start(), end)
        }
        None => node.span,
    }
}

pub fn display(path: &[Seg]) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) | Seg::KeyOf(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::yaml::{Parsed, parse};

    fn key(k: &str) -> Seg {
        Seg::Key(k.into())
    }

    #[test]
    fn spans_for_existing_missing_and_items() {
        let text = "kind: Job\nspec:\n  containers:\n    - name: a\n      image: x\n";
        let Parsed::Document(d) = &parse(text)[0] else {
            panic!()
        };
        let root = &d.root;
        let image = vec![key("spec"), key("containers"), Seg::Index(0), key("image")];
        assert_eq!(&text[span_for(root, &image).range()], "x");
        let missing = vec![
            key("spec"),
            key("containers"),
            Seg::Index(0),
            key("securityContext"),
        ];
        assert_eq!(&text[span_for(root, &missing).range()], "name: a");
        let ttl = vec![key("spec"), key("ttlSecondsAfterFinished")];
        assert_eq!(&text[span_for(root, &ttl).range()], "spec");
        assert_eq!(&text[span_for(root, &[key("nope")]).range()], "Job");
        assert_eq!(
            &text[span_for(root, &[key("spec"), Seg::KeyOf("containers".into())]).range()],
            "containers"
        );
        assert_eq!(display(&image), "spec.containers[0].image");
    }
}
