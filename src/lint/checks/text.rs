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

/// The header form ADR-072 writes: a YAML comment after the block indicator.
fn header_pragma() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(&format!(r"[ \t]+# *{SAME_LINE}")).expect("the header pattern is valid")
    })
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
    let header = LiteralBlock::of(source, node)?.header_line()?;
    let line = source.line_span(header)?;
    let line_text = &source.text[line.range()];
    if !header_pragma().is_match(line_text) {
        out.push((
            "pragma-missing",
            header_span(source, entry.key_span, node.span),
            "the create.py header line lacks `# pragma: allowlist secret`".into(),
        ));
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
/// line. A pragma never crosses a line, so ranges cut at line starts miss none.
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
        if !next_line && allowed_lines.contains(&line) {
            continue;
        }
        let hides = if next_line {
            "the next line"
        } else {
            "this line"
        };
        out.push((
            "pragma-misplaced",
            Span::new(start, end),
            format!(
                "`{}` hides {hides} from detect-secrets; only the create.py header line of a \
                 credentials ConfigMap carries the allowlist pragma",
                m.as_str()
            ),
        ));
    }
}
