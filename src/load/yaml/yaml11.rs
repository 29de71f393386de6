//! What go-yaml v2 (YAML 1.1) reads otherwise than the YAML 1.2 parser underneath, and how the
//! loader bridges it: U+0085 (NEL), U+2028 (LS) and U+2029 (PS) break lines; a byte-order mark
//! anywhere but at the start of a part is a character of the text; `\'` is an escape in a
//! double-quoted string.
//!
//! The parser is handed a copy of the chunk rewritten byte for byte at the same length, so that
//! every span stays an offset into the file: NEL becomes CR LF (one line break, which go-yaml
//! reads as LF too), LS and PS become CR CR LF (line breaks with no content; the extra empty
//! line is invisible to the structure), a BOM becomes a private-use character the parser takes
//! as content, and `\'` becomes `\"`. A scalar that holds LS, PS, a BOM or a rewritten escape
//! is then read again from the file's own text, as go-yaml's scanner reads it: LS and PS stay
//! in the value and are never folded into a space, a BOM stays a BOM.
//!
//! Only chunks that hold one of these are copied: the search looks at the bytes 0xC2, 0xE2 and
//! 0xEF alone (with memchr), so that ordinary manifests pay nothing.

use std::ops::Range;

/// Stands for a BOM in the parser's copy: a character the parser reads as content, 3 bytes long.
const BOM_STAND_IN: &str = "\u{e000}";

/// A chunk as the YAML 1.2 parser is to read it.
pub struct Prepared {
    /// The chunk's text, rewritten at the same length.
    pub text: String,
    /// File offsets, sorted, of what a scalar holding them must be read again for: LS, PS, a
    /// BOM, a rewritten `\'`.
    pub changes: Vec<usize>,
}

/// The chunk `text[range]` rewritten for the parser, or `None` when it needs no rewriting.
pub fn prepare(text: &str, range: Range<usize>) -> Option<Prepared> {
    let bytes = &text.as_bytes()[range.clone()];
    let mut edits: Vec<(usize, &'static str, bool)> = Vec::new();
    for i in memchr::memchr3_iter(0xC2, 0xE2, 0xEF, bytes) {
        match &bytes[i..] {
            [0xC2, 0x85, ..] => edits.push((i, "\r\n", false)),
            [0xE2, 0x80, 0xA8 | 0xA9, ..] => edits.push((i, "\r\r\n", true)),
            // go-yaml's reader drops a BOM that opens the part, as the parser does.
            [0xEF, 0xBB, 0xBF, ..] if i > 0 => edits.push((i, BOM_STAND_IN, true)),
            _ => {}
        }
    }
    if edits.is_empty() {
        return None;
    }
    let mut copy = bytes.to_vec();
    let mut changes = Vec::new();
    for (at, with, recook) in edits {
        copy[at..at + with.len()].copy_from_slice(with.as_bytes());
        if recook {
            changes.push(range.start + at);
        }
    }
    Some(Prepared {
        // Whole characters were replaced by whole characters.
        text: String::from_utf8(copy).unwrap_or_default(),
        changes,
    })
}

/// The `\'` escapes of the double-quoted scalar that opens at file offset `quote` (where the
/// parser reported an unknown escape): the offsets of their `'`. Empty when the unknown escape
/// is another one, which go-yaml refuses too.
pub fn quote_escapes(text: &str, quote: usize, end: usize) -> Vec<usize> {
    let bytes = &text.as_bytes()[..end.min(text.len())];
    let mut found = Vec::new();
    if bytes.get(quote) != Some(&b'"') {
        return found;
    }
    let mut i = quote + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => break,
            b'\\' => {
                if bytes.get(i + 1) == Some(&b'\'') {
                    found.push(i + 1);
                }
                // The escaped character is skipped whole (a break or a multi-byte one too).
                i += 1 + text[i + 1..].chars().next().map_or(1, char::len_utf8);
            }
            _ => i += 1,
        }
    }
    found
}

