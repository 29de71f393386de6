//! A long script parsed, and its facts collected, in two parts on two threads. tree-sitter's
//! parse and the walk over its tree are nearly all of a create.py's analysis, and that
//! analysis is the critical path of a one-file run (a pre-commit hook's): the other core is
//! idle by the time the rest of the file is linted.
//!
//! The cut is at the start of a top-level `def` or `class` line near the middle. Python reads
//! such a line the same whatever came before it (indentation back to column 0, no bracket,
//! string or backslash continuation open), so when each part parses without any syntax
//! problem, the two parts' statements are the whole script's. The cut is found from the text
//! alone and may be wrong (a `def` at column 0 inside a docstring, say): then one part does
//! not parse cleanly, and the caller parses the whole script instead, so findings never
//! depend on the cut.

/// Shorter scripts are parsed whole: starting the second thread costs about as much as the
/// half of a small parse it saves.
const MIN_SPLIT_BYTES: usize = 4 * 1024;

/// Where the second part starts: a byte offset just after a line break, or `None` when the
/// script is short or has no top-level definition to cut at.
pub(super) fn cut(script: &str) -> Option<usize> {
    if script.len() < MIN_SPLIT_BYTES {
        return None;
    }
    let middle = script.len() / 2;
    cuts(script).min_by_key(|&at| at.abs_diff(middle))
}

/// Every offset [`cut`] may choose, in order.
pub(super) fn cuts(script: &str) -> impl Iterator<Item = usize> + '_ {
    let mut previous: Option<&str> = None;
    let mut decorated = false;
    let mut offset = 0;
    script.split_inclusive('\n').filter_map(move |line| {
        let at = offset;
        offset += line.len();
        let continued = previous.is_some_and(|p| p.trim_end_matches(['\n', '\r']).ends_with('\\'));
        let ok = at > 0
            && !continued
            && !decorated
            && ["def ", "class ", "async def "]
                .iter()
                .any(|start| line.starts_with(start));
        // A decorator belongs to the definition after it, across blank and comment lines.
        let significant = line.trim_start();
        if !significant.is_empty() && !significant.starts_with('#') {
            decorated = line.starts_with('@');
        }
        previous = Some(line);
        ok.then_some(at)
    })
}

/// Runs `first` here and `second` on a thread of its own, at the same time; both here when no
/// thread can be had, or when the other thread failed (`second` is then run again here).
pub(super) fn both<A, B: Send>(first: impl FnOnce() -> A, second: impl Fn() -> B + Sync) -> (A, B) {
    std::thread::scope(|scope| {
        let other = std::thread::Builder::new()
            .name("credlint-part".into())
            .spawn_scoped(scope, &second);
        let a = first();
        let b = match other.map(|thread| thread.join()) {
            Ok(Ok(b)) => b,
            _ => second(),
        };
        (a, b)
    })
}
