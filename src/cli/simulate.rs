//! `credlint simulate`: each bundle's create.py run against the fake API server of
//! [`crate::runtime::simulate`], its findings placed on the program in the ConfigMap (the scenario, the
//! run and the request are in the message).

use crate::cache::Cache;
use crate::cache::simulation::{SimContext, Simulated};
use crate::lint::catalog::Catalog;
use crate::lint::checks::Emit;
use crate::load::block::LiteralBlock;
use crate::load::source::{At, Loc, Source};
use crate::load::yaml::Span;
use crate::model::bundle::{Bundle, EnvSource, Facts, JobFacts, MemberKind};
use crate::model::outcome::Simulation;
use crate::model::{Finding, ObjectRef, Severity};
use crate::runtime::simulate::{self, EnvVar, RoleRule, SimBundle, SimError, SimOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// A bundle that could not be simulated, and why.
pub struct Skipped {
    pub bundle: String,
    pub reason: String,
}

/// Builds what the simulator needs from an assembled bundle.
pub fn sim_bundle(bundle: &Bundle) -> Result<SimBundle, String> {
    let cm = bundle.config_map().ok_or("it has no ConfigMap")?;
    let plan_json = cm
        .plan_text
        .clone()
        .ok_or("its ConfigMap has no plan.json")?;
    let script = cm.script.clone().ok_or("its ConfigMap has no create.py")?;
    let kind = bundle
        .plan()
        .map(|p| p.kind.clone())
        .filter(|k| !k.is_empty())
        .ok_or("its plan.json cannot be read")?;
    let role = bundle.first(MemberKind::Role).ok_or("it has no Role")?;
    let job = match bundle.first(MemberKind::Job).map(|j| &j.facts) {
        Some(Facts::Job(job)) => Some(&**job),
        _ => None,
    };
    let run_as = job.map_or_else(
        || simulate::pod_user(None, None),
        |job| simulate::pod_user(job.run_as_user, job.run_as_group),
    );
    let config_map = bundle
        .first(MemberKind::ConfigMap)
        .map_or("", |m| m.name.as_str());
    let mut files = vec![
        ("create.py", script.as_str()),
        ("plan.json", plan_json.as_str()),
    ];
    files.extend(cm.other_data.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let (env, unset) = match job {
        Some(job) => container_env(job, &bundle.namespace, config_map, &files)?,
        None => Default::default(),
    };
    let Facts::Role(rules) = &role.facts else {
        return Err("it has no Role".into());
    };
    Ok(SimBundle {
        namespace: bundle.namespace.clone().unwrap_or_else(|| "default".into()),
        owner: bundle.owner.clone(),
        kind,
        plan_json,
        script,
        role_rules: rules
            .iter()
            .map(|r| RoleRule {
                api_groups: r.groups.clone(),
                resources: r.resources.clone(),
                resource_names: r.names.clone(),
                verbs: r.verbs.clone(),
                non_resource_urls: Vec::new(),
            })
            .collect(),
        run_as,
        env,
        unset,
    })
}

/// The Job container's variables as far as the render tells them (`simulate::EnvVar`), and
/// those it cannot, each with why. `files` are the keys and values of the bundle's ConfigMap
/// `config_map`. `Err`: the kubelet would not start the container (a key the bundle's
/// ConfigMap does not hold, not marked optional).
fn container_env(
    job: &JobFacts,
    namespace: &Option<String>,
    config_map: &str,
    files: &[(&str, &str)],
) -> Result<(Vec<EnvVar>, Vec<String>), String> {
    use simulate::EnvSource as Source;
    let env = &job.env;
    let mut vars = Vec::new();
    let mut unset = Vec::new();
    let object = |secret: bool, name: &str| {
        format!("{} {name}", if secret { "Secret" } else { "ConfigMap" })
    };
    for from in &env.env_from {
        if from.secret || from.name != config_map {
            unset.push(format!(
                "every key of {}{}",
                object(from.secret, &from.name),
                if from.prefix.is_empty() {
                    String::new()
                } else {
                    format!(" behind `{}`", from.prefix)
                }
            ));
            continue;
        }
        for (key, text) in files {
            let name = format!("{}{key}", from.prefix);
            // The names the API server admits: printable ASCII but `=`; others are skipped.
            if !name.is_empty()
                && name
                    .bytes()
                    .all(|b| (b' '..=b'~').contains(&b) && b != b'=')
            {
                vars.push(EnvVar {
                    name,
                    source: Source::Known((*text).to_string()),
                });
            }
        }
    }
    for entry in &env.env {
        let name = &entry.name;
        let source = match &entry.source {
            EnvSource::Value(text) => Source::Text(text.clone()),
            EnvSource::Field(path) => {
                match field(path, job, namespace, &env.labels, &env.annotations) {
                    Some(source) => source,
                    None => {
                        unset.push(format!(
                            "{name} (`fieldPath: {path}`, which no API server admits)"
                        ));
                        continue;
                    }
                }
            }
            EnvSource::Resource { resource, divisor } => match simulate::resource_value(
                resource,
                divisor.as_deref(),
                &env.resources,
                std::thread::available_parallelism().map_or(1, |n| n.get() as u64),
                node_memory(),
            ) {
                Ok(value) => Source::Known(value),
                Err(why) => {
                    unset.push(format!("{name} ({why})"));
                    continue;
                }
            },
            EnvSource::Key(key) => {
                let own = !key.secret && key.name == config_map;
                match files.iter().find(|(k, _)| own && *k == key.key) {
                    Some((_, text)) => Source::Known((*text).to_string()),
                    None if own && !key.optional => {
                        return Err(format!(
                            "its Job's container would not start: {name} takes key {} of ConfigMap {}, which does not hold it",
                            key.key, key.name
                        ));
                    }
                    None => {
                        unset.push(format!(
                            "{name} (key {} of {})",
                            key.key,
                            object(key.secret, &key.name)
                        ));
                        continue;
                    }
                }
            }
            EnvSource::Invalid(why) => {
                unset.push(format!("{name} ({why})"));
                continue;
            }
        };
        vars.push(EnvVar {
            name: name.clone(),
            source,
        });
    }
    Ok((vars, unset))
}

/// A `fieldRef`'s source: known from the render, or a field of the pod; `None` for a path the
/// API server does not admit in a container's variable. A label or annotation the pod does
/// not carry is empty; the Job controller's own labels are on every pod it makes.
fn field(
    path: &str,
    job: &JobFacts,
    namespace: &Option<String>,
    labels: &[(String, String)],
    annotations: &[(String, String)],
) -> Option<simulate::EnvSource> {
    use simulate::{EnvSource as Source, PodField};
    let known = |v: &str| Some(Source::Known(v.to_string()));
    let lookup = |pairs: &[(String, String)], key: &str| {
        pairs
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map_or(String::new(), |(_, v)| v.clone())
    };
    let keyed = |prefix: &str| {
        let rest = path.strip_prefix(prefix)?.strip_prefix("['")?;
        rest.strip_suffix("']")
    };
    match path {
        "metadata.name" => Some(Source::Pod(PodField::Name)),
        "metadata.namespace" => known(namespace.as_deref().unwrap_or("default")),
        "metadata.uid" => Some(Source::Pod(PodField::Uid)),
        "spec.nodeName" => Some(Source::Pod(PodField::NodeName)),
        "spec.serviceAccountName" => known(
            job.service_account
                .as_ref()
                .map_or("default", |(s, _)| s.as_str()),
        ),
        "status.podIP" | "status.podIPs" | "status.hostIP" | "status.hostIPs" => {
            Some(Source::Pod(PodField::Address))
        }
        _ => {
            if let Some(key) = keyed("metadata.labels") {
                match key {
                    "job-name" | "batch.kubernetes.io/job-name" => known(&job.name),
                    "controller-uid" | "batch.kubernetes.io/controller-uid" => {
                        Some(Source::Pod(PodField::JobUid))
                    }
                    _ => known(&lookup(labels, key)),
                }
            } else {
                keyed("metadata.annotations").and_then(|key| known(&lookup(annotations, key)))
            }
        }
    }
}

/// The node's memory in bytes (`MemTotal`), for a limit the container does not set.
fn node_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            kib.checked_mul(1024)
        })
        .unwrap_or(0)
}

