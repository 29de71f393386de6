//! What part of `object` an expression can observe, found from its syntax tree, and a key
//! that is equal for two objects exactly when those parts are.
//!
//! The analysis over-approximates: navigation (`a.b`, `a['k']`, `a[0]`, the range of an `all`
//! or `exists`, the branches of `c ? a : b`, the operands of `+`) follows paths precisely; any
//! other use of a value read from the object (a comparison, a function call, `size`, `in`,
//! `has`, a `map` or `filter`) marks its whole subtree as read, except a string tested only
//! against literals (`endsWith('-x')`, `== 'create'`, `matches('...')`): then only the outcome
//! of those tests is read, so objects that differ in names alone share a verdict. Two objects with the same
//! projection are therefore indistinguishable to the expression, which gives the same verdict
//! on both: that is what makes the projection a sound cache key.

use crate::load::yaml::{Node, Value as YValue};
use cel::IdedExpr;
use cel::common::ast::{ComprehensionExpr, Expr, LiteralValue};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The part of a value that is read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Pattern {
    /// Not read at all.
    #[default]
    Nothing,
    /// Read entirely.
    Whole,
    /// A mapping of which these keys are read (their presence, and what the sub-pattern says).
    Fields(BTreeMap<String, Pattern>),
    /// A list whose length and elements (as the sub-pattern says) are read.
    Items(Box<Pattern>),
    /// A value of which only the type is read and, if it is a string, these tests' outcomes.
    Tests(BTreeSet<Test>),
}

/// A test of a string against a literal, whose outcome is all an expression learns.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Test {
    Equals(String),
    StartsWith(String),
    EndsWith(String),
    Contains(String),
    Matches(String),
}

impl Test {
    fn of(function: &str, literal: &str) -> Option<Test> {
        let literal = literal.to_string();
        Some(match function {
            "_==_" | "_!=_" => Test::Equals(literal),
            "startsWith" => Test::StartsWith(literal),
            "endsWith" => Test::EndsWith(literal),
            "contains" => Test::Contains(literal),
            "matches" => Test::Matches(literal),
            _ => return None,
        })
    }

