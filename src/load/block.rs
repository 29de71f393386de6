//! Where a position inside a literal block scalar (`|`) stands in the file: decoded line `k` of
//! the block is file line `first + k`, shifted by the block's indentation. Findings about
//! plan.json and create.py point at their own lines this way, not at the ConfigMap.

use crate::load::source::Source;
use crate::load::yaml::{Node, Style, Value};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LiteralBlock {
    /// 0-based file line of the block's first decoded line.
    pub first_line: usize,
    /// Bytes of indentation before each content line.
    pub indent: usize,
}

impl LiteralBlock {
    /// The mapping for a literal block scalar with content; `None` for anything else.
    pub fn of(source: &Source, node: &Node) -> Option<LiteralBlock> {
        let (Value::Str(text), Style::Literal) = (&node.value, node.style) else {
            return None;
        };
        if text.trim().is_empty() {
            return None;
        }
        // The span starts at the first character of the first non-blank line; blank lines
        // before it are decoded as leading line breaks.
        let leading_blank = text.bytes().take_while(|&b| b == b'\n').count();
        let content_line = source.lines.line_of(node.span.start());
        let first_line = content_line.checked_sub(leading_blank)?;
        let indent = node.span.start() - source.lines.line_start(content_line)?;
        Some(LiteralBlock { first_line, indent })
    }

    /// The 0-based file line holding the `|` indicator (and the pragma).
    pub fn header_line(&self) -> Option<usize> {
        self.first_line.checked_sub(1)
    }

    /// The file offset of byte `byte_col` of decoded line `line`.
    pub fn offset(&self, source: &Source, line: usize, byte_col: usize) -> Option<usize> {
        let span = source.line_span(self.first_line + line)?;
        Some((span.start() + self.indent + byte_col).min(span.end()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::yaml::{Parsed, parse};

    #[test]
    fn maps_decoded_lines_to_file_lines() {
        let text = "data:\n  create.py: |  # pragma\n\n    import os\n      x = 1\n  k: v\n";
        let Parsed::Document(d) = &parse(text)[0] else {
            panic!()
        };
        let node = d.root.at(&["data", "create.py"]).unwrap();
        assert_eq!(node.as_str(), Some("\nimport os\n  x = 1\n"));
        let source = Source::new(0, text);
        let block = LiteralBlock::of(&source, node).unwrap();
        assert_eq!(block.header_line(), Some(1));
        let at = block.offset(&source, 2, 2).unwrap();
        assert_eq!(&text[at..at + 5], "x = 1");
        assert_eq!(source.loc(crate::load::yaml::Span::new(at, at)).line, 5);
    }

    #[test]
    fn other_styles_have_no_mapping() {
        let text = "a: >\n  folded\nb: \"x\\ny\"\n";
        let Parsed::Document(d) = &parse(text)[0] else {
            panic!()
        };
        let source = Source::new(0, text);
        assert!(LiteralBlock::of(&source, d.root.get("a").unwrap()).is_none());
        assert!(LiteralBlock::of(&source, d.root.get("b").unwrap()).is_none());
    }
}
