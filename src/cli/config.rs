//! `credlint.toml`: the settings a repository keeps beside its manifests. Found in the current
//! folder or the nearest parent that has one, or named with `--config`.
//!
//! ```toml
//! fail-on = "warning"                  # error (default) | warning
//! credentials-image = "registry.example/platform/credentials:1.5.0@sha256:..."
//! exclude = ["charts", "vendor/old"]   # folders not walked
//! exempt-namespaces = ["kube-system"]  # namespaces the generated policies leave alone
//!
//! [rules]
//! select = ["job-ttl", "role-forbidden-verb"]   # only these (default: all)
//! ignore = ["eso-store-unscoped"]               # not these
//!
//! [rules.severity]
//! job-ttl = "warning"
//! ```
//!
//! The file is input like any manifest: an unknown key, a wrong type or an unknown rule id is
//! an error naming the key and its line, never a panic and never silently ignored.

use crate::cli::suggest::closest;
use crate::lint::catalog::Catalog;
use crate::model::Severity;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use toml::Spanned;
use toml::de::{DeTable, DeValue};

pub const FILE_NAME: &str = "credlint.toml";

/// A namespace's name as the API server accepts it: an RFC 1123 label.
fn is_dns_label(name: &str) -> bool {
    let bytes = name.as_bytes();
    (1..=63).contains(&bytes.len())
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes[0] != b'-'
        && bytes[bytes.len() - 1] != b'-'
}

/// The settings as the file writes them; `None` where it says nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Config {
    pub select: Option<Vec<String>>,
    pub ignore: Option<Vec<String>>,
    /// Per-rule severity overrides, in file order.
    pub severity: Vec<(String, Severity)>,
    pub fail_on: Option<Severity>,
    pub credentials_image: Option<String>,
    pub exclude: Option<Vec<String>>,
    /// Namespaces the generated policies do not look at (`None`: the system namespaces).
    pub exempt_namespaces: Option<Vec<String>>,
    /// `[rules.pragma-misplaced] scope`: `Some(true)` for `"all"` (every file read),
    /// `Some(false)` for `"bundles"` (the files holding a bundle member, the default).
    pub pragma_everywhere: Option<bool>,
    /// `[[per-path]]`: findings accepted in the files some globs match.
    pub per_path: Vec<PerPath>,
    /// The file read and how messages name it (set by [`load`]).
    pub file: Option<(PathBuf, String)>,
}

/// One `[[per-path]]` entry: the rules whose findings are accepted in the files the globs
/// match (relative to the folder of credlint.toml), and why.
#[derive(Clone, Debug)]
pub struct PerPath {
    pub paths: Vec<String>,
    pub rules: Vec<String>,
    pub reason: String,
    /// The line of the entry's `[[per-path]]` header (1-based), where the report points.
    pub line: usize,
    pub globs: globset::GlobSet,
}

// The globs are made from `paths`: equal paths, equal globs.
impl PartialEq for PerPath {
    fn eq(&self, other: &Self) -> bool {
        (&self.paths, &self.rules, &self.reason, self.line)
            == (&other.paths, &other.rules, &other.reason, other.line)
    }
}

impl Eq for PerPath {}

/// One thing wrong with the file: `path:line: message`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub path: String,
    /// 1-based; `None` when the problem is the file as a whole.
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.path, self.message),
            None => write!(f, "{}: {}", self.path, self.message),
        }
    }
}

/// The nearest `credlint.toml` in `start` or one of its parents, up to the filesystem root.
/// Whatever stands under that name counts, a dangling link or a folder too: one that cannot be
/// read is an error (exit 2), never a run without the settings it holds. So is a folder on
/// the way that cannot be searched (`Err` names the place): whether it holds a config is not
/// known, and a run with other settings than the user wrote would pass silently.
pub fn find(start: &Path) -> Result<Option<PathBuf>, String> {
    for dir in start.ancestors() {
        let candidate = dir.join(FILE_NAME);
        match std::fs::symlink_metadata(&candidate) {
            Ok(_) => return Ok(Some(candidate)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(format!(
                    "{}: cannot tell whether a {FILE_NAME} is there: {e} (name one with \
                     --config, or --no-config where the command has it)",
                    dir.display()
                ));
            }
        }
    }
    Ok(None)
}

