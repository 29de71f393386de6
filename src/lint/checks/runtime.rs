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

/// A create.py to analyse, with where its lines stand in the file.
pub struct Program {
    script: String,
    block: Option<LiteralBlock>,
    span: Span,
}

impl Program {
    /// The program held by `script_node`, if it is text.
    pub fn of(script_node: &Node, source: &Source) -> Option<Program> {
        let script = script_node.as_str()?;
        Some(Program {
            script: script.to_string(),
            block: LiteralBlock::of(source, script_node),
            span: script_node.span,
        })
    }

    /// The program's findings, placed in the file.
    pub fn check(self, source: &Source) -> Vec<RuntimeFinding> {
        let found = crate::runtime::python::check_script(&self.script);
        locate(found, self.block, self.span, source)
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

/// The create.py programs of a file's ConfigMaps, read ahead of linting (only the documents
/// that can hold one are parsed), so that another thread can analyse them meanwhile.
pub fn scripts(bytes: &[u8]) -> Vec<String> {
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
