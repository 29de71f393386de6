//! CEL evaluation: the only module that names the `cel` crate.
//!
//! An object rule is decided by evaluating its CEL text against the object, as Kyverno evaluates
//! the generated policy: variables first (a variable that fails is left out, so an expression
//! that uses it fails too, as Kubernetes' lazy variables do), then each validation; an
//! evaluation error counts as a denial. When a validation denies, [`blame`] walks the same
//! expression to find the nodes of the object that made it false.

mod blame;
mod cost;
mod inline;
mod inspect;
pub mod reads;
mod regex;
mod ruleset;

pub use ruleset::{Compiled, CompiledRule, RuleSet};

pub use inspect::Usage;

use crate::load::locate::Path;
use crate::load::yaml::{Node, Value as YValue};
use cel::objects::{Key, Map, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// The CEL environment: the standard library, the strings extension and optional values, which
/// is what Kubernetes 1.30+ and Kyverno 1.17+ both offer.
#[derive(Clone)]
pub struct Cel {
    env: Arc<cel::Env>,
}

/// A compiled expression: its syntax tree (standard macros expanded), evaluated in a context.
pub struct Program {
    inner: Parsed,
    /// For an expression from an untrusted file: the copy that runs under a cost budget, made
    /// on its first evaluation (only expressions shallow enough to be evaluated get one; the
    /// copy of one thousands of levels deep would overflow the stack).
    metered: Option<std::sync::OnceLock<Parsed>>,
    text: String,
}

struct Parsed(cel::IdedExpr);

impl Parsed {
    fn execute(&self, ctx: &cel::Context) -> Result<Value, cel::ExecutionError> {
        ctx.resolve(&self.0)
    }

    fn expression(&self) -> &cel::IdedExpr {
        &self.0
    }
}

/// Parses CEL text. The crate's Pratt parser gives the same trees as its ANTLR one (a test
/// holds that for every expression credlint ships) in less time, and every run compiles the
/// catalog at start-up; it also bounds its own recursion.
fn parse(text: &str) -> Result<Parsed, String> {
    cel::parser::PrattParser::new()
        .enable_optional_syntax(true)
        .parse(text)
        .map(Parsed)
        .map_err(|e| e.to_string())
}

impl std::fmt::Debug for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Program({:?})", self.text)
    }
}

impl Program {
    /// Evaluates the program; one from an untrusted file within the cost budget.
    fn execute(&self, ctx: &cel::Context) -> Result<Value, cel::ExecutionError> {
        match &self.metered {
            Some(cell) => {
                let metered = cell.get_or_init(|| Parsed(cost::metered(self.inner.expression())));
                cost::run(|| metered.execute(ctx))
            }
            None => self.inner.execute(ctx),
        }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// The functions, identifiers and syntax the expression uses.
    pub fn usage(&self) -> Usage {
        inspect::usage(self.inner.expression())
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    Pass,
    Deny,
    /// The expression failed to evaluate (or did not give a boolean): a denial too.
    Error(String),
}

/// `x.orValue(d)`: the value of an optional that has one, `d` for an empty one, and `x`
/// itself for anything else.
fn or_value<'b, 'v>(
    mut args: Vec<cel::common::value::CowVal<'b, 'v>>,
) -> Result<cel::common::value::CowVal<'b, 'v>, cel::ExecutionError> {
    use cel::common::types::CelOptional;
    use cel::common::value::CowVal;
    let (Some(default), Some(this)) = (args.pop(), args.pop()) else {
        return Err(cel::ExecutionError::function_error(
            "orValue",
            "takes one argument",
        ));
    };
    let inner = match &this {
        CowVal::Borrowed(v) => {
            let v: &'b (dyn cel::common::value::Val + 'v) = *v;
            v.downcast_ref::<CelOptional>()
                .map(|o| o.option().map(CowVal::Borrowed))
        }
        CowVal::Owned(b) => b
            .downcast_ref::<CelOptional>()
            .map(|o| o.option().map(|v| CowVal::Owned(v.clone_as_boxed()))),
    };
    Ok(match inner {
        None => this,
        Some(Some(value)) => value,
        Some(None) => default,
    })
}

impl Default for Cel {
    fn default() -> Self {
        Cel::new()
    }
}

impl Cel {
    pub fn new() -> Cel {
        // Kyverno's CEL (1.19+, OrValueCompatEnvOptions) keeps what cel-go did up to v0.27:
        // `x.orValue(d)` on a value that is not optional is `x`. The crate's own overload
        // takes every receiver and refuses those, so this one is declared first and does
        // both; the arguments are evaluated before the call, so an error in either side is
        // the result.
        let mut env = cel::Env::default();
        env.add_member_overload(
            "orValue",
            "or_value_of_any",
            cel::common::types::DYN_TYPE,
            vec![cel::common::types::DYN_TYPE],
            or_value,
        )
        .expect("orValue is declared before the standard library");
        let mut env = env.with_stdlib();
        // The strings extension is part of both Kubernetes' and Kyverno's CEL.
        env.add_extension(cel::extensions::strings)
            .expect("the strings extension declares no conflicting overloads");
        regex::register(&mut env);
        cost::register(&mut env);
        Cel { env: Arc::new(env) }
    }

