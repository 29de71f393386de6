//! `matches()` with compiled patterns kept: the CEL crate compiles the pattern on every call,
//! and the same few patterns run against every object of a large render.

use cel::ExecutionError;
use cel::common::types::{CelBool, CelString};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Patterns compiled so far; rule patterns are few, so the cache is small.
fn compiled(pattern: &str) -> Result<Arc<regex::Regex>, ExecutionError> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<regex::Regex>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(re) = cache.lock().unwrap_or_else(|p| p.into_inner()).get(pattern) {
        return Ok(re.clone());
    }
    // RE2 syntax, which Kubernetes uses, is what the regex crate implements.
    let re = regex::Regex::new(pattern).map_err(|err| ExecutionError::FunctionError {
        function: "matches".to_string(),
        message: format!("'{pattern}' is not a valid regex: {err}"),
    })?;
    let re = Arc::new(re);
    let mut guard = cache.lock().unwrap_or_else(|p| p.into_inner());
    if guard.len() < 1024 {
        guard.insert(pattern.to_string(), re.clone());
    }
    Ok(re)
}

/// What `text.matches(pattern)` gives, for the projection key; `None` where the pattern does
/// not compile (every string then fails the same way).
pub fn is_match(pattern: &str, text: &str) -> Option<bool> {
    compiled(pattern).ok().map(|re| re.is_match(text))
}

fn matches(this: &CelString<'_>, pattern: &CelString<'_>) -> Result<CelBool, ExecutionError> {
    Ok(CelBool::from(
        compiled(pattern.inner())?.is_match(this.inner()),
    ))
}

pub fn register(env: &mut cel::Env) {
    cel::add_overload!(env, fn matches: (CelString, CelString) -> Result<CelBool>, id = "matches")
        .expect("matches is declared once: the crate's regex feature is off");
    cel::add_member_overload!(env, fn matches: (CelString, CelString) -> Result<CelBool>)
        .expect("matches is declared once: the crate's regex feature is off");
}
