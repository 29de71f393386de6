//! The command line: arguments in, exit code out (cli.md). 0: nothing at or above the fail-on
//! severity; 1: such findings; 2: the run could not do its job.
//!
//! Each command combines the stages below it: `check` runs the engine and a report format,
//! `simulate` and `policies` have a file each; the settings (credlint.toml and the flags),
//! suppressions, pre-commit narrowing and the rule documentation are here too, as no stage
//! below needs them.

pub mod config;
pub mod config_schema;
pub mod docs;
pub mod output;
pub mod policies;
pub mod precommit;
pub mod settings;
pub mod simulate;
pub mod suggest;
pub mod suppress;

use crate::exec::Executor;
use crate::lint::Options;
use crate::lint::catalog::Catalog;
use crate::load::input;
use crate::model::Severity;
use crate::model::outcome::{Memo, Outcome};
use crate::report::{self, Texts};
use clap::{CommandFactory, Parser, Subcommand, ValueEnum};
use settings::{Flags, Settings};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "credlint",
    // The version, and the commit it was built from where build.rs could tell.
    version = env!("CREDLINT_VERSION"),
    about = "Lints rendered Kubernetes manifests against the ADR-072 credentials-bundle contract"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Lint files and folders (default: the current folder; `-` reads standard input).
    #[command(after_help = EXIT_STATUS)]
    Check(CheckArgs),
    /// List the rule catalog.
    Rules {
        #[arg(long, value_enum, default_value_t = CatalogFormat::Text)]
        format: CatalogFormat,
    },
    /// Say what a rule checks, why (with the ADR point), and how to fix it.
    Explain {
        /// A rule id, e.g. role-forbidden-verb.
        #[arg(value_parser = RuleId, hide_possible_values = true)]
        id: String,
    },
    /// The Kyverno policies generated from the object rules.
    Policies(crate::cli::policies::PoliciesArgs),
    /// Run each bundle's create.py with the local python3 against a fake Kubernetes API server,
    /// in every scenario of ADR-072, and report what it does wrong.
    #[command(after_help = EXIT_STATUS)]
    Simulate(SimulateArgs),
    /// Print a JSON Schema of credlint.toml, for editors that validate and complete it (the
    /// same text as docs/credlint.schema.json).
    ConfigSchema,
    /// Print a shell completion script (rule ids complete after --select, --ignore and explain).
    #[command(long_about = None, after_help = COMPLETION_PATHS)]
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// The end of `check --help` and `simulate --help`: the exit codes, and the pages that ship.
const EXIT_STATUS: &str = "\
Exit status: 0 no finding at or above --fail-on; 1 such findings; 2 the run could not do its
job (bad usage, an unreadable path, nothing to lint).
Commands, exit codes and the JSON report: docs/cli.md; every flag: docs/usage.md; the rules:
docs/rules.md (or `credlint rules`, `credlint explain ID`).";

/// Where each shell looks for a completion script, for one user (no root needed). The one place
/// this is said: README.md and docs/ point here, and a test holds them to it.
pub const COMPLETION_PATHS: &str = "\
Install for one user (create the folder first where it does not exist; start a new shell
afterwards):
  bash:       credlint completions bash > ~/.local/share/bash-completion/completions/credlint
  zsh:        credlint completions zsh > ~/.zfunc/_credlint
              (with `fpath+=(~/.zfunc); autoload -U compinit; compinit` in ~/.zshrc)
  fish:       credlint completions fish > ~/.config/fish/completions/credlint.fish
  powershell: credlint completions powershell >> $PROFILE
  elvish:     credlint completions elvish >> ~/.config/elvish/rc.elv";

/// A rule id on the command line: any text is taken (unknown ids get credlint's own message,
/// with a suggestion, and `policy:<name>` ids come from --policy files), but the catalog's ids
/// are offered to the shell completion scripts.
#[derive(Clone, Copy, Debug)]
pub struct RuleId;

impl clap::builder::TypedValueParser for RuleId {
    type Value = String;

    fn parse_ref(
        &self,
        command: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        // `--select "a, b"`: the space after a comma is no part of the id.
        clap::builder::StringValueParser::new()
            .parse_ref(command, arg, value)
            .map(|id| id.trim().to_string())
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(Catalog::get().rules.iter().map(|r| {
            clap::builder::PossibleValue::new(r.id.as_str()).help(r.title.as_str())
        })))
    }
}

/// A list entry without the spaces around it (`--exclude "a, b"`).
fn trimmed(value: &str) -> Result<String, std::convert::Infallible> {
    Ok(value.trim().to_string())
}