/// The largest config file read: far above any real one, and a device named with `--config`
/// cannot fill the memory.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Reads and checks a config file; `shown` is the path as messages name it.
pub fn load(path: &Path, shown: &str) -> Result<Config, Vec<ConfigError>> {
    let whole = |message: String| {
        vec![ConfigError {
            path: shown.to_string(),
            line: None,
            message,
        }]
    };
    let bytes = crate::load::input::read_bounded(path, MAX_CONFIG_BYTES).map_err(whole)?;
    let text = String::from_utf8(bytes).map_err(|_| whole("the file is not UTF-8".into()))?;
    let mut config = parse(shown, &text)?;
    config.file = Some((path.to_path_buf(), shown.to_string()));
    Ok(config)
}

const TOP_KEYS: &[&str] = &[
    "rules",
    "fail-on",
    "credentials-image",
    "exclude",
    "exempt-namespaces",
    "per-path",
];
const PER_PATH_KEYS: &[&str] = &["paths", "ignore", "reason"];
const RULES_KEYS: &[&str] = &["select", "ignore", "severity"];

/// One setting of a rule: its key, the values it takes (the first is the default), and what it
/// does.
pub type RuleSetting = (&'static str, &'static [&'static str], &'static str);

/// The rules that take settings of their own, in a `[rules.<id>]` table: each key with the
/// values it takes (the first is the default) and what it does.
pub const RULE_SETTINGS: &[(&str, &[RuleSetting])] = &[(
    "pragma-misplaced",
    &[(
        "scope",
        &["bundles", "all"],
        "Which files are searched for misplaced pragmas: those holding a bundle member \
         (bundles, the default) or every file read (all).",
    )],
)];

/// The keys of the top level and of `[rules]` (besides the `[rules.<id>]` tables), for the
/// schema's test.
#[cfg(test)]
pub fn known_keys() -> [&'static [&'static str]; 3] {
    [TOP_KEYS, RULES_KEYS, PER_PATH_KEYS]
}

/// Parses the text of a config file; every problem found is returned, in file order.
pub fn parse(shown: &str, text: &str) -> Result<Config, Vec<ConfigError>> {
    let mut reader = Reader {
        shown,
        text,
        errors: Vec::new(),
        catalog: Catalog::get(),
    };
    let root = match DeTable::parse(text) {
        Ok(root) => root,
        Err(e) => {
            let line = e.span().map(|s| reader.line(s.start));
            return Err(vec![ConfigError {
                path: shown.to_string(),
                line,
                message: format!("not valid TOML: {}", e.message().trim_end()),
            }]);
        }
    };
    let mut config = Config::default();
    for (key, value) in root.get_ref().iter() {
        match key.get_ref().as_ref() {
            "rules" => reader.rules(value, &mut config),
            "fail-on" => config.fail_on = reader.severity(key, value),
            "credentials-image" => {
                config.credentials_image = reader.string(key, value);
                if let Some(problem) = config.credentials_image.as_deref().and_then(image_problem) {
                    reader.error(value.span(), format!("`credentials-image` {problem}"));
                    config.credentials_image = None;
                }
            }
            "exclude" => config.exclude = reader.exclude(key, value),
            "exempt-namespaces" => config.exempt_namespaces = reader.namespaces(key, value),
            "per-path" => config.per_path = reader.per_path(value),
            _ => reader.unknown(key, TOP_KEYS, None),
        }
    }
    if reader.errors.is_empty() {
        Ok(config)
    } else {
        reader.errors.sort_by_key(|e| e.line);
        Err(reader.errors)
    }
}

