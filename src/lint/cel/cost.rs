//! A cost budget for expressions from untrusted files (`check --policy`), as the Kubernetes API
//! server gives every CEL expression of an admission policy one: past 1,000,000 units the
//! evaluation stops with an error, which a policy's failurePolicy then turns into a denial or
//! not. credlint cannot run cel-go's cost model, so it counts where cost can grow without
//! bound: in comprehensions (the macros `all`, `exists`, `map`, `filter`...), each iteration
//! costs 2 (its condition and its step) plus a tenth of the size of the string, bytes, list or
//! map the step gives; and a `replace`, which could square its input's size in one call, costs
//! a tenth of what it builds and is refused before it builds past the budget. Outside these the
//! work is bounded by the expression's length, which is bounded itself.
//!
//! The metered copy of an expression has each comprehension's condition and step wrapped in
//! [`METER`] (one level each: wrapping every call would double the depth the evaluation
//! recurses to); the original stays what usage checks and blame read.

use cel::ExecutionError;
use cel::common::ast::{CallExpr, Expr};
use cel::common::value::CowVal;
use std::cell::Cell;

/// The API server's per-expression limit (`PerCallLimit` of k8s.io/apiserver).
pub const LIMIT: u64 = 1_000_000;

/// The function that wraps each comprehension's condition and step in a metered expression.
const METER: &str = "@credlint_cost";
/// What `replace` is renamed to in a metered expression.
const REPLACE: &str = "@credlint_replace";

thread_local! {
    /// Units spent by the evaluation running on this thread (`None`: not metered).
    static SPENT: Cell<Option<u64>> = const { Cell::new(None) };
}

fn exceeded() -> ExecutionError {
    ExecutionError::FunctionError {
        function: "cost".to_string(),
        message: format!(
            "the expression exceeded its cost budget of {LIMIT} units (the API server's \
             per-expression limit) and was stopped"
        ),
    }
}

/// Adds `units`; `Err` once the budget is spent.
fn spend(units: u64) -> Result<(), ExecutionError> {
    SPENT.with(|spent| match spent.get() {
        Some(n) => {
            let n = n.saturating_add(units);
            spent.set(Some(n));
            if n > LIMIT { Err(exceeded()) } else { Ok(()) }
        }
        None => Ok(()),
    })
}

fn size_of(value: &CowVal<'_, '_>) -> u64 {
    value
        .as_sizer()
        .map_or(0, |s| u64::try_from(*s.size().inner()).unwrap_or(0))
}

fn meter<'b, 'v>(mut args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let value = args.remove(0);
    spend(1 + size_of(&value) / 10)?;
    Ok(value)
}

/// `text.replace(old, new[, n])` of the strings extension, refused when the result would cost
/// more than what is left of the budget.
fn replace<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let value = |i: usize| -> Option<cel::Value> {
        args.get(i).and_then(|v| cel::Value::try_from(&**v).ok())
    };
    let text = |i: usize| -> Result<String, ExecutionError> {
        match value(i) {
            Some(cel::Value::String(s)) => Ok(s.as_str().to_string()),
            _ => Err(ExecutionError::function_error(
                "replace",
                "replace takes strings",
            )),
        }
    };
    let (this, old, new) = (text(0)?, text(1)?, text(2)?);
    let n = match (args.len(), value(3)) {
        (3, _) => -1,
        (_, Some(cel::Value::Int(n))) => n,
        _ => {
            return Err(ExecutionError::function_error(
                "replace",
                "the count is an int",
            ));
        }
    };
    let matches = if old.is_empty() {
        this.chars().count() as u64 + 1
    } else {
        this.matches(old.as_str()).count() as u64
    };
    let replaced = if n < 0 {
        matches
    } else {
        matches.min(n as u64)
    };
    let grown = (this.len() as u64).saturating_add(replaced.saturating_mul(new.len() as u64));
    spend(grown / 10)?;
    let out = if n < 0 {
        this.replace(old.as_str(), &new)
    } else {
        this.replacen(old.as_str(), &new, n as usize)
    };
    Ok(CowVal::owned(cel::common::types::CelString::from(out)))
}

pub fn register(env: &mut cel::Env) {
    use cel::common::types::DYN_TYPE;
    env.add_overload(METER, "credlint_cost", vec![DYN_TYPE], meter)
        .expect("the meter is declared once");
    env.add_overload(
        REPLACE,
        "credlint_replace3",
        vec![DYN_TYPE, DYN_TYPE, DYN_TYPE],
        replace,
    )
    .expect("the metered replace is declared once");
    let four = vec![DYN_TYPE, DYN_TYPE, DYN_TYPE, DYN_TYPE];
    env.add_overload(REPLACE, "credlint_replace4", four, replace)
        .expect("the metered replace is declared once");
}