/// Where the settings come from.
#[derive(clap::Args, Debug, Default)]
pub struct ConfigArgs {
    /// Read settings from FILE instead of the nearest credlint.toml (current folder, then its
    /// parents).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Read no credlint.toml.
    #[arg(long, conflicts_with = "config")]
    pub no_config: bool,
    /// Do not honour `credlint.io/ignore` annotations: every finding counts (a strict CI).
    #[arg(long)]
    pub no_inline_ignores: bool,
}

#[derive(clap::Args, Debug)]
pub struct SimulateArgs {
    /// Files and folders holding the bundles; `-` reads standard input.
    pub paths: Vec<PathBuf>,
    #[command(flatten)]
    pub output: output::OutputArgs,
    #[command(flatten)]
    pub config: ConfigArgs,
    /// The Python interpreter that runs the programs.
    #[arg(long, default_value = "python3")]
    pub python: std::path::PathBuf,
    /// Seconds after which one run of a program is stopped.
    #[arg(long, default_value_t = 20)]
    pub timeout: u64,
    /// Threads that read the bundles (default: one per core).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// The lowest severity that makes the run fail (exit 1) [default: error].
    #[arg(long, value_enum)]
    pub fail_on: Option<FailOn>,
    /// List suppressed findings in the text report, not only their number.
    #[arg(long)]
    pub show_suppressed: bool,
    /// Keep each bundle's verdict in DIR, and take it from there when nothing the simulation
    /// reads has changed [default: as `check`'s cache].
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Neither read nor write the cache: simulate every bundle afresh.
    #[arg(long, conflicts_with = "cache_dir")]
    pub no_cache: bool,
    /// Show bundles done of all on standard error: `auto` on a terminal once the run has
    /// lasted 2 seconds (not with --quiet), `always` a line per bundle, `never`.
    #[arg(long, value_enum, default_value_t = ProgressChoice::Auto, value_name = "WHEN")]
    pub progress: ProgressChoice,
    /// Run no program unless every layer of the pod's sandbox holds (namespaces, the pod's
    /// user, seccomp, Landlock, ...): exit 2 naming each missing layer and why.
    #[arg(long)]
    pub require_sandbox: bool,
}

/// `simulate --progress`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum ProgressChoice {
    /// On a terminal, once a run has lasted 2 seconds.
    #[default]
    Auto,
    /// Every bundle, from the first.
    Always,
    Never,
}

#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// Files and folders to lint; `-` reads standard input. With --pre-commit: the changed files.
    /// Any file name is taken, UTF-8 or not (shown with U+FFFD for the bytes that are not).
    pub paths: Vec<PathBuf>,
    #[command(flatten)]
    pub output: output::OutputArgs,
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Only these rules (comma-separated ids).
    #[arg(long, value_delimiter = ',', value_name = "ID,...", value_parser = RuleId, hide_possible_values = true)]
    pub select: Option<Vec<String>>,
    /// Not these rules (comma-separated ids).
    #[arg(long, value_delimiter = ',', value_name = "ID,...", value_parser = RuleId, hide_possible_values = true)]
    pub ignore: Option<Vec<String>>,
    /// The lowest severity that makes the run fail (exit 1) [default: error].
    #[arg(long, value_enum)]
    pub fail_on: Option<FailOn>,
    /// The CREDENTIALS_IMAGE of the versions table: the Job must run exactly this image.
    #[arg(long, value_name = "REF")]
    pub credentials_image: Option<String>,
    /// Kyverno ValidatingPolicy files or folders to apply as well (repeatable); each denial is a
    /// `policy:<name>` finding.
    #[arg(long = "policy", value_name = "PATH")]
    pub policies: Vec<PathBuf>,
    /// Threads that lint in parallel (default: one per core); the output is the same for any
    /// number.
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Folders not to walk (comma-separated; a name anywhere in the path, or a path from the
    /// folder walked).
    #[arg(long, value_delimiter = ',', value_name = "FOLDER,...", value_parser = trimmed)]
    pub exclude: Option<Vec<String>>,
    /// List suppressed findings in the text report, not only their number.
    #[arg(long)]
    pub show_suppressed: bool,
    /// For the pre-commit hook: lint the whole tree under the current folder, but report only
    /// what the given (changed) files touch: findings in them, and findings on every bundle
    /// with a member in them.
    #[arg(long)]
    pub pre_commit: bool,
    /// Keep what linting each file produced in DIR, and take it from there when the file is
    /// unchanged [default: $CREDLINT_CACHE_DIR, else .credlint_cache beside the credlint.toml
    /// in use, else at the top of the git work tree, else in the current folder].
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// The name to report standard input under, and to match credlint.toml's per-path
    /// entries against (with no PATH, standard input is read).
    #[arg(long, value_name = "NAME", conflicts_with = "pre_commit")]
    pub stdin_filename: Option<String>,
    /// Neither read nor write the cache: lint every file afresh.
    #[arg(long, conflicts_with = "cache_dir")]
    pub no_cache: bool,
    /// Print to standard error where the run spent its time: reading, the YAML parse alone,
    /// the rules (each summed over threads), bundles, and the wall time.
    #[arg(long)]
    pub timings: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Diagnostics with the source line, for people.
    Text,
    /// One JSON object (docs/cli.md and docs/output.md describe it).
    Json,
    /// SARIF 2.1.0, for code scanning.
    Sarif,
    /// GitHub Actions workflow commands: annotations on the pull request.
    Github,
    /// JUnit XML: a test suite per bundle, a test case per rule.
    Junit,
    /// One line per finding: `file:line:column: severity rule: message`.
    Concise,
}