/// What is wrong with a configured credentials image, if anything: it must be pinned by digest
/// (`name@sha256:<64 lowercase hex>`), since every Job is compared with it and must itself be
/// pinned (`job-image-pinned`); an unpinned one would fail every Job instead of being refused.
pub fn image_problem(image: &str) -> Option<String> {
    static PINNED: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(&format!("^{IMAGE_NAME}{IMAGE_DIGEST}$")).expect("a valid pattern")
    });
    if !image.contains('@') {
        return Some(format!(
            "must be pinned by digest (`name@sha256:<64 hex>`): `{image}` has no digest"
        ));
    }
    (!PINNED.is_match(image))
        .then(|| format!("must be `name@sha256:<64 lowercase hex>`: `{image}` is malformed"))
}

/// A credentials image, as a pattern in two parts: the name (no `@`, no space) and the digest
/// it is pinned by. The one source of the form: [`image_problem`], the JSON Schema of
/// credlint.toml (`^NAME DIGEST$`) and, checked by a test, `job-image-pinned`'s CEL, which
/// matches the digest at the end of each container's image (`matches('DIGEST$')`).
pub const IMAGE_NAME: &str = "[^@\\s]+";
pub const IMAGE_DIGEST: &str = "@sha256:[0-9a-f]{64}";

type Key<'i> = Spanned<std::borrow::Cow<'i, str>>;
type Value<'i> = Spanned<DeValue<'i>>;

struct Reader<'t> {
    shown: &'t str,
    text: &'t str,
    errors: Vec<ConfigError>,
    catalog: &'static Catalog,
}