/// What a simulate run found and ran.
pub struct Report {
    pub findings: Vec<Finding>,
    pub skipped: Vec<Skipped>,
    /// Over the bundles simulated, from the cache or not.
    pub counts: Simulation,
    /// The sandbox's layers: each held only where it held for every program (a kept verdict
    /// brings the layers it was reached under).
    pub layers: simulate::Layers,
}

/// Where simulate keeps its verdicts, and what decides them beside each bundle.
pub struct Memo<'c> {
    pub cache: &'c Cache,
    pub context: SimContext,
}

impl<'c> Memo<'c> {
    /// The cache for runs with `options`, unless the interpreter cannot say what it is (its
    /// version decides what the programs do): then nothing is kept, and a note says why.
    pub fn new(cache: &'c Cache, options: &SimOptions) -> Option<Memo<'c>> {
        match environment(&options.python) {
            Ok(environment) => Some(Memo {
                cache,
                context: SimContext::new(options, &environment),
            }),
            Err(why) => {
                eprintln!("credlint: note: simulate keeps no verdicts in the cache: {why}");
                None
            }
        }
    }
}

/// What of the machine decides what a program does in a simulation: the interpreter (its path,
/// version and the executable file's identity), the user credlint runs as (root runs the
/// program as the pod's user) and the kernel (the confinement layers it allows).
fn environment(python: &Path) -> Result<String, String> {
    use std::io::Read;
    use std::os::unix::fs::MetadataExt;
    const ASK: &str = "import sys; print(sys.executable); print(sys.version); \
                       print(sys.implementation.cache_tag)";
    let mut command = std::process::Command::new(python);
    command
        .args(["-I", "-S", "-c", ASK])
        .env_clear()
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    if let Some(path) = std::env::var_os("PATH") {
        command.env("PATH", path);
    }
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    let mut said = Vec::new();
    // A few hundred bytes; an interpreter that says more is cut off (and its answer refused).
    let read = child
        .stdout
        .take()
        .map(|out| out.take(16 * 1024).read_to_end(&mut said));
    // Bounded: an interpreter that hangs after closing its output is stopped.
    let deadline = Instant::now() + std::time::Duration::from_secs(10);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(2))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let said = String::from_utf8(said)
        .ok()
        .filter(|_| status.is_some_and(|s| s.success()) && read.is_some_and(|r| r.is_ok()));
    let Some(said) = said.filter(|s| s.lines().count() >= 3) else {
        return Err(format!("{} did not say what it is", python.display()));
    };
    let executable = PathBuf::from(said.lines().next().unwrap_or_default());
    if std::fs::metadata(&executable).is_err() {
        return Err(format!("cannot find {}", executable.display()));
    }
    // The interpreter a run starts is not always the one credlint's user starts: run as the
    // pod's user, a bare name may resolve past a folder closed to that user (a version
    // manager under /root) to the next one on PATH. So every file the name can resolve to
    // counts, and an upgrade of any is a new key.
    let mut files = vec![executable];
    if python.components().count() == 1 {
        let path = std::env::var_os("PATH").unwrap_or_default();
        files.extend(std::env::split_paths(&path).map(|dir| dir.join(python)));
    } else {
        files.push(python.to_path_buf());
    }
    let mut identity = String::new();
    for file in files {
        if let Ok(meta) = std::fs::metadata(&file) {
            let real = std::fs::canonicalize(&file).unwrap_or(file);
            identity.push_str(&format!(
                "{} {} {} {} {} {}\n",
                real.display(),
                meta.dev(),
                meta.ino(),
                meta.size(),
                meta.mtime(),
                meta.mtime_nsec(),
            ));
        }
    }
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    Ok(format!("{said}\n{identity}{euid}\n{}", kernel.trim()))
}