impl Format {
    /// The name `--format` takes (clap's, from the variant).
    pub fn name(self) -> String {
        self.to_possible_value()
            .map(|v| v.get_name().to_string())
            .unwrap_or_default()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CatalogFormat {
    Text,
    Json,
    Markdown,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    Error,
    Warning,
}

impl FailOn {
    fn severity(self) -> Severity {
        match self {
            FailOn::Error => Severity::Error,
            FailOn::Warning => Severity::Warning,
        }
    }
}

/// The most threads a run starts (or the number of cores, where that is more): more threads
/// than cores never speed up linting, and a pool of 100,000 would not finish starting.
const MAX_THREADS: usize = 64;

/// `--threads N`, capped at [`MAX_THREADS`], saying so when it is.
fn threads(asked: Option<usize>) -> Option<usize> {
    let asked = asked.filter(|&n| n > 0)?;
    let cap = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .max(MAX_THREADS);
    if asked > cap {
        eprintln!("credlint: --threads {asked} is more than credlint starts; using {cap}");
    }
    Some(asked.min(cap))
}

/// Writes `text` to standard output: a reader that went away (a closed pipe, as `| head` closes
/// it) is no error; any other failure (a full disk) is `cannot write`, exit 2.
pub(crate) fn print_out(text: &str) -> ExitCode {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) => write_failed(&e),
        Ok(()) => ExitCode::SUCCESS,
    }
}

/// Exit code for a failed write to standard output: quiet success on a closed pipe.
fn write_failed(e: &std::io::Error) -> ExitCode {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        ExitCode::SUCCESS
    } else {
        usage_error(format!("cannot write to standard output: {e}"))
    }
}

/// Prints a one-line reason and returns exit code 2.
pub(crate) fn usage_error(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("credlint: {message}");
    ExitCode::from(2)
}

/// The program: parses the command line (keeping where each `--format` and `--output-file`
/// stood, to pair them) and runs it. `tune` is told the allocator policy a run needs, where the
/// binary has an allocator to tune.
pub fn main(tune: Option<Tune>) -> ExitCode {
    let matches = Cli::command().get_matches();
    let mut cli = match <Cli as clap::FromArgMatches>::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    match &mut cli.command {
        Command::Check(args) => output::locate(&mut args.output, &matches),
        Command::Simulate(args) => output::locate(&mut args.output, &matches),
        _ => {}
    }
    let Command::Check(args) = &cli.command else {
        return run(cli, tune, crate::exec::Ahead::default());
    };
    // A check of a few named files analyses their programs on this thread while the rest of
    // the command runs on a new one ([`crate::exec::analyse_ahead`]).
    let named: Vec<input::InputFile> = args
        .paths
        .iter()
        .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file()))
        .map(|p| input::InputFile {
            display: input::display_path(p),
            origin: input::Origin::File(p.clone()),
        })
        .collect();
    let ahead = (named.len() == args.paths.len())
        .then(|| crate::exec::analyse_ahead(&named))
        .flatten();
    let Some((mut ahead, job)) = ahead else {
        return run(cli, tune, crate::exec::Ahead::default());
    };
    if args.no_cache {
        // Nothing to wait for: every program is analysed.
        ahead.cache(None);
        ahead = crate::exec::Ahead::default();
    }
    let rest = crate::exec::place::spawn(
        std::thread::Builder::new()
            .name("credlint-check".into())
            .stack_size(8 << 20),
        move || run(cli, tune, ahead),
    );
    match rest {
        Ok(rest) => {
            job();
            rest.join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        }
        Err(e) => usage_error(format!("cannot start a thread: {e}")),
    }
}

/// What the binary does with the allocator policy of a run ([`crate::exec::Memory`]).
pub type Tune = fn(crate::exec::Memory);

