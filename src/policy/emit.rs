//! A small, deterministic YAML writer for generated files: block style, keys in the order given,
//! and every string written so that go-yaml v2 (kubectl, Helm, Argo CD) reads it back as the
//! same string (a test reads every generated file back with credlint's own go-yaml-v2 loader).

use crate::load::yaml::{Node, Value};
use std::fmt::Write;

/// A JSON-like value whose maps keep the order their keys were given in.
#[derive(Clone, Debug, PartialEq)]
pub enum Y {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Y>),
    Map(Vec<(String, Y)>),
}

impl Y {
    pub fn str(s: impl Into<String>) -> Y {
        Y::Str(s.into())
    }

    pub fn strs<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> Y {
        Y::Seq(items.into_iter().map(|s| Y::str(s.as_ref())).collect())
    }

    pub fn map<K: Into<String>>(entries: impl IntoIterator<Item = (K, Y)>) -> Y {
        Y::Map(entries.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    /// A document tree as decoded (anchors expanded, merge keys applied), spans dropped.
    pub fn from_node(node: &Node) -> Y {
        match &node.value {
            Value::Null => Y::Null,
            Value::Bool(b) => Y::Bool(*b),
            Value::Int(i) => Y::Int(*i),
            Value::Float(f) => Y::Float(*f),
            Value::Str(s) => Y::Str(s.to_string()),
            Value::Seq(items) => Y::Seq(items.iter().map(Y::from_node).collect()),
            Value::Map(entries) => Y::Map(
                entries
                    .iter()
                    .map(|e| (e.key.to_string(), Y::from_node(&e.value)))
                    .collect(),
            ),
        }
    }

    pub fn get(&self, key: &str) -> Option<&Y> {
        match self {
            Y::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut Y> {
        match self {
            Y::Map(entries) => entries.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Sets `key` in a mapping, in place when it exists, else at the end.
    pub fn set(&mut self, key: &str, value: Y) {
        if let Y::Map(entries) = self {
            match entries.iter_mut().find(|(k, _)| k == key) {
                Some((_, v)) => *v = value,
                None => entries.push((key.to_string(), value)),
            }
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Y::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// Lines of a folded scalar are kept to about this many columns.
const WIDTH: usize = 96;
const INDENT: usize = 2;

/// One document, ending in a newline.
pub fn document(y: &Y) -> String {
    let mut out = String::new();
    match y {
        Y::Map(entries) if !entries.is_empty() => map_body(&mut out, entries, 0),
        Y::Seq(items) if !items.is_empty() => seq_body(&mut out, items, 0),
        other => {
            out.push_str(&inline_scalar(other).unwrap_or_default());
            out.push('\n');
        }
    }
    out
}

fn pad(out: &mut String, n: usize) {
    out.extend(std::iter::repeat_n(' ', n));
}

fn map_body(out: &mut String, entries: &[(String, Y)], indent: usize) {
    for (key, value) in entries {
        pad(out, indent);
        out.push_str(&key_text(key));
        out.push(':');
        value_after_key(out, value, indent);
    }
}

fn seq_body(out: &mut String, items: &[Y], indent: usize) {
    for item in items {
        pad(out, indent);
        out.push('-');
        match item {
            Y::Map(entries) if !entries.is_empty() => {
                // The first entry shares the dash's line; the others line up under it.
                out.push(' ');
                let (key, value) = &entries[0];
                out.push_str(&key_text(key));
                out.push(':');
                value_after_key(out, value, indent + INDENT);
                map_body(out, &entries[1..], indent + INDENT);
            }
            Y::Seq(inner) if !inner.is_empty() => {
                out.push('\n');
                seq_body(out, inner, indent + INDENT);
            }
            scalar => {
                out.push(' ');
                scalar_value(out, scalar, indent + INDENT);
            }
        }
    }
}

/// A list of short scalars on one line, `[a, 'b c']`, when it fits.
fn flow_seq(items: &[Y], room: usize) -> Option<String> {
    let mut parts = Vec::new();
    for item in items {
        let text = match item {
            Y::Str(s) if s.contains('\n') => return None,
            Y::Map(_) | Y::Seq(_) => return None,
            scalar => inline_scalar(scalar)?,
        };
        parts.push(text);
    }
    let line = format!("[{}]", parts.join(", "));
    (line.len() <= room).then_some(line)
}

/// Writes what follows `key:`, the value's lines indented under `indent`.
fn value_after_key(out: &mut String, value: &Y, indent: usize) {
    if let Y::Seq(items) = value
        && let Some(line) = flow_seq(items, WIDTH.saturating_sub(indent + 20))
    {
        out.push(' ');
        out.push_str(&line);
        out.push('\n');
        return;
    }
    match value {
        Y::Map(entries) if !entries.is_empty() => {
            out.push('\n');
            map_body(out, entries, indent + INDENT);
        }
        Y::Seq(items) if !items.is_empty() => {
            out.push('\n');
            seq_body(out, items, indent + INDENT);
        }
        scalar => {
            out.push(' ');
            scalar_value(out, scalar, indent + INDENT);
        }
    }
}

/// A scalar after `key: ` or `- `, block scalars indented at `indent`.
fn scalar_value(out: &mut String, y: &Y, indent: usize) {
    if let Y::Str(s) = y {
        if let Some(lines) = literal_lines(s) {
            out.push_str(&lines.header);
            out.push('\n');
            for line in lines.lines {
                if !line.is_empty() {
                    pad(out, indent);
                    out.push_str(line);
                }
                out.push('\n');
            }
            return;
        }
        if let Some(lines) = folded_lines(s, WIDTH.saturating_sub(indent).max(40)) {
            out.push_str(">-\n");
            for line in lines {
                pad(out, indent);
                out.push_str(&line);
                out.push('\n');
            }
            return;
        }
    }
    out.push_str(&inline_scalar(y).unwrap_or_default());
    out.push('\n');
}

fn inline_scalar(y: &Y) -> Option<String> {
    Some(match y {
        Y::Null => "null".into(),
        Y::Bool(b) => b.to_string(),
        Y::Int(i) => i.to_string(),
        Y::Float(f) => float_text(*f),
        Y::Str(s) => string_text(s),
        Y::Map(_) => "{}".into(),
        Y::Seq(_) => "[]".into(),
    })
}

fn float_text(f: f64) -> String {
    if f.is_nan() {
        ".nan".into()
    } else if f.is_infinite() {
        if f > 0.0 {
            ".inf".into()
        } else {
            "-.inf".into()
        }
    } else {
        let text = format!("{f:?}");
        // YAML 1.1 wants a dot in the mantissa and a sign in the exponent: `1.0e+20`.
        match text.split_once('e') {
            Some((m, e)) => {
                let m = if m.contains('.') {
                    m.to_string()
                } else {
                    format!("{m}.0")
                };
                let e = if e.starts_with('-') {
                    e.to_string()
                } else {
                    format!("+{e}")
                };
                format!("{m}e{e}")
            }
            None => text,
        }
    }
}

fn key_text(key: &str) -> String {
    string_text(key)
}

/// A string on one line: plain when that cannot be read as anything else, else quoted.
fn string_text(s: &str) -> String {
    if is_plain_safe(s) {
        return s.to_string();
    }
    let printable = s.chars().all(|c| !needs_escape(c));
    // CEL literals are in single quotes: `"'x'"` reads better than `'''x'''`.
    if printable && (!s.contains('\'') || s.contains(['"', '\\'])) {
        return format!("'{}'", s.replace('\'', "''"));
    }
    double_quoted(s)
}

/// Plain scalars are limited to what no YAML 1.1 or 1.2 reader takes for another type or for
/// syntax: a letter first, then letters, digits, `-`, `.`, `_`, `/` and single inner spaces.
fn is_plain_safe(s: &str) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    if !first.is_ascii_alphabetic() || s.ends_with(' ') || s.contains("  ") {
        return false;
    }
    if !s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '/' | ' '))
    {
        return false;
    }
    let lower = s.to_ascii_lowercase();
    !matches!(
        lower.as_str(),
        "y" | "n" | "yes" | "no" | "on" | "off" | "true" | "false" | "null"
    )
}

fn needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{feff}' | '\u{2028}' | '\u{2029}' | '\u{85}')
}

fn double_quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if needs_escape(c) => {
                let _ = if (c as u32) <= 0xFF {
                    write!(out, "\\x{:02X}", c as u32)
                } else {
                    write!(out, "\\u{:04X}", c as u32)
                };
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

struct Literal<'s> {
    header: String,
    lines: Vec<&'s str>,
}

/// A multi-line string as a literal block (`|`, `|-`, `|+`), when it holds nothing a block
/// cannot carry (control characters, carriage returns, trailing spaces that a reader might
/// strip, tabs at the start of a line).
fn literal_lines(s: &str) -> Option<Literal<'_>> {
    if !s.contains('\n') || s.chars().any(|c| c != '\n' && needs_escape(c)) {
        return None;
    }
    let body = s.trim_end_matches('\n');
    let trailing = s.len() - body.len();
    let chomp = match trailing {
        0 => "-",
        1 => "",
        _ => "+",
    };
    let lines: Vec<&str> = if body.is_empty() {
        Vec::new()
    } else {
        body.split('\n').collect()
    };
    if lines.is_empty()
        || lines.iter().any(|l| {
            l.ends_with(' ') || l.starts_with('\t') || (!l.is_empty() && l.trim().is_empty())
        })
    {
        return None;
    }
    // The block's indentation is taken from its first non-empty line unless given.
    let first = lines.iter().find(|l| !l.is_empty())?;
    let indicator = if first.starts_with(' ') { "2" } else { "" };
    let mut all = lines;
    // `|+` keeps the extra line breaks: write them as empty lines.
    all.extend(std::iter::repeat_n("", trailing.saturating_sub(1)));
    Some(Literal {
        header: format!("|{indicator}{chomp}"),
        lines: all,
    })
}

/// A long one-line string as a folded block (`>-`), broken at single spaces. Only strings that
/// fold back exactly: no line breaks, tabs or runs of spaces, nothing at either end.
fn folded_lines(s: &str, width: usize) -> Option<Vec<String>> {
    if s.len() <= width
        || s.contains('\t')
        || s.chars().any(needs_escape)
        || s.starts_with([' ', '#'])
        || s.ends_with(' ')
        || s.contains("  ")
    {
        return None;
    }
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in s.split(' ') {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut line));
        } else if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    lines.push(line);
    Some(lines)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::yaml::{Parsed, parse};

    fn round_trip(y: &Y) -> Y {
        let text = document(y);
        match parse(&text).into_iter().next() {
            Some(Parsed::Document(d)) => {
                assert!(d.duplicate_keys.is_empty(), "{text}");
                Y::from_node(&d.root)
            }
            other => panic!("{text}\n{other:?}"),
        }
    }

    #[test]
    fn strings_read_back_as_the_same_strings() {
        let tricky = [
            "",
            "yes",
            "No",
            "on",
            "null",
            "~",
            "1",
            "0777",
            "1_000",
            "1e3",
            "0x1F",
            ".inf",
            "-",
            "- a",
            "a: b",
            "a #b",
            "#x",
            "'quoted'",
            "\"dq\"",
            "@sha256:abc",
            "x\ty",
            "tab\tend",
            "  leading",
            "trailing ",
            "a  b",
            "multi\nline\n",
            "multi\nline",
            "multi\n\n",
            "  indented\nsecond\n",
            "\nstarts empty\n",
            "cr\r\nlf",
            "bell\u{7}",
            "bom\u{feff}",
            "ünïcödé",
            "registry.example/x:1.4.2@sha256:3b1f",
            "[a]",
            "{a: b}",
            "*alias",
            "&anchor",
            "!tag",
            "%dir",
            "`tick`",
            "a,b",
            "?",
            "key:",
            "1.0",
            "+1",
            "=",
            "<<",
            "true\n",
        ];
        for s in tricky {
            let y = Y::map([("k", Y::str(s)), (s, Y::Int(1))]);
            assert_eq!(round_trip(&y), y, "{s:?}");
            let seq = Y::Seq(vec![Y::str(s)]);
            assert_eq!(
                round_trip(&Y::map([("s", seq.clone())])),
                Y::map([("s", seq)]),
                "{s:?}"
            );
        }
        let long = "variables.rules.all(r, r.verbs.all(v, v.contains('*') || v in ['create', 'get', 'patch', 'delete'])) && has(object.metadata.name) && object.metadata.name.endsWith('-credentials')";
        let y = Y::map([("spec", Y::Seq(vec![Y::map([("expression", Y::str(long))])]))]);
        let text = document(&y);
        assert!(text.contains(">-\n"), "{text}");
        assert_eq!(round_trip(&y), y);
    }

    #[test]
    fn nested_collections_and_numbers_read_back() {
        let y = Y::map([
            (
                "a",
                Y::Seq(vec![Y::Seq(vec![Y::Int(1), Y::Float(2.5)]), Y::Map(vec![])]),
            ),
            (
                "b",
                Y::map([("c", Y::Seq(vec![])), ("d", Y::Null), ("e", Y::Bool(false))]),
            ),
            ("f", Y::Float(1e20)),
            ("g", Y::Float(-0.5)),
            ("h", Y::Int(-3)),
        ]);
        assert_eq!(round_trip(&y), y);
    }
}