/// What of a bundle beside [`SimBundle`] a pod would see: the Job's image, command and
/// ServiceAccount (a simulation does not read them today; a change to them is simulated again).
fn job_identity(bundle: &Bundle) -> Vec<String> {
    let Some(job) = bundle.first(MemberKind::Job) else {
        return Vec::new();
    };
    let Facts::Job(facts) = &job.facts else {
        return Vec::new();
    };
    let mut out = vec![
        facts.image.as_ref().map_or("", |(i, _)| i).to_string(),
        facts
            .service_account
            .as_ref()
            .map_or("", |(s, _)| s)
            .to_string(),
    ];
    out.push(facts.command.len().to_string());
    out.extend(facts.command.iter().cloned());
    out
}

/// Bundles done of all, on standard error, while a run lasts.
pub struct Progress {
    /// Whether to show it at all.
    pub show: bool,
    /// Standard error is a terminal: one line, rewritten; otherwise a line per bundle.
    pub terminal: bool,
    /// Shown only once the run has lasted this long (zero: from the first bundle).
    pub after: std::time::Duration,
}

impl Progress {
    /// Nothing shown.
    pub fn off() -> Progress {
        Progress {
            show: false,
            terminal: false,
            after: std::time::Duration::ZERO,
        }
    }
}

/// The progress of one run: counts bundles as they finish.
struct Counter<'p> {
    progress: &'p Progress,
    started: Instant,
    total: usize,
    done: AtomicUsize,
    cached: usize,
    shown: std::sync::atomic::AtomicBool,
}

