//! What a run is asked to do: `credlint.toml` and the command line merged (a flag given on the
//! command line replaces the file's value for that key; lists are not merged), and the steps
//! that apply it to an [`Outcome`] after the engine: suppressions, severity overrides, rule
//! selection, the summary.

use crate::cli::config::{self, Config};
use crate::cli::suppress;
use crate::lint::catalog::Catalog;
use crate::model::Severity;
use crate::model::outcome::Outcome;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Only these rules (empty: all).
    pub select: Vec<String>,
    /// Not these rules.
    pub ignore: Vec<String>,
    /// Per-rule severity overrides.
    pub severity: Vec<(String, Severity)>,
    pub fail_on: Severity,
    pub credentials_image: Option<String>,
    /// Folders not walked.
    pub exclude: Vec<String>,
    /// Namespaces the generated policies leave alone (`None`: the system namespaces).
    pub exempt_namespaces: Option<Vec<String>>,
    /// Whether `credlint.io/ignore` annotations are honoured (`--no-inline-ignores` turns off).
    pub inline_ignores: bool,
    /// `pragma-misplaced` searches every file, not only those holding a bundle member.
    pub pragma_everywhere: bool,
    /// `[[per-path]]` entries of the config file.
    pub per_path: Vec<config::PerPath>,
    /// The config file read (its path, and its name in messages), when one was.
    pub config_file: Option<(std::path::PathBuf, String)>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            select: Vec::new(),
            ignore: Vec::new(),
            severity: Vec::new(),
            fail_on: Severity::Error,
            credentials_image: None,
            exclude: Vec::new(),
            exempt_namespaces: None,
            inline_ignores: true,
            pragma_everywhere: false,
            per_path: Vec::new(),
            config_file: None,
        }
    }
}

/// The command line's say, `None` (or `false`) where a flag was not given.
#[derive(Clone, Debug, Default)]
pub struct Flags {
    pub select: Option<Vec<String>>,
    pub ignore: Option<Vec<String>>,
    pub fail_on: Option<Severity>,
    pub credentials_image: Option<String>,
    pub exclude: Option<Vec<String>>,
    pub no_inline_ignores: bool,
}

/// Which credlint.toml a run reads.
#[derive(Clone, Debug)]
pub enum ConfigFile {
    /// The nearest one: the current folder's, else its parent's, up to the filesystem root.
    Nearest,
    /// `--config FILE`.
    Named(std::path::PathBuf),
    /// `--no-config`.
    None,
}

impl Settings {
    /// Checks the flags' rule ids, reads the config file and merges the two; `Err` holds one
    /// line per problem (the run exits 2).
    pub fn resolve(file: ConfigFile, flags: Flags) -> Result<Settings, Vec<String>> {
        let catalog = Catalog::get();
        for id in flags.select.iter().chain(&flags.ignore).flatten() {
            // `policy:<name>` ids come from the --policy files, not the catalog.
            if catalog.rule(id).is_none() && !id.starts_with(crate::lint::kyverno::report::PREFIX) {
                let hint = crate::cli::suggest::unknown_rule_hint(id, catalog);
                return Err(vec![format!("unknown rule `{id}` ({hint})")]);
            }
        }
        let problems: Vec<String> = flags
            .exclude
            .iter()
            .flatten()
            .filter_map(|e| {
                crate::load::input::exclude_problem(e).map(|p| format!("--exclude: {p}"))
            })
            .collect();
        if !problems.is_empty() {
            return Err(problems);
        }
        if let Some(problem) = flags
            .credentials_image
            .as_deref()
            .and_then(config::image_problem)
        {
            return Err(vec![format!("--credentials-image {problem}")]);
        }
        let path = match file {
            ConfigFile::None => None,
            ConfigFile::Named(path) => {
                let shown = path.display().to_string();
                Some((path, shown))
            }
            ConfigFile::Nearest => match std::env::current_dir() {
                Err(_) => None,
                Ok(cwd) => config::find(&cwd).map_err(|e| vec![e])?.map(|path| {
                    // Named as the user would: relative when it is in the current folder.
                    let shown = match path.parent() {
                        Some(dir) if dir == cwd => config::FILE_NAME.to_string(),
                        _ => path.display().to_string(),
                    };
                    (path, shown)
                }),
            },
        };
        let file = match path {
            None => None,
            Some((path, shown)) => Some(
                config::load(&path, &shown)
                    .map_err(|errors| errors.iter().map(ToString::to_string).collect::<Vec<_>>())?,
            ),
        };
        Ok(Settings::merge(file, flags))
    }

