//! The command line: arguments in, exit code out (cli.md). 0: nothing at or above the fail-on
//! severity; 1: such findings; 2: the run could not do its job.

use crate::catalog::Catalog;
use crate::engine::{Engine, Options, Outcome};
use crate::input;
use crate::model::Severity;
use crate::report::{self, Texts};
use clap::{Parser, Subcommand, ValueEnum};
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "credlint",
    version,
    about = "Lints rendered Kubernetes manifests against the ADR-072 credentials-bundle contract"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Lint files and folders (default: the current folder; `-` reads standard input).
    Check(CheckArgs),
    /// List the rule catalog.
    Rules {
        #[arg(long, value_enum, default_value_t = CatalogFormat::Text)]
        format: CatalogFormat,
    },
    /// Say what a rule checks, why (with the ADR point), and how to fix it.
    Explain {
        /// A rule id, e.g. role-forbidden-verb.
        id: String,
    },
    /// The Kyverno policies generated from the object rules.
    Policies(crate::policies_cmd::PoliciesArgs),
    /// Run each bundle's create.py with the local python3 against a fake Kubernetes API server,
    /// in every scenario of ADR-072, and report what it does wrong.
    Simulate(SimulateArgs),
}

#[derive(clap::Args, Debug)]
pub struct SimulateArgs {
    /// Files and folders holding the bundles; `-` reads standard input.
    pub paths: Vec<String>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// The Python interpreter that runs the programs.
    #[arg(long, default_value = "python3")]
    pub python: std::path::PathBuf,
    /// Seconds after which one run of a program is stopped.
    #[arg(long, default_value_t = 20)]
    pub timeout: u64,
    /// Threads that read the bundles (default: one per core).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// The lowest severity that makes the run fail (exit 1).
    #[arg(long, value_enum, default_value_t = FailOn::Error)]
    pub fail_on: FailOn,
}

#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// Files and folders to lint; `-` reads standard input.
    pub paths: Vec<String>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Only these rules (comma-separated ids).
    #[arg(long, value_delimiter = ',')]
    pub select: Vec<String>,
    /// Not these rules (comma-separated ids).
    #[arg(long, value_delimiter = ',')]
    pub ignore: Vec<String>,
    /// The lowest severity that makes the run fail (exit 1).
    #[arg(long, value_enum, default_value_t = FailOn::Error)]
    pub fail_on: FailOn,
    /// The CREDENTIALS_IMAGE of the versions table: the Job must run exactly this image.
    #[arg(long, value_name = "REF")]
    pub credentials_image: Option<String>,
    /// Kyverno ValidatingPolicy files or folders to apply as well (repeatable); each denial is a
    /// `policy:<name>` finding.
    #[arg(long = "policy", value_name = "PATH")]
    pub policies: Vec<String>,
    /// Threads that lint in parallel (default: one per core); the output is the same for any
    /// number.
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
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

/// Prints a one-line reason and returns exit code 2.
fn usage_error(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("credlint: {message}");
    ExitCode::from(2)
}

pub fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Check(args) => check(args),
        Command::Rules { format } => rules(format),
        Command::Explain { id } => explain(&id),
        Command::Policies(args) => crate::policies_cmd::run(args),
        Command::Simulate(args) => simulate(args),
    }
}

fn check(args: CheckArgs) -> ExitCode {
    let catalog = Catalog::get();
    for id in args.select.iter().chain(&args.ignore) {
        // `policy:<name>` ids come from the --policy files, not the catalog; `policy:*` is all.
        if catalog.rule(id).is_none() && !id.starts_with(POLICY_PREFIX) {
            return usage_error(format!("unknown rule `{id}` (see `credlint rules`)"));
        }
    }
    if args.policies.iter().any(|p| p == "-") && args.paths.iter().any(|p| p == "-") {
        return usage_error(
            "standard input (`-`) can be read only once: as manifests or as --policy",
        );
    }
    let policies = match load_policies(&args.policies) {
        Ok(policies) => policies,
        Err(code) => return code,
    };
    let options = Options {
        credentials_image: args.credentials_image.clone(),
        policies,
        threads: args.threads.filter(|&n| n > 0),
        ..Options::default()
    };
    let (mut outcome, texts) = match lint(&args.paths, options) {
        Ok(run) => run,
        Err(code) => return code,
    };
    filter(&mut outcome, &args.select, &args.ignore);
    finish(&outcome, &texts, args.format, args.fail_on)
}

