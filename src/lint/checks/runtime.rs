//! The static runtime rules (`runtime-syntax`, `runtime-non-stdlib-import`,
//! `runtime-forbidden-method`) on create.py, placed on the program's own line in the YAML file:
//! the literal block's offset plus the line in the script.

use crate::load::block::LiteralBlock;
use crate::load::source::Source;
use crate::load::yaml::{Node, Span};

pub struct RuntimeFinding {
    pub rule: &'static str,
    pub span: Span,
    pub message: String,
}

/// What `check_or_wait` gives: the findings, or a program being analysed by another thread.
pub enum Checked {
    Now(Vec<RuntimeFinding>),
    Later(Later),
}

/// A program whose analysis another thread has started: its findings are taken up after the
/// rest of the file, so that the wait overlaps with that work instead of coming before it.
pub struct Later {
    script: String,
    block: Option<LiteralBlock>,
    span: Span,
}

impl Later {
    pub fn finish(self, source: &Source) -> Vec<RuntimeFinding> {
        let found = crate::runtime::python::check_script(&self.script);
        locate(found, self.block, self.span, source)
    }
}

/// The findings of the program in `script_node`, or a `Later` where another thread is
/// analysing it right now.
pub fn check_or_wait(script_node: &Node, source: &Source) -> Checked {
    let Some(script) = script_node.as_str() else {
        return Checked::Now(Vec::new());
    };
    let block = LiteralBlock::of(source, script_node);
    match crate::runtime::python::check_script_unless_busy(script) {
        Some(found) => Checked::Now(locate(found, block, script_node.span, source)),
        None => Checked::Later(Later {
            script: script.to_string(),
            block,
            span: script_node.span,
        }),
    }
}

/// Findings of a script, placed in the file: on their own lines in a literal block, else on
/// the script's value.
fn locate(
    found: Vec<crate::runtime::python::ScriptFinding>,
    block: Option<LiteralBlock>,
    whole: Span,
    source: &Source,
) -> Vec<RuntimeFinding> {
    found
        .into_iter()
        .map(|f| {
            let span = block
                .and_then(|b| {
                    let start = b.offset(source, f.start_line, f.start_byte_col)?;
                    let end = b
                        .offset(source, f.end_line, f.end_byte_col)
                        .unwrap_or(start);
                    // A finding that runs over several lines is shown on its first.
                    let end = if f.end_line == f.start_line {
                        end
                    } else {
                        start
                    };
                    Some(Span::new(start, end.max(start)))
                })
                // A quoted or folded program has no line of its own in the file.
                .unwrap_or(whole);
            RuntimeFinding {
                rule: f.rule,
                span,
                message: f.message,
            }
        })
        .collect()
}

/// Whether a file (display name, bytes) has its result in `check`'s cache.
pub type Cached = Box<dyn Fn(&str, &[u8]) -> bool + Send>;

/// What the prewarm knows of the cache when it starts.
pub enum CacheState {
    /// The run has no cache: every program is analysed.
    None,
    /// The cache opens later (its keys depend on the settings, which are read while the
    /// analysis begins): `None` received means no cache after all; a closed channel, that the
    /// run ended before linting (a usage error), so nothing is analysed.
    Later(std::sync::mpsc::Receiver<Option<Cached>>),
}

/// The analysis, for the caller to run on the thread it chooses.
pub type Job = Box<dyn FnOnce() + Send>;

/// Inputs up to this size are read twice so their programs can be checked early.
const PREWARM_BYTES: usize = 1024 * 1024;

/// The static checks of every create.py in `files`, as a job to run beside linting, where the
/// inputs are small (a pre-commit hook's few files): the analysis, the largest cost of such a
/// run, then overlaps reading the settings, compiling the rules and linting the other objects,
/// and linting finds the result cached (or waits for it, never repeating it). Larger inputs are
/// left alone (`None`): there the cache is warm after the first bundle anyway. A file the cache
/// holds (given its display name and bytes) is skipped: linting will not read it.
pub fn prewarm(files: &[crate::load::input::InputFile], cache: CacheState) -> Option<Job> {
    let files = files.to_vec();
    let sizes: Option<usize> = files.iter().map(crate::load::input::size).sum();
    if files.is_empty() || sizes.is_none_or(|total| total > PREWARM_BYTES) {
        return None;
    }
    Some(Box::new(move || {
        let (mut pending, mut held) = match cache {
            CacheState::None => (None, None),
            CacheState::Later(opened) => (Some(opened), None),
        };
        for file in &files {
            let Ok(bytes) = crate::load::input::read(file) else {
                continue;
            };
            let scripts = scripts(&bytes);
            if scripts.is_empty() {
                continue;
            }
            // Asked only once there is a program to analyse, so reading the file overlaps
            // opening the cache.
            if let Some(opened) = pending.take() {
                match opened.recv() {
                    Ok(cached) => held = cached,
                    Err(_) => return,
                }
            }
            if let Some(cached) = &held
                && cached(&file.display, &bytes)
            {
                continue;
            }
            for script in &scripts {
                crate::runtime::python::check_script(script);
            }
        }
    }))
}

