//! YAML as Kubernetes reads it: go-yaml v2 scalars, merge keys, aliases, keys turned into JSON
//! strings, with a byte span on every key and value, comments kept, duplicate keys reported, and
//! bounded alias expansion and nesting so that a hostile file cannot exhaust memory or stack.

mod build;
pub mod de;
mod fast;
pub mod node;
mod resolve;
mod split;
mod yaml11;

pub use node::{Entry, Node, Span, Style, Value};
/// A line break as go-yaml v2 reads it (LF, CR LF, CR, U+0085, U+2028, U+2029) and what it adds
/// to a value.
pub use yaml11::line_break;

/// Nesting deeper than this is refused (go-yaml has its own limit; no manifest comes close).
pub const MAX_NESTING: usize = 200;
/// Nodes that aliases may add to one document by expansion.
pub const MAX_ALIAS_NODES: usize = 100_000;
/// Bytes of text (keys and string values) that aliases may add to one document by expansion:
/// every later step copies strings, so one long string aliased 100,000 times is a bomb too.
pub const MAX_ALIAS_BYTES: usize = 16 << 20;

/// One YAML document of a file.
#[derive(Debug)]
pub struct Document<'a> {
    /// Where the document stands in the file.
    pub span: Span,
    pub root: Node<'a>,
    /// Every comment, `#` included.
    pub comments: Vec<Span>,
    pub duplicate_keys: Vec<DuplicateKey>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct DuplicateKey {
    pub key: String,
    pub first: Span,
    pub second: Span,
}

/// A document that cannot be read, located.
#[derive(Clone, Debug, PartialEq)]
pub struct SyntaxError {
    pub span: Span,
    pub message: String,
}

#[derive(Debug)]
pub enum Parsed<'a> {
    Document(Document<'a>),
    Error(SyntaxError),
    /// A document kubectl, Helm and Argo CD never read, though they accept the file: go-yaml
    /// reads one document from each part between `---` lines, and this one is not the first
    /// of its part (it follows `...`, or a lone CR ends the lines before it). Its span is its
    /// first line.
    Unread(SyntaxError),
}

impl Parsed<'_> {
    /// The same, owning its text: for documents read from a rewritten copy of the file.
    fn into_owned(self) -> Parsed<'static> {
        match self {
            Parsed::Document(d) => Parsed::Document(Document {
                span: d.span,
                root: d.root.into_owned(),
                comments: d.comments,
                duplicate_keys: d.duplicate_keys,
            }),
            Parsed::Error(e) => Parsed::Error(e),
            Parsed::Unread(e) => Parsed::Unread(e),
        }
    }
}

/// The byte ranges of the documents in `text`, cut at `---` lines. Each range can be parsed on
/// its own with [`parse_range`].
pub fn document_ranges(text: &str) -> Vec<std::ops::Range<usize>> {
    split::document_ranges(text)
}

/// [`document_ranges`] from the lines starting with `---` that a line index found
/// ([`crate::load::source::LineIndex::dashed`]), without searching the text again.
pub fn document_ranges_at(
    text: &str,
    dashed: impl IntoIterator<Item = usize>,
) -> Vec<std::ops::Range<usize>> {
    split::document_ranges_at(text, dashed)
}

/// Parses one range from [`document_ranges`]. Spans are offsets into `text`.
pub fn parse_range(text: &str, range: std::ops::Range<usize>) -> Vec<Parsed<'_>> {
    let mut out = Vec::new();
    read_part(text, range, &mut out);
    out
}

/// Parses every document of `text`, in order.
pub fn parse(text: &str) -> Vec<Parsed<'_>> {
    let mut out = Vec::new();
    for range in split::document_ranges(text) {
        read_part(text, range, &mut out);
    }
    out
}