/// Runs a parsed command line; `ahead` is the create.py analysis a `check` began, waiting to
/// learn what the cache holds.
pub fn run(cli: Cli, tune: Option<Tune>, ahead: crate::exec::Ahead) -> ExitCode {
    match cli.command {
        Command::Check(args) => check(args, tune, ahead),
        Command::Rules { format } => rules(format),
        Command::Explain { id } => explain(&id),
        Command::Policies(args) => crate::cli::policies::run(args),
        Command::Simulate(args) => simulate(args, tune),
        Command::Completions { shell } => completions(shell),
        Command::ConfigSchema => {
            let text = config_schema::text();
            match std::io::stdout().lock().write_all(text.as_bytes()) {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => usage_error(e),
                _ => ExitCode::SUCCESS,
            }
        }
    }
}

fn completions(shell: clap_complete::Shell) -> ExitCode {
    let mut command = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut command, "credlint", &mut out);
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(&out).and_then(|_| stdout.flush()) {
        Err(e) => write_failed(&e),
        Ok(()) => ExitCode::SUCCESS,
    }
}

/// credlint.toml (the nearest one, `--config FILE`, or none with `--no-config`) merged with the
/// flags; `Err` carries exit code 2 after the reasons were printed.
fn settings(args: &ConfigArgs, mut flags: Flags) -> Result<Settings, ExitCode> {
    flags.no_inline_ignores |= args.no_inline_ignores;
    resolve_settings(args.config.as_deref(), args.no_config, flags)
}

/// [`settings`] from `--config FILE` and `--no-config` themselves (`policies` has no
/// `--no-inline-ignores`).
pub(crate) fn resolve_settings(
    config: Option<&std::path::Path>,
    no_config: bool,
    flags: Flags,
) -> Result<Settings, ExitCode> {
    let config = match (config, no_config) {
        (_, true) => settings::ConfigFile::None,
        (Some(path), false) => settings::ConfigFile::Named(path.to_path_buf()),
        (None, false) => settings::ConfigFile::Nearest,
    };
    Settings::resolve(config, flags).map_err(|problems| {
        for p in &problems {
            eprintln!("credlint: {p}");
        }
        ExitCode::from(2)
    })
}

