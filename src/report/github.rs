//! `--format github`: one GitHub Actions workflow command per finding, which the runner turns
//! into an annotation on the file and line of the pull request:
//! `::error file=F,line=L,col=C,endLine=L2,endColumn=C2,title=RULE::MESSAGE` (`::warning` for
//! warnings), lines and columns as in the JSON output. Suppressed findings are not annotated
//! (they are accepted); a last plain line gives the summary.
//!
//! Escaping, as the runner decodes it: in the message, `%`, CR and LF become `%25`, `%0D` and
//! `%0A`; in the properties also `:` and `,` (`%3A`, `%2C`), which separate them. Before that,
//! control characters other than line feed and tab (CR among them) and bidirectional controls
//! are written as `\u{..}` text (`report::shown`).

use crate::model::Severity;
use crate::model::outcome::Outcome;

pub fn write(outcome: &Outcome, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    for f in outcome.findings.iter().filter(|f| f.suppressed.is_none()) {
        let command = match f.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        writeln!(
            out,
            "::{command} file={},line={},col={},endLine={},endColumn={},title={}::{}",
            escape_property(super::file_name(outcome, f.loc.file)),
            f.loc.line,
            f.loc.column,
            f.loc.end_line,
            f.loc.end_column,
            escape_property(&f.rule),
            escape_data(&f.message),
        )?;
    }
    let s = &outcome.summary;
    let suppressed = outcome
        .findings
        .iter()
        .filter(|f| f.suppressed.is_some())
        .count();
    writeln!(
        out,
        "credlint: {} error(s), {} warning(s), {suppressed} suppressed, in {} file(s)",
        s.errors, s.warnings, s.files
    )
}

/// The message of a command: control characters shown escaped first (the runner prints the
/// message into the log, where they would act on whoever reads it), then the runner's escapes.
pub fn escape_data(text: &str) -> String {
    super::shown(text)
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A property value (`file=...`, `title=...`).
pub fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separators_and_line_breaks_are_escaped() {
        assert_eq!(escape_data("50% a:b,c\nd"), "50%25 a:b,c%0Ad");
        assert_eq!(escape_data("a\rb\u{1b}[2K"), "a\\u{d}b\\u{1b}[2K");
        assert_eq!(escape_property("a:b,c%"), "a%3Ab%2Cc%25");
        assert_eq!(
            escape_property("%3A"),
            "%253A",
            "an escape sequence in a path stays text"
        );
    }
}
