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