    /// The rules a run applies, in catalog order: `check` runs all but the simulated ones,
    /// `simulate` only those; `select`/`ignore` narrow both.
    pub fn active_rules(&self, simulated: bool) -> Vec<&'static str> {
        Catalog::get()
            .rules
            .iter()
            .map(|r| r.id.as_str())
            .filter(|id| {
                crate::runtime::simulate::RULES.contains(id) == simulated && self.keeps(id)
            })
            .collect()
    }

    pub fn merge(file: Option<Config>, flags: Flags) -> Settings {
        let file = file.unwrap_or_default();
        let defaults = Settings::default();
        Settings {
            select: flags.select.or(file.select).unwrap_or_default(),
            ignore: flags.ignore.or(file.ignore).unwrap_or_default(),
            severity: file.severity,
            fail_on: flags.fail_on.or(file.fail_on).unwrap_or(defaults.fail_on),
            credentials_image: flags.credentials_image.or(file.credentials_image),
            exclude: flags.exclude.or(file.exclude).unwrap_or_default(),
            exempt_namespaces: file.exempt_namespaces,
            inline_ignores: !flags.no_inline_ignores,
            pragma_everywhere: file.pragma_everywhere.unwrap_or(false),
            per_path: file.per_path,
            config_file: file.file,
        }
    }

    /// Whether a rule's findings are kept by `select` and `ignore`.
    pub fn keeps(&self, rule: &str) -> bool {
        (self.select.is_empty() || named(&self.select, rule)) && !named(&self.ignore, rule)
    }

    /// Suppressions (judged when `judge`), severity overrides, then `select`/`ignore`. The
    /// summary is recounted by [`recount`], once the caller has dropped what it does not report.
    ///
    /// Suppressions come first so that an annotation naming a rule `--ignore` drops is judged
    /// against the findings that exist, not called unused.
    pub fn apply(&self, outcome: &mut Outcome, suppress: suppress::Options) {
        if self.inline_ignores {
            suppress::apply(outcome, suppress);
        }
        self.apply_per_path(outcome);
        for f in &mut outcome.findings {
            if let Some((_, severity)) = self.severity.iter().find(|(id, _)| *id == f.rule) {
                f.severity = *severity;
            }
        }
        outcome.findings.retain(|f| self.keeps(&f.rule));
    }
}

impl Settings {
    /// `[[per-path]]`: accepts the findings of the named rules in the files the globs match,
    /// with the entry's reason, as an annotation would (the config file's line is where the
    /// acceptance is written). Paths are matched relative to the folder of credlint.toml.
    fn apply_per_path(&self, outcome: &mut Outcome) {
        let Some((path, shown)) = &self.config_file else {
            return;
        };
        if self.per_path.is_empty() {
            return;
        }
        let cwd = std::env::current_dir().unwrap_or_default();
        let base = lexical(&cwd.join(path.parent().unwrap_or(std::path::Path::new(""))));
        let relative: Vec<Option<std::path::PathBuf>> = outcome
            .files
            .iter()
            .map(|f| {
                (f != "-")
                    .then(|| lexical(&cwd.join(f)))
                    .and_then(|p| p.strip_prefix(&base).ok().map(std::path::Path::to_path_buf))
            })
            .collect();
        let mut config_index = None;
        for f in outcome
            .findings
            .iter_mut()
            .filter(|f| f.suppressed.is_none())
        {
            let Some(Some(file)) = relative.get(f.loc.file) else {
                continue;
            };
            let Some(entry) = self
                .per_path
                .iter()
                .find(|e| named(&e.rules, &f.rule) && e.globs.is_match(file))
            else {
                continue;
            };
            let index = *config_index.get_or_insert_with(|| {
                outcome.files.push(shown.clone());
                outcome.files.len() - 1
            });
            f.suppressed = Some(crate::model::Suppression {
                reason: entry.reason.clone(),
                loc: crate::load::source::Loc {
                    file: index,
                    line: entry.line,
                    column: 1,
                    end_line: entry.line,
                    end_column: 1,
                    span: crate::load::yaml::Span::new(0, 0),
                },
                per_path: true,
            });
        }
    }
}

/// `path` with `.` and `..` components resolved by name (the files need not exist).
fn lexical(path: &std::path::Path) -> std::path::PathBuf {
    let mut out = std::path::PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Whether a rule id is named by a select/ignore list (`policy:*` names every policy).
fn named(list: &[String], rule: &str) -> bool {
    let prefix = crate::lint::kyverno::report::PREFIX;
    list.iter()
        .any(|id| id == rule || (id == "policy:*" && rule.starts_with(prefix)))
}

/// Counts errors and warnings again; suppressed findings count in neither.
pub fn recount(outcome: &mut Outcome) {
    let counted = |severity: Severity| {
        outcome
            .findings
            .iter()
            .filter(|f| f.severity == severity && f.suppressed.is_none())
            .count()
    };
    outcome.summary.errors = counted(Severity::Error);
    outcome.summary.warnings = counted(Severity::Warning);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_win_over_the_file_key_by_key() {
        let file = Config {
            select: Some(vec!["job-ttl".into()]),
            ignore: Some(vec!["hook-wave".into()]),
            severity: vec![("job-ttl".into(), Severity::Warning)],
            fail_on: Some(Severity::Warning),
            credentials_image: Some("from-file".into()),
            exclude: Some(vec!["charts".into()]),
            pragma_everywhere: Some(true),
            ..Config::default()
        };
        let merged = Settings::merge(
            Some(file.clone()),
            Flags {
                ignore: Some(vec!["job-seccomp".into()]),
                fail_on: Some(Severity::Error),
                ..Flags::default()
            },
        );
        assert_eq!(merged.select, ["job-ttl"], "the file's, no flag given");
        assert_eq!(
            merged.ignore,
            ["job-seccomp"],
            "the flag replaces the file's list"
        );
        assert_eq!(merged.fail_on, Severity::Error);
        assert_eq!(merged.credentials_image.as_deref(), Some("from-file"));
        assert_eq!(merged.exclude, ["charts"]);
        assert!(merged.inline_ignores);
        assert!(merged.pragma_everywhere, "the file's scope, no flag for it");
        let strict = Settings::merge(
            Some(file),
            Flags {
                no_inline_ignores: true,
                ..Flags::default()
            },
        );
        assert!(!strict.inline_ignores);
        assert_eq!(Settings::merge(None, Flags::default()), Settings::default());
    }
}