impl Counter<'_> {
    fn finished(&self, n: usize) {
        let done = self.done.fetch_add(n, Ordering::Relaxed) + n;
        if !self.progress.show || self.started.elapsed() < self.progress.after {
            return;
        }
        self.shown.store(true, Ordering::Relaxed);
        let cached = match self.cached {
            0 => String::new(),
            n => format!(" ({n} from the cache)"),
        };
        let line = format!(
            "credlint: simulated {done} of {} bundles{cached}",
            self.total
        );
        // Progress is a courtesy: a standard error that cannot be written is no reason to stop.
        let mut err = std::io::stderr().lock();
        let _ = if self.progress.terminal {
            write!(err, "\r{line}\x1b[K")
        } else {
            writeln!(err, "{line}")
        };
        let _ = err.flush();
    }

    /// Clears the terminal's progress line, so the report starts on a clean one.
    fn end(&self) {
        if self.progress.terminal && self.shown.load(Ordering::Relaxed) {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
        }
    }
}

/// Simulates every bundle, a few at a time (each run has its own server, port and folder),
/// without the cache or progress. `text_of` reads a file of the run by its number: a finding
/// about a request is placed on the line of create.py that sent it, inside the ConfigMap's
/// literal block (without the text, or for a program that is not a literal block, on the
/// `create.py:` key).
pub fn run(
    bundles: &[Bundle],
    options: &SimOptions,
    text_of: &dyn Fn(usize) -> Option<String>,
) -> Result<(Vec<Finding>, Vec<Skipped>), SimError> {
    run_with(bundles, options, text_of, None, &Progress::off()).map(|r| (r.findings, r.skipped))
}

