//! One iterative pass over the tree that gathers what the three checks need.
//!
//! Iterative on purpose: tree-sitter trees of hostile input can be tens of thousands of levels
//! deep, and `Node::parent` walks down from the root on every call, so the ancestors are kept
//! on an explicit stack instead.

use std::collections::HashMap;

use tree_sitter::{Node, Tree};

use super::names::{child, field_name, kind};

use super::syntax;
use super::text::{callee_name, last_name, text};

/// Where a node sits: the facts about its ancestors the checks ask for.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Ctx {
    /// Id of the innermost function, lambda or class node; 0 for module level.
    pub scope: usize,
    /// Inside a function or lambda (so `return` is allowed).
    pub in_func: bool,
    /// Inside the body of a loop of the current function (so `break` is allowed).
    pub in_loop: bool,
}

/// An ancestor of the node being visited.
#[derive(Clone, Copy)]
pub(super) struct Frame<'t> {
    pub node: Node<'t>,
    /// The field, within `node`, of the child on the path to the visited node.
    pub via: Option<&'t str>,
    pub ctx: Ctx,
}

/// What a name is bound to within one scope.
#[derive(Clone, Copy, Debug)]
pub(super) enum Binding<'t> {
    /// Assigned exactly once, to this expression.
    One(Node<'t>),
    /// Assigned more than once, or bound in a way whose value is not visible.
    Many,
}

#[derive(Clone, Copy)]
pub(super) struct Site<'t> {
    pub node: Node<'t>,
    pub scope: usize,
    /// Runs inside a `try:` that handles a failed import.
    pub optional_import: bool,
}

#[derive(Default)]
pub(super) struct Facts<'t> {
    pub imports: Vec<Site<'t>>,
    pub calls: Vec<Site<'t>>,
    /// String literals: every `concatenated_string`, and every `string` not part of one.
    pub strings: Vec<Node<'t>>,
    pub bindings: HashMap<(usize, String), Binding<'t>>,
    /// Syntax problems found from a node and its ancestors; `syntax::check` picks the first.
    pub syntax: syntax::Candidates,
    pub first_error: Option<Node<'t>>,
    pub first_missing: Option<Node<'t>>,
    /// Bracket tokens in document order, for matching them as Python's tokenizer does.
    pub brackets: Vec<Node<'t>>,
}

impl<'t> Facts<'t> {
    fn bind(&mut self, scope: usize, name: &str, value: Option<Node<'t>>) {
        let entry = self.bindings.entry((scope, name.to_string()));
        match (entry, value) {
            (std::collections::hash_map::Entry::Vacant(v), Some(node)) => {
                v.insert(Binding::One(node));
            }
            (std::collections::hash_map::Entry::Vacant(v), None) => {
                v.insert(Binding::Many);
            }
            (std::collections::hash_map::Entry::Occupied(mut o), _) => {
                o.insert(Binding::Many);
            }
        }
    }

    /// The value `name` has at a point in `scope`, if it is bound once there (or, when the
    /// scope does not bind it at all, once at module level).
    /// Also returns the scope the value was found in, to resolve the names inside it.
    pub(super) fn resolve(&self, scope: usize, name: &str) -> Option<(Node<'t>, usize)> {
        let local = self.bindings.get(&(scope, name.to_string()));
        let (binding, found_in) = match local {
            Some(b) => (*b, scope),
            None if scope != 0 => (*self.bindings.get(&(0, name.to_string()))?, 0),
            None => return None,
        };
        match binding {
            Binding::One(node) => Some((node, found_in)),
            Binding::Many => None,
        }
    }
}

/// Adds what `tree` holds to `facts`; a script parsed in parts is collected part by part, in
/// order.
pub(super) fn collect<'t>(tree: &'t Tree, src: &str, facts: &mut Facts<'t>) {
    let mut cursor = tree.walk();
    let mut stack: Vec<Frame<'t>> = Vec::new();
    loop {
        let node = cursor.node();
        let field = field_name(&cursor);
        if let Some(top) = stack.last_mut() {
            top.via = field;
        }
        let ctx = stack.last().map_or_else(Ctx::default, child_ctx);
        visit(node, ctx, &stack, src, facts);
        if cursor.goto_first_child() {
            stack.push(Frame {
                node,
                via: None,
                ctx,
            });
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return;
            }
            stack.pop();
        }
    }
}

/// The context of a child of `parent`, on the path `parent.via`.
fn child_ctx(parent: &Frame<'_>) -> Ctx {
    let mut ctx = parent.ctx;
    match kind(parent.node) {
        "function_definition" | "lambda" => {
            ctx = Ctx {
                scope: parent.node.id(),
                in_func: true,
                in_loop: false,
            };
        }
        "class_definition" => {
            ctx = Ctx {
                scope: parent.node.id(),
                in_func: false,
                in_loop: false,
            };
        }
        "for_statement" | "while_statement" if parent.via == Some("body") => ctx.in_loop = true,
        _ => {}
    }
    ctx
}

