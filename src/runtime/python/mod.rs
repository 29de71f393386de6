//! Static checks of the credentials Job's program, `create.py` (spec bundle.md section 7).
//!
//! The Job runs `python3 /credentials/create.py /credentials/plan.json` on a pinned Python image
//! (ADR-072 point 6) with the standard library only, and its Role forbids update, list and watch
//! (ADR-072 point 5). This module reads the script's text, never runs it, and reports three rules.
//! It is the only module that names tree-sitter; callers see [`check_script`] and
//! [`ScriptFinding`] only.
//!
//! # `runtime-syntax`: the script is not valid Python 3
//! One finding at most: the earliest problem in the text. tree-sitter-python is a lenient
//! grammar (it accepts Python 2 and ignores indentation mistakes), so besides its ERROR and
//! MISSING nodes this module checks what the grammar lets through:
//! - brackets that are never closed or do not match (pointed at the bracket);
//! - indentation: a block with no indented statement, an unexpected indent, an unindent that
//!   matches no outer level, tabs and spaces mixed inconsistently, and an `else`/`elif`/
//!   `except`/`finally` not aligned with its statement;
//! - Python 2 forms: `print x`, `exec code`, `except X, e:`, `raise E, msg`, backquotes,
//!   `<>`, `0777`, `10L`, `ur""`, tuple parameters;
//! - statements out of place (`return` outside a function, `break`/`continue` outside a
//!   loop), a `try` without `except` or `finally`, two statements on one line without `;`,
//!   a newline inside a one-line string, a chained annotated assignment, a positional
//!   argument after a keyword argument, NUL bytes;
//! - syntax newer than Python 3.9, the oldest version a credentials image may carry: `match`
//!   (3.10), `except*` (3.11), `type` aliases and type parameters (3.12), an f-string that
//!   reuses its quote or holds a backslash or comment in a replacement field (3.12),
//!   t-strings (3.14), and `except A, B:` without parentheses (3.14).
//!
//! An ERROR node is narrowed past the statements it wraps that did parse, and the first token
//! the parse state could not take is reported with the tokens it could. Checks that read the
//! tree's shape (indentation, `break` outside a loop) only count before the first place the
//! parser recovered, since past it the shape is a guess. Compared with CPython's `compile()` on
//! 1,400 mutated programs, every invalid one got a finding and no valid one did; the finding
//! was on CPython's line in 86-89% of them, and the rest point elsewhere in the script (an
//! unterminated triple-quoted string, say, pairs with a later quote).
//!
//! Not seen: errors CPython raises at compile time from the symbol table or deeper analysis
//! (duplicate parameter names, `nonlocal` of an unknown name, `await` outside `async def`,
//! assignment to `__debug__`, ...), and invalid escape sequences (only warnings anyway).
//!
//! # `runtime-non-stdlib-import`: the script imports outside the standard library
//! `import a.b`, `from a.b import c`, `__import__("a")` and `importlib.import_module("a")`
//! (also a bare `import_module("a")`) with a literal name: the top-level module must be in the
//! standard library of every Python from 3.9 to 3.14 (`data/python-stdlib/`, embedded). The
//! message names the versions that lack it. A relative import (`from . import x`,
//! `import_module(".x")`) is a finding too: the script runs alone, outside any package.
//!
//! Optional imports are not findings: an import that runs inside the body of a `try:` (at any
//! depth, but not inside a function defined there, which runs later) whose handlers include a
//! bare `except:` or one naming `ImportError` or `ModuleNotFoundError` (alone, in a tuple, or
//! dotted such as `builtins.ImportError`). A handler for `Exception` does not count: it mixes
//! the import failure with every other error, and the intent is no longer visible.
//!
//! Not seen: names built at run time (`__import__(name)`), `exec`, and a module the image
//! happens to carry on `sys.path` (the rule is about the standard library only).
//!
//! # `runtime-forbidden-method`: a request the credentials Role forbids
//! - update: any string literal that is exactly `PUT` in any case (a `method=` value, the first
//!   argument of `request`/`putrequest`, `get_method = lambda: "PUT"`, ...).
//! - watch: a `watch` query parameter (`?watch=`, `&watch=`, a string starting `watch=`), the
//!   legacy `/watch/` segment of an API path, or a `watch` key in a dict, list of pairs or
//!   `dict(...)` passed to `urlencode`.
//! - list: a `labelSelector=`/`fieldSelector=` query parameter (or such a `urlencode` key), and
//!   a GET on a collection path; a DELETE on a collection (deletecollection) likewise. A request
//!   is seen as a call whose first argument is a method literal and second a path (the
//!   `api("GET", f"/api/v1/namespaces/{ns}/secrets")` helper style, `conn.request(...)`,
//!   `conn.putrequest(...)`), a call with a literal `method=` keyword and a path as first
//!   argument (or `url=`/`path=`), and `urlopen(...)`/`Request(...)` (GET without `data` and
//!   without `method`, POST with `data`). A path is a string, f-string, `+` concatenation,
//!   `"...".format(...)` or `"..." % ...`; every interpolation counts as one unknown path
//!   segment. A variable is followed when it is assigned exactly once in its function (or at
//!   module level) and is not a parameter or loop target. A collection is a Kubernetes path
//!   ending at the plural (`/api/v1/namespaces/<ns>/<plural>`, `/apis/<g>/<v>/<plural>`,
//!   `/api/v1/namespaces`), or a path ending in `/secrets`, `/pods`, `/externalsecrets`,
//!   `/passwords` or `/configmaps`, with an optional `?query`. POST to a collection (create) is
//!   fine.
//!
//! Not seen: a method or path that arrives as a parameter or is built in a loop or by
//! reassignment, a helper whose default method is GET called without a method
//! (`api(path)`), a collection whose plural is itself interpolated (`.../{plural}`), and
//! requests made through objects whose calls do not show the method and the path together.
//!
//! # `runtime-weak-random`: a value generated from a predictable source
//! See the `random` module: the `random` module's draws, `uuid1`/`uuid3`/`uuid5`, a digest of
//! a constant, and a digest or seed made of the time or the process id, where the source
//! shows them.
//!
//! # Cost
//! Results are memoized by the script's text (the same create.py is rendered into thousands of
//! bundles) in a thread-safe cache bounded in entries and bytes. Scripts over 8 MiB are not parsed (a
//! ConfigMap holds at most 1 MiB) and parsing stops after 60 s: either is one `runtime-syntax`
//! finding saying the script was not checked. Every walk over the tree is iterative, so deep
//! nesting cannot exhaust the stack.