/// Rewrites each `\'` (offsets of the `'`, as [`quote_escapes`] gives them) to `\"` in a
/// prepared copy of `text[range]`, made here if there is none yet.
pub fn patch_quotes(
    prepared: Option<Prepared>,
    text: &str,
    range: Range<usize>,
    quotes: &[usize],
) -> Prepared {
    let mut p = prepared.unwrap_or_else(|| Prepared {
        text: text[range.clone()].to_string(),
        changes: Vec::new(),
    });
    // A `'` replaced by a `"`: both ASCII, the text stays UTF-8.
    let mut bytes = std::mem::take(&mut p.text).into_bytes();
    for &at in quotes {
        bytes[at - range.start] = b'"';
        p.changes.push(at);
    }
    p.text = String::from_utf8(bytes).unwrap_or_default();
    p.changes.sort_unstable();
    p
}

/// Whether some change lies in `from..to`.
pub fn touches(changes: &[usize], from: usize, to: usize) -> bool {
    let i = changes.partition_point(|&c| c < from);
    changes.get(i).is_some_and(|&c| c < to)
}

/// A line break as go-yaml reads it at `i`: its length, and what it adds to a value (LS and PS
/// are kept as they are, every other break is LF).
pub fn line_break(bytes: &[u8], i: usize) -> Option<(usize, &'static str)> {
    match bytes.get(i..)? {
        [b'\r', b'\n', ..] => Some((2, "\n")),
        [b'\r' | b'\n', ..] => Some((1, "\n")),
        [0xC2, 0x85, ..] => Some((2, "\n")),
        [0xE2, 0x80, 0xA8, ..] => Some((3, "\u{2028}")),
        [0xE2, 0x80, 0xA9, ..] => Some((3, "\u{2029}")),
        _ => None,
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Quoting {
    Plain,
    Single,
    Double,
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// The value of a plain scalar (`region` is its span) or of a quoted one (`region` is the text
/// between its quotes), folded as go-yaml's scanner folds it.
pub fn flow_value(text: &str, region: Range<usize>, quoting: Quoting) -> Result<String, String> {
    let bytes = text.as_bytes();
    let end = region.end.min(bytes.len());
    let mut i = region.start;
    let mut s = String::new();
    loop {
        let mut leading_blanks = false;
        while i < end && !is_blank(bytes[i]) && line_break(bytes, i).is_none() {
            match (quoting, bytes[i]) {
                (Quoting::Single, b'\'') => {
                    s.push('\'');
                    i += 2;
                }
                (Quoting::Double, b'\\') => {
                    if let Some((n, _)) = line_break(bytes, i + 1) {
                        // An escaped line break joins the lines with nothing between.
                        i += 1 + n;
                        leading_blanks = true;
                        break;
                    }
                    i += 1 + escape(&text[i + 1..end], &mut s)?;
                }
                _ => {
                    let c = text[i..].chars().next().unwrap_or(' ');
                    s.push(c);
                    i += c.len_utf8();
                }
            }
        }
        if i >= end {
            break;
        }
        let (mut whitespace, mut leading_break, mut trailing) = (String::new(), "", String::new());
        while i < end {
            if is_blank(bytes[i]) {
                if !leading_blanks {
                    whitespace.push(bytes[i] as char);
                }
                i += 1;
            } else if let Some((n, brk)) = line_break(bytes, i) {
                if leading_blanks {
                    trailing.push_str(brk);
                } else {
                    whitespace.clear();
                    leading_break = brk;
                    leading_blanks = true;
                }
                i += n;
            } else {
                break;
            }
        }
        // A plain scalar's span ends at its last character: blanks at its end are no part of
        // it; a quoted one keeps them.
        if i >= end && quoting == Quoting::Plain {
            break;
        }
        if !leading_blanks {
            s.push_str(&whitespace);
        } else if leading_break == "\n" {
            if trailing.is_empty() {
                s.push(' ');
            } else {
                s.push_str(&trailing);
            }
        } else {
            s.push_str(leading_break);
            s.push_str(&trailing);
        }
    }
    Ok(s)
}

/// One escape of a double-quoted scalar, `rest` starting after its backslash: pushes what it
/// stands for, returns its length. go-yaml v2's escapes are YAML 1.1's plus `\'`.
fn escape(rest: &str, s: &mut String) -> Result<usize, String> {
    let unknown = || "while parsing a quoted scalar, found unknown escape character".to_string();
    let c = rest.chars().next().ok_or_else(unknown)?;
    let simple = match c {
        '0' => '\0',
        'a' => '\x07',
        'b' => '\x08',
        't' | '\t' => '\t',
        'n' => '\n',
        'v' => '\x0b',
        'f' => '\x0c',
        'r' => '\r',
        'e' => '\x1b',
        ' ' => ' ',
        '"' => '"',
        '\'' => '\'',
        '\\' => '\\',
        'N' => '\u{85}',
        '_' => '\u{a0}',
        'L' => '\u{2028}',
        'P' => '\u{2029}',
        'x' | 'u' | 'U' => {
            let digits = match c {
                'x' => 2,
                'u' => 4,
                _ => 8,
            };
            let hex = rest
                .get(1..1 + digits)
                .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()));
            let hex = hex
                .ok_or("while parsing a quoted scalar, did not find expected hexdecimal number")?;
            let code = u32::from_str_radix(hex, 16).unwrap_or(u32::MAX);
            let c = char::from_u32(code).ok_or(
                "while parsing a quoted scalar, found invalid Unicode character escape code",
            )?;
            s.push(c);
            return Ok(1 + digits);
        }
        _ => return Err(unknown()),
    };
    s.push(simple);
    Ok(c.len_utf8())
}

/// A block scalar's header at `indicator` (`|` or `>`): whether it is literal, its chomping
/// (-1 strip, 0 clip, 1 keep), and where its content begins (after the header's line break).
pub fn block_header(text: &str, indicator: usize) -> Option<(bool, i8, usize)> {
    let bytes = text.as_bytes();
    let literal = match bytes.get(indicator)? {
        b'|' => true,
        b'>' => false,
        _ => return None,
    };
    let mut i = indicator + 1;
    let mut chomping = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'+' => chomping = 1,
            b'-' => chomping = -1,
            b'1'..=b'9' => {}
            _ => break,
        }
        i += 1;
    }
    while bytes.get(i).is_some_and(|&b| is_blank(b)) {
        i += 1;
    }
    if bytes.get(i) == Some(&b'#') {
        while i < bytes.len() && line_break(bytes, i).is_none() {
            i += 1;
        }
    }
    let n = line_break(bytes, i).map_or(0, |(n, _)| n);
    Some((literal, chomping, i + n))
}

