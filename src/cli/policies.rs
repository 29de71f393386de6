//! `credlint policies`: the Kyverno policies of the object rules, printed as one YAML stream or
//! written under a folder with a `kustomization.yaml` and, for the default flavor, a Kyverno CLI
//! test per policy whose resources come from the rule's fixtures (`kyverno test DIR`).
//!
//! The tests say what the linter says: an object of a `bad-*` fixture on which `credlint check`
//! reports the rule fails, every other object the policy selects passes (or errors, where the
//! policy cannot evaluate on it, as Kyverno would report). Objects the API server would refuse
//! (a `schema` finding) are left out: no policy ever sees them.

use super::settings::{Flags, Settings};
use super::usage_error;
use crate::exec::Executor;
use crate::lint::Options as EngineOptions;
use crate::lint::catalog::Catalog;
use crate::lint::kyverno::{PolicyFile, PolicySet, Verdict};
use crate::load::input;
use crate::load::yaml::{self, Parsed, Span};
use crate::model::object;
use crate::policy::{self, Flavor, Generated, MARKER, Y, emit};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FlavorArg {
    /// Kyverno ValidatingPolicy, policies.kyverno.io/v1 (Kyverno 1.17+).
    #[value(name = "validatingpolicy")]
    ValidatingPolicy,
    /// Kyverno ClusterPolicy with validate.cel (Kyverno 1.13 to 1.16).
    #[value(name = "clusterpolicy")]
    ClusterPolicy,
    /// Native ValidatingAdmissionPolicy and binding (Kubernetes 1.30+, no Kyverno).
    #[value(name = "vap")]
    Vap,
}

#[derive(clap::Args, Debug)]
pub struct PoliciesArgs {
    /// Write the policies, a kustomization.yaml and Kyverno CLI tests under DIR instead of
    /// printing the policies.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Exit 1, naming the stale files, when DIR (--out, default `policies`) differs from what the
    /// rules generate.
    #[arg(long)]
    pub check: bool,
    #[arg(long, value_enum, default_value_t = FlavorArg::ValidatingPolicy)]
    pub flavor: FlavorArg,
    /// Audit instead of deny (validationActions [Audit], failureAction Audit).
    #[arg(long)]
    pub audit: bool,
    /// The CREDENTIALS_IMAGE the Job must run, baked into the `credentialsImage` variable.
    #[arg(long, value_name = "REF")]
    pub credentials_image: Option<String>,
    /// Fixtures the Kyverno CLI tests are written from (default: `fixtures` when it exists).
    #[arg(long, value_name = "DIR")]
    pub fixtures: Option<PathBuf>,
    /// Read settings from FILE instead of the nearest credlint.toml (as `check` does: its
    /// credentials-image, [rules] select and ignore, and [rules.severity]).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Read no credlint.toml.
    #[arg(long, conflicts_with = "config")]
    pub no_config: bool,
}

impl PoliciesArgs {
    /// The options from the flags and the settings (which hold `--credentials-image` already,
    /// merged over the file's by [`Settings::resolve`]).
    pub fn options_with(&self, settings: &Settings) -> policy::Options {
        policy::Options {
            flavor: policy_flavor(self.flavor),
            audit: self.audit,
            credentials_image: settings.credentials_image.clone().unwrap_or_default(),
            severity: settings.severity.clone(),
            exempt_namespaces: settings.exempt_namespaces.clone(),
        }
    }

    /// The command that writes what `--check` compared against: the same flags, `--out` made
    /// explicit, each value quoted for a POSIX shell where it needs it.
    pub fn regenerate_command(&self, dir: &Path) -> String {
        let mut words = vec![
            "credlint".to_string(),
            "policies".to_string(),
            "--out".to_string(),
            shell_word(&dir.to_string_lossy()),
        ];
        if self.flavor != FlavorArg::ValidatingPolicy {
            words.push("--flavor".into());
            words.push(policy_flavor(self.flavor).as_str().into());
        }
        if self.audit {
            words.push("--audit".into());
        }
        if let Some(image) = &self.credentials_image {
            words.push("--credentials-image".into());
            words.push(shell_word(image));
        }
        if let Some(fixtures) = &self.fixtures {
            words.push("--fixtures".into());
            words.push(shell_word(&fixtures.to_string_lossy()));
        }
        if let Some(config) = &self.config {
            words.push("--config".into());
            words.push(shell_word(&config.to_string_lossy()));
        }
        if self.no_config {
            words.push("--no-config".into());
        }
        words.join(" ")
    }
}

