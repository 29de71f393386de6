//! Where the reports of `check` and `simulate` go and how they look: `--format` (repeatable),
//! `--output-file FILE` (repeatable, each paired with a `--format`), `--color`, `--quiet`,
//! `--statistics`, `--exit-zero`.
//!
//! Pairing: each `--output-file` takes the `--format` written just before it; a `--format`
//! left without a file goes to standard output (at most one can); when no `--format` precedes
//! a file, the files left over take the formats left over in order (`--output-file x --format
//! sarif`), and a lone file with no format at all gets the text report.

use super::Format;
use crate::model::outcome::Outcome;
use crate::report::{self, terminal};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

#[derive(clap::Args, Debug, Default, Clone)]
pub struct OutputArgs {
    /// The report format [default: text]; repeat it with --output-file to write several
    /// reports in one run.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Vec<Format>,
    /// Write the report of the --format given just before it to FILE instead of standard
    /// output (repeatable: `--format sarif --output-file credlint.sarif --format text`).
    #[arg(long, value_name = "FILE")]
    pub output_file: Vec<PathBuf>,
    /// Colour the text report.
    #[arg(long, value_enum, default_value_t = terminal::ColorChoice::Auto, value_name = "WHEN")]
    pub color: terminal::ColorChoice,
    /// Print only the findings: no summary line, no note on suppressed findings.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Print how many findings each rule reported instead of the findings (text or json on
    /// standard output; reports written with --output-file are complete).
    #[arg(long)]
    pub statistics: bool,
    /// Exit 0 even when findings are at or above the fail-on severity (2 still says the run
    /// could not do its job).
    #[arg(long)]
    pub exit_zero: bool,
    /// Where each `--format` and `--output-file` stood on the command line (filled in from the
    /// parsed arguments; empty: in the order given, each format before its file).
    #[arg(skip)]
    pub positions: Option<(Vec<usize>, Vec<usize>)>,
}

/// One report to write: a format and its file (`None`: standard output).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub format: Format,
    pub file: Option<PathBuf>,
}

impl OutputArgs {
    /// The reports to write, paired as the module says; `Err` is a usage error.
    pub fn targets(&self) -> Result<Vec<Target>, String> {
        let (format_at, file_at) = match &self.positions {
            Some((f, o)) if f.len() == self.format.len() && o.len() == self.output_file.len() => {
                (f.clone(), o.clone())
            }
            _ => (
                (0..self.format.len()).map(|i| 2 * i).collect(),
                (0..self.output_file.len()).map(|i| 2 * i + 1).collect(),
            ),
        };
        let mut events: Vec<(usize, Result<Format, &PathBuf>)> = format_at
            .iter()
            .zip(&self.format)
            .map(|(&at, &f)| (at, Ok(f)))
            .chain(
                file_at
                    .iter()
                    .zip(&self.output_file)
                    .map(|(&at, f)| (at, Err(f))),
            )
            .collect();
        events.sort_by_key(|(at, _)| *at);
        let mut targets: Vec<Target> = Vec::new();
        let mut open: Option<usize> = None;
        let mut loose: Vec<&PathBuf> = Vec::new();
        for (_, event) in events {
            match event {
                Ok(format) => {
                    targets.push(Target { format, file: None });
                    open = Some(targets.len() - 1);
                }
                Err(file) => match open.take() {
                    Some(i) => targets[i].file = Some(file.clone()),
                    None => loose.push(file),
                },
            }
        }
        if targets.is_empty() && loose.len() == 1 {
            targets.push(Target {
                format: Format::Text,
                file: None,
            });
        }
        let mut unpaired = targets.iter_mut().filter(|t| t.file.is_none());
        for file in loose {
            match unpaired.next() {
                Some(t) => t.file = Some(file.clone()),
                None => {
                    return Err(format!(
                        "--output-file {} has no --format of its own: write `--format FORMAT \
                         --output-file {}`",
                        file.display(),
                        file.display()
                    ));
                }
            }
        }
        if targets.is_empty() {
            targets.push(Target {
                format: Format::Text,
                file: None,
            });
        }
        let to_stdout: Vec<String> = targets
            .iter()
            .filter(|t| t.file.is_none())
            .map(|t| t.format.name())
            .collect();
        if to_stdout.len() > 1 {
            return Err(format!(
                "{} reports would go to standard output ({}): give all but one an --output-file",
                to_stdout.len(),
                to_stdout.join(", ")
            ));
        }
        for (i, t) in targets.iter().enumerate() {
            if let Some(file) = &t.file
                && targets[..i].iter().any(|u| u.file.as_ref() == Some(file))
            {
                return Err(format!("--output-file {} is given twice", file.display()));
            }
        }
        if self.statistics
            && let Some(t) = targets.iter().find(|t| t.file.is_none())
            && !matches!(t.format, Format::Text | Format::Concise | Format::Json)
        {
            return Err(format!(
                "--statistics replaces a text, concise or json report on standard output, not \
                 {}",
                t.format.name()
            ));
        }
        Ok(targets)
    }
}