fn check(args: CheckArgs, tune: Option<Tune>, ahead: crate::exec::Ahead) -> ExitCode {
    let targets = match args.output.targets() {
        Ok(targets) => targets,
        Err(e) => return usage_error(e),
    };
    if args
        .stdin_filename
        .as_deref()
        .is_some_and(|n| n.trim().is_empty() || n == "-")
    {
        return usage_error("--stdin-filename takes a file name");
    }
    // `--stdin-filename NAME` alone reads standard input, as other linters do.
    let paths = match (&args.stdin_filename, args.paths.is_empty()) {
        (Some(_), true) => vec![PathBuf::from("-")],
        (Some(name), false) if !args.paths.iter().any(|p| is_stdin(p)) => {
            return usage_error(format!(
                "--stdin-filename {name} names standard input, but `-` is not among the paths"
            ));
        }
        _ => args.paths.clone(),
    };
    if args.policies.iter().any(|p| is_stdin(p)) && paths.iter().any(|p| is_stdin(p)) {
        return usage_error(
            "standard input (`-`) can be read only once: as manifests or as --policy",
        );
    }
    let flags = Flags {
        select: args.select.clone(),
        ignore: args.ignore.clone(),
        fail_on: args.fail_on.map(FailOn::severity),
        credentials_image: args.credentials_image.clone(),
        exclude: args.exclude.clone(),
        no_inline_ignores: false,
    };
    let settings = match settings(&args.config, flags) {
        Ok(settings) => settings,
        Err(code) => return code,
    };
    let policies = match load_policies(&args.policies) {
        Ok(policies) => policies,
        Err(code) => return code,
    };
    let options = Options {
        credentials_image: settings.credentials_image.clone(),
        // The JUnit suites need the bundles after the run (the pre-commit scope needs only
        // which bundles the changed files touch, which the run marks).
        keep: crate::model::members::Keep {
            bundles: targets.iter().any(|t| t.format == Format::Junit),
            programs: false,
        },
        policies,
        pragma_everywhere: settings.pragma_everywhere,
    };
    let cache = open_cache(
        args.cache_dir.as_deref(),
        args.no_cache,
        &settings,
        &options,
    );
    let run = Schedule {
        threads: threads(args.threads),
        tune,
    };
    ahead.cache(
        cache
            .as_ref()
            .map(|c| Box::new(c.holds()) as crate::exec::Held),
    );
    let memo = cache.as_ref().map(|c| c as &dyn Memo);
    let linted = if args.pre_commit {
        lint_changed(&args.paths, &settings.exclude, options, run, memo)
    } else {
        let flag_excludes = args.exclude.as_deref().unwrap_or_default();
        let stdin_name = args.stdin_filename.as_deref();
        lint(
            &paths,
            &settings.exclude,
            flag_excludes,
            stdin_name,
            options,
            run,
            memo,
        )
        .map(|(o, t)| (o, t, None))
    };
    if let Some(cache) = &cache {
        cache.finish();
    }
    let (mut outcome, texts, changed) = match linted {
        Ok(run) => run,
        Err(code) => return code,
    };
    // A commit may touch no manifest at all (a values.yaml, a renovate.json): `--pre-commit`
    // then passes, where a plain `check` says there was nothing to lint.
    if changed.is_none()
        && let Some(code) = nothing_linted(&outcome)
    {
        return code;
    }
    settings.apply(
        &mut outcome,
        suppress::Options {
            judge: true,
            not_run: &crate::runtime::simulate::RULES,
        },
    );
    if let Some(changed) = &changed {
        crate::cli::precommit::narrow(&mut outcome, changed);
    }
    settings::recount(&mut outcome);
    let read =
        read_files(&outcome, &settings).chain(args.policies.iter().map(std::path::Path::new));
    if let Err(e) = output::refuse_inputs(&targets, read) {
        return usage_error(e);
    }
    let context = report::Context {
        texts: &texts,
        fail_on: settings.fail_on,
        rules: settings.active_rules(false),
        show_suppressed: args.show_suppressed,
    };
    let code = output::finish(&outcome, &args.output, &targets, &context);
    if args.timings {
        let t = &outcome.timings;
        eprintln!(
            "credlint: timings (seconds): wall {:.3}; read {:.3}, YAML parse {:.3}, rules {:.3} \
             (summed over threads); bundles {:.3}; {} of {} files from the cache, {} of them \
             unread{}",
            t.wall.as_secs_f64(),
            t.read.as_secs_f64(),
            t.parse.as_secs_f64(),
            t.rules.as_secs_f64(),
            t.bundles.as_secs_f64(),
            t.cached,
            outcome.summary.files,
            t.unread,
            if t.whole {
                "; the whole run from the cache"
            } else {
                ""
            }
        );
    }
    // `check` runs only as the process's command, and the process ends here: what the run
    // built (every bundle of a --pre-commit run, the texts) is left to the end of the process
    // rather than freed piece by piece on one thread.
    std::mem::forget(outcome);
    std::mem::forget(texts);
    code
}

/// `check`'s cache, unless `--no-cache`; one that cannot be opened is noted and done without.
/// The cache `check` and `simulate` share: the folder the flags, the environment and the
/// configuration's place name (none under `--no-cache`), opened under its trust rules.
fn open_cache(
    requested: Option<&Path>,
    no_cache: bool,
    settings: &Settings,
    options: &Options,
) -> Option<crate::cache::Cache> {
    let config = settings
        .config_file
        .as_ref()
        .map(|(path, _)| path.as_path());
    let dir = crate::cache::folder(requested, no_cache, config)?;
    crate::cache::Cache::open(&dir, options)
        .map_err(|e| eprintln!("credlint: note: no cache in {}: {e}", dir.display()))
        .ok()
}

/// `check --pre-commit`: the tree under the current folder, with the changed files marked.
fn lint_changed(
    paths: &[PathBuf],
    exclude: &[String],
    options: Options,
    run: Schedule,
    memo: Option<&dyn Memo>,
) -> Result<(Outcome, Texts, Option<std::collections::HashSet<usize>>), ExitCode> {
    let (outcome, changed) = crate::cli::precommit::lint(
        std::path::Path::new("."),
        paths,
        exclude,
        options,
        run,
        memo,
    )
    .map_err(usage_error)?;
    Ok((
        outcome,
        Texts {
            stdin: None,
            stdin_name: None,
        },
        Some(changed),
    ))
}