/// One part of a file, as apimachinery hands it to go-yaml's `Unmarshal`: the marker line
/// that cut it is not in it, a line that starts with `---` and holds more than a comment after
/// the marker is refused, so is a part that opens with `...`, and only the first document of
/// the part is read.
fn read_part<'a>(text: &'a str, range: std::ops::Range<usize>, out: &mut Vec<Parsed<'a>>) {
    read_part_with(text, range, out, true)
}

/// Every document of `text` read by granit-parser alone, the fast reader never tried: what
/// the tests and the loader's fuzz target compare the fast reader's results with.
#[cfg(any(test, feature = "testkit"))]
pub fn parse_without_fast_reader(text: &str) -> Vec<Parsed<'_>> {
    let mut out = Vec::new();
    for range in split::document_ranges(text) {
        read_part_with(text, range, &mut out, false);
    }
    out
}

fn read_part_with<'a>(
    text: &'a str,
    mut range: std::ops::Range<usize>,
    out: &mut Vec<Parsed<'a>>,
    fast: bool,
) {
    let mut refused = None;
    if let Some(from) = split::marker_that_cut(text, &range) {
        refused = split::bad_marker(text, range.start);
        range.start = from;
    }
    // A marker line right after the one that cut (or first in the file) stays in the part.
    if refused.is_none() && text[range.clone()].starts_with("---") {
        refused = split::bad_marker(text, range.start);
    }
    match refused {
        // The rest of the part is still read, so that its objects are linted.
        Some(error) => out.push(Parsed::Error(error)),
        None => {
            if let Some(error) = split::leading_end_marker(text, &range) {
                out.push(Parsed::Error(error));
                return;
            }
        }
    }
    let from = out.len();
    build::parse_chunk(text, range, out, fast);
    let tail = out.split_off(from);
    unread_after_first(text, tail, out);
}

/// Moves the documents of a part to `out`, every one after the first as [`Parsed::Unread`]
/// (empty ones left out): go-yaml stops reading after the first.
fn unread_after_first<'a>(text: &str, part: Vec<Parsed<'a>>, out: &mut Vec<Parsed<'a>>) {
    let mut read = false;
    for parsed in part {
        if !read {
            read = matches!(parsed, Parsed::Document(_) | Parsed::Error(_));
            out.push(parsed);
            continue;
        }
        let span = match &parsed {
            Parsed::Document(d) if d.root.is_null() => continue,
            Parsed::Document(d) => d.root.span,
            Parsed::Error(e) | Parsed::Unread(e) => e.span,
        };
        let line_end = text[span.start()..]
            .find(['\n', '\r'])
            .map_or(text.len(), |i| span.start() + i);
        let before = &text[..span.start()];
        let lone_cr = before
            .rfind(['\n', '\r'])
            .is_some_and(|i| text.as_bytes()[i] == b'\r');
        // Within a part of a UTF-8 file every `---` line is a cut, so a marker line before
        // the document means a file whose line breaks apimachinery does not see.
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let previous_start = before[..line_start.saturating_sub(1)]
            .rfind('\n')
            .map_or(0, |i| i + 1);
        let marker =
            text[line_start..].starts_with("---") || before[previous_start..].starts_with("---");
        // go-yaml v2 breaks lines at NEL, LS and PS too; apimachinery cuts at LF only.
        let yaml11_break =
            text[previous_start..span.start()].contains(['\u{85}', '\u{2028}', '\u{2029}']);
        let why = if yaml11_break {
            "a `---` follows a U+0085, U+2028 or U+2029 line break, which go-yaml counts and \
             kubectl does not cut at"
        } else if lone_cr {
            "the lines before it end in a lone CR, which kubectl does not cut at"
        } else if marker {
            "in a UTF-16 file kubectl sees no `---` line"
        } else {
            "it follows `...` with no `---` line"
        };
        out.push(Parsed::Unread(SyntaxError {
            span: Span::new(span.start(), line_end.max(span.start())),
            message: format!(
                "kubectl, Helm and Argo CD never read this document: they cut a file at `---` \
                 lines and read one document from each part, and {why}"
            ),
        }));
    }
}

#[cfg(test)]
mod tests;