    /// The outcome as a byte: 0 or 1, or 2 where the test cannot run (a pattern that does
    /// not compile fails the same way on every string).
    fn outcome(&self, text: &str) -> u8 {
        match self {
            Test::Equals(s) => u8::from(text == s),
            Test::StartsWith(s) => u8::from(text.starts_with(s.as_str())),
            Test::EndsWith(s) => u8::from(text.ends_with(s.as_str())),
            Test::Contains(s) => u8::from(text.contains(s.as_str())),
            Test::Matches(p) => super::regex::is_match(p, text).map_or(2, u8::from),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Step {
    Field(String),
    Item,
}

type Path = Vec<Step>;

impl Pattern {
    /// What any of `patterns` reads: equal keys on the union mean equal keys on each of them,
    /// so one lookup can stand for all their verdicts.
    pub fn union<'p>(patterns: impl IntoIterator<Item = &'p Pattern>) -> Pattern {
        let mut all = Pattern::Nothing;
        for p in patterns {
            all.merge(p.clone());
        }
        all
    }

    fn merge(&mut self, other: Pattern) {
        let this = std::mem::take(self);
        *self = match (this, other) {
            (Pattern::Nothing, p) | (p, Pattern::Nothing) => p,
            (Pattern::Whole, _) | (_, Pattern::Whole) => Pattern::Whole,
            (Pattern::Tests(mut a), Pattern::Tests(b)) => {
                a.extend(b);
                Pattern::Tests(a)
            }
            // Tested as a string and navigated as well: only the whole value covers both.
            (Pattern::Tests(_), _) | (_, Pattern::Tests(_)) => Pattern::Whole,
            (Pattern::Fields(mut a), Pattern::Fields(b)) => {
                for (k, v) in b {
                    a.entry(k).or_default().merge(v);
                }
                Pattern::Fields(a)
            }
            (Pattern::Items(mut a), Pattern::Items(b)) => {
                a.merge(*b);
                Pattern::Items(a)
            }
            // Read both as a mapping and as a list: only the whole value covers both.
            (Pattern::Fields(_), Pattern::Items(_)) | (Pattern::Items(_), Pattern::Fields(_)) => {
                Pattern::Whole
            }
        };
    }

    fn mark(&mut self, path: &[Step], leaf: Pattern) {
        let Some((first, rest)) = path.split_first() else {
            self.merge(leaf);
            return;
        };
        match self {
            Pattern::Whole => {}
            Pattern::Tests(_) => *self = Pattern::Whole,
            Pattern::Nothing => {
                *self = match first {
                    Step::Field(_) => Pattern::Fields(BTreeMap::new()),
                    Step::Item => Pattern::Items(Box::default()),
                };
                self.mark(path, leaf);
            }
            Pattern::Fields(fields) => match first {
                Step::Field(k) => fields.entry(k.clone()).or_default().mark(rest, leaf),
                Step::Item => *self = Pattern::Whole,
            },
            Pattern::Items(inner) => match first {
                Step::Item => inner.mark(rest, leaf),
                Step::Field(_) => *self = Pattern::Whole,
            },
        }
    }
}

/// Where a value of the expression comes from: the object paths it may be (empty when it is
/// computed, or a literal).
#[derive(Clone, Debug, Default)]
struct Origin {
    paths: Vec<Path>,
}

impl Origin {
    fn object() -> Origin {
        Origin {
            paths: vec![Vec::new()],
        }
    }

    fn step(&self, step: Step) -> Origin {
        Origin {
            paths: self
                .paths
                .iter()
                .map(|p| {
                    let mut p = p.clone();
                    p.push(step.clone());
                    p
                })
                .collect(),
        }
    }

    fn union(mut self, other: Origin) -> Origin {
        self.paths.extend(other.paths);
        self
    }
}

struct Analysis<'v> {
    pattern: Pattern,
    variables: &'v HashMap<&'v str, &'v IdedExpr>,
    /// Variables already analysed: what they are. Their reads are in `pattern` already.
    memo: HashMap<String, Origin>,
}

/// The part of `object` that `expr` (whose bound variables are `variables`) can observe.
pub fn pattern(expr: &IdedExpr, variables: &HashMap<&str, &IdedExpr>) -> Pattern {
    let mut analysis = Analysis {
        pattern: Pattern::Nothing,
        variables,
        memo: HashMap::new(),
    };
    let result = analysis.expr(expr, &mut Vec::new());
    analysis.use_whole(&result);
    analysis.pattern
}

impl Analysis<'_> {
    fn use_whole(&mut self, origin: &Origin) {
        for p in &origin.paths {
            self.pattern.mark(p, Pattern::Whole);
        }
    }