mod imports;
mod methods;
mod names;
mod random;
mod stdlib;
mod syntax;
mod text;
mod walk;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, OnceLock};

use crate::common::wordhash::WordState;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use tree_sitter::{Node, ParseOptions, ParseState, Parser, Tree};

/// A problem found in a script. Positions are 0-based: `line` counts script lines
/// (split on '\n'), `byte_col` is a byte offset within that line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptFinding {
    pub rule: &'static str, // "runtime-syntax" | "runtime-non-stdlib-import" | "runtime-forbidden-method" | "runtime-weak-random"
    pub message: String, // one sentence, names the offending thing, e.g. "`requests` is not in the standard library of Python 3.9-3.14"
    pub start_line: usize,
    pub start_byte_col: usize,
    pub end_line: usize,
    pub end_byte_col: usize,
}

pub(crate) const RULE_SYNTAX: &str = "runtime-syntax";
pub(crate) const RULE_IMPORT: &str = "runtime-non-stdlib-import";
pub(crate) const RULE_METHOD: &str = "runtime-forbidden-method";
pub(crate) const RULE_RANDOM: &str = "runtime-weak-random";

/// Larger scripts are not parsed: a ConfigMap holds at most 1 MiB, so anything this big is not
/// a create.py that could run, and parsing it would only cost time.
const MAX_SCRIPT_BYTES: usize = 8 * 1024 * 1024;

/// Parsing stops after this long. tree-sitter was linear on every input tried (about 4 s per
/// MB of random bytes in an unoptimized test build); the budget only guarantees an end on
/// input nobody foresaw.
const PARSE_BUDGET: Duration = Duration::from_secs(60);

/// Distinct scripts kept in the cache. A tree of bundles carries a handful of create.py
/// versions; the bound only protects memory from a tree where every script differs.
const CACHE_ENTRIES: usize = 256;

/// Bytes of script text the cache keeps, at most.
const CACHE_BYTES: usize = 16 * 1024 * 1024;

/// Each script's findings, computed once: a thread asking for a script another thread is
/// analysing waits for that analysis instead of repeating it.
type Entry = Arc<OnceLock<Vec<ScriptFinding>>>;
type Scripts = HashMap<Arc<str>, Entry, WordState>;
static CACHE: LazyLock<Mutex<Scripts>> = LazyLock::new(Default::default);

/// Checks one script. Never panics, whatever the input (binary junk, 50 MB, deep nesting).
pub fn check_script(script: &str) -> Vec<ScriptFinding> {
    match lookup(script) {
        Lookup::Ready(findings) => findings,
        // Waits for the other thread (or, should it have failed, analyses here).
        Lookup::Busy(entry) => publish(&entry, script),
    }
}

enum Lookup {
    Ready(Vec<ScriptFinding>),
    Busy(Entry),
}

fn lookup(script: &str) -> Lookup {
    if script.len() > CACHE_BYTES / 16 {
        return Lookup::Ready(analyse(script));
    }
    let (entry, mine) = {
        let mut cache = lock_cache();
        match cache.get(script) {
            Some(entry) => (Arc::clone(entry), false),
            None => {
                let mut bytes: usize = cache.keys().map(|k| k.len()).sum();
                // Any entries will do: the cache serves repeats of a few scripts, not an LRU
                // workload.
                while cache.len() >= CACHE_ENTRIES || bytes + script.len() > CACHE_BYTES {
                    let Some(old) = cache.keys().next().cloned() else {
                        break;
                    };
                    bytes -= old.len();
                    cache.remove(&old);
                }
                let entry = Entry::default();
                cache.insert(script.into(), Arc::clone(&entry));
                (entry, true)
            }
        }
    };
    if let Some(findings) = entry.get() {
        return Lookup::Ready(findings.clone());
    }
    if mine {
        // Analysed outside the lock, so threads checking different scripts do not wait on
        // each other.
        return Lookup::Ready(publish(&entry, script));
    }
    Lookup::Busy(entry)
}

