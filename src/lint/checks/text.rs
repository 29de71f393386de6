//! Rules on the raw text: the form of create.py (`script-not-literal`), the allowlist pragma on
//! its header line (`pragma-missing`), and every other pragma in the file (`pragma-misplaced`).

use crate::load::block::LiteralBlock;
use crate::load::source::Source;
use crate::load::yaml::{Node, Span, Style};
use regex::Regex;
use std::sync::OnceLock;

/// A finding of a text rule: rule id, span, message.
pub type TextProblem = (&'static str, Span, String);

/// detect-secrets skips a line carrying this (`whitelist` is the older spelling)...
const SAME_LINE: &str = r"pragma: ?(?:allow|white)list[ -]secret";
/// ...and the line after one carrying this.
const NEXT_LINE: &str = r"pragma: ?allowlist[ -]nextline[ -]secret";

fn any_pragma() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(&format!("(?:{NEXT_LINE})|(?:{SAME_LINE})"))
            .expect("the pragma pattern is valid")
    })
}

/// The header line ADR-072 writes, and the only one that carries a pragma: the key line of
/// `create.py`, holding the key, the block indicator (with its indentation and chomping
/// indicators) and the pragma comment, and nothing else. The indicator may stand on the next
/// line instead (detect-secrets reads the comment of the key line). Spaces only: a tab before
/// the `#` makes detect-secrets' YAML reader (PyYAML) refuse the file, and a tab inside the
/// comment cuts the comment it reads short.
fn header_form() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(&format!(
            r#"^ *(?:create\.py|"create\.py"|'create\.py') *:(?: +\|(?:[1-9][-+]?|[-+][1-9]?)?)? +# *{SAME_LINE}[ \t]*\r?$"#
        ))
        .expect("the header pattern is valid")
    })
}

/// Whether detect-secrets 1.5.0 honours a pragma of `line`: its same-line form allowlists the
/// line, its next-line form the line after (and only with nothing but blanks before the
/// comment). A `.yaml` file is read for `#` comments only; any other name for the comment
/// markers of many languages.
fn honoured(yaml_name: bool, line: &str, next_line: bool) -> bool {
    static YAML: OnceLock<[Regex; 2]> = OnceLock::new();
    static OTHER: OnceLock<[Regex; 2]> = OnceLock::new();
    let comments: &[(&str, &str)] = if yaml_name {
        &[("#", "")]
    } else {
        &[
            ("#", ""),
            ("//", ""),
            (r"/\*", r" *\*/"),
            ("'", ""),
            ("--", ""),
            (r"<!--[# \t]*?", " *?-->"),
        ]
    };
    let build = || {
        let alternatives = |next: bool| {
            comments
                .iter()
                .map(|(start, end)| {
                    if next {
                        format!(r"^[ \t]*{start} *{NEXT_LINE}.*?{end}[ \t]*$")
                    } else {
                        format!(r"[ \t]*{start} *{SAME_LINE}.*?{end}[ \t]*$")
                    }
                })
                .collect::<Vec<_>>()
                .join("|")
        };
        [
            Regex::new(&alternatives(false)).expect("valid"),
            Regex::new(&alternatives(true)).expect("valid"),
        ]
    };
    let set = if yaml_name {
        YAML.get_or_init(build)
    } else {
        OTHER.get_or_init(build)
    };
    set[usize::from(next_line)].is_match(line.trim_end_matches('\r'))
}

