//! The static runtime rules (`runtime-syntax`, `runtime-non-stdlib-import`,
//! `runtime-forbidden-method`) on create.py, placed on the program's own line in the YAML file:
//! the literal block's offset plus the line in the script.

use crate::block::LiteralBlock;
use crate::source::Source;
use crate::yaml::{Node, Span};

pub struct RuntimeFinding {
    pub rule: &'static str,
    pub span: Span,
    pub message: String,
}

pub fn check(script_node: &Node, source: &Source) -> Vec<RuntimeFinding> {
    let Some(script) = script_node.as_str() else {
        return Vec::new();
    };
    let block = LiteralBlock::of(source, script_node);
    crate::python::check_script(script)
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
                .unwrap_or(script_node.span);
            RuntimeFinding {
                rule: f.rule,
                span,
                message: f.message,
            }
        })
        .collect()
}