fn simulate(args: SimulateArgs) -> ExitCode {
    let options = Options {
        keep: crate::members::Keep { programs: true },
        threads: args.threads.filter(|&n| n > 0),
        ..Options::default()
    };
    let (mut outcome, texts) = match lint(&args.paths, options) {
        Ok(run) => run,
        Err(code) => return code,
    };
    let sim = crate::simulate::SimOptions {
        python: args.python.clone(),
        timeout: std::time::Duration::from_secs(args.timeout.max(1)),
    };
    let (findings, skipped) = match crate::simulation::run(&outcome.bundles, &sim) {
        Ok(result) => result,
        Err(e) => return usage_error(format!("cannot simulate: {e}")),
    };
    for s in &skipped {
        eprintln!(
            "credlint: bundle {} is not simulated: {}",
            s.bundle, s.reason
        );
    }
    if skipped.len() == outcome.bundles.len() {
        return usage_error("nothing to simulate: no complete bundle found");
    }
    outcome.findings = findings;
    outcome
        .findings
        .sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    recount(&mut outcome);
    finish(&outcome, &texts, args.format, args.fail_on)
}

/// Collects the inputs and runs the engine; `Err` carries the exit code of a run that could not
/// start.
fn lint(paths: &[String], options: Options) -> Result<(Outcome, Texts), ExitCode> {
    let paths = if paths.is_empty() {
        vec![".".to_string()]
    } else {
        paths.to_vec()
    };
    if paths.iter().filter(|p| *p == "-").count() > 1 {
        return Err(usage_error("standard input (`-`) can be read only once"));
    }
    let (files, errors) = input::collect(&paths, &[]);
    if files.is_empty() {
        for e in &errors {
            eprintln!("credlint: {}: {}", e.path, e.message);
        }
        return Err(usage_error(format!(
            "nothing to lint: no *.yaml, *.yml or *.json file in {}",
            paths.join(", ")
        )));
    }
    let engine = Engine::new(options).map_err(usage_error)?;
    // Standard input is read once, up front; the text report needs it again.
    let (files, stdin) = take_stdin(files);
    let outcome = engine.run(&files, errors);
    Ok((outcome, Texts { stdin }))
}

/// Writes the report and turns the findings into the exit code.
fn finish(outcome: &Outcome, texts: &Texts, format: Format, fail_on: FailOn) -> ExitCode {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let written = match format {
        Format::Json => report::json::write(outcome, &mut out),
        Format::Text => {
            let color = stdout.is_terminal() && std::env::var_os("NO_COLOR").is_none();
            report::text::write(outcome, texts, &report::text::Style { color }, &mut out)
        }
    };
    if let Err(e) = written.and_then(|_| out.flush())
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        return usage_error(format!("cannot write the report: {e}"));
    }
    if !outcome.input_errors.is_empty() {
        for e in &outcome.input_errors {
            eprintln!("credlint: {}: {}", e.path, e.message);
        }
        return ExitCode::from(2);
    }
    let fail_on = fail_on.severity();
    if outcome.findings.iter().any(|f| f.severity >= fail_on) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Reads standard input once, up front, when it is among the inputs, so both the engine and