fn simulate(args: SimulateArgs, tune: Option<Tune>) -> ExitCode {
    if args.timeout == 0 {
        return usage_error("--timeout must be at least 1 second: it bounds each run of a program");
    }
    let targets = match args.output.targets() {
        Ok(targets) => targets,
        Err(e) => return usage_error(e),
    };
    // Before any thread starts: the run folders' own mount namespace, which the threads
    // started from here inherit; a signal kills the programs and removes their run folders.
    crate::runtime::simulate::own_namespace();
    crate::runtime::simulate::stop_cleanly_on_signals();
    let flags = Flags {
        fail_on: args.fail_on.map(FailOn::severity),
        ..Flags::default()
    };
    let settings = match settings(&args.config, flags) {
        Ok(settings) => settings,
        Err(code) => return code,
    };
    let options = Options {
        keep: crate::model::members::Keep {
            bundles: true,
            programs: true,
        },
        ..Options::default()
    };
    let run = Schedule {
        threads: threads(args.threads),
        tune,
    };
    let (mut outcome, texts) = match lint(
        &args.paths,
        &settings.exclude,
        &[],
        None,
        options,
        run,
        None,
    ) {
        Ok(run) => run,
        Err(code) => return code,
    };
    let sim = crate::runtime::simulate::SimOptions {
        python: args.python.clone(),
        timeout: std::time::Duration::from_secs(args.timeout),
        confine: true,
        require_sandbox: args.require_sandbox,
    };
    // Opened as check opens it: the same folder, key and trust rules.
    let cache = open_cache(
        args.cache_dir.as_deref(),
        args.no_cache,
        &settings,
        &Options::default(),
    );
    let memo = cache
        .as_ref()
        .and_then(|c| crate::cli::simulate::Memo::new(c, &sim));
    let terminal = std::io::stderr().is_terminal();
    let progress = crate::cli::simulate::Progress {
        show: match args.progress {
            ProgressChoice::Auto => terminal && !args.output.quiet,
            ProgressChoice::Always => true,
            ProgressChoice::Never => false,
        },
        terminal,
        after: match args.progress {
            ProgressChoice::Auto => std::time::Duration::from_secs(2),
            _ => std::time::Duration::ZERO,
        },
    };
    let simulated = crate::cli::simulate::run_with(
        &outcome.bundles,
        &sim,
        &|file| texts.read(&outcome, file),
        memo.as_ref(),
        &progress,
    );
    if let Some(cache) = &cache {
        cache.finish();
    }
    while crate::runtime::simulate::stopping() {
        // A signal's thread is killing the programs and ends the process: report nothing.
        std::thread::park();
    }
    let crate::cli::simulate::Report {
        findings,
        skipped,
        counts,
        layers,
    } = match simulated {
        Ok(result) => result,
        Err(e) => return usage_error(format!("cannot simulate: {e}")),
    };
    for s in &skipped {
        eprintln!(
            "credlint: bundle {} is not simulated: {}",
            crate::report::shown(&s.bundle),
            crate::report::shown(&s.reason)
        );
    }
    if skipped.len() == outcome.bundles.len() {
        return usage_error("nothing to simulate: no complete bundle found");
    }
    outcome.findings = findings;
    outcome.summary.simulated = Some(counts);
    outcome.summary.sandbox = layers
        .entries
        .iter()
        .map(|(name, state)| crate::model::outcome::SandboxLayer {
            name: name.to_string(),
            missing: state.as_ref().err().cloned(),
        })
        .collect();
    outcome
        .findings
        .sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    // `check` judges the annotations; here they only accept the simulated findings they name.
    settings.apply(
        &mut outcome,
        suppress::Options {
            judge: false,
            not_run: &[],
        },
    );
    settings::recount(&mut outcome);
    if let Err(e) = output::refuse_inputs(&targets, read_files(&outcome, &settings)) {
        return usage_error(e);
    }
    let context = report::Context {
        texts: &texts,
        fail_on: settings.fail_on,
        rules: settings.active_rules(true),
        show_suppressed: args.show_suppressed,
    };
    output::finish(&outcome, &args.output, &targets, &context)
}

/// The files the run read: the manifests (standard input aside) and credlint.toml.
fn read_files<'a>(
    outcome: &'a Outcome,
    settings: &'a Settings,
) -> impl Iterator<Item = &'a std::path::Path> {
    outcome
        .files
        .iter()
        .filter(|f| *f != "-")
        .map(std::path::Path::new)
        .chain(settings.config_file.iter().map(|(path, _)| path.as_path()))
}

/// How a command's run is scheduled: its threads, and the allocator's tuning.
#[derive(Clone, Copy, Default)]
pub struct Schedule {
    pub threads: Option<usize>,
    pub tune: Option<Tune>,
}

impl Schedule {
    /// The executor for `options`, and the inputs `walk` lists: a run of named files compiles
    /// its rules when the first file needs them (a warm run whose files the cache holds does
    /// not compile them at all); a folder to walk, or standard input to wait for, leaves time
    /// to compile them meanwhile. The allocator is told the run's policy once the inputs are
    /// known.
    pub fn start<T>(
        self,
        options: Options,
        named_files_only: bool,
        walk: impl FnOnce() -> T,
        files: impl FnOnce(&T) -> &[input::InputFile],
    ) -> (T, std::sync::Arc<Executor>) {
        let executor = std::sync::Arc::new(Executor::deferred(options).threads(self.threads));
        let (listed, executor) = if named_files_only {
            (walk(), executor)
        } else {
            crate::exec::compile_while(executor, walk)
        };
        if let Some(tune) = self.tune {
            tune(crate::exec::Memory::for_inputs(files(&listed)));
        }
        (listed, executor)
    }
}