/// [`run`], with the counts; a bundle whose verdict `memo` holds is not simulated again.
pub fn run_with(
    bundles: &[Bundle],
    options: &SimOptions,
    text_of: &dyn Fn(usize) -> Option<String>,
    memo: Option<&Memo>,
    progress: &Progress,
) -> Result<Report, SimError> {
    let catalog = Catalog::get();
    let mut work = Vec::new();
    let mut skipped = Vec::new();
    for b in bundles {
        match sim_bundle(b) {
            Ok(sim) => {
                if !sim.unset.is_empty() {
                    // Names from the change under review: no control character reaches the
                    // terminal as itself.
                    eprintln!(
                        "credlint: note: bundle {}: the program runs without {}: the render does not hold their values",
                        crate::report::shown(&b.id()),
                        crate::report::shown(&sim.unset.join(", "))
                    );
                }
                let key = memo.map(|m| m.context.key(&sim, &job_identity(b)));
                let kept = key
                    .and_then(|k| memo.and_then(|m| m.cache.recall_simulation(&k)))
                    // Reached with a layer missing: not good enough for --require-sandbox.
                    .filter(|s| !options.require_sandbox || s.layers.missing().is_empty());
                work.push((b, sim, key, kept));
            }
            Err(reason) => skipped.push(Skipped {
                bundle: b.id(),
                reason: reason.to_string(),
            }),
        }
    }
    let cached = work.iter().filter(|w| w.3.is_some()).count();
    let counter = Counter {
        progress,
        started: Instant::now(),
        total: work.len(),
        done: AtomicUsize::new(0),
        cached,
        shown: false.into(),
    };
    counter.finished(cached);
    let pending: Vec<usize> = (0..work.len()).filter(|&i| work[i].3.is_none()).collect();
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(1, 4);
    let next = AtomicUsize::new(0);
    let fresh: Vec<(usize, Result<Simulated, SimError>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads.min(pending.len()))
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let n = next.fetch_add(1, Ordering::Relaxed);
                        let Some(&i) = pending.get(n) else { break };
                        let (_, sim, key, _) = &work[i];
                        let result = simulate::simulate_counted(sim, options);
                        if let (Ok(simulated), Some(key), Some(memo)) = (&result, key, memo) {
                            memo.cache.remember_simulation(key, simulated);
                        }
                        counter.finished(1);
                        done.push((i, result));
                    }
                    done
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    counter.end();
    let mut results: Vec<(usize, Result<Simulated, SimError>)> = work
        .iter_mut()
        .enumerate()
        .filter_map(|(i, w)| w.3.take().map(|s| (i, Ok(s))))
        .chain(fresh)
        .collect();
    results.sort_by_key(|(i, _)| *i);
    let mut counts = Simulation::default();
    let mut layers: Option<simulate::Layers> = None;
    let mut emit = Emit::new(catalog);
    for (i, result) in results {
        let (bundle, ..) = &work[i];
        let findings = match result {
            Ok(simulated) => {
                counts.scenarios += simulated.scenarios;
                counts.runs += simulated.runs;
                match &mut layers {
                    Some(all) => all.merge(&simulated.layers),
                    None => layers = Some(simulated.layers),
                }
                simulated.findings
            }
            // One bundle's plan is no reason to drop the findings of the others.
            Err(SimError::InvalidPlan(reason)) => {
                skipped.push(Skipped {
                    bundle: bundle.id(),
                    reason: format!("its plan cannot be simulated: {reason}"),
                });
                continue;
            }
            Err(e) => return Err(e),
        };
        let Some(cm) = bundle.first(MemberKind::ConfigMap) else {
            continue;
        };
        let (script, plan) = match &cm.facts {
            Facts::ConfigMap(facts) => (facts.script_loc.unwrap_or(cm.loc), facts.plan.as_ref()),
            _ => (cm.loc, None),
        };
        let id = bundle.id();
        let mut lines = ProgramLines::new(script, text_of);
        for group in group(&findings) {
            let program = group
                .origin
                .and_then(|line| lines.place(line))
                .unwrap_or_else(|| script.into());
            let mut message = group.message.to_string();
            if let Some(request) = group.request
                && !message.contains(request)
            {
                message = format!("{request}: {message}");
            }
            let node = group
                .request
                .filter(|_| group.rule == simulate::RULES[0])
                .and_then(|r| role_node(bundle, r));
            if let Some((_, _, why)) = &node {
                message.push_str(&format!(": {why}"));
            }
            message.push_str(&format!("; in {}", group.runs()));
            if group.then_fails > 0 {
                message.push_str(
                    "; the program then fails in those runs (runtime-failed, not listed again)",
                );
            }
            let finding = match node {
                Some((at, object, _)) => emit
                    .add(group.rule, at, message, Some(&object), Some(&id))
                    .label(program, "the program sends the request here"),
                None => {
                    let finding =
                        emit.add(group.rule, program, message, Some(&cm.object()), Some(&id));
                    if let Some((index, at)) = plan_entry(plan, group.request, group.message) {
                        finding.label(at, format!("planned here (plan.json `secrets[{index}]`)"));
                    }
                    finding
                }
            };
            if group.warning {
                finding.severity = Severity::Warning;
            }
        }
    }
    Ok(Report {
        findings: emit.findings,
        skipped,
        counts,
        layers: layers.unwrap_or_default(),
    })
}

/// The plan entry of the Secret a finding is about: the one its request names
/// (`.../secrets/<name>`, a query or subresource after it aside), else, for a request that names
/// none (a create), the first planned Secret its message names. Its index in `secrets`, and
/// where plan.json plans it.
fn plan_entry(
    plan: Option<&crate::model::bundle::Plan>,
    request: Option<&str>,
    message: &str,
) -> Option<(usize, At)> {
    let plan = plan?;
    let named = request
        .and_then(|r| r.split_whitespace().nth(1))
        .and_then(|path| path.split('?').next())
        .and_then(|path| path.split("/secrets/").nth(1))
        .and_then(|rest| rest.split('/').next());
    let index = match named {
        Some(name) => plan.secrets.iter().position(|s| s == name)?,
        None => plan.secrets.iter().position(|name| {
            let said = format!("Secret {name}");
            message.match_indices(&said).any(|(at, _)| {
                !message[at + said.len()..]
                    .starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-' || c == '.')
            })
        })?,
    };
    Some((index, *plan.secret_locs.get(index)?))
}

