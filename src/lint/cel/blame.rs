//! Finding the nodes that make a CEL expression false, by walking the expression the rule
//! decided with (there is no second "locator" expression that could drift from it).
//!
//! - `a && b`: each operand that is false is blamed.
//! - `a || b`: all operands are false; the last is the condition, the earlier ones guards
//!   (`!has(x) || x == ...`), so the last is blamed.
//! - `c ? a : b`: the branch taken is blamed.
//! - `list.all(x, p)`: `p` is blamed for every element where it is false, with `x` bound to the
//!   element and to the element's path in the object.
//! - anything else is a leaf: of the object paths it reads, the one bound most recently (the
//!   innermost comprehension variable) that exists is blamed; when none exists, the innermost
//!   one, shown where it stops existing (the field that is missing).

use crate::load::locate::{Path, Seg, reach};
use crate::load::yaml::Node;
use cel::IdedExpr;
use cel::common::ast::{ComprehensionExpr, Expr, LiteralValue};
use cel::objects::{Key, Value};
use std::collections::HashMap;

type Ctx<'p> = cel::Context<'p, 'static>;

struct Binding {
    name: String,
    path: Option<Path>,
    level: usize,
}

struct Blamer<'o, 'a, 'v> {
    object: &'o Node<'a>,
    variables: &'v HashMap<&'v str, &'v IdedExpr>,
}

pub fn blame(
    expr: &IdedExpr,
    ctx: &Ctx<'_>,
    object: &Node,
    variables: &HashMap<&str, &IdedExpr>,
) -> Vec<Path> {
    let blamer = Blamer { object, variables };
    let mut binds = vec![Binding {
        name: "object".into(),
        path: Some(Vec::new()),
        level: 0,
    }];
    let mut out = Vec::new();
    blamer.expr(expr, ctx, &mut binds, &mut out);
    let mut seen = std::collections::HashSet::new();
    out.retain(|p| seen.insert(p.clone()));
    out
}

fn holds(ctx: &Ctx<'_>, expr: &IdedExpr) -> bool {
    matches!(ctx.resolve(expr), Ok(Value::Bool(true)))
}

/// `all(x, p)` expands to a comprehension that starts at true and steps with `@result && p`.
fn all_predicate(c: &ComprehensionExpr) -> Option<&IdedExpr> {
    let starts_true = matches!(
        &c.accu_init.expr,
        Expr::Literal(LiteralValue::Boolean(b)) if *b.inner()
    );
    let Expr::Call(step) = &c.loop_step.expr else {
        return None;
    };
    if !starts_true || step.func_name != "_&&_" || step.args.len() != 2 {
        return None;
    }
    matches!(&step.args[0].expr, Expr::Ident(name) if *name == c.accu_var).then_some(&step.args[1])
}

enum Origin {
    /// The expression's value is the node at this path (bound at this level).
    Path(Path, usize),
    /// The expression is a list whose elements are these nodes (a concatenation).
    List(Vec<Option<Path>>),
}