/// Collects the inputs and runs them; `Err` carries the exit code of a run that could not
/// start.
fn lint(
    paths: &[PathBuf],
    exclude: &[String],
    flag_excludes: &[String],
    stdin_name: Option<&str>,
    options: Options,
    run: Schedule,
    memo: Option<&dyn Memo>,
) -> Result<(Outcome, Texts), ExitCode> {
    let paths = if paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        paths.to_vec()
    };
    if paths.iter().filter(|p| is_stdin(p)).count() > 1 {
        return Err(usage_error("standard input (`-`) can be read only once"));
    }
    let named_files_only = paths.iter().all(|p| !is_stdin(p) && p.is_file());
    let (collected, executor) = run.start(
        options,
        named_files_only,
        || input::collect(&paths, exclude),
        |c| &c.files,
    );
    let input::Collected {
        files,
        errors,
        warnings,
        unused_excludes,
    } = collected;
    for entry in unused_excludes.iter().filter(|e| flag_excludes.contains(e)) {
        eprintln!(
            "credlint: warning: --exclude {entry}: no *.yaml, *.yml or *.json file walked lies \
             in a folder of that name or path, so it excludes nothing"
        );
    }
    for w in &warnings {
        eprintln!("credlint: warning: {}: {}", w.path, w.message);
    }
    if files.is_empty() {
        for e in &errors {
            eprintln!("credlint: {}: {}", e.path, e.message);
        }
        // Each path that could not be read said why; "nothing to lint" would say it twice.
        if !errors.is_empty() {
            return Err(ExitCode::from(2));
        }
        return Err(usage_error(format!(
            "nothing to lint: no *.yaml, *.yml or *.json file in {}",
            shown(&paths)
        )));
    }
    // Standard input is read once, up front; the text report needs it again. One that cannot
    // be read (a folder given as stdin) is an input error beside the other inputs' findings,
    // never instead of them (exit 2 all the same).
    let mut errors = errors;
    let (files, stdin) = match take_stdin(files.clone(), stdin_name) {
        Ok(taken) => taken,
        Err(e) => {
            errors.push(input::InputError {
                path: "-".into(),
                message: e,
            });
            let rest: Vec<input::InputFile> = files
                .into_iter()
                .filter(|f| f.origin != input::Origin::Stdin)
                .collect();
            if rest.is_empty() {
                for e in &errors {
                    eprintln!("credlint: {}: {}", e.path, e.message);
                }
                return Err(ExitCode::from(2));
            }
            (rest, None)
        }
    };
    let outcome = executor.run_with(&files, errors, memo);
    Ok((
        outcome,
        Texts {
            stdin,
            stdin_name: stdin_name.map(str::to_string),
        },
    ))
}

/// Exit 2 when the run read no Kubernetes object and found nothing wrong: no document, only
/// empty ones or only documents that are no object (empty standard input, as when the renderer
/// before a pipe failed). A green run must mean the manifests were read.
fn nothing_linted(outcome: &Outcome) -> Option<ExitCode> {
    if outcome.summary.objects > 0
        || !outcome.findings.is_empty()
        || !outcome.input_errors.is_empty()
    {
        return None;
    }
    let inputs = match outcome.files.as_slice() {
        [one] if one == "-" => "standard input".to_string(),
        [one] => one.clone(),
        files => format!("{} files", files.len()),
    };
    Some(usage_error(format!(
        "nothing to lint: no Kubernetes object in {inputs} (no document, or none with a `kind`)"
    )))
}

/// Reads standard input once, up front, when it is among the inputs, so both the engine and
/// the text report can use it. A read error or input over the size cap is `Err`: standard input
/// is then an input error (exit 2), and the other inputs are still linted and reported.
fn take_stdin(
    files: Vec<input::InputFile>,
    name: Option<&str>,
) -> Result<(Vec<input::InputFile>, Option<String>), String> {
    if !files.iter().any(|f| f.origin == input::Origin::Stdin) {
        return Ok((files, None));
    }
    let bytes = std::sync::Arc::new(input::read_stdin()?);
    // Decoded as the engine decodes it, so the text report's offsets match the findings'.
    let text = crate::load::stream::decode(&bytes).text.into_owned();
    let files = files
        .into_iter()
        .map(|f| match f.origin {
            input::Origin::Stdin => input::InputFile {
                display: name.unwrap_or("-").to_string(),
                origin: input::Origin::Memory(bytes.clone()),
            },
            _ => f,
        })
        .collect();
    Ok((files, Some(text)))
}

