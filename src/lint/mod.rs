//! Lint: the rule catalog and the rules (CEL object rules, rules decided in Rust, the `schema`
//! rule, user Kyverno policies for `check --policy`), and the linter that judges one file
//! (`file.rs`) and a run across files (`run.rs`). Everything here decides findings on the
//! calling thread; how files and pieces are scheduled is the executor's (`src/exec/`).
//! Imports `load`, `model`, `runtime`.

pub mod catalog;
pub mod cel;
pub mod checks;
pub mod file;
pub mod kyverno;
pub mod programs;
pub mod run;
pub mod schema;
pub mod verdicts;

use catalog::Catalog;
use programs::Programs;

#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The configured CREDENTIALS_IMAGE, if any (`job-image-pinned`).
    pub credentials_image: Option<String>,
    pub keep: crate::model::members::Keep,
    /// Kyverno ValidatingPolicies applied to every object (`check --policy`).
    pub policies: Option<std::sync::Arc<kyverno::PolicySet>>,
    /// Where `pragma-misplaced` looks: every file read (`true`, `[rules.pragma-misplaced]
    /// scope = "all"`), or only the files that hold a bundle member (the default).
    pub pragma_everywhere: bool,
}

/// The catalog's rules with the options of a run, compiled once and shared by every file.
pub struct Linter {
    catalog: &'static Catalog,
    /// The rules compiled: at once by [`Linter::new`], on first need by [`Linter::deferred`]
    /// (a run whose every file comes from the cache needs none of them).
    programs: std::sync::OnceLock<Result<Programs, String>>,
    options: Options,
}

impl Linter {
    /// A linter with its rules compiled.
    pub fn new(options: Options) -> Result<Linter, String> {
        let linter = Linter::deferred(options);
        linter.compiled()?;
        Ok(linter)
    }

    /// The options the run was made with.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// A linter that compiles its rules when a file first needs them, or when
    /// [`Linter::compiled`] is called.
    pub fn deferred(options: Options) -> Linter {
        Linter {
            catalog: Catalog::get(),
            programs: std::sync::OnceLock::new(),
            options,
        }
    }

    /// The compiled rules; the first caller compiles them and any other waits for it.
    pub fn compiled(&self) -> Result<&Programs, String> {
        self.programs
            .get_or_init(|| Programs::compile(self.catalog, &self.options))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Whether the rules were compiled (by [`Linter::new`] or a file that needed them).
    #[cfg(test)]
    pub(crate) fn is_compiled(&self) -> bool {
        self.programs.get().is_some()
    }
}