    fn expr(&mut self, e: &IdedExpr, scope: &mut Vec<(String, Origin)>) -> Origin {
        match &e.expr {
            Expr::Ident(name) => {
                if let Some((_, o)) = scope.iter().rev().find(|(n, _)| n == name) {
                    return o.clone();
                }
                if name == "object" {
                    return Origin::object();
                }
                if let Some(o) = self.memo.get(name) {
                    return o.clone();
                }
                if let Some(var) = self.variables.get(name.as_str()) {
                    // Variables see only `object` (and earlier variables).
                    let o = self.expr(var, &mut Vec::new());
                    self.memo.insert(name.clone(), o.clone());
                    return o;
                }
                Origin::default()
            }
            Expr::Literal(_) | Expr::Unspecified => Origin::default(),
            Expr::Select(s) => {
                let operand = self.expr(&s.operand, scope);
                let field = operand.step(Step::Field(s.field.clone()));
                if s.test {
                    // `has(a.f)` reads whether `f` is there (its type is kept too).
                    for p in &field.paths {
                        self.pattern.mark(p, Pattern::Nothing);
                    }
                    Origin::default()
                } else {
                    field
                }
            }
            Expr::Call(c) => self.call(c, scope),
            Expr::Comprehension(comp) => self.comprehension(comp, scope),
            Expr::List(list) => {
                for item in &list.elements {
                    let o = self.expr(item, scope);
                    self.use_whole(&o);
                }
                Origin::default()
            }
            Expr::Map(map) => {
                for entry in &map.entries {
                    if let cel::common::ast::EntryExpr::MapEntry(m) = &entry.expr {
                        let k = self.expr(&m.key, scope);
                        let v = self.expr(&m.value, scope);
                        self.use_whole(&k);
                        self.use_whole(&v);
                    }
                }
                Origin::default()
            }
            Expr::Struct(st) => {
                for entry in &st.entries {
                    if let cel::common::ast::EntryExpr::StructField(f) = &entry.expr {
                        let v = self.expr(&f.value, scope);
                        self.use_whole(&v);
                    }
                }
                Origin::default()
            }
        }
    }

    fn call(
        &mut self,
        c: &cel::common::ast::CallExpr,
        scope: &mut Vec<(String, Origin)>,
    ) -> Origin {
        let args = c.args.as_slice();
        match (c.func_name.as_str(), c.target.as_deref(), args) {
            ("_[_]" | "_[?_]", None, [operand, index]) => {
                let operand = self.expr(operand, scope);
                match &index.expr {
                    Expr::Literal(LiteralValue::String(s)) => {
                        operand.step(Step::Field(s.inner().to_string()))
                    }
                    Expr::Literal(LiteralValue::Int(_) | LiteralValue::UInt(_)) => {
                        operand.step(Step::Item)
                    }
                    _ => {
                        let index = self.expr(index, scope);
                        self.use_whole(&index);
                        self.use_whole(&operand);
                        Origin::default()
                    }
                }
            }
            ("_?._", None, [operand, field]) => match &field.expr {
                Expr::Literal(LiteralValue::String(s)) => {
                    let operand = self.expr(operand, scope);
                    operand.step(Step::Field(s.inner().to_string()))
                }
                _ => self.use_all(c, scope),
            },
            ("_?_:_", None, [cond, then, otherwise]) => {
                let cond = self.expr(cond, scope);
                self.use_whole(&cond);
                let a = self.expr(then, scope);
                let b = self.expr(otherwise, scope);
                a.union(b)
            }
            // List concatenation keeps where the elements come from; any other use of the sum
            // reads its operands whole, which the union then marks.
            ("_+_", None, [a, b]) => {
                let a = self.expr(a, scope);
                let b = self.expr(b, scope);
                a.union(b)
            }
            ("orValue", Some(target), [default]) => {
                let t = self.expr(target, scope);
                let d = self.expr(default, scope);
                t.union(d)
            }
            ("value", Some(target), []) => self.expr(target, scope),
            // A string tested against a literal: only the outcome is read.
            (f, Some(target), [arg])
                if let Some(test) = literal_string(arg).and_then(|l| Test::of(f, l)) =>
            {
                self.test(target, test, scope)
            }
            ("matches", None, [text, arg]) if let Some(pattern) = literal_string(arg) => {
                let test = Test::Matches(pattern.to_string());
                self.test(text, test, scope)
            }
            ("_==_" | "_!=_", None, [a, b])
                if literal_string(a).is_some() || literal_string(b).is_some() =>
            {
                let (value, literal) = match literal_string(b) {
                    Some(l) => (a, l),
                    None => (b, literal_string(a).unwrap_or_default()),
                };
                self.test(value, Test::Equals(literal.to_string()), scope)
            }
            // `size` reads a list's length (and each element's type); on a string or a mapping
            // the projection falls back to the whole value.
            ("size", None, [arg]) | ("size", Some(arg), []) => {
                let o = self.expr(arg, scope);
                for p in &o.paths {
                    self.pattern.mark(p, Pattern::Items(Box::default()));
                }
                Origin::default()
            }
            _ => self.use_all(c, scope),
        }
    }

