//! Small helpers over node text: slices, string literals and string templates.

use tree_sitter::Node;

use super::names::{child, kind};

/// The source text of `node`; empty if the range is not a valid slice (never expected, but the
/// tree must not be trusted to panic-free indexing).
pub(super) fn text<'s>(node: Node<'_>, src: &'s str) -> &'s str {
    src.get(node.byte_range()).unwrap_or("")
}

/// The name an identifier or attribute ends with: `urlopen` for `urllib.request.urlopen`.
pub(super) fn last_name<'s>(node: Node<'_>, src: &'s str) -> Option<&'s str> {
    match kind(node) {
        "identifier" => Some(text(node, src)),
        "attribute" => child(node, "attribute").map(|a| text(a, src)),
        _ => None,
    }
}

/// The name a call's function ends with.
pub(super) fn callee_name<'s>(call: Node<'_>, src: &'s str) -> Option<&'s str> {
    last_name(child(call, "function")?, src)
}

/// `s` cut to `max` characters, with an ellipsis when cut, and on one line.
pub(super) fn short(s: &str, max: usize) -> String {
    let one_line = s.lines().next().unwrap_or("");
    let mut out: String = one_line.chars().take(max).collect();
    if one_line.chars().count() > max || one_line.len() < s.trim_end().len() {
        out.push('…');
    }
    out
}

/// Marks an interpolation inside a flattened template. A private-use character, so it cannot be
/// confused with a `/`, `?` or `=` of the path around it.
pub(super) const HOLE: char = '\u{E000}';

/// A string whose parts are either literal text or holes (values known only at run time).
#[derive(Clone, Debug, Default)]
pub(super) struct Template {
    pieces: Vec<Piece>,
}

#[derive(Clone, Debug)]
enum Piece {
    Lit(String),
    Hole(String),
}

impl Template {
    pub(super) fn lit(&mut self, s: &str) {
        if let Some(Piece::Lit(last)) = self.pieces.last_mut() {
            last.push_str(s);
        } else {
            self.pieces.push(Piece::Lit(s.to_string()));
        }
    }

    /// A hole shown as `{shown}`, as an f-string or `str.format` writes it.
    pub(super) fn hole(&mut self, shown: &str) {
        self.pieces
            .push(Piece::Hole(format!("{{{}}}", short(shown, 24))));
    }

    /// A hole shown as written (`%s`).
    pub(super) fn raw_hole(&mut self, shown: &str) {
        self.pieces.push(Piece::Hole(short(shown, 24)));
    }

    pub(super) fn append(&mut self, other: Template) {
        for piece in other.pieces {
            match piece {
                Piece::Lit(s) => self.lit(&s),
                Piece::Hole(s) => self.pieces.push(Piece::Hole(s)),
            }
        }
    }

    /// The text with every hole as [`HOLE`], for matching.
    pub(super) fn flat(&self) -> String {
        let mut out = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Lit(s) => out.push_str(s),
                Piece::Hole(_) => out.push(HOLE),
            }
        }
        out
    }

    /// The text with every hole as written in the source, for messages.
    pub(super) fn shown(&self) -> String {
        let mut out = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Lit(s) => out.push_str(s),
                Piece::Hole(s) => out.push_str(s),
            }
        }
        short(&out, 80)
    }

    /// The literal text when there is no hole.
    pub(super) fn plain(&self) -> Option<String> {
        let mut out = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Lit(s) => out.push_str(s),
                Piece::Hole(_) => return None,
            }
        }
        Some(out)
    }
}

/// The template of a `string` or `concatenated_string` node: literal parts verbatim (escapes
/// are kept as written: paths and method names do not need them), f-string replacement fields
/// as holes. `None` for any other node.
pub(super) fn string_template(node: Node<'_>, src: &str) -> Option<Template> {
    let mut out = Template::default();
    match kind(node) {
        "string" => add_string_parts(node, src, &mut out),
        "concatenated_string" => {
            let mut cursor = node.walk();
            for part in node.named_children(&mut cursor) {
                if kind(part) == "string" {
                    add_string_parts(part, src, &mut out);
                }
            }
        }
        _ => return None,
    }
    Some(out)
}

fn add_string_parts(node: Node<'_>, src: &str, out: &mut Template) {
    let mut cursor = node.walk();
    for part in node.children(&mut cursor) {
        match kind(part) {
            "string_content" => out.lit(text(part, src)),
            "interpolation" => {
                let shown =
                    child(part, "expression").map_or_else(|| text(part, src), |e| text(e, src));
                out.hole(shown);
            }
            _ => {}
        }
    }
}

/// The prefix letters of a string literal (`f`, `rb`, ...), from its `string_start` token.
pub(super) fn string_prefix<'s>(string: Node<'_>, src: &'s str) -> &'s str {
    let start = string
        .child(0)
        .filter(|c| kind(c) == "string_start")
        .map_or("", |c| text(c, src));
    let quote_at = start.find(['"', '\'', '`']).unwrap_or(start.len());
    start.get(..quote_at).unwrap_or("")
}

/// The quote of a string literal (`"`, `'''`, ...), from its `string_start` token.
pub(super) fn string_quote<'s>(string: Node<'_>, src: &'s str) -> &'s str {
    let start = string
        .child(0)
        .filter(|c| kind(c) == "string_start")
        .map_or("", |c| text(c, src));
    let quote_at = start.find(['"', '\'', '`']).unwrap_or(start.len());
    start.get(quote_at..).unwrap_or("")
}

/// True when `query` (a flattened URL or query string) carries parameter `name`: `name=`
/// right after `?`, `&` or `;`, or at the very start of the string.
pub(super) fn has_query_param(flat: &str, name: &str) -> bool {
    let needle = format!("{name}=");
    flat.match_indices(&needle)
        .any(|(at, _)| at == 0 || matches!(flat[..at].chars().next_back(), Some('?' | '&' | ';')))
}
