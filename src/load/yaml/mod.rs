//! YAML as Kubernetes reads it: go-yaml v2 scalars, merge keys, aliases, keys turned into JSON
//! strings, with a byte span on every key and value, comments kept, duplicate keys reported, and
//! bounded alias expansion and nesting so that a hostile file cannot exhaust memory or stack.

mod build;
pub mod de;
pub mod node;
mod resolve;
mod split;

pub use node::{Entry, Node, Span, Style, Value};

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
}

/// The byte ranges of the documents in `text`, cut at `---` lines. Each range can be parsed on
/// its own with [`parse_range`].
pub fn document_ranges(text: &str) -> Vec<std::ops::Range<usize>> {
    split::document_ranges(text)
}

/// Parses one range from [`document_ranges`]. Spans are offsets into `text`.
pub fn parse_range(text: &str, range: std::ops::Range<usize>) -> Vec<Parsed<'_>> {
    let mut out = Vec::new();
    build::parse_chunk(text, range, &mut out);
    out
}

/// Parses every document of `text`, in order.
pub fn parse(text: &str) -> Vec<Parsed<'_>> {
    let mut out = Vec::new();
    for range in split::document_ranges(text) {
        build::parse_chunk(text, range, &mut out);
    }
    out
}

#[cfg(test)]
mod tests;