/// Simulated findings of one bundle that share a cause, reported once: the same rule, request
/// and message in every scenario and run where they occurred, with the failures a refused
/// request causes in the same run folded into it.
struct Group<'a> {
    rule: &'static str,
    request: Option<&'a str>,
    message: &'a str,
    /// (scenario, run), in the order they ran.
    runs: Vec<(&'static str, u8)>,
    /// runtime-failed findings of those runs whose error names the refused request.
    then_fails: usize,
    /// Right only under a platform assumption that does not hold (`SimFinding::warning`).
    warning: bool,
    /// The line of create.py the request was sent from (of its first occurrence).
    origin: Option<u32>,
}

impl Group<'_> {
    /// `a-empty-namespace (runs 1, 2), b-partial-secrets (run 1)`.
    fn runs(&self) -> String {
        let mut out: Vec<String> = Vec::new();
        let mut i = 0;
        while i < self.runs.len() {
            let scenario = self.runs[i].0;
            let runs: Vec<String> = self.runs[i..]
                .iter()
                .take_while(|(s, _)| *s == scenario)
                .map(|(_, r)| r.to_string())
                .collect();
            i += runs.len();
            let word = if runs.len() == 1 { "run" } else { "runs" };
            out.push(format!("{scenario} ({word} {})", runs.join(", ")));
        }
        out.join(", ")
    }
}

fn group(findings: &[simulate::SimFinding]) -> Vec<Group<'_>> {
    let mut groups: Vec<Group> = Vec::new();
    let refused: Vec<&simulate::SimFinding> = findings
        .iter()
        .filter(|f| f.rule == simulate::RULES[0] && f.request.is_some())
        .collect();
    // The refusals first, so that the failures they cause find their group.
    let (failures, others): (Vec<_>, Vec<_>) = findings.iter().partition(|f| f.rule == FAILED);
    for f in others.into_iter().chain(failures) {
        // A run that fails because a request was refused says so in its error output: the
        // refusal is the cause, reported once.
        if f.rule == FAILED
            && let Some(cause) = refused.iter().find(|r| {
                r.scenario == f.scenario
                    && r.run == f.run
                    && r.request
                        .as_deref()
                        .and_then(path_of)
                        .is_some_and(|p| f.message.contains(p))
            })
            && let Some(g) = groups
                .iter_mut()
                .find(|g| g.rule == cause.rule && g.request == cause.request.as_deref())
        {
            g.then_fails += 1;
            continue;
        }
        let request = f.request.as_deref();
        match groups
            .iter_mut()
            .find(|g| g.rule == f.rule && g.request == request && g.message == f.message)
        {
            Some(g) => g.runs.push((f.scenario, f.run)),
            None => groups.push(Group {
                rule: f.rule,
                request,
                message: &f.message,
                runs: vec![(f.scenario, f.run)],
                then_fails: 0,
                warning: f.warning,
                origin: f.origin,
            }),
        }
    }
    for g in &mut groups {
        let order = |s: &str| simulate::SCENARIOS.iter().position(|x| *x == s);
        g.runs.sort_by_key(|(s, r)| (order(s), *r));
        g.runs.dedup();
    }
    groups
}

const FAILED: &str = "runtime-failed";

/// Where the lines of one bundle's create.py stand in its file, read when first asked for.
struct ProgramLines<'t> {
    key: At,
    text_of: &'t dyn Fn(usize) -> Option<String>,
    /// The file's text, the literal block and the end of its value; None inside: no block.
    read: Option<Option<(String, LiteralBlock, usize)>>,
}

impl<'t> ProgramLines<'t> {
    fn new(key: At, text_of: &'t dyn Fn(usize) -> Option<String>) -> Self {
        ProgramLines {
            key,
            text_of,
            read: None,
        }
    }