    fn test(&mut self, value: &IdedExpr, test: Test, scope: &mut Vec<(String, Origin)>) -> Origin {
        let o = self.expr(value, scope);
        for p in &o.paths {
            self.pattern
                .mark(p, Pattern::Tests(BTreeSet::from([test.clone()])));
        }
        Origin::default()
    }

    fn use_all(
        &mut self,
        c: &cel::common::ast::CallExpr,
        scope: &mut Vec<(String, Origin)>,
    ) -> Origin {
        if let Some(t) = &c.target {
            let o = self.expr(t, scope);
            self.use_whole(&o);
        }
        for a in &c.args {
            let o = self.expr(a, scope);
            self.use_whole(&o);
        }
        Origin::default()
    }

    fn comprehension(
        &mut self,
        comp: &ComprehensionExpr,
        scope: &mut Vec<(String, Origin)>,
    ) -> Origin {
        let range = self.expr(&comp.iter_range, scope);
        if is_quantifier(comp) {
            // Iterating reads the length and which elements there are; the body says what of
            // each element is read.
            for p in &range.paths {
                self.pattern.mark(p, Pattern::Items(Box::default()));
            }
        } else {
            // map, filter, exists_one and other folds carry elements into their result.
            self.use_whole(&range);
        }
        let depth = scope.len();
        let elements = range.step(Step::Item);
        match &comp.iter_var2 {
            Some(second) => {
                scope.push((comp.iter_var.clone(), Origin::default()));
                scope.push((second.clone(), elements));
            }
            None => scope.push((comp.iter_var.clone(), elements)),
        }
        scope.push((comp.accu_var.clone(), Origin::default()));
        for part in [
            &comp.accu_init,
            &comp.loop_cond,
            &comp.loop_step,
            &comp.result,
        ] {
            let o = self.expr(part, scope);
            self.use_whole(&o);
        }
        scope.truncate(depth);
        Origin::default()
    }
}

fn literal_string(e: &IdedExpr) -> Option<&str> {
    match &e.expr {
        Expr::Literal(LiteralValue::String(s)) => Some(s.inner()),
        _ => None,
    }
}

/// `all` and `exists`: a boolean accumulator and-ed or or-ed with the predicate; the result is
/// the accumulator.
fn is_quantifier(c: &ComprehensionExpr) -> bool {
    let bool_init = matches!(&c.accu_init.expr, Expr::Literal(LiteralValue::Boolean(_)));
    let result_is_accu = matches!(&c.result.expr, Expr::Ident(n) if *n == c.accu_var);
    let step_ok = match &c.loop_step.expr {
        Expr::Call(step) => {
            matches!(step.func_name.as_str(), "_&&_" | "_||_")
                && step.args.len() == 2
                && matches!(&step.args[0].expr, Expr::Ident(n) if *n == c.accu_var)
        }
        _ => false,
    };
    bool_init && result_is_accu && step_ok
}

/// Appends the projection of `node` on `pattern` to `key`: equal keys mean equal projections.
pub fn key(node: &Node, pattern: &Pattern, out: &mut Vec<u8>) {
    match pattern {
        Pattern::Nothing => type_tag(node, out),
        Pattern::Whole => whole(node, out),
        Pattern::Tests(tests) => match &node.value {
            YValue::Str(s) => {
                out.push(b's');
                out.extend(tests.iter().map(|t| t.outcome(s)));
            }
            _ => whole(node, out),
        },
        Pattern::Fields(fields) => {
            let Some(entries) = node.as_map() else {
                return whole(node, out);
            };
            out.push(b'{');
            for (k, sub) in fields {
                match entries.iter().find(|e| e.key == k.as_str()) {
                    Some(e) => {
                        out.push(1);
                        key(&e.value, sub, out);
                    }
                    None => out.push(0),
                }
            }
            out.push(b'}');
        }
        Pattern::Items(sub) => {
            let Some(items) = node.as_seq() else {
                return whole(node, out);
            };
            out.push(b'[');
            out.extend_from_slice(&(items.len() as u64).to_le_bytes());
            for item in items {
                key(item, sub, out);
            }
            out.push(b']');
        }
    }
}