/// Checks create.py of a credentials ConfigMap. Returns the 0-based line where the pragma
/// belongs (the literal block's header), when there is one.
pub fn check_script(
    config_map: &Node,
    source: &Source,
    out: &mut Vec<TextProblem>,
) -> Option<usize> {
    let Some(entry) = config_map.get("data").and_then(|d| d.entry("create.py")) else {
        let at = config_map.entry("data").map_or_else(
            || crate::load::locate::root_span(config_map),
            |e| e.key_span,
        );
        out.push((
            "script-not-literal",
            at,
            "the ConfigMap has no create.py".into(),
        ));
        return None;
    };
    let node = &entry.value;
    let form = match (node.as_str(), node.style) {
        (None, _) => Some(format!(
            "create.py is {}, not a literal block",
            node.type_name()
        )),
        (Some(_), Style::Literal) => None,
        (Some(_), Style::Folded) => {
            Some("create.py is a folded block (`>`), which joins its lines".into())
        }
        (Some(_), Style::Plain) => {
            Some("create.py is a plain scalar, not a literal block (`|`)".into())
        }
        (Some(_), _) => Some("create.py is a quoted string, not a literal block (`|`)".into()),
    };
    if let Some(message) = form {
        let at = if matches!(node.style, Style::Folded) {
            header_span(source, entry.key_span, node.span)
        } else {
            node.span
        };
        out.push(("script-not-literal", at, message));
        // A pragma on a folded block's header is where it belongs once the `>` becomes `|`:
        // script-not-literal says so, pragma-misplaced would only repeat it.
        return matches!(node.style, Style::Folded)
            .then(|| source.lines.line_of(entry.key_span.start()));
    }
    // The header is the key line, as detect-secrets reads it.
    LiteralBlock::of(source, node)?;
    let header = source.lines.line_of(entry.key_span.start());
    let line = source.line_span(header)?;
    let line_text = &source.text[line.range()];
    if header_form().is_match(line_text) {
        return Some(header);
    }
    match any_pragma().find(line_text) {
        None => out.push((
            "pragma-missing",
            header_span(source, entry.key_span, node.span),
            "the create.py header line (the line of the key) lacks `# pragma: allowlist \
             secret`: detect-secrets reads the whole block as one value at this line and takes \
             the script for a secret, so the commit is blocked (ADR-072 point 7)"
                .into(),
        )),
        // A pragma on the header with more beside it: detect-secrets skips the whole line.
        Some(m) => {
            let effect = if honoured(source.yaml_name, line_text, false) {
                "hides this whole line from detect-secrets"
            } else {
                "is not honoured by detect-secrets in this form, so the script is not allowlisted"
            };
            out.push((
                "pragma-misplaced",
                Span::new(line.start() + m.start(), line.start() + m.end()),
                format!(
                    "`{}` {effect}: the create.py header line must hold the key, the block \
                     indicator and `# pragma: allowlist secret` with spaces between them, and \
                     nothing else",
                    m.as_str()
                ),
            ));
        }
    }
    Some(header)
}

/// The block header: from the indicator to the end of its line.
fn header_span(source: &Source, key: Span, value: Span) -> Span {
    let line = source.lines.line_of(key.start());
    let Some(line_span) = source.line_span(line) else {
        return key;
    };
    let after_key = &source.text[key.end().min(line_span.end())..line_span.end()];
    match after_key.find(['|', '>']) {
        Some(i) => Span::new(key.end() + i, line_span.end()),
        None => Span::new(key.start(), value.start().min(line_span.end())),
    }
}

/// Every allowlist pragma in `range` of the file except the same-line form on an allowed header
/// line (`allowed_lines` sorted). A pragma never crosses a line, so ranges cut at line starts
/// miss none.
pub fn misplaced_pragmas(
    source: &Source,
    range: std::ops::Range<usize>,
    allowed_lines: &[usize],
    out: &mut Vec<TextProblem>,
) {
    let Some(text) = source.text.get(range.clone()) else {
        return;
    };
    for m in any_pragma().find_iter(text) {
        let (start, end) = (range.start + m.start(), range.start + m.end());
        let line = source.lines.line_of(start);
        let next_line = m.as_str().contains("nextline");
        if !next_line && allowed_lines.binary_search(&line).is_ok() {
            continue;
        }
        let line_text = source
            .line_span(line)
            .map_or("", |span| &source.text[span.range()]);
        let effect = match (honoured(source.yaml_name, line_text, next_line), next_line) {
            (true, true) => "hides the next line from detect-secrets",
            (true, false) => "hides this line from detect-secrets",
            (false, _) => "is not honoured by detect-secrets in this form, yet reads as one",
        };
        out.push((
            "pragma-misplaced",
            Span::new(start, end),
            format!(
                "`{}` {effect}; only the create.py header line of a credentials ConfigMap \
                 carries the allowlist pragma",
                m.as_str()
            ),
        ));
    }
}