/// Refuses a report file that is one of the files the run read (the same file by device and
/// inode, so a hard or symbolic link to it counts too): writing it would destroy what was
/// linted, and the text report reads the inputs again after the other reports are written.
pub fn refuse_inputs<'a>(
    targets: &[Target],
    inputs: impl IntoIterator<Item = &'a std::path::Path>,
) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let identity =
        |path: &std::path::Path| std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()));
    let files: Vec<(&PathBuf, (u64, u64))> = targets
        .iter()
        .filter_map(|t| t.file.as_ref())
        .filter_map(|f| identity(f).map(|id| (f, id)))
        .collect();
    if files.is_empty() {
        return Ok(());
    }
    for input in inputs {
        let Some(id) = identity(input) else { continue };
        if let Some((file, _)) = files.iter().find(|(_, f)| *f == id) {
            let same = if file.as_path() == input {
                String::new()
            } else {
                format!(" (the same file as {})", input.display())
            };
            return Err(format!(
                "--output-file {}{same} is one of the inputs: credlint never writes what it \
                 reads; name another file",
                file.display()
            ));
        }
    }
    Ok(())
}

/// Writes every report, then turns the findings into the exit code: suppressed findings and
/// those below the fail-on severity do not fail the run, nor does anything with --exit-zero.
pub fn finish(
    outcome: &Outcome,
    output: &OutputArgs,
    targets: &[Target],
    context: &report::Context,
) -> std::process::ExitCode {
    let needs_sources = targets
        .iter()
        .any(|t| t.format != Format::Github && t.format != Format::Junit);
    let helm = if needs_sources {
        report::helm::Sources::of(outcome, context.texts)
    } else {
        report::helm::Sources::default()
    };
    for target in targets {
        let written = match &target.file {
            None => {
                let stdout = std::io::stdout();
                let terminal = stdout.is_terminal();
                // Buffered: standard output flushes at every line break, a system call for
                // each line of the report.
                let mut out = std::io::BufWriter::with_capacity(64 * 1024, stdout.lock());
                write_one(outcome, output, target, context, &helm, terminal, &mut out)
                    .and_then(|_| out.flush())
            }
            Some(path) => create_report(path).and_then(|file| {
                let mut out = std::io::BufWriter::new(file);
                write_one(outcome, output, target, context, &helm, false, &mut out)?;
                out.flush()
            }),
        };
        if let Err(e) = written
            && e.kind() != std::io::ErrorKind::BrokenPipe
        {
            let place = target
                .file
                .as_ref()
                .map_or("the report".to_string(), |f| f.display().to_string());
            return super::usage_error(format!("cannot write {place}: {e}"));
        }
    }
    if !outcome.input_errors.is_empty() {
        for e in &outcome.input_errors {
            eprintln!("credlint: {}: {}", e.path, e.message);
        }
        return std::process::ExitCode::from(2);
    }
    let fails = outcome.findings.iter().any(|f| f.fails_at(context.fail_on));
    if fails && !output.exit_zero {
        std::process::ExitCode::from(1)
    } else {
        std::process::ExitCode::SUCCESS
    }
}

/// Opens `--output-file` for writing, never through a symbolic link: a committed
/// `report.sarif -> ~/.bashrc` would otherwise have the report written over its target.
fn create_report(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                std::io::Error::other(
                    "it is a symbolic link, which credlint does not write through",
                )
            } else {
                e
            }
        })
}