    pub fn compile(&self, text: &str) -> Result<Program, String> {
        parse(text).map(|inner| Program {
            inner,
            metered: None,
            text: text.to_string(),
        })
    }

    /// Compiles an expression from an untrusted file (a policy given with `--policy`). The
    /// parser recurses once per nesting level, so text longer or deeper than any real policy is
    /// refused, and parsing runs on a thread of its own with a generous stack.
    pub fn compile_untrusted(&self, text: &str) -> Result<Program, String> {
        if text.len() > MAX_UNTRUSTED_LEN {
            return Err(format!(
                "the expression is longer than {MAX_UNTRUSTED_LEN} bytes"
            ));
        }
        if nesting(text) > MAX_UNTRUSTED_NESTING {
            return Err(format!(
                "the expression nests brackets deeper than {MAX_UNTRUSTED_NESTING} levels"
            ));
        }
        let owned = text.to_string();
        let parsed = std::thread::Builder::new()
            .name("cel-parse".into())
            .stack_size(PARSE_STACK)
            .spawn(move || parse(&owned))
            .map_err(|e| format!("cannot start the parser: {e}"))?
            .join()
            .map_err(|_| "the parser failed on this expression".to_string())?;
        parsed.map(|inner| Program {
            metered: Some(std::sync::OnceLock::new()),
            inner,
            text: text.to_string(),
        })
    }

    /// Converts an object once, for every rule that looks at it.
    pub fn bind(&self, object: &Node) -> Bound {
        self.bind_value(to_value(object))
    }

    /// A JSON value as the API server hands it to CEL (a policy's `request`; integers stay
    /// `int`).
    pub fn bind_json(&self, value: &serde_json::Value) -> Bound {
        self.bind_value(json_value(value))
    }

    /// `null`, as `oldObject` is on a create.
    pub fn bind_null(&self) -> Bound {
        self.bind_value(Value::Null)
    }

    fn bind_value(&self, value: Value) -> Bound {
        let mut ctx = cel::Context::with_env(self.env.clone());
        ctx.add_variable_from_value("object", value.clone());
        Bound {
            object: value,
            ctx,
            evaluated: Vec::new(),
        }
    }

    /// Binds `object` (and any constant string variables) and evaluates `variables` in order.
    pub fn activation<'p>(
        &self,
        object: &Node,
        variables: &'p [(String, Program)],
        constants: &[(&str, &str)],
    ) -> Activation<'p> {
        self.activate(&self.bind(object), variables, constants)
    }

    pub fn activate<'p>(
        &self,
        bound: &Bound,
        variables: &'p [(String, Program)],
        constants: &[(&str, &str)],
    ) -> Activation<'p> {
        self.activate_globals(&[("object", bound)], variables, constants)
    }

    /// Like [`Cel::activate`], with more top-level names than `object` (a policy's `oldObject`
    /// and `request`).
    pub fn activate_globals<'p>(
        &self,
        globals: &[(&str, &Bound)],
        variables: &'p [(String, Program)],
        constants: &[(&str, &str)],
    ) -> Activation<'p> {
        let mut ctx = cel::Context::with_env(self.env.clone());
        for (name, bound) in globals {
            ctx.add_variable_from_value(*name, bound.object.clone());
        }
        let mut values: HashMap<Key, Value> = constants
            .iter()
            .map(|(k, v)| (Key::from(*k), Value::from(v.to_string())))
            .collect();
        for (name, program) in variables {
            ctx.add_variable_from_value("variables", map_value(values.clone()));
            if let Ok(value) = program.execute(&ctx) {
                values.insert(Key::from(name.as_str()), value);
            }
        }
        ctx.add_variable_from_value("variables", map_value(values));
        Activation { ctx, variables }
    }

    /// Evaluates a standalone expression over `object` (match conditions).
    pub fn check(&self, program: &Program, bound: &Bound) -> Verdict {
        bound.check(program)
    }
}

/// Limits for expressions from untrusted files, far above what any policy writes.
const MAX_UNTRUSTED_LEN: usize = 64 * 1024;
const MAX_UNTRUSTED_NESTING: usize = 64;
const PARSE_STACK: usize = 64 * 1024 * 1024;

