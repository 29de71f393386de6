//! Where a position inside a literal block scalar (`|`) stands in the file: decoded line `k` of
//! the block is file line `first + k`, shifted by the block's indentation. Findings about
//! plan.json and create.py point at their own lines this way, not at the ConfigMap.
//!
//! A line of the file is what LF ends, as editors, grep and git count. go-yaml v2 also breaks
//! lines at U+0085 (read as LF, so the program has a line there that the file has not) and at
//! U+2028 and U+2029 (kept in the value, the indentation after them dropped): a block that holds
//! one is mapped by walking go-yaml's lines instead.

use crate::load::source::Source;
use crate::load::yaml::{Node, Style, Value};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LiteralBlock {
    /// 0-based file line of the block's first decoded line.
    pub first_line: usize,
    /// Bytes of indentation before each content line.
    pub indent: usize,
    /// Set for a block that holds a U+0085, U+2028 or U+2029 line break.
    irregular: Option<Irregular>,
}

/// Where go-yaml's lines of a block begin, for the walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Irregular {
    /// The file offset where the first content line begins (its indentation included).
    content_start: usize,
    /// The end of the block's span.
    end: usize,
    /// The decoded line and byte column where the first content line begins (after the
    /// leading empty lines).
    lead: (usize, usize),
    /// The file line holding the `|` indicator.
    header: usize,
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
        let mut block = LiteralBlock {
            first_line,
            indent,
            irregular: None,
        };
        let bytes = source.text.as_bytes();
        // The indentation of the first content line, back to go-yaml's line break before it.
        let content_start = node.span.start()
            - bytes[..node.span.start()]
                .iter()
                .rev()
                .take_while(|&&b| b == b' ')
                .count();
        // The header's last character: only blank lines stand between it and the content.
        let header_end = bytes[..content_start]
            .iter()
            .rposition(|&b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
            .map_or(0, |i| i + 1);
        let odd = |i: usize| {
            matches!(
                bytes.get(i..i + 3),
                Some([0xC2, 0x85, _] | [0xE2, 0x80, 0xA8 | 0xA9])
            ) || bytes.get(i..) == Some(&[0xC2, 0x85][..])
        };
        let region = header_end.saturating_sub(2)..node.span.end().min(bytes.len());
        if memchr::memchr2_iter(0xC2, 0xE2, &bytes[region.clone()]).any(|i| odd(region.start + i)) {
            // The decoded text before the first content line: its empty lines.
            let lead = &text[..text.len()
                - text
                    .trim_start_matches(['\n', '\u{2028}', '\u{2029}'])
                    .len()];
            let header = source.lines.line_of(
                bytes[..header_end]
                    .iter()
                    .rposition(|&b| !matches!(b, 0x80..=0xBF))
                    .unwrap_or(0),
            );
            block.irregular = Some(Irregular {
                content_start,
                end: node.span.end(),
                lead: (
                    lead.matches('\n').count(),
                    lead.len() - lead.rfind('\n').map_or(0, |i| i + 1),
                ),
                header,
            });
            block.indent = node.span.start() - content_start;
        }
        Some(block)
    }

    /// The 0-based file line holding the `|` indicator (and the pragma).
    pub fn header_line(&self) -> Option<usize> {
        match self.irregular {
            Some(irregular) => Some(irregular.header),
            None => self.first_line.checked_sub(1),
        }
    }

    /// The file offset of byte `byte_col` of decoded line `line`.
    pub fn offset(&self, source: &Source, line: usize, byte_col: usize) -> Option<usize> {
        if let Some(irregular) = self.irregular {
            return self.walk(source, irregular, line, byte_col);
        }
        let span = source.line_span(self.first_line + line)?;
        Some((span.start() + self.indent + byte_col).min(span.end()))
    }

    /// [`Self::offset`] through go-yaml's lines: a decoded line (what LF ends in the value)
    /// is one or more of them, joined by U+2028 or U+2029.
    fn walk(&self, source: &Source, at: Irregular, line: usize, byte_col: usize) -> Option<usize> {
        let bytes = &source.text.as_bytes()[..at.end.min(source.text.len())];
        let (mut decoded_line, mut decoded_col) = at.lead;
        let mut i = at.content_start;
        while i <= bytes.len() {
            let mut from = i;
            while from - i < self.indent && bytes.get(from) == Some(&b' ') {
                from += 1;
            }
            let to = (from..bytes.len())
                .find(|&j| crate::load::yaml::line_break(bytes, j).is_some())
                .unwrap_or(bytes.len());
            if decoded_line > line {
                return Some(from);
            }
            if decoded_line == line && byte_col <= decoded_col + (to - from) {
                return Some(from + byte_col.saturating_sub(decoded_col));
            }
            let (n, kept) = crate::load::yaml::line_break(bytes, to)?;
            if kept == "\n" {
                if decoded_line == line {
                    return Some(to);
                }
                decoded_line += 1;
                decoded_col = 0;
            } else {
                decoded_col += to - from + kept.len();
            }
            i = to + n;
        }
        None
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
    fn a_block_with_yaml_1_1_line_breaks_maps_through_them() {
        let text = "data:\n  create.py: |\n    # c\u{85}    import requests\n    a = 1\u{2028}    \
                    b = 2\n    c\n";
        let Parsed::Document(d) = &parse(text)[0] else {
            panic!()
        };
        let node = d.root.at(&["data", "create.py"]).unwrap();
        assert_eq!(
            node.as_str(),
            Some("# c\nimport requests\na = 1\u{2028}b = 2\nc\n")
        );
        let source = Source::new(0, text);
        let block = LiteralBlock::of(&source, node).unwrap();
        assert_eq!(block.header_line(), Some(1));
        let at = |line, col| {
            let at = block.offset(&source, line, col).unwrap();
            &text[at..]
        };
        assert!(at(0, 0).starts_with("# c"));
        assert!(at(1, 0).starts_with("import requests"));
        assert!(at(1, 7).starts_with("requests"));
        assert!(at(2, 0).starts_with("a = 1"));
        assert!(at(2, 8).starts_with("b = 2"));
        assert!(at(3, 0).starts_with("c\n"));
        // `import` is on file line 2, though it is the program's second line.
        let import = block.offset(&source, 1, 0).unwrap();
        assert_eq!(
            source
                .loc(crate::load::yaml::Span::new(import, import))
                .line,
            3
        );
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