/// The metered copy of `expr`: comprehensions metered, `replace` bounded.
pub fn metered(expr: &cel::IdedExpr) -> cel::IdedExpr {
    let mut copy = expr.clone();
    wrap(&mut copy);
    copy
}

fn wrap(e: &mut cel::IdedExpr) {
    match &mut e.expr {
        Expr::Call(call) => {
            if let Some(target) = call.target.as_mut() {
                wrap(target);
            }
            call.args.iter_mut().for_each(wrap);
            if call.func_name == "replace" && call.target.is_some() {
                // A method call becomes a plain one, the text first.
                let target = call.target.take().map(|t| *t);
                call.args.splice(0..0, target);
                call.func_name = REPLACE.to_string();
            }
        }
        Expr::Comprehension(c) => {
            wrap(&mut c.iter_range);
            wrap(&mut c.accu_init);
            wrap(&mut c.loop_cond);
            wrap(&mut c.loop_step);
            wrap(&mut c.result);
            // The condition is evaluated before every step and its error ends the loop, so a
            // spent budget stops the loop at once.
            meter_node(&mut c.loop_cond);
            meter_node(&mut c.loop_step);
        }
        Expr::List(list) => list.elements.iter_mut().for_each(wrap),
        Expr::Map(map) => {
            for entry in &mut map.entries {
                if let cel::common::ast::EntryExpr::MapEntry(m) = &mut entry.expr {
                    wrap(&mut m.key);
                    wrap(&mut m.value);
                }
            }
        }
        Expr::Select(select) => wrap(&mut select.operand),
        _ => {}
    }
}

fn meter_node(e: &mut cel::IdedExpr) {
    let inner = std::mem::take(&mut e.expr);
    e.expr = Expr::Call(CallExpr {
        func_name: METER.to_string(),
        target: None,
        args: vec![cel::IdedExpr {
            id: e.id,
            expr: inner,
        }],
    });
}

/// Runs `evaluate` under a fresh budget; a spent budget is an error whatever the expression
/// made of the meter's errors (`||` and `&&` absorb errors).
pub fn run<T>(evaluate: impl FnOnce() -> Result<T, ExecutionError>) -> Result<T, ExecutionError> {
    let outer = SPENT.with(|s| s.replace(Some(0)));
    let result = evaluate();
    let spent = SPENT.with(|s| s.replace(outer)).unwrap_or(0);
    if spent > LIMIT {
        Err(exceeded())
    } else {
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(text: &str) -> Result<cel::Value, ExecutionError> {
        let mut env = cel::Env::stdlib();
        env.add_extension(cel::extensions::strings).unwrap();
        register(&mut env);
        let parsed = cel::parser::PrattParser::new().parse(text).unwrap();
        let ctx = cel::Context::with_env(std::sync::Arc::new(env));
        let program = metered(&parsed);
        run(|| ctx.resolve(&program))
    }

    #[test]
    fn cheap_expressions_keep_their_values() {
        assert_eq!(
            eval("[1, 2, 3].map(x, x * 2)[2] == 6"),
            Ok(cel::Value::Bool(true))
        );
        assert_eq!(
            eval("'a-b-c'.replace('-', '+') == 'a+b+c' && 'aaa'.replace('a', 'b', 2) == 'bba'"),
            Ok(cel::Value::Bool(true))
        );
        assert_eq!(
            eval("'ab'.replace('', '.') == '.a.b.'"),
            Ok(cel::Value::Bool(true))
        );
    }

    #[test]
    fn growth_is_stopped_at_the_budget() {
        // Two maps nested over 10,000 items would build 100 million strings.
        let items = (0..10_000)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        let nested = format!("[{items}].map(a, [{items}].map(b, 'x')).size() > 0");
        let err = eval(&nested).unwrap_err();
        assert!(err.to_string().contains("cost budget"), "{err}");
        let squared = "'x'.replace('', 'xxxxxxxxxx').replace('', 'xxxxxxxxxxxxxxxxxxxx')\
                       .replace('', 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx')\
                       .replace('', 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx')\
                       .replace('', 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx').size() > 0";
        let err = eval(squared).unwrap_err();
        assert!(err.to_string().contains("cost budget"), "{err}");
        // An error the expression would absorb still stops it.
        let absorbed = format!("{} || true", nested.replace(".size() > 0", ".size() < 0"));
        assert!(eval(&absorbed).is_err());
    }
}