fn policy_flavor(flavor: FlavorArg) -> Flavor {
    match flavor {
        FlavorArg::ValidatingPolicy => Flavor::ValidatingPolicy,
        FlavorArg::ClusterPolicy => Flavor::ClusterPolicy,
        FlavorArg::Vap => Flavor::Vap,
    }
}

/// `word` as a POSIX shell reads it back: unchanged when it holds only characters no shell
/// treats specially, else in single quotes.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:@=,+%".contains(&b));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

pub fn run(args: PoliciesArgs) -> ExitCode {
    let flags = Flags {
        credentials_image: args.credentials_image.clone(),
        ..Flags::default()
    };
    let settings = match super::resolve_settings(args.config.as_deref(), args.no_config, flags) {
        Ok(settings) => settings,
        Err(code) => return code,
    };
    let options = args.options_with(&settings);
    let catalog = Catalog::get();
    if args.out.is_none() && !args.check {
        return super::print_out(&policy::stream(&generate(catalog, &options, &settings)));
    }
    let dir = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("policies"));
    let fixtures = match &args.fixtures {
        Some(f) if !f.is_dir() => {
            return usage_error(format!("{}: no such folder", f.display()));
        }
        Some(f) => Some(f.clone()),
        None => Some(PathBuf::from("fixtures")).filter(|f| f.is_dir()),
    };
    let files = match files_for(catalog, &options, &settings, fixtures.as_deref()) {
        Ok(files) => files,
        Err(e) => return usage_error(e),
    };
    if args.check {
        let stale = stale_files(&dir, &files);
        if stale.is_empty() {
            return ExitCode::SUCCESS;
        }
        for s in &stale {
            eprintln!("credlint: {s}");
        }
        eprintln!(
            "credlint: {} is not what the rules generate: run `{}`",
            dir.display(),
            args.regenerate_command(&dir)
        );
        return ExitCode::from(1);
    }
    match write(&dir, &files) {
        Ok(summary) => {
            eprintln!("credlint: {summary}");
            ExitCode::SUCCESS
        }
        Err(e) => usage_error(e),
    }
}

/// The policies of the rules the settings keep (`[rules] select` and `ignore`).
fn generate(catalog: &Catalog, options: &policy::Options, settings: &Settings) -> Vec<Generated> {
    let mut generated = policy::generate(catalog, options);
    generated.retain(|g| settings.keeps(&g.rule));
    generated
}

/// Every file `--out` writes, by path relative to the folder, sorted.
pub fn files(
    catalog: &Catalog,
    options: &policy::Options,
    fixtures: Option<&Path>,
) -> Result<BTreeMap<String, String>, String> {
    files_for(catalog, options, &Settings::default(), fixtures)
}

/// [`files`] for the rules the settings keep.
pub fn files_for(
    catalog: &Catalog,
    options: &policy::Options,
    settings: &Settings,
    fixtures: Option<&Path>,
) -> Result<BTreeMap<String, String>, String> {
    let generated = generate(catalog, options, settings);
    let mut out = BTreeMap::new();
    out.insert(
        "kustomization.yaml".to_string(),
        policy::kustomization(&generated),
    );
    for g in &generated {
        let text = policy::file_text(g);
        if let (Some(fixtures), Flavor::ValidatingPolicy) = (fixtures, options.flavor)
            && let Some(test) = kyverno_test(g, &text, &fixtures.join(&g.rule), options)?
        {
            out.insert(
                format!("{}/.kyverno-test/kyverno-test.yaml", g.rule),
                test.test,
            );
            out.insert(
                format!("{}/.kyverno-test/resources.yaml", g.rule),
                test.resources,
            );
        }
        out.insert(policy::policy_path(&g.rule), text);
    }
    Ok(out)
}

/// What stands where `--out` writes a file, read once.
#[derive(Debug, PartialEq, Eq)]
enum OnDisk {
    Missing,
    /// Exactly the text to write.
    Same,
    /// Another text that starts with the generated-file marker: an earlier run's.
    Generated,
    /// Anything else: a file credlint did not write, a FIFO, a device, one it cannot read.
    Foreign(String),
}

/// Reads what is at `full` the way the inputs are read: a regular file only (a FIFO is never
/// opened to wait for a writer), bounded, once.
fn on_disk(full: &Path, text: &str) -> OnDisk {
    if std::fs::symlink_metadata(full).is_err() {
        return OnDisk::Missing;
    }
    match input::read_bounded(full, input::MAX_INPUT_BYTES) {
        Ok(bytes) if bytes == text.as_bytes() => OnDisk::Same,
        Ok(bytes) if bytes.starts_with(MARKER.as_bytes()) => OnDisk::Generated,
        Ok(_) => OnDisk::Foreign("its first line is not the generated-file marker".into()),
        Err(e) => OnDisk::Foreign(e),
    }
}