/// The deepest nesting of brackets outside string literals.
fn nesting(text: &str) -> usize {
    let mut depth = 0usize;
    let mut max = 0;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in text.chars() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '\'' | '"' => quote = Some(c),
            '(' | '[' | '{' => {
                depth += 1;
                max = max.max(depth);
            }
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

fn json_value(value: &serde_json::Value) -> Value {
    match value {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Value::Int(i),
            (None, Some(f)) => Value::Float(f),
            (None, None) => Value::Null,
        },
        serde_json::Value::String(s) => Value::String(Arc::new(s.clone())),
        serde_json::Value::Array(items) => {
            Value::List(Arc::new(items.iter().map(json_value).collect()))
        }
        serde_json::Value::Object(entries) => map_value(
            entries
                .iter()
                .map(|(k, v)| (Key::from(k.as_str()), json_value(v)))
                .collect(),
        ),
    }
}

/// An object converted for CEL, bound in a context of its own (with the variables of a
/// [`RuleSet`] once they are bound).
pub struct Bound {
    object: Value,
    ctx: cel::Context<'static, 'static>,
    evaluated: Vec<bool>,
}

impl Bound {
    /// Evaluates a program compiled with [`Cel::compile_inlined`] (or one that uses no
    /// variables).
    pub fn check(&self, program: &Program) -> Verdict {
        verdict(program.execute(&self.ctx))
    }

    /// The paths in `object` that make `program` false (its variables from `rules`).
    pub fn blame(&self, program: &Program, object: &Node, rules: &RuleSet) -> Vec<Path> {
        blame::blame(
            program.inner.expression(),
            &self.ctx,
            object,
            &rules.expressions(),
        )
    }
}

fn verdict(result: Result<Value, cel::ExecutionError>) -> Verdict {
    match result {
        Ok(Value::Bool(true)) => Verdict::Pass,
        Ok(Value::Bool(false)) => Verdict::Deny,
        Ok(other) => Verdict::Error(format!(
            "the expression gave {}, not a boolean",
            describe(&other)
        )),
        Err(e) => Verdict::Error(e.to_string()),
    }
}

/// A value for a message, the same every run: a map's entries come out of a hash map in no
/// fixed order, so collections are named by their type and size, not printed.
fn describe(value: &Value) -> String {
    match value {
        Value::Map(m) => format!("a map of {} entries", m.map.len()),
        Value::List(items) => format!("a list of {} items", items.len()),
        Value::String(s) => format!("the string {:?}", s.as_str()),
        Value::Int(i) => format!("the int {i}"),
        Value::UInt(u) => format!("the uint {u}"),
        Value::Float(f) => format!("the double {f}"),
        Value::Null => "null".to_string(),
        other => format!("{other:?}"),
    }
}

/// A CEL string literal for `text`.
fn literal(text: &str) -> String {
    let mut out = String::from("'");
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

fn map_value(map: HashMap<Key, Value>) -> Value {
    Value::Map(Map { map: Arc::new(map) })
}

/// One object bound for evaluation.
pub struct Activation<'p> {
    ctx: cel::Context<'static, 'static>,
    variables: &'p [(String, Program)],
}

impl Activation<'_> {
    pub fn check(&self, program: &Program) -> Verdict {
        verdict(program.execute(&self.ctx))
    }

    /// Evaluates an expression that must give a string (a policy's messageExpression).
    pub fn string(&self, program: &Program) -> Result<String, String> {
        match program.execute(&self.ctx) {
            Ok(Value::String(s)) => Ok(s.to_string()),
            Ok(other) => Err(format!(
                "the expression gave {}, not a string",
                describe(&other)
            )),
            Err(e) => Err(e.to_string()),
        }
    }

    /// The paths in `object` that make `program` false: the verb that is not allowed, the
    /// annotation with the wrong value, the field that is missing.
    pub fn blame(&self, program: &Program, object: &Node) -> Vec<Path> {
        let variables: HashMap<&str, &cel::IdedExpr> = self
            .variables
            .iter()
            .map(|(name, p)| (name.as_str(), p.inner.expression()))
            .collect();
        blame::blame(program.inner.expression(), &self.ctx, object, &variables)
    }
}

/// A node as the API server would hand it to CEL: JSON numbers that are integers stay `int`
/// (through serde they would become `uint` and `x + 1` would fail), maps have string keys.
pub fn to_value(node: &Node) -> Value {
    match &node.value {
        YValue::Null => Value::Null,
        YValue::Bool(b) => Value::Bool(*b),
        YValue::Int(i) => Value::Int(*i),
        YValue::Float(f) => Value::Float(*f),
        YValue::Str(s) => Value::String(Arc::new(s.to_string())),
        YValue::Seq(items) => Value::List(Arc::new(items.iter().map(to_value).collect())),
        // A field whose value is null is absent to the cluster: the API server decodes it into
        // a typed object as unset (and prunes it from a custom resource whose schema does not
        // declare it nullable), so admission and the controllers never see it. Helm renders an
        // unset value so (`hostNetwork:` with nothing after it).
        YValue::Map(entries) => map_value(
            entries
                .iter()
                .filter(|e| !e.value.is_null())
                .map(|e| (Key::from(e.key.as_ref()), to_value(&e.value)))
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests;