/// The create.py programs of a file's ConfigMaps. Only the documents that can hold one are
/// parsed: the others are the main thread's business, and this thread's head start is the point.
fn scripts(bytes: &[u8]) -> Vec<String> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let ranges = crate::load::yaml::document_ranges(text);
    for range in ranges
        .into_iter()
        .filter(|r| text[r.clone()].contains("create.py"))
    {
        for parsed in crate::load::yaml::parse_range(text, range) {
            let crate::load::yaml::Parsed::Document(doc) = parsed else {
                continue;
            };
            let mut objects = Vec::new();
            crate::model::object::objects(&doc.root, &mut objects);
            for object in objects.iter().filter(|o| o.kind == "ConfigMap") {
                if let Some(script) = object
                    .root
                    .at(&["data", "create.py"])
                    .and_then(Node::as_str)
                {
                    found.push(script.to_string());
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::input::{InputFile, Origin};

    /// A bundle whose create.py no other test has: the script cache is shared by the process.
    fn bundle_file(dir: &std::path::Path, tag: &str) -> (InputFile, String) {
        let text = std::fs::read_to_string("fixtures/runtime-non-stdlib-import/bad-requests.yaml")
            .unwrap()
            .replacen("import json", &format!("import json  # {tag}"), 1);
        let path = dir.join(format!("{tag}.yaml"));
        std::fs::write(&path, &text).unwrap();
        let script = crate::load::yaml::parse(&text)
            .into_iter()
            .find_map(|p| match p {
                crate::load::yaml::Parsed::Document(d) => d
                    .root
                    .at(&["data", "create.py"])
                    .and_then(Node::as_str)
                    .map(str::to_string),
                _ => None,
            })
            .unwrap();
        assert!(script.contains(tag));
        let file = InputFile {
            display: path.display().to_string(),
            origin: Origin::File(path),
        };
        (file, script)
    }

    /// Started before the settings are read, the thread analyses at once without a cache, waits
    /// to be told which files the cache holds otherwise, skips those, and analyses nothing when
    /// the run ends before it is told (a usage error).
    #[test]
    fn the_prewarm_analyses_only_what_linting_will_read() {
        let dir = crate::testkit::temp::TempDir::new("credlint-prewarm");
        let known = crate::runtime::python::is_known;

        let (file, script) = bundle_file(&dir, "no-cache");
        std::thread::spawn(prewarm(std::slice::from_ref(&file), CacheState::None).unwrap())
            .join()
            .unwrap();
        assert!(known(&script));

        let (file, script) = bundle_file(&dir, "held");
        let (tell, ask) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(
            prewarm(std::slice::from_ref(&file), CacheState::Later(ask)).unwrap(),
        );
        let shown = file.display.clone();
        tell.send(Some(
            Box::new(move |name: &str, bytes: &[u8]| name == shown && !bytes.is_empty()) as Cached,
        ))
        .unwrap();
        thread.join().unwrap();
        assert!(!known(&script));

        let (file, script) = bundle_file(&dir, "not-held");
        let (tell, ask) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(
            prewarm(std::slice::from_ref(&file), CacheState::Later(ask)).unwrap(),
        );
        tell.send(Some(Box::new(|_: &str, _: &[u8]| false) as Cached))
            .unwrap();
        thread.join().unwrap();
        assert!(known(&script));

        let (file, script) = bundle_file(&dir, "never-told");
        let (tell, ask) = std::sync::mpsc::channel::<Option<Cached>>();
        let thread = std::thread::spawn(
            prewarm(std::slice::from_ref(&file), CacheState::Later(ask)).unwrap(),
        );
        drop(tell);
        thread.join().unwrap();
        assert!(!known(&script));
    }
}
