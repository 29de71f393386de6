//! In-memory text linted as one file, for unit tests and the testkit's own checks.

use crate::common::spread::Serial;
use crate::lint::run::Run;
use crate::lint::{Linter, Options};
use crate::load::input::{InputFile, Origin};
use crate::model::outcome::Outcome;

/// Lints `text` as one file shown as `name`, on this thread.
pub fn check_text(name: &str, text: &str, options: Options) -> Result<Outcome, String> {
    let linter = Linter::new(options)?;
    let out = linter.lint_bytes(0, name, text.as_bytes(), &Serial)?;
    let marked = Default::default();
    let mut run = Run::new(&linter, &marked, Vec::new());
    let file = InputFile {
        display: name.to_string(),
        origin: Origin::Memory(std::sync::Arc::new(text.as_bytes().to_vec())),
    };
    run.add(&file, Ok(out), &Serial);
    Ok(run.finish(&Serial))
}
