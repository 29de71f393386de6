//! Node kinds and field names by number. tree-sitter's `Node::kind` and
//! `TreeCursor::field_name` measure a C string and check its UTF-8 on every call, and
//! `child_by_field_name` compares the name with every field of the grammar, and the walk asks
//! these several times per node. Here each name is looked up once, in tables built from the
//! grammar on first use.

use std::collections::HashMap;
use std::sync::LazyLock;

use tree_sitter::{Language, Node, TreeCursor};

use crate::common::wordhash::WordState;

struct Tables {
    kinds: Vec<&'static str>,
    fields: Vec<Option<&'static str>>,
    /// Field ids by name (the grammar's names only: a bounded map).
    field_ids: HashMap<&'static str, u16, WordState>,
}

static PYTHON: LazyLock<Language> = LazyLock::new(|| tree_sitter_python::LANGUAGE.into());

static TABLES: LazyLock<Tables> = LazyLock::new(|| {
    let language: &'static Language = &PYTHON;
    let kinds = (0..language.node_kind_count())
        .map(|id| {
            u16::try_from(id)
                .ok()
                .and_then(|id| language.node_kind_for_id(id))
                .unwrap_or("")
        })
        .collect();
    // Field ids start at 1; 0 is "no field".
    let fields: Vec<Option<&'static str>> = (0..=language.field_count())
        .map(|id| {
            u16::try_from(id)
                .ok()
                .and_then(|id| language.field_name_for_id(id))
        })
        .collect();
    let field_ids = fields
        .iter()
        .enumerate()
        .filter_map(|(id, name)| Some(((*name)?, u16::try_from(id).ok()?)))
        .collect();
    Tables {
        kinds,
        fields,
        field_ids,
    }
});

/// What `node.kind()` gives, the same name (the public symbol a kind id stands for carries
/// the name of every symbol it stands for); ERROR and other built-in kinds outside the table
/// are asked of tree-sitter.
pub(super) fn kind<'t>(node: impl std::borrow::Borrow<Node<'t>>) -> &'static str {
    let node = node.borrow();
    match TABLES.kinds.get(usize::from(node.kind_id())) {
        Some(name) if !name.is_empty() => name,
        _ => PYTHON.node_kind_for_id(node.kind_id()).unwrap_or(""),
    }
}

/// What `cursor.field_name()` gives.
pub(super) fn field_name(cursor: &TreeCursor<'_>) -> Option<&'static str> {
    let id = cursor.field_id()?;
    TABLES.fields.get(usize::from(id.get())).copied().flatten()
}

/// What `node.child_by_field_name(field)` gives.
pub(super) fn child<'t>(node: Node<'t>, field: &str) -> Option<Node<'t>> {
    node.child_by_field_id(*TABLES.field_ids.get(field)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tables give what tree-sitter's own calls give, for every node and field of a
    /// program that uses most of the grammar, and of a broken one.
    #[test]
    fn the_tables_agree_with_tree_sitter() {
        let programs = [
            include_str!("../../../fixtures/runtime/create-alt.py"),
            "def f(a, *b, c=1, **d):\n    x: int = [i async for i in y if i]\n    return {**d, 'k': f'{a!r:>3}'}\nclass C(B, metaclass=M):\n    @d\n    def g(self): yield from h()\ntry:\n    import a.b as c\nexcept (E, F) as e:\n    raise X from e\nfinally:\n    del x[1:2, ...]\nwith a as (b, c), d: pass\nlambda x=1: x if x else not x\nglobal q\nprint >> f, 'x'\nexec 'code'\nmatch p:\n    case [1, *r] | {'k': v} if v: pass\n",
            "def broken(:\n  x = (1,\n  ] ` <> 0777 10L\n",
        ];
        let mut parser = tree_sitter::Parser::new();
        parser
            .set_language(&tree_sitter_python::LANGUAGE.into())
            .unwrap();
        let mut seen = std::collections::HashSet::new();
        for program in programs {
            let tree = parser.parse(program, None).unwrap();
            let mut cursor = tree.walk();
            loop {
                let node = cursor.node();
                assert_eq!(kind(node), node.kind());
                assert_eq!(field_name(&cursor), cursor.field_name());
                seen.insert(kind(node));
                for field in ["left", "right", "body", "function", "name", "value", "nope"] {
                    assert_eq!(child(node, field), node.child_by_field_name(field));
                }
                if cursor.goto_first_child() {
                    continue;
                }
                while !cursor.goto_next_sibling() {
                    if !cursor.goto_parent() {
                        break;
                    }
                }
                if cursor.depth() == 0 {
                    break;
                }
            }
        }
        assert!(seen.contains("ERROR") && seen.len() > 80, "{}", seen.len());
    }
}