/// Files of `dir` that differ from `files`, are missing, or were generated and are no longer.
pub fn stale_files(dir: &Path, files: &BTreeMap<String, String>) -> Vec<String> {
    let mut stale = Vec::new();
    for (path, text) in files {
        let full = dir.join(path);
        match on_disk(&full, text) {
            OnDisk::Same => {}
            OnDisk::Missing => stale.push(format!("{} is missing", full.display())),
            OnDisk::Generated | OnDisk::Foreign(_) => stale.push(format!(
                "{} differs from what the rules generate",
                full.display()
            )),
        }
    }
    for path in generated_on_disk(dir) {
        if !files.contains_key(&path) {
            stale.push(format!(
                "{} was generated by credlint but no rule generates it any more",
                dir.join(&path).display()
            ));
        }
    }
    stale
}

/// Writes each changed file atomically (a temporary file renamed over it) and removes files an
/// earlier run generated that no rule generates now; any other file is left alone. A file in
/// the way that credlint did not generate (no marker on its first line: a hand-written
/// kustomization.yaml, say) is never replaced: nothing is written and `Err` names them all.
pub fn write(dir: &Path, files: &BTreeMap<String, String>) -> Result<String, String> {
    let linked: Vec<String> = files
        .keys()
        .filter_map(|path| linked_on_the_way(dir, path))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    if !linked.is_empty() {
        return Err(format!(
            "not writing through a symbolic link (it could point outside the folder): {}",
            linked.join(", ")
        ));
    }
    let found: Vec<(PathBuf, &String, OnDisk)> = files
        .iter()
        .map(|(path, text)| {
            let full = dir.join(path);
            let state = on_disk(&full, text);
            (full, text, state)
        })
        .collect();
    let foreign: Vec<String> = found
        .iter()
        .filter_map(|(full, _, state)| match state {
            OnDisk::Foreign(why) => Some(format!("{} ({why})", full.display())),
            _ => None,
        })
        .collect();
    if !foreign.is_empty() {
        return Err(format!(
            "not replacing what credlint did not generate (a generated file's first line is \
             \"{MARKER}\"): {}; move them away or choose another --out folder",
            foreign.join(", ")
        ));
    }
    let (mut written, mut unchanged, mut removed) = (0, 0, 0);
    for (full, text, state) in &found {
        if *state == OnDisk::Same {
            unchanged += 1;
            continue;
        }
        write_atomic(full, text).map_err(|e| format!("{}: {e}", full.display()))?;
        written += 1;
    }
    for path in generated_on_disk(dir) {
        if !files.contains_key(&path) {
            let full = dir.join(&path);
            std::fs::remove_file(&full).map_err(|e| format!("{}: {e}", full.display()))?;
            removed += 1;
        }
    }
    Ok(format!(
        "{}: {written} written, {unchanged} unchanged, {removed} removed",
        dir.display()
    ))
}

/// The first of `dir` and the folders and file of `relative` under it that is a symbolic link
/// (or a folder's place that holds something else), if any: `--out` writes none of them.
fn linked_on_the_way(dir: &Path, relative: &str) -> Option<String> {
    let mut at = dir.to_path_buf();
    let parts: Vec<&str> = relative.split('/').collect();
    for i in 0..=parts.len() {
        if i > 0 {
            at.push(parts[i - 1]);
        }
        match std::fs::symlink_metadata(&at) {
            Err(_) => return None,
            Ok(meta) if meta.file_type().is_symlink() => {
                return Some(format!("{} is a symbolic link", at.display()));
            }
            Ok(meta) if i < parts.len() && !meta.is_dir() => {
                return Some(format!("{} is not a folder", at.display()));
            }
            Ok(_) => {}
        }
    }
    None
}

/// Writes `text` to a new temporary file beside `path` (an unpredictable name, created with
/// `O_EXCL | O_NOFOLLOW`: never another file, never through a link planted under that name)
/// and renames it over `path`.
fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let parent = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut random = [0u8; 12];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut random)
        .map_err(|_| std::io::Error::other("no random bytes from the system"))?;
    let temp = parent.join(format!(".{name}.{}.tmp", crate::common::hex(&random)));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&temp)?;
    file.write_all(text.as_bytes())
        .and_then(|_| std::fs::rename(&temp, path))
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&temp);
        })
}