const POLICY_PREFIX: &str = crate::lint::kyverno::report::PREFIX;

/// `-`, standard input, among the paths.
fn is_stdin(path: &std::path::Path) -> bool {
    path.as_os_str() == "-"
}

/// Paths for a message, comma-separated, each as [`input::display_path`] shows it (bytes that
/// are not UTF-8 as U+FFFD).
fn shown(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| input::display_path(p))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reads the `--policy` files; exit 2 when one cannot be read or none holds a policy.
fn load_policies(
    paths: &[PathBuf],
) -> Result<Option<std::sync::Arc<crate::lint::kyverno::PolicySet>>, ExitCode> {
    if paths.is_empty() {
        return Ok(None);
    }
    match crate::lint::kyverno::PolicySet::load(paths) {
        Err(errors) => {
            for e in &errors {
                eprintln!("credlint: {}: {}", e.path, e.message);
            }
            Err(ExitCode::from(2))
        }
        Ok(set) if set.policy_documents == 0 => Err(usage_error(format!(
            "no Kyverno policy in {}",
            shown(paths)
        ))),
        Ok(set) => Ok(Some(std::sync::Arc::new(set))),
    }
}

fn rules(format: CatalogFormat) -> ExitCode {
    let catalog = Catalog::get();
    let mut out = std::io::stdout().lock();
    let result = match format {
        CatalogFormat::Text => {
            // Columns as wide as their longest entry, so every row lines up.
            let id = catalog.rules.iter().map(|r| r.id.len()).max().unwrap_or(0);
            let severity = "warning".len();
            let scope = catalog
                .rules
                .iter()
                .map(|r| r.scope.as_str().len())
                .max()
                .unwrap_or(0);
            catalog.rules.iter().try_for_each(|r| {
                writeln!(
                    out,
                    "{:<id$}  {:<severity$}  {:<scope$}  {}",
                    r.id,
                    r.severity.as_str(),
                    r.scope.as_str(),
                    r.title
                )
            })
        }
        CatalogFormat::Json => {
            let rules: Vec<serde_json::Value> = catalog.rules.iter().map(rule_json).collect();
            // serde_json wraps the write's error: its kind is kept, so a closed pipe stays quiet.
            serde_json::to_writer_pretty(&mut out, &rules)
                .map_err(|e| match e.io_error_kind() {
                    Some(kind) => std::io::Error::from(kind),
                    None => std::io::Error::other(e),
                })
                .and_then(|_| writeln!(out))
        }
        CatalogFormat::Markdown => write!(out, "{}", crate::cli::docs::markdown(catalog)),
    };
    match result.and_then(|_| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => write_failed(&e),
    }
}

fn rule_json(r: &crate::lint::catalog::Rule) -> serde_json::Value {
    let mut v = serde_json::json!({
        "id": r.id,
        "title": r.title,
        "severity": r.severity.as_str(),
        "scope": r.scope.as_str(),
        "adr": r.adr,
        "rationale": r.rationale,
        "remediation": r.remediation,
    });
    if let Some(o) = &r.object {
        v["cel"] = serde_json::json!({
            "resources": o.resources.iter().map(|r| r.plural).collect::<Vec<_>>(),
            "condition": o.condition,
            "variables": o.variables.iter().map(|(n, e)| serde_json::json!({"name": n, "expression": e})).collect::<Vec<_>>(),
            "validations": o.validations.iter().map(|v| serde_json::json!({"expression": v.expression, "message": v.message})).collect::<Vec<_>>(),
        });
    }
    v
}

fn explain(id: &str) -> ExitCode {
    let catalog = Catalog::get();
    if let Some(name) = id.strip_prefix(POLICY_PREFIX) {
        return print_out(&format!(
            "{id}: a denial by the Kyverno policy `{name}`\n\nFindings with this id come from a \
             ValidatingPolicy given with `credlint check --policy`: the policy's own annotations \
             and message say why and what to do. They are errors when the policy denies \
             (validationActions Deny), warnings when it only audits or warns. `--ignore {id}` \
             drops them; `policy:*` stands for every policy.\n"
        ));
    }
    let Some(rule) = catalog.rule(id) else {
        let hint = suggest::unknown_rule_hint(id, catalog);
        return usage_error(format!("unknown rule `{id}` ({hint})"));
    };
    print_out(&crate::cli::docs::explain(catalog, rule))
}