fn write_one(
    outcome: &Outcome,
    output: &OutputArgs,
    target: &Target,
    context: &report::Context,
    helm: &report::helm::Sources,
    terminal: bool,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let env = terminal::process_env;
    if output.statistics && target.file.is_none() {
        return match target.format {
            Format::Json => report::statistics::write_json(outcome, out),
            _ => report::statistics::write_text(outcome, output.quiet, out),
        };
    }
    match target.format {
        Format::Json => report::json::write(outcome, helm, out),
        Format::Sarif => report::sarif::write(outcome, helm, out),
        Format::Github => report::github::write(outcome, out),
        Format::Junit => report::junit::write(outcome, context, out),
        Format::Concise => {
            report::concise::write(outcome, helm, output.quiet, context.show_suppressed, out)
        }
        Format::Text => {
            let style = report::text::Style {
                color: terminal::color(output.color, &env, terminal),
                show_suppressed: context.show_suppressed,
                // A file is never wrapped, whatever COLUMNS says: it is read by tools and
                // editors, not on this terminal.
                width: if target.file.is_some() {
                    None
                } else {
                    terminal::width(&env, terminal, terminal::stdout_columns)
                },
                quiet: output.quiet,
            };
            report::text::write(outcome, context.texts, helm, &style, out)
        }
    }
}

/// Fills in where each `--format` and `--output-file` stood, from the parsed arguments of the
/// `check` or `simulate` subcommand.
pub fn locate(output: &mut OutputArgs, matches: &clap::ArgMatches) {
    let Some((_, sub)) = matches.subcommand() else {
        return;
    };
    // Both commands that call this define both arguments; one not given has no indices.
    let at = |id: &str| -> Vec<usize> {
        sub.indices_of(id)
            .map(Iterator::collect)
            .unwrap_or_default()
    };
    output.positions = Some((at("format"), at("output_file")));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(
        format: &[Format],
        files: &[&str],
        positions: Option<(Vec<usize>, Vec<usize>)>,
    ) -> OutputArgs {
        OutputArgs {
            format: format.to_vec(),
            output_file: files.iter().map(PathBuf::from).collect(),
            positions,
            ..OutputArgs::default()
        }
    }

    fn target(format: Format, file: Option<&str>) -> Target {
        Target {
            format,
            file: file.map(PathBuf::from),
        }
    }

    #[test]
    fn each_file_takes_the_format_before_it_and_one_report_goes_to_standard_output() {
        assert_eq!(
            args(&[], &[], None).targets().unwrap(),
            [target(Format::Text, None)]
        );
        // --format sarif --output-file a.sarif --format text
        let a = args(
            &[Format::Sarif, Format::Text],
            &["a.sarif"],
            Some((vec![1, 5], vec![3])),
        );
        assert_eq!(
            a.targets().unwrap(),
            [
                target(Format::Sarif, Some("a.sarif")),
                target(Format::Text, None)
            ]
        );
        // --format text --format sarif --output-file a.sarif: the file is the sarif's.
        let b = args(
            &[Format::Text, Format::Sarif],
            &["a.sarif"],
            Some((vec![1, 3], vec![5])),
        );
        assert_eq!(
            b.targets().unwrap(),
            [
                target(Format::Text, None),
                target(Format::Sarif, Some("a.sarif"))
            ]
        );
        // --output-file a.json --format json
        let c = args(&[Format::Json], &["a.json"], Some((vec![3], vec![1])));
        assert_eq!(c.targets().unwrap(), [target(Format::Json, Some("a.json"))]);
        // --output-file report.txt
        let d = args(&[], &["report.txt"], None);
        assert_eq!(
            d.targets().unwrap(),
            [target(Format::Text, Some("report.txt"))]
        );
    }

    #[test]
    fn reports_that_cannot_be_placed_are_usage_errors() {
        let two_out = args(&[Format::Json, Format::Sarif], &[], None);
        assert!(two_out.targets().unwrap_err().contains("standard output"));
        let extra = args(&[Format::Json], &["a", "b"], Some((vec![1], vec![3, 5])));
        assert!(extra.targets().unwrap_err().contains("--output-file b"));
        let twice = args(&[Format::Json, Format::Sarif], &["a", "a"], None);
        assert!(twice.targets().unwrap_err().contains("twice"));
        let mut stats = args(&[Format::Sarif], &[], None);
        stats.statistics = true;
        assert!(stats.targets().unwrap_err().contains("--statistics"));
    }
}