fn visit<'t>(node: Node<'t>, ctx: Ctx, stack: &[Frame<'t>], src: &str, facts: &mut Facts<'t>) {
    if node.is_error() && facts.first_error.is_none() {
        facts.first_error = Some(node);
    }
    if node.is_missing() && facts.first_missing.is_none() {
        facts.first_missing = Some(node);
    }
    match kind(node) {
        "(" | ")" | "[" | "]" | "{" | "}" if node.child_count() == 0 && !node.is_missing() => {
            facts.brackets.push(node);
        }
        "import_statement" | "import_from_statement" => facts.imports.push(Site {
            node,
            scope: ctx.scope,
            optional_import: optional_import(stack, src),
        }),
        "call" => {
            // Only import calls need the (depth-long) search for an enclosing `try:`.
            let imports = callee_name(node, src)
                .is_some_and(|name| matches!(name, "__import__" | "import_module"));
            facts.calls.push(Site {
                node,
                scope: ctx.scope,
                optional_import: imports && optional_import(stack, src),
            });
        }
        "string" | "concatenated_string" => {
            // A string that is a statement by itself (a docstring) sends no request, and the
            // parts of a concatenation are checked as one.
            let parent = stack.last().map(|f| kind(f.node));
            if !matches!(parent, Some("concatenated_string" | "expression_statement")) {
                facts.strings.push(node);
            }
        }
        "assignment" => {
            if let Some(left) = child(node, "left") {
                let right = child(node, "right").filter(|r| kind(r) != "assignment");
                if kind(left) == "identifier" {
                    // An annotation without a value (`x: str`) binds nothing.
                    if right.is_some() || child(node, "type").is_none() {
                        facts.bind(ctx.scope, text(left, src), right);
                    }
                } else {
                    bind_targets(left, ctx.scope, src, facts);
                }
            }
        }
        "augmented_assignment" => {
            if let Some(left) = child(node, "left") {
                bind_targets(left, ctx.scope, src, facts);
            }
        }
        "for_statement" => {
            if let Some(left) = child(node, "left") {
                bind_targets(left, ctx.scope, src, facts);
            }
        }
        "as_pattern_target" | "global_statement" | "nonlocal_statement" => {
            bind_targets(node, ctx.scope, src, facts);
        }
        "named_expression" => {
            if let Some(name) = child(node, "name") {
                bind_targets(name, ctx.scope, src, facts);
            }
        }
        "except_clause" => {
            if let Some(alias) = child(node, "alias") {
                bind_targets(alias, ctx.scope, src, facts);
            }
        }
        "function_definition" | "lambda" => {
            // Parameters live in the function's own scope and their values are unknown.
            if let Some(params) = child(node, "parameters") {
                bind_targets(params, node.id(), src, facts);
            }
        }
        _ => {}
    }
    syntax::visit(node, ctx, stack, src, &mut facts.syntax);
}

/// Marks every identifier in a target (or parameter list) as bound to an unknown value. Only
/// the few levels a target can have are searched, so this stays cheap on any input.
fn bind_targets<'t>(target: Node<'t>, scope: usize, src: &str, facts: &mut Facts<'t>) {
    let mut pending = vec![(target, 0u8)];
    while let Some((node, depth)) = pending.pop() {
        if kind(node) == "identifier" {
            facts.bind(scope, text(node, src), None);
            continue;
        }
        // Default values and annotations are not names being bound.
        if depth >= 3 || matches!(kind(node), "type" | "string" | "call") {
            continue;
        }
        let mut cursor = node.walk();
        for (i, child) in node.named_children(&mut cursor).enumerate() {
            let is_default_value =
                matches!(kind(node), "default_parameter" | "typed_default_parameter") && i > 0;
            if !is_default_value {
                pending.push((child, depth + 1));
            }
        }
    }
}

/// True when the visited node runs inside the body of a `try:` whose handlers catch a failed
/// import. A function or lambda in between breaks the link: its body runs later.
fn optional_import(stack: &[Frame<'_>], src: &str) -> bool {
    for frame in stack.iter().rev() {
        match kind(frame.node) {
            "function_definition" | "lambda" => return false,
            "try_statement"
                if frame.via == Some("body") && handles_import_error(frame.node, src) =>
            {
                return true;
            }
            _ => {}
        }
    }
    false
}

fn handles_import_error(try_statement: Node<'_>, src: &str) -> bool {
    let mut cursor = try_statement.walk();
    for clause in try_statement.named_children(&mut cursor) {
        if kind(clause) != "except_clause" {
            continue;
        }
        let mut values = Vec::new();
        let mut inner = clause.walk();
        for value in clause.children_by_field_name("value", &mut inner) {
            values.push(value);
        }
        if values.is_empty() {
            return true; // a bare `except:`
        }
        let mut pending = values;
        while let Some(value) = pending.pop() {
            match kind(value) {
                "identifier" | "attribute" => {
                    if matches!(
                        last_name(value, src),
                        Some("ImportError" | "ModuleNotFoundError")
                    ) {
                        return true;
                    }
                }
                "tuple" | "parenthesized_expression" | "expression_list" => {
                    let mut c = value.walk();
                    pending.extend(value.named_children(&mut c));
                }
                _ => {}
            }
        }
    }
    false
}