impl Reader<'_> {
    fn line(&self, offset: usize) -> usize {
        let offset = offset.min(self.text.len());
        self.text.as_bytes()[..offset]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    }

    fn error(&mut self, span: Range<usize>, message: String) {
        let line = self.line(span.start);
        self.errors.push(ConfigError {
            path: self.shown.to_string(),
            line: Some(line),
            message,
        });
    }

    fn unknown(&mut self, key: &Key, known: &[&'static str], table: Option<&str>) {
        let name = key.get_ref().as_ref();
        let within = table.map_or(String::new(), |t| format!(" in [{t}]"));
        let hint = closest(name, known.iter().copied())
            .map_or(String::new(), |c| format!(" (did you mean `{c}`?)"));
        self.error(key.span(), format!("unknown key `{name}`{within}{hint}"));
    }

    fn rules(&mut self, value: &Value, config: &mut Config) {
        let Some(table) = value.get_ref().as_table() else {
            self.wrong_type("rules", value, "a table ([rules])");
            return;
        };
        for (key, value) in table.iter() {
            match key.get_ref().as_ref() {
                "select" => config.select = self.rule_ids(key, value),
                "ignore" => config.ignore = self.rule_ids(key, value),
                "severity" => config.severity = self.severities(value),
                id if RULE_SETTINGS.iter().any(|(rule, _)| *rule == id) => {
                    self.rule_settings(key, value, config)
                }
                id if self.catalog.rule(id).is_some() => {
                    let with: Vec<&str> = RULE_SETTINGS.iter().map(|(r, _)| *r).collect();
                    self.error(
                        key.span(),
                        format!(
                            "the rule `{id}` takes no settings in [rules.{id}] (only {} {})",
                            with.join(", "),
                            if with.len() == 1 { "does" } else { "do" }
                        ),
                    );
                }
                _ => self.unknown(key, RULES_KEYS, Some("rules")),
            }
        }
    }

    /// `[[per-path]]` entries: `paths` (globs), `ignore` (rule ids) and `reason`, all required.
    fn per_path(&mut self, value: &Value) -> Vec<PerPath> {
        let Some(items) = value.get_ref().as_array() else {
            self.wrong_type("per-path", value, "a list of tables ([[per-path]])");
            return Vec::new();
        };
        let mut out = Vec::new();
        for item in items.iter() {
            let Some(table) = item.get_ref().as_table() else {
                self.wrong_type("per-path", item, "a list of tables ([[per-path]])");
                continue;
            };
            // The span of an entry of an array of tables is its `[[per-path]]` header (that of
            // an inline table, the table): where the report points.
            let line = self.line(item.span().start);
            let (mut paths, mut rules, mut reason) = (None, None, None);
            for (key, value) in table.iter() {
                match key.get_ref().as_ref() {
                    "paths" => paths = self.globs(key, value),
                    "ignore" => rules = self.rule_ids(key, value),
                    "reason" => {
                        reason = self.string(key, value);
                        if reason.as_deref().is_some_and(|r| r.trim().is_empty()) {
                            self.error(
                                value.span(),
                                "`reason` is empty: say why the findings are acceptable".into(),
                            );
                        }
                    }
                    _ => self.unknown(key, PER_PATH_KEYS, Some("[per-path]")),
                }
            }
            let missing: Vec<&str> = [
                ("paths", paths.is_none()),
                ("ignore", rules.is_none()),
                ("reason", reason.is_none()),
            ]
            .into_iter()
            .filter_map(|(k, m)| m.then_some(k))
            .collect();
            if !missing.is_empty() {
                self.error(
                    item.span(),
                    format!("a [[per-path]] entry needs {}", missing.join(", ")),
                );
                continue;
            }
            let (Some((paths, globs)), Some(rules), Some(reason)) = (paths, rules, reason) else {
                continue;
            };
            out.push(PerPath {
                paths,
                rules,
                reason: reason.trim().to_string(),
                line,
                globs,
            });
        }
        out
    }

    /// `paths`: a non-empty list of globs (`*` within a folder, `**` across folders).
    fn globs(&mut self, key: &Key, value: &Value) -> Option<(Vec<String>, globset::GlobSet)> {
        let paths = self.strings(key, value, "glob")?;
        if paths.is_empty() {
            self.error(
                value.span(),
                "`paths` is empty: name the files, e.g. [\"charts/legacy/**\"]".into(),
            );
            return None;
        }
        let mut set = globset::GlobSetBuilder::new();
        for (path, item) in paths
            .iter()
            .zip(value.get_ref().as_array().into_iter().flatten())
        {
            match globset::GlobBuilder::new(path.trim_start_matches("./"))
                .literal_separator(true)
                .build()
            {
                Ok(glob) => {
                    set.add(glob);
                }
                Err(e) => self.error(item.span(), format!("`{path}` is not a glob: {}", e.kind())),
            }
        }
        set.build().ok().map(|set| (paths, set))
    }

    /// `[rules.<id>]`: the settings a rule takes (`RULE_SETTINGS`).
    fn rule_settings(&mut self, key: &Key, value: &Value, config: &mut Config) {
        let id = key.get_ref().as_ref();
        let table_name = format!("rules.{id}");
        let Some(table) = value.get_ref().as_table() else {
            self.wrong_type(id, value, &format!("a table ([{table_name}])"));
            return;
        };
        let known = RULE_SETTINGS
            .iter()
            .find(|(rule, _)| *rule == id)
            .map_or(&[][..], |(_, keys)| *keys);
        for (key, value) in table.iter() {
            let name = key.get_ref().as_ref();
            let Some((_, values, _)) = known.iter().find(|(k, _, _)| *k == name) else {
                let names: Vec<&'static str> = known.iter().map(|(k, _, _)| *k).collect();
                self.unknown(key, &names, Some(&table_name));
                continue;
            };
            let chosen = value.get_ref().as_str().filter(|v| values.contains(v));
            match (id, name, chosen) {
                ("pragma-misplaced", "scope", Some(v)) => {
                    config.pragma_everywhere = Some(v == "all");
                }
                // A setting RULE_SETTINGS declares but nothing here applies: said, never
                // dropped in silence (the test below fails on it first).
                (_, _, Some(_)) => self.error(
                    value.span(),
                    format!("`{name}` of [{table_name}] is not applied by this credlint"),
                ),
                (_, _, None) => {
                    let expected: Vec<String> = values.iter().map(|v| format!("\"{v}\"")).collect();
                    self.wrong_type(name, value, &expected.join(" or "));
                }
            }
        }
    }

    fn severities(&mut self, value: &Value) -> Vec<(String, Severity)> {
        let Some(table) = value.get_ref().as_table() else {
            self.wrong_type(
                "severity",
                value,
                "a table of rule ids ([rules.severity] job-ttl = \"warning\")",
            );
            return Vec::new();
        };
        let mut entries: Vec<(&Key, &Value)> = table.iter().collect();
        entries.sort_by_key(|(key, _)| key.span().start);
        let mut out = Vec::new();
        for (key, value) in entries {
            let id = key.get_ref().as_ref();
            if !self.known_rule(id, key.span()) {
                continue;
            }
            if let Some(severity) = self.severity(key, value) {
                out.push((id.to_string(), severity));
            }
        }
        out
    }

    /// A catalog rule, or `policy:<name>` (a `check --policy` policy, `policy:*` for all).
    fn known_rule(&mut self, id: &str, span: Range<usize>) -> bool {
        let policy = id
            .strip_prefix(crate::lint::kyverno::report::PREFIX)
            .is_some_and(|name| !name.is_empty());
        if self.catalog.rule(id).is_some() || policy {
            return true;
        }
        let hint = crate::cli::suggest::unknown_rule_hint(id, self.catalog);
        self.error(span, format!("unknown rule `{id}` ({hint})"));
        false
    }

    fn rule_ids(&mut self, key: &Key, value: &Value) -> Option<Vec<String>> {
        let Some(items) = value.get_ref().as_array() else {
            self.wrong_type(key.get_ref(), value, "a list of rule ids");
            return None;
        };
        let mut ids = Vec::new();
        for item in items.iter() {
            match item.get_ref().as_str() {
                Some(id) if self.known_rule(id, item.span()) => ids.push(id.to_string()),
                Some(_) => {}
                None => self.wrong_type(key.get_ref(), item, "a list of rule ids (strings)"),
            }
        }
        Some(ids)
    }

    /// A list of non-empty strings, each a `what` (in the message for an empty one).
    fn strings(&mut self, key: &Key, value: &Value, what: &str) -> Option<Vec<String>> {
        let Some(items) = value.get_ref().as_array() else {
            self.wrong_type(key.get_ref(), value, "a list of strings");
            return None;
        };
        let mut out = Vec::new();
        for item in items.iter() {
            match item.get_ref().as_str() {
                Some(s) if !s.trim().is_empty() => out.push(s.to_string()),
                Some(_) => self.error(
                    item.span(),
                    format!("`{}` holds an empty {what}", key.get_ref()),
                ),
                None => self.wrong_type(key.get_ref(), item, "a list of strings"),
            }
        }
        Some(out)
    }

    /// `exclude`: folder names or paths; one naming the walked folder itself would skip
    /// everything, so it is refused as `--exclude` refuses it.
    fn exclude(&mut self, key: &Key, value: &Value) -> Option<Vec<String>> {
        let folders = self.strings(key, value, "folder name")?;
        let mut out = Vec::new();
        for (folder, item) in folders.into_iter().zip(
            value
                .get_ref()
                .as_array()
                .into_iter()
                .flatten()
                .filter(|i| i.get_ref().as_str().is_some_and(|s| !s.trim().is_empty())),
        ) {
            match crate::load::input::exclude_problem(&folder) {
                Some(problem) => self.error(item.span(), format!("`{}`: {problem}", key.get_ref())),
                None => out.push(folder),
            }
        }
        Some(out)
    }

    /// `exempt-namespaces`: namespace names (DNS labels), as the API server accepts them.
    fn namespaces(&mut self, key: &Key, value: &Value) -> Option<Vec<String>> {
        let names = self.strings(key, value, "namespace name")?;
        let items = value.get_ref().as_array().into_iter().flatten();
        let spans: Vec<_> = items
            .filter(|i| i.get_ref().as_str().is_some_and(|s| !s.trim().is_empty()))
            .map(|i| i.span())
            .collect();
        let mut out = Vec::new();
        for (name, span) in names.into_iter().zip(spans) {
            if is_dns_label(&name) {
                out.push(name);
            } else {
                self.error(
                    span,
                    format!(
                        "`{}`: `{name}` is no namespace name (lower-case letters, digits and \
                         `-`, at most 63, starting and ending with a letter or digit)",
                        key.get_ref()
                    ),
                );
            }
        }
        Some(out)
    }

    fn string(&mut self, key: &Key, value: &Value) -> Option<String> {
        match value.get_ref().as_str() {
            Some(s) => Some(s.to_string()),
            None => {
                self.wrong_type(key.get_ref(), value, "a string");
                None
            }
        }
    }

    fn severity(&mut self, key: &Key, value: &Value) -> Option<Severity> {
        match value.get_ref().as_str().map(Severity::parse) {
            Some(Some(severity)) => Some(severity),
            Some(None) | None => {
                self.wrong_type(key.get_ref(), value, "\"error\" or \"warning\"");
                None
            }
        }
    }

    fn wrong_type(&mut self, key: &str, value: &Value, expected: &str) {
        let found = match value.get_ref() {
            DeValue::String(s) => format!("the string {s:?}"),
            other => other.type_str().to_string(),
        };
        self.error(
            value.span(),
            format!("`{key}` must be {expected}, not {found}"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(text: &str) -> Vec<String> {
        parse("credlint.toml", text)
            .unwrap_err()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn exempt_namespaces_are_namespace_names() {
        let config = parse("x", "exempt-namespaces = [\"infra\", \"kube-system\"]\n").unwrap();
        assert_eq!(
            config.exempt_namespaces,
            Some(vec!["infra".to_string(), "kube-system".to_string()])
        );
        assert_eq!(
            parse("x", "exempt-namespaces = []\n")
                .unwrap()
                .exempt_namespaces,
            Some(Vec::new())
        );
        let e = errors("\nexempt-namespaces = [\"ok\", \"Kube_System\", \"-x\"]\n");
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(
            e[0].starts_with(
                "credlint.toml:2: `exempt-namespaces`: `Kube_System` is no namespace name"
            ),
            "{e:?}"
        );
        assert!(e[1].contains("`-x` is no namespace name"), "{e:?}");
    }

    #[test]
    fn a_full_file_is_read() {
        let config = parse(
            "credlint.toml",
            "fail-on = \"warning\"\ncredentials-image = \"img@sha256:0000000000000000000000000000000000000000000000000000000000000000\"\nexclude = [\"charts\"]\n\n\
             [rules]\nselect = [\"job-ttl\", \"job-seccomp\"]\nignore = [\"eso-store-unscoped\"]\n\n\
             [rules.severity]\njob-ttl = \"warning\"\nhook-wave = \"error\"\n",
        )
        .unwrap();
        assert_eq!(config.fail_on, Some(Severity::Warning));
        assert_eq!(
            config.credentials_image.as_deref(),
            Some("img@sha256:0000000000000000000000000000000000000000000000000000000000000000")
        );
        assert_eq!(config.exclude, Some(vec!["charts".to_string()]));
        assert_eq!(
            config.select,
            Some(vec!["job-ttl".to_string(), "job-seccomp".to_string()])
        );
        assert_eq!(config.ignore, Some(vec!["eso-store-unscoped".to_string()]));
        assert_eq!(
            config.severity,
            vec![
                ("job-ttl".to_string(), Severity::Warning),
                ("hook-wave".to_string(), Severity::Error)
            ]
        );
        assert_eq!(parse("x", "").unwrap(), Config::default());
    }

    #[test]
    fn unknown_keys_name_the_key_and_its_line() {
        assert_eq!(
            errors("\n[rules]\nslect = [\"job-ttl\"]\n"),
            ["credlint.toml:3: unknown key `slect` in [rules] (did you mean `select`?)"]
        );
        assert_eq!(
            errors("fail_on = \"error\"\n"),
            ["credlint.toml:1: unknown key `fail_on` (did you mean `fail-on`?)"]
        );
        assert_eq!(
            errors("colour = 1\n"),
            ["credlint.toml:1: unknown key `colour`"]
        );
    }

    #[test]
    fn wrong_types_and_unknown_rules_name_their_line() {
        assert_eq!(
            errors("fail-on = 3\n"),
            ["credlint.toml:1: `fail-on` must be \"error\" or \"warning\", not integer"]
        );
        assert_eq!(
            errors("fail-on = \"fatal\"\n"),
            [
                "credlint.toml:1: `fail-on` must be \"error\" or \"warning\", not the string \"fatal\""
            ]
        );
        assert_eq!(
            errors("[rules]\nselect = \"job-ttl\"\n"),
            ["credlint.toml:2: `select` must be a list of rule ids, not the string \"job-ttl\""]
        );
        assert_eq!(
            errors("[rules]\nignore = [\n  \"job-ttl\",\n  \"job-tll\",\n  4,\n]\n"),
            [
                "credlint.toml:4: unknown rule `job-tll` (did you mean `job-ttl`?)",
                "credlint.toml:5: `ignore` must be a list of rule ids (strings), not integer"
            ]
        );
        assert_eq!(
            errors("[rules.severity]\njob-ttl = \"info\"\nnope = \"error\"\n"),
            [
                "credlint.toml:2: `job-ttl` must be \"error\" or \"warning\", not the string \"info\"",
                "credlint.toml:3: unknown rule `nope` (see `credlint rules`)"
            ]
        );
        assert_eq!(
            errors("rules = 1\n"),
            ["credlint.toml:1: `rules` must be a table ([rules]), not integer"]
        );
        assert_eq!(
            errors("exclude = [\"\"]\n"),
            ["credlint.toml:1: `exclude` holds an empty folder name"]
        );
    }

    #[test]
    fn a_per_path_entry_points_at_its_header_indented_or_not() {
        let text = [
            "[[per-path]]",                           // 1
            "paths = [\"a/**\"]",                     // 2
            "ignore = [\"job-ttl\"]",                 // 3
            "reason = \"x\"",                         // 4
            "",                                       // 5
            "# legacy charts",                        // 6
            "  [[per-path]]",                         // 7
            "  paths = [\"b/**\"]  # [[not a header", // 8
            "  ignore = [\"job-ttl\"]",               // 9
            "  reason = \"y\"",                       // 10
            "\t[[per-path]]",                         // 11
            "\t# [[ no header: a comment",            // 12
            "\treason = \"z\"",                       // 13
            "\tpaths = [\"c/**\"]",                   // 14
            "\tignore = [\"job-ttl\"]",               // 15
        ]
        .join("\n");
        let config = parse("credlint.toml", &text).unwrap();
        let lines: Vec<usize> = config.per_path.iter().map(|p| p.line).collect();
        assert_eq!(lines, [1, 7, 11], "{text}");
    }

    #[test]
    fn the_image_form_is_one_pattern_for_the_file_the_schema_and_the_rule() {
        let hex = "0123456789abcdef".repeat(4);
        assert_eq!(
            image_problem(&format!("reg.example/creds@sha256:{hex}")),
            None
        );
        for bad in [
            "reg.example/creds:1.0".to_string(),
            format!("@sha256:{hex}"),
            format!("a b@sha256:{hex}"),
            format!("a@b@sha256:{hex}"),
            format!("reg/creds@sha256:{}", hex.to_uppercase()),
            format!("reg/creds@sha256:{}", &hex[1..]),
            format!("reg/creds@sha512:{hex}"),
            format!("reg/creds@sha256:{hex}\n"),
        ] {
            assert!(image_problem(&bad).is_some(), "{bad:?}");
        }
        let rule = Catalog::get().rule("job-image-pinned").unwrap();
        let cel = &rule.object.as_ref().unwrap().validations[0].expression;
        assert!(
            cel.contains(&format!("matches('{IMAGE_DIGEST}$')")),
            "rules/job-image-pinned.yaml matches the digest of IMAGE_DIGEST: {cel}"
        );
    }

    #[test]
    fn every_declared_rule_setting_is_applied() {
        for (rule, keys) in RULE_SETTINGS {
            for (key, values, _) in *keys {
                for value in *values {
                    let text = format!("[rules.{rule}]\n{key} = \"{value}\"\n");
                    let config = parse("credlint.toml", &text)
                        .unwrap_or_else(|e| panic!("{text}: {}", e[0].message));
                    assert_ne!(config, Config::default(), "{text} sets nothing");
                }
            }
        }
    }

    #[test]
    fn only_exclude_is_held_to_the_rules_of_folders_to_skip() {
        assert_eq!(
            errors("exclude = [\"./\"]\n"),
            [
                "credlint.toml:1: `exclude`: `./` names the walked folder itself, which would exclude every file"
            ]
        );
        let e = errors(
            "[[per-path]]\npaths = [\"\", \"./\"]\nignore = [\"job-ttl\"]\nreason = \"r\"\n",
        );
        assert_eq!(e, ["credlint.toml:2: `paths` holds an empty glob"]);
    }

    #[test]
    fn broken_toml_is_an_error_with_its_line_never_a_panic() {
        let e = errors("[rules]\nselect = [\"job-ttl\"\n");
        assert_eq!(e.len(), 1);
        assert!(e[0].starts_with("credlint.toml:"), "{e:?}");
        assert!(e[0].contains("not valid TOML"), "{e:?}");
        let e = errors("a = 1\na = 2\n");
        assert!(e[0].starts_with("credlint.toml:2: not valid TOML"), "{e:?}");
        for text in [
            "[",
            "\u{0}",
            "[[rules]]\nselect = 1\n",
            "rules.severity = 3",
            "x = \"\\u{110000}\"",
            "[rules]\nseverity = [1]\n",
        ] {
            let _ = parse("credlint.toml", text);
        }
        assert!(parse("credlint.toml", "[[rules]]\n").is_err());
    }

    #[test]
    fn every_cut_and_corruption_of_a_full_file_is_read_or_refused_never_a_panic() {
        let full = "fail-on = \"warning\"\ncredentials-image = \"img@sha256:00\"\n\
                    exclude = [\"charts\", 'vendor/old']\n[rules]\nselect = [\"job-ttl\"]\n\
                    ignore = [\"policy:x\"]\n[rules.severity]\njob-ttl = \"warning\" # é\n";
        let junk = [
            "\"", "[", "]", "=", "\n", ",", "\\", "{", "'''", "\u{0}", "é",
        ];
        for cut in (0..=full.len()).filter(|&i| full.is_char_boundary(i)) {
            let _ = parse("credlint.toml", &full[..cut]);
            for piece in junk {
                let mut text = full.to_string();
                text.insert_str(cut, piece);
                if let Err(errors) = parse("credlint.toml", &text) {
                    assert!(!errors.is_empty());
                    assert!(errors.iter().all(|e| e.line.is_none_or(|l| l >= 1)));
                }
            }
        }
    }

    #[test]
    fn the_nearest_file_upward_is_found() {
        // Removed when the test ends, passed or failed.
        let temp = crate::testkit::TempDir::new("credlint-config");
        let root = temp.to_path_buf();
        let deep = root.join("a/b");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(root.join(FILE_NAME), "").unwrap();
        assert_eq!(find(&deep), Ok(Some(root.join(FILE_NAME))));
        std::fs::write(root.join("a").join(FILE_NAME), "").unwrap();
        assert_eq!(find(&deep), Ok(Some(root.join("a").join(FILE_NAME))));
        // A place on the way that cannot be looked into (here a link loop: the same error
        // path as a folder without search permission, which root cannot be refused) is an
        // error naming it, not a skip to the config further up.
        let looped = root.join("a/loop");
        std::os::unix::fs::symlink("loop", &looped).unwrap();
        let err = find(&looped.join("sub")).unwrap_err();
        assert!(err.contains("loop") && err.contains("cannot tell"), "{err}");
        let _ = std::fs::remove_dir_all(&root);
    }
}