    /// The place of line `line` (1-based) of the program, the whole line after its indentation;
    /// None when the program is no literal block or the line lies outside it.
    fn place(&mut self, line: u32) -> Option<Loc> {
        let key = Loc::from(self.key);
        if self.read.is_none() {
            self.read = Some((self.text_of)(key.file).and_then(|text| {
                let (block, end) = literal_block(&text, key.file, key.span)?;
                Some((text, block, end))
            }));
        }
        let (text, block, end) = self.read.as_ref()?.as_ref()?;
        let source = Source::new(key.file, text);
        let line = usize::try_from(line).ok()?.checked_sub(1)?;
        let start = block.offset(&source, line, 0)?;
        // A line past the block (the file changed since it was read) is no place in it.
        if start >= *end {
            return None;
        }
        let file_line = source.lines.line_of(start);
        let line_end = source
            .line_span(file_line)
            .map_or(start, |s| s.end())
            .min(*end);
        // From the statement's first character: the program's own indentation is no part of it.
        let start = start
            + text[start..line_end]
                .bytes()
                .take_while(|b| matches!(b, b' ' | b'\t'))
                .count();
        Some(source.loc(source.snap(Span::new(start, line_end.max(start)))))
    }
}

/// The literal block of the ConfigMap value whose `create.py` key lies at `key` in `text`,
/// and where its value ends.
fn literal_block(text: &str, file: usize, key: Span) -> Option<(LiteralBlock, usize)> {
    let range = crate::load::yaml::document_ranges(text)
        .into_iter()
        .find(|r| r.contains(&key.start()))?;
    let source = Source::new(file, text);
    for parsed in crate::load::yaml::parse_range(text, range) {
        let crate::load::yaml::Parsed::Document(doc) = parsed else {
            continue;
        };
        let mut objects = Vec::new();
        crate::model::object::objects(&doc.root, &mut objects);
        for object in objects.iter().filter(|o| o.kind == "ConfigMap") {
            let entry = object
                .root
                .get("data")
                .and_then(|d| d.entry("create.py"))
                .filter(|e| e.key_span == key);
            if let Some(entry) = entry {
                let block = LiteralBlock::of(&source, &entry.value)?;
                return Some((block, entry.value.span.end()));
            }
        }
    }
    None
}

/// The path of a request `METHOD /path?query`.
fn path_of(request: &str) -> Option<&str> {
    let (_, path) = request.split_once(' ')?;
    Some(path.split('?').next().unwrap_or(path))
}

/// The node of the bundle's Role that refused `request` where the Role is at fault: the
/// `resourceNames` of the rule that grants the verb but lacks a name the plan plans (a Secret,
/// a retired generator, a server pod). A request for a name or verb the plan does not call for
/// is the program's fault, reported at the program.
fn role_node(bundle: &Bundle, request: &str) -> Option<(At, ObjectRef, String)> {
    let (method, _) = request.split_once(' ')?;
    let segments: Vec<&str> = path_of(request)?.trim_matches('/').split('/').collect();
    let (group, rest) = match segments.as_slice() {
        ["api", _version, rest @ ..] => ("", rest),
        ["apis", group, _version, rest @ ..] => (*group, rest),
        _ => return None,
    };
    let (resource, name) = match rest {
        ["namespaces", _, resource] => (*resource, None),
        ["namespaces", _, resource, name, ..] => (*resource, Some(*name)),
        _ => return None,
    };
    let verb = match (method, name) {
        ("GET", Some(_)) => "get",
        ("GET", None) => "list",
        ("POST", _) => "create",
        ("PATCH", _) => "patch",
        ("PUT", _) => "update",
        ("DELETE", _) => "delete",
        _ => return None,
    };
    let role = bundle.first(MemberKind::Role)?;
    let Facts::Role(rules) = &role.facts else {
        return None;
    };
    let any = |list: &[String], want: &str| list.iter().any(|x| x == want || x == "*");
    let for_resource: Vec<_> = rules
        .iter()
        .filter(|r| any(&r.groups, group) && any(&r.resources, resource))
        .collect();
    let named = |r: &&crate::model::bundle::RoleRule| match (&r.names, name) {
        (None, _) => true,
        (Some(names), Some(n)) => names.iter().any(|x| x == n),
        (Some(_), None) => false,
    };
    let name = name?;
    let plan = bundle.plan()?;
    let planned = plan
        .secrets
        .iter()
        .chain(&plan.generators)
        .chain(&plan.pods)
        .any(|p| p == name);
    if !planned {
        return None;
    }
    let r = for_resource
        .iter()
        .find(|r| any(&r.verbs, verb) && !named(r))?;
    Some((
        r.names_loc?,
        role.object(),
        format!("`{name}` is planned but not among this rule's resourceNames"),
    ))
}
