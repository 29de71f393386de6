//! `runtime-non-stdlib-import`: every import must resolve in the standard library of every
//! Python a credentials image may carry.

use tree_sitter::Node;

use super::names::{child, kind};

use super::stdlib::{VERSION_COUNT, describe, missing_from};
use super::text::{callee_name, short, string_template, text};
use super::walk::Facts;
use super::{RULE_IMPORT, ScriptFinding, finding_at};

pub(super) fn check(facts: &Facts<'_>, src: &str) -> Vec<ScriptFinding> {
    let mut out = Vec::new();
    for site in facts.imports.iter().filter(|s| !s.optional_import) {
        let node = site.node;
        match kind(node) {
            "import_statement" => {
                let mut cursor = node.walk();
                for name in node.children_by_field_name("name", &mut cursor) {
                    let dotted = if kind(name) == "aliased_import" {
                        child(name, "name")
                    } else {
                        Some(name)
                    };
                    if let Some(dotted) = dotted {
                        check_module(dotted, text(dotted, src), &mut out);
                    }
                }
            }
            "import_from_statement" => {
                let Some(module) = child(node, "module_name") else {
                    continue;
                };
                if kind(module) == "relative_import" {
                    out.push(relative(module, &short(text(node, src), 60)));
                } else {
                    check_module(module, text(module, src), &mut out);
                }
            }
            _ => {}
        }
    }
    for site in facts.calls.iter().filter(|s| !s.optional_import) {
        if let Some((literal, name)) = dynamic_import(site.node, src) {
            if name.starts_with('.') {
                out.push(relative(literal, &name));
            } else {
                check_module(literal, &name, &mut out);
            }
        }
    }
    out
}

/// `__import__("x")`, `importlib.import_module("x")` or `import_module("x")` with a literal
/// name: the literal and the name.
fn dynamic_import<'t>(call: Node<'t>, src: &str) -> Option<(Node<'t>, String)> {
    let function = child(call, "function")?;
    match callee_name(call, src)? {
        "__import__" if kind(function) == "identifier" => {}
        "import_module" => {
            let object = child(function, "object");
            if kind(function) == "attribute" && object.map(|o| text(o, src)) != Some("importlib") {
                return None;
            }
        }
        _ => return None,
    }
    let arguments = child(call, "arguments")?;
    let first = arguments.named_child(0)?;
    let name = string_template(first, src)?.plain()?;
    let name = name.trim().to_string();
    (!name.is_empty()).then_some((first, name))
}

fn check_module(node: Node<'_>, dotted: &str, out: &mut Vec<ScriptFinding>) {
    let top = dotted.split('.').next().unwrap_or("").trim();
    if top.is_empty() {
        return;
    }
    let missing = missing_from(top);
    if missing.is_empty() {
        return;
    }
    let versions = describe(&missing);
    let message = if missing.len() == VERSION_COUNT {
        format!("`{top}` is not in the standard library of Python {versions}")
    } else {
        format!(
            "`{top}` is not in the standard library of Python {versions}, which a credentials image may carry"
        )
    };
    out.push(finding_at(RULE_IMPORT, message, node));
}

fn relative(node: Node<'_>, shown: &str) -> ScriptFinding {
    finding_at(
        RULE_IMPORT,
        format!(
            "relative import `{}`: create.py runs alone, outside any package",
            shown.trim()
        ),
        node,
    )
}
