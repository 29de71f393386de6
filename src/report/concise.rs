//! `--format concise`: one line per finding, `file:line:column: severity rule: message`, as
//! ruff's `concise` and eslint's `compact` do, for editors' error lists and grep; then the
//! summary line of the text report and its line about suppressed findings (each of them with
//! `--show-suppressed`).

use super::helm::Sources;
use crate::model::outcome::Outcome;

pub fn write(
    outcome: &Outcome,
    sources: &Sources,
    quiet: bool,
    show_suppressed: bool,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    for (i, f) in outcome.findings.iter().enumerate() {
        if f.suppressed.is_some() {
            continue;
        }
        let from = sources
            .get(i)
            .map_or(String::new(), |s| format!(" (from {})", super::shown(s)));
        writeln!(
            out,
            "{}:{}:{}: {} {}: {}{from}",
            super::shown_file_name(outcome, f.loc.file),
            f.loc.line,
            f.loc.column,
            f.severity,
            f.rule,
            super::shown(&f.message.replace('\n', " ")),
        )?;
    }
    if quiet {
        return Ok(());
    }
    super::text::summary(outcome, out)?;
    let style = super::text::Style {
        show_suppressed,
        ..Default::default()
    };
    super::text::suppressed(outcome, &style, out)
}