/// YAML files under `dir` (hidden folders included) that start with the generated-file marker.
fn generated_on_disk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                if entry.file_name() != ".git" {
                    pending.push(path);
                }
            } else if kind.is_file()
                && path.extension().is_some_and(|e| e == "yaml")
                && starts_with_marker(&path)
                && let Ok(relative) = path.strip_prefix(dir)
            {
                let parts: Vec<String> = relative
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                out.push(parts.join("/"));
            }
        }
    }
    out.sort();
    out
}

fn starts_with_marker(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 64];
    let Ok(mut file) = std::fs::File::open(path) else {
        return false;
    };
    let n = file.read(&mut head).unwrap_or(0);
    head[..n].starts_with(MARKER.as_bytes())
}

/// A Kyverno CLI test and the resources it applies the policy to.
pub struct KyvernoTest {
    pub test: String,
    pub resources: String,
}

/// What a fixture object is expected to give.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Expected {
    pub result: &'static str,
    pub kind: String,
    /// `namespace/name`, or the name of a cluster-scoped object.
    pub resource: String,
}

/// An object of a fixture, with the linter's and the policy's view of it.
pub struct FixtureObject {
    /// `fixtures/<rule>/<entry>` as given.
    pub entry: PathBuf,
    pub file: String,
    pub span: Span,
    pub root: Y,
    pub kind: String,
    pub name: Option<String>,
    pub namespaced: bool,
    /// Rules `credlint check` reports on this object (suppressed findings left out).
    pub rules: Vec<String>,
}

impl FixtureObject {
    /// The API server refuses it before any policy sees it.
    pub fn refused(&self) -> bool {
        self.rules
            .iter()
            .any(|r| r == "schema" || r == "yaml-syntax")
    }
}