/// the text report can use it.
fn take_stdin(files: Vec<input::InputFile>) -> (Vec<input::InputFile>, Option<String>) {
    if !files.iter().any(|f| f.origin == input::Origin::Stdin) {
        return (files, None);
    }
    let stdin = input::InputFile {
        display: "-".into(),
        origin: input::Origin::Stdin,
    };
    let bytes = std::sync::Arc::new(input::read(&stdin).unwrap_or_default());
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let files = files
        .into_iter()
        .map(|f| match f.origin {
            input::Origin::Stdin => input::InputFile {
                display: "-".into(),
                origin: input::Origin::Memory(bytes.clone()),
            },
            _ => f,
        })
        .collect();
    (files, Some(text))
}

const POLICY_PREFIX: &str = crate::kyverno::report::PREFIX;

/// Reads the `--policy` files; exit 2 when one cannot be read or none holds a policy.
fn load_policies(
    paths: &[String],
) -> Result<Option<std::sync::Arc<crate::kyverno::PolicySet>>, ExitCode> {
    if paths.is_empty() {
        return Ok(None);
    }
    match crate::kyverno::PolicySet::load(paths) {
        Err(errors) => {
            for e in &errors {
                eprintln!("credlint: {}: {}", e.path, e.message);
            }
            Err(ExitCode::from(2))
        }
        Ok(set) if set.policy_documents == 0 => Err(usage_error(format!(
            "no Kyverno policy in {}",
            paths.join(", ")
        ))),
        Ok(set) => Ok(Some(std::sync::Arc::new(set))),
    }
}

/// Whether a rule id is named by a --select/--ignore list (`policy:*` names every policy).
fn named(list: &[String], rule: &str) -> bool {
    list.iter()
        .any(|id| id == rule || (id == "policy:*" && rule.starts_with(POLICY_PREFIX)))
}

fn filter(outcome: &mut Outcome, select: &[String], ignore: &[String]) {
    outcome
        .findings
        .retain(|f| (select.is_empty() || named(select, &f.rule)) && !named(ignore, &f.rule));
    recount(outcome);
}

fn recount(outcome: &mut Outcome) {
    outcome.summary.errors = outcome
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .count();
    outcome.summary.warnings = outcome
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Warning)
        .count();
}

fn rules(format: CatalogFormat) -> ExitCode {
    let catalog = Catalog::get();
    let mut out = std::io::stdout().lock();
    let result = match format {
        CatalogFormat::Text => catalog.rules.iter().try_for_each(|r| {
            writeln!(
                out,
                "{:<28} {:<8} {:<8} {}",
                r.id,
                r.severity,
                r.scope.as_str(),
                r.title
            )
        }),
        CatalogFormat::Json => {
            let rules: Vec<serde_json::Value> = catalog.rules.iter().map(rule_json).collect();
            serde_json::to_writer_pretty(&mut out, &rules)
                .map_err(std::io::Error::other)
                .and_then(|_| writeln!(out))
        }
        CatalogFormat::Markdown => write!(out, "{}", crate::docs::markdown(catalog)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => usage_error(e),
    }
}

fn rule_json(r: &crate::catalog::Rule) -> serde_json::Value {
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
        println!(
            "{id}: a denial by the Kyverno policy `{name}`\n\nFindings with this id come from a \
             ValidatingPolicy given with `credlint check --policy`: the policy's own annotations \
             and message say why and what to do. They are errors when the policy denies \
             (validationActions Deny), warnings when it only audits or warns. `--ignore {id}` \
             drops them; `policy:*` stands for every policy."
        );
        return ExitCode::SUCCESS;
    }
    let Some(rule) = catalog.rule(id) else {
        let close: Vec<&str> = catalog
            .rules
            .iter()
            .map(|r| r.id.as_str())
            .filter(|r| r.contains(id) || id.contains(*r))
            .collect();
        let hint = if close.is_empty() {
            "see `credlint rules`".to_string()
        } else {
            format!("did you mean {}?", close.join(", "))
        };
        return usage_error(format!("unknown rule `{id}`; {hint}"));
    };
    print!("{}", crate::docs::explain(catalog, rule));
    ExitCode::SUCCESS
}