impl Blamer<'_, '_, '_> {
    fn expr(&self, e: &IdedExpr, ctx: &Ctx<'_>, binds: &mut Vec<Binding>, out: &mut Vec<Path>) {
        match &e.expr {
            Expr::Call(c) if c.func_name == "_&&_" => {
                let before = out.len();
                for arg in &c.args {
                    if !holds(ctx, arg) {
                        self.expr(arg, ctx, binds, out);
                    }
                }
                if out.len() == before {
                    self.leaf(e, binds, out);
                }
            }
            Expr::Call(c) if c.func_name == "_||_" => match c.args.last() {
                Some(last) => self.expr(last, ctx, binds, out),
                None => self.leaf(e, binds, out),
            },
            Expr::Call(c) if c.func_name == "_?_:_" && c.args.len() == 3 => {
                match ctx.resolve(&c.args[0]) {
                    Ok(Value::Bool(true)) => self.expr(&c.args[1], ctx, binds, out),
                    Ok(Value::Bool(false)) => self.expr(&c.args[2], ctx, binds, out),
                    _ => self.leaf(&c.args[0], binds, out),
                }
            }
            Expr::Comprehension(comp) => match all_predicate(comp) {
                Some(pred) => self.all(comp, pred, ctx, binds, out),
                None => self.leaf(e, binds, out),
            },
            _ => self.leaf(e, binds, out),
        }
    }

    fn all(
        &self,
        comp: &ComprehensionExpr,
        pred: &IdedExpr,
        ctx: &Ctx<'_>,
        binds: &mut Vec<Binding>,
        out: &mut Vec<Path>,
    ) {
        let Ok(range) = ctx.resolve(&comp.iter_range) else {
            return self.leaf(&comp.iter_range, binds, out);
        };
        let level = binds.len();
        let before = out.len();
        match &range {
            Value::List(items) => {
                let origins = self.elements(&comp.iter_range, binds);
                for (i, item) in items.iter().enumerate() {
                    let path = origins.as_ref().and_then(|o| o.get(i).cloned().flatten());
                    let mut child = ctx.new_inner_scope();
                    match &comp.iter_var2 {
                        Some(second) => {
                            child.add_variable_from_value(comp.iter_var.as_str(), i as i64);
                            child.add_variable_from_value(second.as_str(), item.clone());
                            binds.push(bind(&comp.iter_var, None, level));
                            binds.push(bind(second, path, level + 1));
                        }
                        None => {
                            child.add_variable_from_value(comp.iter_var.as_str(), item.clone());
                            binds.push(bind(&comp.iter_var, path, level));
                        }
                    }
                    if !holds(&child, pred) {
                        self.expr(pred, &child, binds, out);
                    }
                    binds.truncate(level);
                }
            }
            Value::Map(map) => {
                let base = match self.origin(&comp.iter_range, binds) {
                    Some(Origin::Path(p, _)) => Some(p),
                    _ => None,
                };
                let mut entries: Vec<(&Key, &Value)> = map.map.iter().collect();
                entries.sort_by_key(|(k, _)| key_text(k));
                for (key, value) in entries {
                    let text = key_text(key);
                    let key_path = base.clone().map(|mut p| {
                        p.push(Seg::KeyOf(text.clone()));
                        p
                    });
                    let mut child = ctx.new_inner_scope();
                    child.add_variable_from_value(comp.iter_var.as_str(), key_value(key));
                    binds.push(bind(&comp.iter_var, key_path, level));
                    if let Some(second) = &comp.iter_var2 {
                        child.add_variable_from_value(second.as_str(), value.clone());
                        let value_path = base.clone().map(|mut p| {
                            p.push(Seg::Key(text.clone()));
                            p
                        });
                        binds.push(bind(second, value_path, level + 1));
                    }
                    if !holds(&child, pred) {
                        self.expr(pred, &child, binds, out);
                    }
                    binds.truncate(level);
                }
            }
            _ => {}
        }
        if out.len() == before {
            self.leaf(&comp.iter_range, binds, out);
        }
    }

    /// The element paths of a list-valued expression, where they can be known.
    fn elements(&self, e: &IdedExpr, binds: &[Binding]) -> Option<Vec<Option<Path>>> {
        match self.origin(e, binds)? {
            Origin::List(items) => Some(items),
            Origin::Path(path, _) => {
                let r = reach(self.object, &path);
                if !r.complete {
                    return Some(Vec::new());
                }
                let len = r.node.as_seq().map_or(0, <[Node]>::len);
                Some(
                    (0..len)
                        .map(|i| {
                            let mut p = path.clone();
                            p.push(Seg::Index(i));
                            Some(p)
                        })
                        .collect(),
                )
            }
        }
    }

    fn origin(&self, e: &IdedExpr, binds: &[Binding]) -> Option<Origin> {
        match &e.expr {
            Expr::Ident(name) => match binds.iter().rev().find(|b| b.name == *name) {
                Some(b) => Some(Origin::Path(b.path.clone()?, b.level)),
                // A variable bound by identifier: where its expression reads from.
                None => {
                    let var = self.variables.get(name.as_str())?;
                    self.origin(var, &binds[..1])
                }
            },
            Expr::Select(s) => {
                if let Expr::Ident(root) = &s.operand.expr
                    && root == "variables"
                    && !binds.iter().any(|b| b.name == "variables")
                {
                    let var = self.variables.get(s.field.as_str())?;
                    // Variables are evaluated at the top, where only `object` is bound.
                    return self.origin(var, &binds[..1]);
                }
                self.child(&s.operand, Seg::Key(s.field.clone()), binds)
            }
            Expr::Call(c) => match (c.func_name.as_str(), c.target.as_deref(), c.args.as_slice()) {
                ("_?._", None, [operand, field]) => {
                    self.child(operand, Seg::Key(literal_string(field)?), binds)
                }
                ("_[_]" | "_[?_]", None, [operand, index]) => {
                    let seg = match &index.expr {
                        Expr::Literal(LiteralValue::String(s)) => Seg::Key(s.inner().to_string()),
                        Expr::Literal(LiteralValue::Int(i)) => {
                            Seg::Index(usize::try_from(*i.inner()).ok()?)
                        }
                        _ => return None,
                    };
                    self.child(operand, seg, binds)
                }
                ("orValue" | "value", Some(target), _) => self.origin(target, binds),
                // `has(x) ? x : default` (or `'k' in m ? m['k'] : default`) is `x` where it
                // exists.
                ("_?_:_", None, [_, then, otherwise]) => self
                    .origin(then, binds)
                    .or_else(|| self.origin(otherwise, binds)),
                ("_+_", None, [a, b]) => {
                    let mut items = self.elements(a, binds)?;
                    items.extend(self.elements(b, binds)?);
                    Some(Origin::List(items))
                }
                _ => None,
            },
            _ => None,
        }
    }

    fn child(&self, operand: &IdedExpr, seg: Seg, binds: &[Binding]) -> Option<Origin> {
        match self.origin(operand, binds)? {
            Origin::Path(mut p, level) => {
                p.push(seg);
                Some(Origin::Path(p, level))
            }
            Origin::List(items) => match seg {
                Seg::Index(i) => Some(Origin::Path(items.get(i)?.clone()?, 0)),
                _ => None,
            },
        }
    }

    fn leaf(&self, e: &IdedExpr, binds: &mut Vec<Binding>, out: &mut Vec<Path>) {
        let mut refs = Vec::new();
        self.references(e, binds, &mut refs);
        let pick = |candidates: &mut dyn Iterator<Item = &(Path, usize)>| {
            let mut best: Option<&(Path, usize)> = None;
            for c in candidates {
                if best.is_none_or(|b| c.1 > b.1) {
                    best = Some(c);
                }
            }
            best.map(|b| b.0.clone())
        };
        let complete = pick(&mut refs.iter().filter(|(p, _)| reach(self.object, p).complete));
        if let Some(path) = complete.or_else(|| pick(&mut refs.iter())) {
            out.push(path);
        }
    }

    /// Every object path `e` reads, with the level of the variable it starts from.
    fn references(&self, e: &IdedExpr, binds: &mut Vec<Binding>, out: &mut Vec<(Path, usize)>) {
        if let Some(Origin::Path(p, level)) = self.origin(e, binds) {
            out.push((p, level));
            self.side_references(e, binds, out);
            return;
        }
        match &e.expr {
            Expr::Select(s) => {
                if let Expr::Ident(root) = &s.operand.expr
                    && root == "variables"
                {
                    if let Some(var) = self.variables.get(s.field.as_str()) {
                        // Variables are evaluated at the top, where only `object` is bound.
                        let inner = binds.split_off(1);
                        self.references(var, binds, out);
                        binds.extend(inner);
                    }
                    return;
                }
                self.references(&s.operand, binds, out);
            }
            Expr::Ident(name) => {
                if !binds.iter().any(|b| b.name == *name)
                    && let Some(var) = self.variables.get(name.as_str())
                {
                    let inner = binds.split_off(1);
                    self.references(var, binds, out);
                    binds.extend(inner);
                }
            }
            Expr::Call(c) => {
                if let Some(t) = &c.target {
                    self.references(t, binds, out);
                }
                for a in &c.args {
                    self.references(a, binds, out);
                }
            }
            Expr::Comprehension(comp) => {
                self.references(&comp.iter_range, binds, out);
                let level = binds.len();
                binds.push(bind(&comp.iter_var, None, level));
                if let Some(second) = &comp.iter_var2 {
                    binds.push(bind(second, None, level));
                }
                binds.push(bind(&comp.accu_var, None, level));
                self.references(&comp.accu_init, binds, out);
                self.references(&comp.loop_step, binds, out);
                self.references(&comp.result, binds, out);
                binds.truncate(level);
            }
            Expr::List(list) => {
                for item in &list.elements {
                    self.references(item, binds, out);
                }
            }
            _ => {}
        }
    }

    /// The parts of a path expression that are not the path: `orValue` defaults, computed
    /// indexes.
    fn side_references(
        &self,
        e: &IdedExpr,
        binds: &mut Vec<Binding>,
        out: &mut Vec<(Path, usize)>,
    ) {
        match &e.expr {
            Expr::Call(c) => {
                if let Some(t) = &c.target {
                    self.side_references(t, binds, out);
                }
                match c.func_name.as_str() {
                    "orValue" | "value" => {
                        for a in &c.args {
                            self.references(a, binds, out);
                        }
                    }
                    _ => {
                        if let Some(first) = c.args.first() {
                            self.side_references(first, binds, out);
                        }
                    }
                }
            }
            Expr::Select(s) => self.side_references(&s.operand, binds, out),
            _ => {}
        }
    }
}

fn bind(name: &str, path: Option<Path>, level: usize) -> Binding {
    Binding {
        name: name.to_string(),
        path,
        level,
    }
}

fn literal_string(e: &IdedExpr) -> Option<String> {
    match &e.expr {
        Expr::Literal(LiteralValue::String(s)) => Some(s.inner().to_string()),
        _ => None,
    }
}

fn key_text(key: &Key) -> String {
    match key {
        Key::String(s) => s.to_string(),
        Key::Int(i) => i.to_string(),
        Key::Uint(u) => u.to_string(),
        Key::Bool(b) => b.to_string(),
    }
}

fn key_value(key: &Key) -> Value {
    match key {
        Key::String(s) => Value::String(s.clone()),
        Key::Int(i) => Value::Int(*i),
        Key::Uint(u) => Value::UInt(*u),
        Key::Bool(b) => Value::Bool(*b),
    }
}