/// The `bad-*` and `good-*` entries of a fixture folder, sorted.
pub fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|it| {
            it.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    let name = p.file_name().unwrap_or_default().to_string_lossy();
                    name.starts_with("bad-") || name.starts_with("good-")
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// Lints `paths` as one run and returns every object with the rules reported on it.
pub fn lint_objects(engine: &Executor, paths: &[PathBuf]) -> Vec<FixtureObject> {
    let args: Vec<String> = paths
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let inputs = input::collect(&args, &[]).files;
    let mut outcome = engine.run(&inputs, Vec::new());
    // The generated policies honour `credlint.io/ignore` as `check` does: a suppressed finding
    // is no denial.
    crate::cli::suppress::apply(
        &mut outcome,
        crate::cli::suppress::Options {
            judge: false,
            not_run: &[],
        },
    );
    let mut out = Vec::new();
    for (index, file) in inputs.iter().enumerate() {
        let Ok(bytes) = input::read(file) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        let entry = paths
            .iter()
            .find(|p| Path::new(&file.display).starts_with(p))
            .cloned()
            .unwrap_or_default();
        for parsed in yaml::parse(&text) {
            let Parsed::Document(doc) = parsed else {
                continue;
            };
            let mut objects = Vec::new();
            object::objects(&doc.root, &mut objects);
            for obj in objects {
                let span = obj.root.span;
                let mut rules: Vec<String> = outcome
                    .findings
                    .iter()
                    .filter(|f| {
                        f.suppressed.is_none()
                            && f.loc.file == index
                            && f.loc.span.start >= span.start
                            && f.loc.span.end <= span.end
                    })
                    .map(|f| f.rule.clone())
                    .collect();
                rules.sort();
                rules.dedup();
                let group = obj.api_version.rsplit_once('/').map_or("", |(g, _)| g);
                out.push(FixtureObject {
                    entry: entry.clone(),
                    file: file.display.clone(),
                    span,
                    root: Y::from_node(obj.root),
                    kind: obj.kind.to_string(),
                    name: obj.name.map(str::to_string),
                    namespaced: crate::lint::kyverno::namespaced(
                        group,
                        obj.kind,
                        obj.namespace.is_some(),
                    ),
                    rules,
                });
            }
        }
    }
    out
}

/// The engine options a fixture folder is linted with when tests are generated: the
/// generation's credentials image (the policies bake that one in), not the folder's own.
fn engine_options(options: &policy::Options) -> EngineOptions {
    EngineOptions {
        credentials_image: Some(options.credentials_image.clone()).filter(|i| !i.is_empty()),
        ..EngineOptions::default()
    }
}

fn kyverno_test(
    generated: &Generated,
    policy_text: &str,
    fixtures: &Path,
    options: &policy::Options,
) -> Result<Option<KyvernoTest>, String> {
    let entries = entries(fixtures);
    if entries.is_empty() {
        return Ok(None);
    }
    let set = PolicySet::new(vec![PolicyFile {
        display: policy::policy_path(&generated.rule),
        text: policy_text.to_string(),
    }]);
    if let Some(u) = set.unsupported.first() {
        return Err(format!(
            "the generated policy {} cannot be evaluated: {}",
            generated.rule, u.reason
        ));
    }
    let engine = Executor::new(engine_options(options))?;
    let mut used: Vec<(String, String, String)> = Vec::new();
    let mut expected = Vec::new();
    let mut resources = Vec::new();
    for entry in &entries {
        let stem = entry
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        for obj in lint_objects(&engine, std::slice::from_ref(entry)) {
            let Some(name) = obj.name.clone().filter(|n| !n.is_empty()) else {
                continue;
            };
            if obj.refused() {
                continue;
            }
            let node_text = emit::document(&obj.root);
            let verdict = match yaml::parse(&node_text).into_iter().next() {
                Some(Parsed::Document(d)) => set.decide(0, &d.root),
                _ => continue,
            };
            let flagged = obj.rules.contains(&generated.rule);
            let result = match (&verdict, flagged) {
                // A member only the linter recognises (by its references): no policy selects it.
                (Verdict::NotMatched, _) => continue,
                (Verdict::Denied(d), true) if d.iter().all(|d| d.error) => "error",
                (_, true) => "fail",
                (Verdict::Denied(d), false) if d.iter().all(|d| d.error) => "error",
                _ => "pass",
            };
            // Fixtures repeat names (every entry holds the same bundle): each object gets a
            // namespace of its own, or a name of its own when it is cluster-scoped.
            let mut copy = obj.root.clone();
            let base = dns_label(&stem);
            let (namespace, name) = if obj.namespaced {
                let mut ns = base.clone();
                let mut n = 2;
                while used.contains(&(obj.kind.clone(), ns.clone(), name.clone())) {
                    ns = dns_label(&format!("{base}-{n}"));
                    n += 1;
                }
                (Some(ns), name.clone())
            } else {
                let mut unique = truncated(&format!("{base}-{name}"), 253);
                let mut n = 2;
                while used.contains(&(obj.kind.clone(), String::new(), unique.clone())) {
                    unique = truncated(&format!("{base}-{n}-{name}"), 253);
                    n += 1;
                }
                (None, unique)
            };
            if let Some(metadata) = copy.get_mut("metadata") {
                metadata.set("name", Y::str(&name));
                if let Some(ns) = &namespace {
                    metadata.set("namespace", Y::str(ns));
                }
            }
            used.push((
                obj.kind.clone(),
                namespace.clone().unwrap_or_default(),
                name.clone(),
            ));
            resources.push(copy);
            expected.push(Expected {
                result,
                kind: obj.kind.clone(),
                resource: match namespace {
                    Some(ns) => format!("{ns}/{name}"),
                    None => name,
                },
            });
        }
    }
    if expected.is_empty() {
        return Ok(None);
    }
    let mut groups: BTreeMap<(&str, &str), Vec<&str>> = BTreeMap::new();
    for e in &expected {
        groups
            .entry((e.result, e.kind.as_str()))
            .or_default()
            .push(e.resource.as_str());
    }
    let results: Vec<Y> = groups
        .into_iter()
        .map(|((result, kind), mut names)| {
            names.sort();
            Y::map([
                ("policy", Y::str(&generated.rule)),
                ("isValidatingPolicy", Y::Bool(true)),
                ("kind", Y::str(kind)),
                ("resources", Y::strs(names)),
                ("result", Y::str(result)),
            ])
        })
        .collect();
    let test = Y::map([
        ("apiVersion", Y::str("cli.kyverno.io/v1alpha1")),
        ("kind", Y::str("Test")),
        ("metadata", Y::map([("name", Y::str(&generated.rule))])),
        ("policies", Y::strs([format!("../{}.yaml", generated.rule)])),
        ("resources", Y::strs(["resources.yaml"])),
        ("results", Y::Seq(results)),
    ]);
    let header = format!(
        "{MARKER} from rules/{}.yaml and fixtures/{}/: do not edit.\n",
        generated.rule, generated.rule
    );
    let mut resources_text = header.clone();
    for (i, r) in resources.iter().enumerate() {
        if i > 0 {
            resources_text.push_str("---\n");
        }
        resources_text.push_str(&emit::document(r));
    }
    Ok(Some(KyvernoTest {
        test: format!("{header}{}", emit::document(&test)),
        resources: resources_text,
    }))
}

fn truncated(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

/// A DNS label (lowercase letters, digits and `-`, at most 63 characters) made from `text`.
fn dns_label(text: &str) -> String {
    let mut out: String = text
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    out.truncate(63);
    let out = out.trim_matches('-').to_string();
    if out.is_empty() {
        "fixture".into()
    } else {
        out
    }
}