/// The value of a block scalar whose content begins at `from` (after the header line), with
/// its content indented `indent` spaces (`usize::MAX` for a block with no content line), read
/// no further than `limit`, as go-yaml's scanner reads it. Returns the value and where the
/// scalar's lines end.
pub fn block_value(
    text: &str,
    from: usize,
    limit: usize,
    indent: usize,
    literal: bool,
    chomping: i8,
) -> (String, usize) {
    let bytes = &text.as_bytes()[..limit.min(text.len())];
    let mut i = from;
    // Eats the indentation and the empty lines before a content line: returns its column.
    let breaks = |i: &mut usize, trailing: &mut String| loop {
        let mut column = 0;
        while column < indent && bytes.get(*i) == Some(&b' ') {
            *i += 1;
            column += 1;
        }
        match line_break(bytes, *i) {
            Some((n, brk)) => {
                trailing.push_str(brk);
                *i += n;
            }
            None => return column,
        }
    };
    let (mut s, mut leading_break, mut trailing) = (String::new(), "", String::new());
    let mut leading_blank = false;
    let mut column = breaks(&mut i, &mut trailing);
    while column == indent && i < bytes.len() {
        let trailing_blank = is_blank(bytes[i]);
        if !literal && !leading_blank && !trailing_blank && leading_break == "\n" {
            if trailing.is_empty() {
                s.push(' ');
            }
        } else {
            s.push_str(leading_break);
        }
        s.push_str(&trailing);
        trailing.clear();
        leading_blank = trailing_blank;
        let line_end = (i..bytes.len())
            .find(|&j| line_break(bytes, j).is_some())
            .unwrap_or(bytes.len());
        s.push_str(&text[i..line_end]);
        i = line_end;
        leading_break = match line_break(bytes, i) {
            Some((n, brk)) => {
                i += n;
                brk
            }
            None => "",
        };
        column = breaks(&mut i, &mut trailing);
    }
    if chomping != -1 {
        s.push_str(leading_break);
    }
    if chomping == 1 {
        s.push_str(&trailing);
    }
    (s, i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(text: &str, q: Quoting) -> String {
        let region = match q {
            Quoting::Plain => 0..text.len(),
            _ => 1..text.len() - 1,
        };
        flow_value(text, region, q).unwrap()
    }

    #[test]
    fn ls_and_ps_are_kept_and_never_folded() {
        assert_eq!(flow("x\u{2028}  y", Quoting::Plain), "x\u{2028}y");
        assert_eq!(flow("x\n  y", Quoting::Plain), "x y");
        assert_eq!(flow("x\u{2028}\n  y", Quoting::Plain), "x\u{2028}\ny");
        assert_eq!(flow("x\n\u{2029}  y", Quoting::Plain), "x\u{2029}y");
        assert_eq!(flow("'x \u{2028}  y'", Quoting::Single), "x\u{2028}y");
        assert_eq!(flow("\"x\u{85}y\"", Quoting::Double), "x y");
        assert_eq!(flow("\"a\\\u{2028}  b\"", Quoting::Double), "ab");
        assert_eq!(flow("'it''s  '", Quoting::Single), "it's  ");
    }

    #[test]
    fn double_quoted_escapes_are_those_of_yaml_1_1_and_the_quote() {
        assert_eq!(
            flow("\"it\\'s \\x41\\u00e9\\N\\t\"", Quoting::Double),
            "it's A\u{e9}\u{85}\t"
        );
        for bad in ["\"\\/\"", "\"\\q\"", "\"\\ud800\"", "\"\\x4\""] {
            assert!(
                flow_value(bad, 1..bad.len() - 1, Quoting::Double).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn block_scalars_break_at_every_yaml_1_1_break() {
        let text = "|\n  x\u{2028}  y\n  z\n";
        let (_, _, from) = block_header(text, 0).unwrap();
        assert_eq!(
            block_value(text, from, text.len(), 2, true, 0).0,
            "x\u{2028}y\nz\n"
        );
        let text = ">\n  x\u{2028}  y\n  z\n\n";
        let (literal, chomping, from) = block_header(text, 0).unwrap();
        assert_eq!(
            block_value(text, from, text.len(), 2, literal, chomping).0,
            "x\u{2028}y z\n"
        );
        let text = "|+ # c\n  x\u{85}  y\u{2028}\u{2028}";
        let (literal, chomping, from) = block_header(text, 0).unwrap();
        assert_eq!((literal, chomping), (true, 1));
        assert_eq!(
            block_value(text, from, text.len(), 2, literal, chomping).0,
            "x\ny\u{2028}\u{2028}"
        );
        // A line less indented ends the block.
        let text = "|-\n  x\n y\n";
        let (.., from) = block_header(text, 0).unwrap();
        assert_eq!(
            block_value(text, from, text.len(), 2, true, -1),
            ("x".into(), 8)
        );
    }

    #[test]
    fn only_chunks_with_something_to_bridge_are_copied() {
        assert!(prepare("a: caf\u{e9} \u{2014} x\n", 0..14).is_none());
        assert!(prepare("\u{feff}a: 1\n", 0..8).is_none());
        let text = "a: 1\u{85}b: x\u{2028}\u{feff}\n";
        let p = prepare(text, 0..text.len()).unwrap();
        assert_eq!(p.text, "a: 1\r\nb: x\r\r\n\u{e000}\n");
        assert_eq!(p.text.len(), text.len());
        assert_eq!(p.changes, vec![10, 13]);
    }

    #[test]
    fn quote_escapes_are_found_in_their_string_only() {
        let text = "a: \"it\\'s \\\\'\" 'b\\'";
        assert_eq!(quote_escapes(text, 3, text.len()), vec![7]);
        assert!(quote_escapes("a: \"\\q\\'", 3, 8).len() == 1);
        assert!(quote_escapes("a: \"\\q\"", 3, 7).is_empty());
        let p = patch_quotes(None, text, 0..text.len(), &[7]);
        assert_eq!(p.text, "a: \"it\\\"s \\\\'\" 'b\\'");
    }
}