fn type_tag(node: &Node, out: &mut Vec<u8>) {
    out.push(match &node.value {
        YValue::Null => b'n',
        YValue::Bool(_) => b'b',
        YValue::Int(_) => b'i',
        YValue::Float(_) => b'f',
        YValue::Str(_) => b's',
        YValue::Seq(_) => b'l',
        YValue::Map(_) => b'm',
    });
}

/// A string longer than this enters a verdict key as its SHA-256, not its bytes, so that a
/// long value is not copied into the keys as they grow.
const DIGESTED_FROM: usize = 64 * 1024;

fn whole(node: &Node, out: &mut Vec<u8>) {
    type_tag(node, out);
    match &node.value {
        YValue::Null => {}
        YValue::Bool(b) => out.push(u8::from(*b)),
        YValue::Int(i) => out.extend_from_slice(&i.to_le_bytes()),
        YValue::Float(f) => out.extend_from_slice(&f.to_bits().to_le_bytes()),
        YValue::Str(s) => {
            out.extend_from_slice(&(s.len() as u64).to_le_bytes());
            if s.len() > DIGESTED_FROM {
                // The length says which form follows, so keys stay unambiguous.
                use sha2::Digest;
                out.extend_from_slice(&sha2::Sha256::digest(s.as_bytes()));
            } else {
                out.extend_from_slice(s.as_bytes());
            }
        }
        YValue::Seq(items) => {
            out.extend_from_slice(&(items.len() as u64).to_le_bytes());
            for item in items {
                whole(item, out);
            }
        }
        YValue::Map(entries) => {
            out.extend_from_slice(&(entries.len() as u64).to_le_bytes());
            for e in entries {
                out.extend_from_slice(&(e.key.len() as u64).to_le_bytes());
                out.extend_from_slice(e.key.as_bytes());
                whole(&e.value, out);
            }
        }
    }
}

/// `node` cut down to `pattern`. An expression evaluates the same on it as on the whole (it
/// observes nothing that is cut), and converting it for CEL costs only what is kept.
pub fn prune<'a>(node: &Node<'a>, pattern: &Pattern) -> Node<'a> {
    let keep = |value| Node {
        span: node.span,
        style: node.style,
        value,
    };
    match pattern {
        Pattern::Whole | Pattern::Tests(_) => node.clone(),
        // Only the type is observed: an empty value of the same type.
        Pattern::Nothing => keep(match &node.value {
            YValue::Seq(_) => YValue::Seq(Vec::new()),
            YValue::Map(_) => YValue::Map(Vec::new()),
            YValue::Str(_) => YValue::Str(Default::default()),
            other => other.clone(),
        }),
        Pattern::Fields(fields) => match node.as_map() {
            Some(entries) => keep(YValue::Map(
                entries
                    .iter()
                    .filter_map(|e| {
                        let sub = fields.get(e.key.as_ref())?;
                        Some(crate::load::yaml::Entry {
                            key: e.key.clone(),
                            key_span: e.key_span,
                            value: prune(&e.value, sub),
                        })
                    })
                    .collect(),
            )),
            None => node.clone(),
        },
        Pattern::Items(sub) => match node.as_seq() {
            Some(items) => keep(YValue::Seq(items.iter().map(|i| prune(i, sub)).collect())),
            None => node.clone(),
        },
    }
}
