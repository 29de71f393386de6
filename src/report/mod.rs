//! Output formats, one file each. They read an [`Outcome`] and write to a `Write`.

pub mod concise;
pub mod github;
pub mod helm;
pub mod json;
pub mod junit;
pub mod sarif;
pub mod statistics;
pub mod terminal;
pub mod text;

use crate::model::Severity;
use crate::model::outcome::Outcome;
use std::borrow::Cow;

/// What the formats need to know of the run besides its outcome.
pub struct Context<'a> {
    pub texts: &'a Texts,
    /// The severity that fails the run (JUnit: a failure, not a passing case with output).
    pub fail_on: Severity,
    /// The rules the run applied, in catalog order (JUnit: one test case per bundle and rule).
    pub rules: Vec<&'a str>,
    /// Text: list suppressed findings, not only count them.
    pub show_suppressed: bool,
}

/// The display path of file `i` of the run.
pub fn file_name(outcome: &Outcome, i: usize) -> &str {
    outcome.files.get(i).map_or("", String::as_str)
}

/// [`file_name`] as a human format shows it ([`shown`]).
pub fn shown_file_name(outcome: &Outcome, i: usize) -> Cow<'_, str> {
    shown(file_name(outcome, i))
}

/// Whether `c` is kept out of a human report and an annotation: C0 controls but tab and line
/// feed (ESC starts terminal sequences, BEL and CR rewrite what is shown), DEL, C1 controls
/// (U+009B is a one-character CSI), the line and paragraph separators, and the bidirectional
/// controls that reorder what a reader sees (the "Trojan Source" characters).
pub fn hidden(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

/// `text` with each [`hidden`] character written as `\u{..}`, so that a manifest, a file name
/// or a program's output cannot move the cursor, clear lines, ring, write the clipboard or
/// reorder text in the terminal or log that shows the report. Input holding none is returned
/// as it is.
pub fn shown(text: &str) -> Cow<'_, str> {
    if !text.chars().any(hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if hidden(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The texts of the files findings point into, read again when a format shows source lines
/// (the run itself drops them as it goes). Standard input is kept by the caller.
pub struct Texts {
    pub stdin: Option<String>,
    /// The name standard input is reported under (`--stdin-filename`), where not `-`.
    pub stdin_name: Option<String>,
}

impl Texts {
    pub fn read(&self, outcome: &Outcome, file: usize) -> Option<String> {
        let path = outcome.files.get(file)?;
        if path == "-" || self.stdin_name.as_ref() == Some(path) {
            return self.stdin.clone();
        }
        // Bounded as the run's own read was: the file may have changed since.
        let bytes =
            crate::load::input::read_bounded(path.as_ref(), crate::load::input::MAX_INPUT_BYTES)
                .ok()?;
        // Decoded as the run decoded it (UTF-16 too), so the findings' offsets fall where they
        // did: a byte that is not UTF-8 is one `?`.
        Some(crate::load::stream::decode(&bytes).text.into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_shown_escaped_and_plain_text_is_left_alone() {
        assert!(matches!(shown("a: b\n\tc \u{e9}"), Cow::Borrowed(_)));
        assert_eq!(
            shown("\u{1b}]52;c;eA==\u{7}x\ry\u{9b}2J\u{202e}z\u{7f}\u{0}"),
            "\\u{1b}]52;c;eA==\\u{7}x\\u{d}y\\u{9b}2J\\u{202e}z\\u{7f}\\u{0}"
        );
        for c in [
            '\u{200e}', '\u{2066}', '\u{2069}', '\u{2028}', '\u{61c}', '\u{85}',
        ] {
            assert!(hidden(c), "{c:?}");
        }
        for c in ['\n', '\t', ' ', '\u{a0}', '\u{2030}', '\u{2065}'] {
            assert!(!hidden(c), "{c:?}");
        }
    }
}
