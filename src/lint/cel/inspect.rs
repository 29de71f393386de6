//! What an expression uses: the functions it calls, the identifiers it reads and the syntax it
//! relies on. Policy files are untrusted input: before credlint evaluates a policy it checks that
//! every function is one its CEL evaluates as Kubernetes and Kyverno do, and that nothing reads
//! the cluster.

use cel::common::ast::{EntryExpr, Expr, IdedExpr};
use std::collections::BTreeSet;

/// The names an expression refers to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Functions and operators called as `f(x)` or `x.f()`: `size`, `matches`, `_&&_`.
    pub functions: BTreeSet<String>,
    /// Calls on a bare identifier that no comprehension binds, as `(identifier, function)`:
    /// `resource.Get(..)` is `("resource", "Get")`, `object.startsWith(..)` would be
    /// `("object", "startsWith")`. Whether the identifier is a namespace or a variable is for the
    /// caller to say.
    pub calls_on_identifiers: BTreeSet<(String, String)>,
    /// Identifiers that no comprehension binds: `object`, `variables`, `request`.
    pub identifiers: BTreeSet<String>,
    /// Fields selected directly on such an identifier: `("request", "userInfo")`.
    pub fields: BTreeSet<(String, String)>,
    /// Type names of message literals (`google.protobuf.Int64Value{...}`).
    pub structs: BTreeSet<String>,
    /// Whether the optional syntax is used: `a.?b`, `a[?b]`, `[?x]`, `{?k: v}`.
    pub optional: bool,
    /// How deep the expression tree goes (evaluation recurses as deep).
    pub depth: usize,
}

pub fn usage(expr: &IdedExpr) -> Usage {
    let mut usage = Usage::default();
    let mut bound = Vec::new();
    walk(expr, &mut bound, &mut usage, 0);
    usage
}

/// Deeper than this the walk stops: the parser refuses far shallower nesting already, so this
/// only guards the stack.
const MAX_DEPTH: usize = 500;

fn walk(e: &IdedExpr, bound: &mut Vec<String>, usage: &mut Usage, depth: usize) {
    usage.depth = usage.depth.max(depth + 1);
    if depth > MAX_DEPTH {
        return;
    }
    let free =
        |name: &str, bound: &[String]| !name.starts_with('@') && !bound.iter().any(|b| b == name);
    match &e.expr {
        Expr::Unspecified | Expr::Literal(_) => {}
        Expr::Ident(name) => {
            if free(name, bound) {
                usage.identifiers.insert(name.clone());
            }
        }
        Expr::Select(select) => {
            if let Expr::Ident(root) = &select.operand.expr
                && free(root, bound)
            {
                usage.fields.insert((root.clone(), select.field.clone()));
            }
            walk(&select.operand, bound, usage, depth + 1);
        }
        Expr::Call(call) => {
            if call.func_name == "_?._" || call.func_name == "_[?_]" {
                usage.optional = true;
            }
            match call.target.as_deref() {
                Some(IdedExpr {
                    expr: Expr::Ident(root),
                    ..
                }) if free(root, bound) => {
                    usage
                        .calls_on_identifiers
                        .insert((root.clone(), call.func_name.clone()));
                }
                Some(target) => {
                    usage.functions.insert(call.func_name.clone());
                    walk(target, bound, usage, depth + 1);
                }
                None => {
                    usage.functions.insert(call.func_name.clone());
                }
            }
            for arg in &call.args {
                walk(arg, bound, usage, depth + 1);
            }
        }
        Expr::List(list) => {
            if !list.optional_indices.is_empty() {
                usage.optional = true;
            }
            for item in &list.elements {
                walk(item, bound, usage, depth + 1);
            }
        }
        Expr::Map(map) => {
            for entry in &map.entries {
                entry_walk(&entry.expr, bound, usage, depth);
            }
        }
        Expr::Struct(s) => {
            usage.structs.insert(s.type_name.clone());
            for entry in &s.entries {
                entry_walk(&entry.expr, bound, usage, depth);
            }
        }
        Expr::Comprehension(c) => {
            walk(&c.iter_range, bound, usage, depth + 1);
            walk(&c.accu_init, bound, usage, depth + 1);
            let level = bound.len();
            bound.push(c.iter_var.clone());
            if let Some(second) = &c.iter_var2 {
                bound.push(second.clone());
            }
            bound.push(c.accu_var.clone());
            walk(&c.loop_cond, bound, usage, depth + 1);
            walk(&c.loop_step, bound, usage, depth + 1);
            walk(&c.result, bound, usage, depth + 1);
            bound.truncate(level);
        }
    }
}

fn entry_walk(entry: &EntryExpr, bound: &mut Vec<String>, usage: &mut Usage, depth: usize) {
    match entry {
        EntryExpr::StructField(field) => {
            usage.optional |= field.optional;
            walk(&field.value, bound, usage, depth + 1);
        }
        EntryExpr::MapEntry(entry) => {
            usage.optional |= entry.optional;
            walk(&entry.key, bound, usage, depth + 1);
            walk(&entry.value, bound, usage, depth + 1);
        }
    }
}