/// Marks `script` as taken by a thread that has not finished analysing it.
#[cfg(test)]
pub(crate) fn claim(script: &str) {
    lock_cache().insert(script.into(), Entry::default());
}

/// Whether `script`'s analysis is done and kept.
#[cfg(test)]
pub(crate) fn is_known(script: &str) -> bool {
    lock_cache()
        .get(script)
        .is_some_and(|entry| entry.get().is_some())
}

fn lock_cache() -> std::sync::MutexGuard<'static, Scripts> {
    // A panic elsewhere while holding the lock cannot leave the map half-written (insert and
    // remove are single calls), so a poisoned lock is still usable.
    CACHE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Analyses `script` into `entry` (unless another thread did), then frees the syntax trees:
/// after the findings are out, so that a thread waiting for them does not wait for the free
/// (5,000 nodes of the reference program).
fn publish(entry: &Entry, script: &str) -> Vec<ScriptFinding> {
    let mut tree = None;
    let findings = entry
        .get_or_init(|| {
            let (findings, parsed) = analysed(script);
            tree = parsed;
            findings
        })
        .clone();
    drop(tree);
    findings
}

fn analyse(script: &str) -> Vec<ScriptFinding> {
    analysed(script).0
}

/// The findings of `script`, and its syntax tree for the caller to free.
fn analysed(script: &str) -> (Vec<ScriptFinding>, Option<Tree>) {
    if script.len() > MAX_SCRIPT_BYTES {
        let too_large = vec![ScriptFinding {
            rule: RULE_SYNTAX,
            message: format!(
                "the script is {} bytes, more than the {} MiB credlint parses (a ConfigMap holds at most 1 MiB), so it was not checked",
                script.len(),
                MAX_SCRIPT_BYTES / (1024 * 1024)
            ),
            start_line: 0,
            start_byte_col: 0,
            end_line: 0,
            end_byte_col: 0,
        }];
        return (too_large, None);
    }
    let Some(tree) = parse(script) else {
        let out_of_time = vec![ScriptFinding {
            rule: RULE_SYNTAX,
            message: format!(
                "the script could not be parsed within {} s, so it was not checked",
                PARSE_BUDGET.as_secs()
            ),
            start_line: 0,
            start_byte_col: 0,
            end_line: 0,
            end_byte_col: 0,
        }];
        return (out_of_time, None);
    };
    let findings = findings_of(&tree, script);
    (findings, Some(tree))
}

/// The findings of a script parsed as `tree`.
fn findings_of(tree: &Tree, script: &str) -> Vec<ScriptFinding> {
    let mut facts = walk::Facts::default();
    walk::collect(tree, script, &mut facts);
    let mut findings = syntax::check(&facts, script);
    findings.extend(imports::check(&facts, script));
    findings.extend(methods::check(&facts, script));
    findings.extend(random::check(&facts, script));
    drop(facts);
    findings.sort_by(|a, b| {
        (
            a.start_line,
            a.start_byte_col,
            a.end_line,
            a.end_byte_col,
            a.rule,
        )
            .cmp(&(
                b.start_line,
                b.start_byte_col,
                b.end_line,
                b.end_byte_col,
                b.rule,
            ))
            .then_with(|| a.message.cmp(&b.message))
    });
    // One finding per rule and span: a string can be both a watch and a list path, and a
    // selector in a collection path is the same list twice.
    findings.dedup_by(|b, a| {
        a.rule == b.rule
            && (a.start_line, a.start_byte_col, a.end_line, a.end_byte_col)
                == (b.start_line, b.start_byte_col, b.end_line, b.end_byte_col)
    });
    findings
}

/// The tree of `script`; `None` when the grammar cannot be loaded or the parse ran past
/// [`PARSE_BUDGET`].
fn parse(script: &str) -> Option<Tree> {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_python::LANGUAGE.into())
        .ok()?;
    let bytes = script.as_bytes();
    let started = Instant::now();
    let mut give_up = |_: &ParseState| {
        if started.elapsed() > PARSE_BUDGET {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    let options = ParseOptions::new().progress_callback(&mut give_up);
    parser.parse_with_options(
        &mut |offset, _| bytes.get(offset..).unwrap_or_default(),
        None,
        Some(options),
    )
}

/// A finding spanning `node`.
pub(crate) fn finding_at(rule: &'static str, message: String, node: Node<'_>) -> ScriptFinding {
    let (start, end) = (node.start_position(), node.end_position());
    ScriptFinding {
        rule,
        message,
        start_line: start.row,
        start_byte_col: start.column,
        end_line: end.row,
        end_byte_col: end.column,
    }
}
