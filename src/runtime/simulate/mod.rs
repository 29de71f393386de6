//! `credlint simulate`: runs a bundle's create.py, unmodified, against a fake Kubernetes API
//! server on loopback and judges what it does against ADR-072 points 2-5.
//!
//! # How the program reaches the fake cluster
//! As in a pod: `KUBERNETES_SERVICE_HOST`/`KUBERNETES_SERVICE_PORT` (plus the other variables the
//! kubelet sets), HTTPS with a CA (`CN=kubernetes`) and a server certificate made for this run
//! (the `kubernetes` Service's address and names, and `127.0.0.1`), and the files `token`,
//! `ca.crt`, `namespace` under
//! `/var/run/secrets/kubernetes.io/serviceaccount/`. The program runs byte-identical to the
//! ConfigMap, with a clean environment, in a session of its own, confined as its pod would be
//! (`confine`, `sandbox`). In the program's own network namespace (as root) the API server
//! listens where a pod finds the `kubernetes` Service, `10.96.0.1:443`; elsewhere at `127.0.0.1`
//! and a port the kernel picks.
//!
//! Where the program gets mount and PID namespaces (as root, or in its user namespace), it runs
//! in the pod's root (`podfs`): `python3 /credentials/create.py /credentials/plan.json`, the
//! service-account files at their in-cluster path, a read-only root, the termination log at
//! `/dev/termination-log`. Elsewhere (without root a private mount namespace needs an
//! unprivileged user namespace, which Docker's default seccomp profile, Ubuntu's AppArmor
//! restriction and many CI runners forbid) it runs as `python3 <tmp>/credentials/create.py
//! <tmp>/credentials/plan.json` in the host's root, and the in-cluster paths are redirected by
//! the Python startup hook (`sitecustomize.py` on `PYTHONPATH`), which rewrites paths under
//! the prefix (also through `/run/...`) for `open`/`io.open`, `os.open`, `os.stat`/`lstat`/
//! `access`/`listdir`/`scandir`/`readlink` (so `os.path.exists`/`isfile` and `pathlib` follow)
//! and for `ssl.SSLContext.load_verify_locations`/`load_cert_chain`, which OpenSSL reads in C.
//! Limits there: a program that reads the files through a subprocess, `ctypes` or the private
//! `_io` module sees the real path (and, outside a cluster, no file); a program started with
//! `-I`/`-S` would skip the hook, but the command line is ours. Where credlint runs as root it
//! runs the program as the pod's user (the Job's `runAsUser`, [`pod_user`]; the run folder
//! handed to that user) when the
//! interpreter starts as that user, and as root without capabilities where not (a note says
//! so).
//!
//! A bare interpreter name (the default `python3`) is resolved once per simulation to the
//! interpreter's `sys.executable`, because a version manager's shim (pyenv's is a shell script)
//! costs more to start than the program; a path is used as given.
//!
//! # The fake cluster
//! See `server` (HTTP/1.1 over rustls, threads), `rbac` (the authorizer) and `cluster` (what the
//! API server and the controllers do; server-side apply of a Secret in `cluster::apply`). Not
//! modelled: watch streams (an authorized watch gets an empty answer), list paging, admission
//! (e.g. immutable Secrets, label syntax), and the RoleBinding (the Role is taken as bound to the program's
//! ServiceAccount; the static checks judge the binding). A write that changes nothing keeps
//! its resourceVersion, as etcd storage does; every other write bumps it. The server pods of a cache or broker report
//! `status.podIP: 127.0.0.1` and a container port where a fake Valkey or NATS server of this
//! run listens (`probe`), so a probe never reaches a real service and the one-time repair of
//! ADR-072 point 4 is exercised: each pod reads the first planned Secret's `password` key (or its
//! first key) through `env[].valueFrom.secretKeyRef`, and its server accepts the value that
//! Secret held when the pod started.
//!
//! # Scenarios
//! Each starts from a fresh namespace and runs the program twice; between the runs the fake
//! cluster plays the next sync (`cluster::sync`: pruning, hook deletion, the garbage collector;
//! docs/simulate.md).
//! - `a-empty-namespace`: nothing exists (a first install: no server pods yet).
//! - `b-partial-secrets`: every planned Secret exists with values for all keys but its last one
//!   (sorted) and an unplanned `legacy` key; server pods run if their key exists, else Pending.
//! - `c-adopt-generator`: per planned Secret a generator-backed External Secrets 5.4
//!   ExternalSecret (`dataFrom[].sourceRef.generatorRef` kind Password, `creationPolicy: Owner`,
//!   `refreshPolicy: CreatedOnce`), the Secret it wrote (a `password` key, ownerReference to it,
//!   Argo CD tracking id, instance label) and the retired Password generators; server pods run
//!   with those values.
//! - `d-remote-externalsecret`: as (c), but the last planned Secret's ExternalSecret reads a
//!   store (`data[].remoteRef`, `secretStoreRef`).
//! - `e-forced-second-run`: empty; after the first run the server pods start with what it
//!   created; the second run is the forced re-sync of the ADR's e2e.
//! - `f-repair-wrong-server` (cache and broker with server pods): complete Secrets, but each
//!   server runs with another password (issue #316); its replacement reads the Secret.
//! - `g-server-still-wrong` (same): as (f), but the replacement refuses too.
//! - `h-unclear-answer` (same): complete Secrets, servers started with them, but answering
//!   probes with neither success nor a refusal (Valkey still loading; NATS silent).
//! - `i-adopt-under-controller`: as (c), but each Secret's data-hash annotation no longer
//!   matches its data, so the External Secrets controller refreshes on its next reconcile.
//!
//! In every scenario a fake External Secrets controller (`cluster::eso`, modelled on
//! v2.12.0) acts after each request of the program, deterministically.
//!
//! Success (a, b, c, e, f, h): exit 0 and the end state of points 2-4 (every planned key present;
//! in c the ExternalSecrets and retired generators gone and the Secrets free of ExternalSecret
//! ownerReferences, the tracking id and the instance label; in f every server accepts its
//! Secret). Stop (d): a non-zero exit and no write request at all. Exit 2 (g), after deleting
//! each refusing pod once.
//!
//! # Findings
//! `runtime-adoption-order` (a planned Secret written, or a retired generator deleted, while
//! the ExternalSecret still exists), `runtime-unguarded-patch`, `runtime-value-leaked` and
//! `runtime-predictable-value` (`values`) come with the controller. Before them, the five
//! rules of the first issue plus three this module adds: `runtime-needless-write` (a write
//! that changed nothing, or any Secret write in a second run: the e2e compares
//! resourceVersions), `runtime-restarts-server` (deleting a server pod that accepts its
//! password, is not running, answered unclearly, or was already deleted in this run) and
//! `runtime-incomplete` (the exit is as expected but the end state is not, or exit 0 where the
//! program must stop or exit 2). In d every write request is `runtime-adopts-foreign`. A run
//! that times out, or writes more than `child::OUTPUT_CAP` to an output stream, is
//! `runtime-failed` (a timeout skips its scenario's second run). What the `sitecustomize` audit
//! hook logs beyond the run folder and the fake servers (files, other addresses, subprocesses)
//! is `runtime-sandbox-escape`. A request the
//! Role denies yields only `runtime-unauthorized-request`; the other rules judge what the program
//! did with the rights it has. Values are kept as SHA-256 hashes and scrubbed from the stderr
//! that `runtime-failed` quotes; nothing prints a value.
//!
//! Everything a simulation starts (the python process group, the server threads and ports, the
//! temporary folder) is released by destructors, so also on errors and panics; on SIGINT,
//! SIGTERM and SIGHUP by [`stop_cleanly_on_signals`].

mod child;
mod cluster;
mod confine;
mod incluster;
mod netns;
mod patch;
mod podenv;
mod podfs;
mod probe;
mod rbac;
mod sandbox;
mod scenario;
mod scratch;
mod server;
mod values;
mod zygote;

#[cfg(test)]
mod tests;

pub use child::{stop_cleanly_on_signals, stopping};
pub use confine::{LAYER_NAMES, Layers};
pub use podenv::{EnvVar, PodField, Source as EnvSource, resource_value};
pub use scratch::own_namespace;

use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cluster::Cluster;
use incluster::RunDir;
use server::{ApiContext, Service, lock};

/// One credentials bundle, as the loader found it.
#[derive(Debug, Clone)]
pub struct SimBundle {
    pub namespace: String,
    /// O: the objects are named `O-credentials`.
    pub owner: String,
    /// The plan kind: cache, broker, bucket or component.
    pub kind: String,
    /// ConfigMap `data["plan.json"]`, exactly as decoded.
    pub plan_json: String,
    /// ConfigMap `data["create.py"]`, exactly as decoded.
    pub script: String,
    /// The bundle's Role, as rendered (it may be wrong).
    pub role_rules: Vec<RoleRule>,
    /// The user and group the Job's container runs as ([`pod_user`]), which the program runs
    /// as where credlint is root.
    pub run_as: (u32, u32),
    /// The container's variables, in the kubelet's order (`envFrom`, then `env`).
    pub env: Vec<EnvVar>,
    /// The variables the pod would have that the render cannot tell (a Secret's key, a
    /// ConfigMap outside the bundle), each with why: the program runs without them.
    pub unset: Vec<String>,
}

/// The user and group a Job's container runs as, from its `runAsUser` and `runAsGroup`: the
/// pod's default user 65532 where `runAsUser` is unset, and the user's number as its group
/// where `runAsGroup` is unset (the image's group is not known here). The sandbox never runs a
/// program as root: a `runAsUser` of 0, or one no Linux user id can be, runs it as 65532 (the
/// Job's pod security findings report it).
pub fn pod_user(run_as_user: Option<i64>, run_as_group: Option<i64>) -> (u32, u32) {
    let id = |v: Option<i64>| {
        v.and_then(|v| u32::try_from(v).ok())
            .filter(|&v| v != 0 && v != u32::MAX)
    };
    let uid = id(run_as_user).unwrap_or(confine::POD_UID);
    let gid = id(run_as_group).unwrap_or(uid);
    (uid, gid)
}

/// One rule of the Role.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoleRule {
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    /// None: the field is absent.
    pub resource_names: Option<Vec<String>>,
    pub verbs: Vec<String>,
    pub non_resource_urls: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct SimOptions {
    /// The interpreter, looked up on PATH when it has no slash.
    pub python: PathBuf,
    /// How long one run of the program may take before it is killed.
    pub timeout: Duration,
    /// Confine the program with Landlock where the kernel allows it (see `sandbox`); off, the
    /// audit hook alone reports what it reaches.
    pub confine: bool,
    /// Refuse to run a program without every layer of the pod's confinement
    /// (`--require-sandbox`): the simulation stops with [`SimError::Unconfined`] first.
    pub require_sandbox: bool,
}

/// Only the integration tests start from defaults; the command line sets every field.
#[cfg(any(test, feature = "testkit"))]
impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            python: PathBuf::from("python3"),
            timeout: Duration::from_secs(20),
            confine: true,
            require_sandbox: false,
        }
    }
}

/// What the program did wrong in one run of one scenario.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimFinding {
    /// One of [`RULES`].
    pub rule: &'static str,
    /// One of [`SCENARIOS`].
    pub scenario: &'static str,
    /// 1: the program's first run in the scenario, 2: its second.
    pub run: u8,
    /// The request, e.g. `PUT /api/v1/namespaces/shop/secrets/shop-sessions-app`.
    pub request: Option<String>,
    pub message: String,
    /// Right only under an assumption about the platform that it does not hold (a tracking
    /// method it does not use): reported as a warning.
    pub warning: bool,
    /// The line of create.py (1-based) the request was sent from, where the program said so
    /// and the line exists: the finding's place.
    pub origin: Option<u32>,
}

/// The rule ids `simulate` reports.
pub const RULES: [&str; 13] = [
    scenario::UNAUTHORIZED,
    scenario::VALUE_REWRITTEN,
    scenario::FOREIGN_WRITE,
    scenario::ADOPTS_FOREIGN,
    scenario::FAILED,
    scenario::NEEDLESS_WRITE,
    scenario::RESTARTS_SERVER,
    scenario::INCOMPLETE,
    scenario::ADOPTION_ORDER,
    scenario::UNGUARDED_PATCH,
    scenario::VALUE_LEAKED,
    scenario::PREDICTABLE,
    scenario::SANDBOX_ESCAPE,
];

/// The scenario ids, in the order they run (f, g and h only for a cache or broker with pods).
pub const SCENARIOS: [&str; 10] = [
    scenario::A_EMPTY,
    scenario::B_PARTIAL,
    scenario::C_ADOPT,
    scenario::D_REMOTE,
    scenario::E_FORCED,
    scenario::F_REPAIR,
    scenario::G_STILL_WRONG,
    scenario::H_UNCLEAR,
    scenario::I_UNDER_CONTROLLER,
    scenario::J_SLOW,
];

/// Why a simulation could not run at all.
#[derive(Debug)]
pub enum SimError {
    /// The interpreter could not be started.
    PythonMissing { python: PathBuf, error: String },
    /// No loopback port could be bound, or a thread could not be started.
    Loopback(String),
    /// The temporary folder could not be made or written.
    TempDir(String),
    /// The per-run CA or server certificate could not be made.
    Certificates(String),
    /// plan.json cannot be simulated (not JSON, no secrets list, or too large).
    InvalidPlan(String),
    /// `--require-sandbox`, and these layers of the confinement do not hold: `(layer, why)`.
    Unconfined(Vec<(&'static str, String)>),
    /// `CREDLINT_ZYGOTE=require`, and the zygote failed.
    Zygote(String),
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::PythonMissing { python, error } => {
                write!(
                    f,
                    "cannot run {}: {error} (simulate needs a local python3)",
                    python.display()
                )
            }
            SimError::Loopback(e) => write!(f, "cannot start the fake API server on loopback: {e}"),
            SimError::TempDir(e) => write!(f, "cannot prepare the temporary folder: {e}"),
            SimError::Certificates(e) => write!(f, "cannot make the run's certificates: {e}"),
            SimError::InvalidPlan(e) => write!(f, "cannot simulate this plan: {e}"),
            SimError::Zygote(why) => write!(f, "CREDLINT_ZYGOTE=require: {why}"),
            SimError::Unconfined(missing) => {
                let list: Vec<String> = missing
                    .iter()
                    .map(|(layer, why)| format!("{layer} ({why})"))
                    .collect();
                write!(
                    f,
                    "--require-sandbox: no program was run, since these layers of the pod's \
                     sandbox do not hold here: {}",
                    list.join("; ")
                )
            }
        }
    }
}

impl std::error::Error for SimError {}

fn temp_err(e: std::io::Error) -> SimError {
    SimError::TempDir(e.to_string())
}

/// What simulating one bundle found, and how much it ran (the summary counts scenarios and
/// runs; the cache keeps all of it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Simulated {
    /// Sorted and deduplicated.
    pub findings: Vec<SimFinding>,
    /// Scenarios set up.
    pub scenarios: usize,
    /// Runs of the program started.
    pub runs: usize,
    /// A run was stopped at the timeout: how far it got depends on how busy the machine was,
    /// so this verdict is not one to keep.
    pub timed_out: bool,
    /// The layers of the confinement that held for every run of the program, and why each
    /// other one did not.
    pub layers: Layers,
}

/// The program simulate starts once in the pod's root before the scenarios: it ends cleanly
/// only where the interpreter started and loaded the startup hook.
const TRIAL_PROGRAM: &str = "import sys\nsys.exit(0 if 'sitecustomize' in sys.modules else 3)\n";

/// Runs every scenario for `bundle` and returns the findings, sorted and deduplicated.
pub fn simulate(bundle: &SimBundle, opts: &SimOptions) -> Result<Vec<SimFinding>, SimError> {
    simulate_counted(bundle, opts).map(|s| s.findings)
}

/// [`simulate`], with the counts.
pub fn simulate_counted(bundle: &SimBundle, opts: &SimOptions) -> Result<Simulated, SimError> {
    let plan =
        scenario::parse_plan(&bundle.plan_json, &bundle.kind).map_err(SimError::InvalidPlan)?;
    let pki = incluster::make_pki().map_err(SimError::Certificates)?;
    let token = incluster::random_token(48).map_err(temp_err)?;
    let dir = RunDir::create().map_err(temp_err)?;

    let ctx = Arc::new(ApiContext {
        tls: pki.tls,
        token,
        rules: bundle.role_rules.clone(),
        namespace: bundle.namespace.clone(),
        user: format!(
            "system:serviceaccount:{}:{}-credentials",
            bundle.namespace, bundle.owner
        ),
        cluster: Mutex::new(Cluster::new(&bundle.namespace)),
        script_lines: u32::try_from(bundle.script.lines().count()).unwrap_or(u32::MAX),
    });
    let loopback = |e: std::io::Error| SimError::Loopback(e.to_string());
    // The program's own network: the fake servers listen there, so made before them.
    let net = confine::Confine::network(opts.confine);
    let listen_in = net.as_ref().ok();
    let api_ctx = Arc::clone(&ctx);
    let api = Service::start_at(
        "api",
        Arc::new(move |stream, stop| server::serve_api_connection(&api_ctx, stream, stop)),
        listen_in,
        true,
    )
    .map_err(loopback)?;

    // One fake server per server pod, for the whole simulation.
    let mut probes = Vec::new();
    let mut templates = Vec::new();
    for pod in &plan.pods {
        let probe_ctx = Arc::clone(&ctx);
        let name = pod.clone();
        let protocol = scenario::protocol(&bundle.kind);
        let service = Service::start(
            "probe",
            Arc::new(move |stream, stop| {
                probe::serve_probe(&probe_ctx, &name, protocol, stream, stop)
            }),
            listen_in,
        )
        .map_err(loopback)?;
        if let Some(template) = scenario::pod_template(&plan, &bundle.kind, service.port()) {
            templates.push((pod.clone(), template));
        }
        probes.push(service);
    }

    let ports: Vec<u16> = std::iter::once(api.port())
        .chain(probes.iter().map(|p| p.port()))
        .collect();
    let hostname = incluster::pod_name(
        &format!("{}-credentials", bundle.owner),
        &incluster::random_token(5).map_err(temp_err)?,
    );
    // The service-account files and the hook, in the pod's root or in the host's.
    let write_environment = |pod: bool| {
        incluster::write_environment(
            &dir,
            &ctx.token,
            &pki.ca_pem,
            &bundle.namespace,
            &ports,
            pod.then_some((hostname.as_str(), api.host())),
            false,
        )
    };
    write_environment(false).map_err(temp_err)?;
    let mut env = incluster::child_env(&dir, api.host(), api.port(), false);
    let run_error = |e: child::RunError| match e {
        child::RunError::Spawn(e) => SimError::PythonMissing {
            python: opts.python.clone(),
            error: e.to_string(),
        },
        child::RunError::Files(e) => temp_err(e),
    };
    let mut confine = confine::Confine::new(opts.timeout);
    confine.with_pod_user(bundle.run_as);
    confine.with_network(net);
    confine.with_hostname(&hostname);
    let interpreter = child::resolve_python(
        &opts.python,
        &dir,
        &env,
        opts.timeout,
        opts.confine,
        &mut confine,
    )
    .map_err(run_error)?;
    let python = interpreter.executable;
    // The container's own variables over the image's, as the pod will have them.
    let pod_facts = podenv::PodFacts::new(&hostname).map_err(temp_err)?;
    let container_env = |env: &mut Vec<(String, String)>| {
        let kubelet = podenv::resolve(&bundle.env, &incluster::service_vars(env), &pod_facts);
        incluster::with_container(env, &hostname, &kubelet);
    };
    container_env(&mut env);
    // Built once: the run folder and the ports stay the same for every run of this bundle.
    let mut confinement = None;
    let landlock = if opts.confine {
        sandbox::Sandbox::new(dir.path(), &interpreter.paths, &ports).map(|s| {
            confinement = Some(s);
        })
    } else {
        Err("turned off for this simulation".into())
    };
    if let Err(reason) = &landlock
        && !opts.require_sandbox
    {
        sandbox::note_unconfined(reason);
    }
    confine.layers.set("landlock", landlock);
    // One interpreter per bundle, forking each run, where the runs' confinement allows it
    // (`zygote`): started in the pod's root with the image's variables.
    let start_zygote = |confine: &confine::Confine,
                        confinement: Option<&sandbox::Sandbox>,
                        env: &[(String, String)],
                        run_env: &[(String, String)]|
     -> Result<(zygote::Zygote, RunDir), String> {
        let home = RunDir::create().map_err(|e| e.to_string())?;
        let (uid, gid) = confine.pod_user();
        home.hand_to(uid, gid).map_err(|e| e.to_string())?;
        incluster::write_environment(
            &home,
            &ctx.token,
            &pki.ca_pem,
            &bundle.namespace,
            &ports,
            Some((hostname.as_str(), api.host())),
            true,
        )
        .map_err(|e| e.to_string())?;
        incluster::write_program(&home, &bundle.script, &bundle.plan_json)
            .map_err(|e| e.to_string())?;
        let plan = podfs::PodFs::plan(home.path(), &interpreter.paths, Some(dir.path()))
            .map_err(|e| format!("cannot plan its root: {e}"))?;
        let mut own = confine.clone();
        own.with_pod_fs(Ok(plan));
        let mut config = confine.zygote_config();
        config["landlock"] = confinement
            .and_then(|s| s.pod_rules_json())
            .unwrap_or_default();
        config["staging"] = podfs::STAGING_PATH.into();
        config["logs"] = serde_json::json!([
            [incluster::TERMINATION_LOG, incluster::TERMINATION_PATH],
            [
                incluster::ACCESS_LOG,
                format!("{}/{}", podfs::HOOK_PATH, incluster::ACCESS_LOG)
            ],
        ]);
        config["preload"] = zygote::preload(&bundle.script).into();
        // Each run's environment, set by its process once it is confined, in the order a
        // started interpreter finds it (`Command` passes its variables sorted by name).
        let mut run_env = run_env.to_vec();
        run_env.sort();
        config["env"] = serde_json::json!(run_env);
        config["warm_tls"] = serde_json::json!([
            api.host().to_string(),
            api.port(),
            format!("{}/ca.crt", incluster::SA_PATHS[0]),
        ]);
        zygote::Zygote::start(&python, &home, env, &own, &config).map(|z| (z, home))
    };
    let mut zygote = None;
    let mut zygote_failed = None;
    if !opts.confine {
        confine.with_pod_fs(Err("turned off for this simulation".into()));
    } else if confine.can_build_pod_fs() {
        let mut pod_env = incluster::child_env(&dir, api.host(), api.port(), true);
        // The zygote starts with the image's variables and HOSTNAME only: what the change
        // under review sets acts in each run, once confined.
        let mut zygote_env = pod_env.clone();
        incluster::with_container(&mut zygote_env, &hostname, &[]);
        container_env(&mut pod_env);
        let inert = bundle.env.iter().all(|v| !podenv::acts_at_start(&v.name));
        let tried = podfs::PodFs::plan(dir.path(), &interpreter.paths, None)
            .map_err(|e| format!("cannot plan it: {e}"))
            .and_then(|plan| {
                confine.with_pod_fs(Ok(plan));
                if let Some(sandbox) = &mut confinement {
                    sandbox.for_pod_root()?;
                }
                // Where the runs fork from a zygote, its start is the trial: the interpreter
                // started in the pod's root, as the pod's user, with the startup hook loaded.
                if confine.zygote_ready() && !zygote::disabled() && inert {
                    match start_zygote(&confine, confinement.as_ref(), &zygote_env, &pod_env) {
                        Ok(started) => {
                            zygote = Some(started);
                            return Ok(());
                        }
                        Err(why) => zygote_failed = Some(why),
                    }
                }
                dir.renew().map_err(|e| e.to_string())?;
                write_environment(true).map_err(|e| e.to_string())?;
                // A program that ends cleanly only where the startup hook was loaded.
                incluster::write_program(&dir, TRIAL_PROGRAM, "{}").map_err(|e| e.to_string())?;
                child::trial(
                    &python,
                    &dir,
                    &pod_env,
                    opts.timeout,
                    &confine,
                    confinement.as_ref(),
                )
            });
        match tried {
            Ok(()) => env = pod_env,
            Err(why) => {
                if let Some(sandbox) = &mut confinement {
                    sandbox.for_host_root();
                }
                confine.with_pod_fs(Err(format!(
                    "the program could not start in the pod's root: {why}"
                )))
            }
        }
    } else {
        let why = confine.why_no_pod_fs();
        confine.with_pod_fs(Err(why));
    }
    if let Some(why) = zygote_failed
        && zygote::required()
    {
        return Err(SimError::Zygote(why));
    }
    if opts.require_sandbox {
        let missing = confine.layers.missing();
        if !missing.is_empty() {
            return Err(SimError::Unconfined(
                missing
                    .into_iter()
                    .map(|(layer, why)| (layer, why.to_string()))
                    .collect(),
            ));
        }
    } else {
        confine::note_missing(&confine.layers);
    }
    let timeout_text = format!("{:.1} s", opts.timeout.as_secs_f64());
    let mut findings = Vec::new();
    let mut generated = Vec::new();
    let (mut scenarios, mut runs, mut timed_out) = (0, 0, false);
    for def in scenario::scenarios(!templates.is_empty()) {
        scenarios += 1;
        let mut seen_values = std::collections::BTreeSet::new();
        let mut judge = {
            let mut cluster = lock(&ctx.cluster);
            *cluster = Cluster::new(&bundle.namespace);
            scenario::setup(def.id, &mut cluster, &plan, &templates).map_err(temp_err)?;
            seen_values.extend(cluster.all_values());
            scenario::Judge::new(&plan, &def, &cluster)
        };
        for run in 1..=2u8 {
            let before = {
                let mut cluster = lock(&ctx.cluster);
                if run == 2 {
                    // Between the two runs, the next sync: pruning, hook deletion, the GC.
                    let losses = cluster.next_sync(&bundle.owner);
                    judge.judge_sync(&losses);
                }
                if run == 2 && def.pods_between_runs {
                    scenario::start_pods(&mut cluster, &templates, scenario::PodStart::Current)
                        .map_err(temp_err)?;
                }
                cluster.start_run();
                scenario::snapshot(&cluster)
            };
            // A fresh folder for every run: nothing a run leaves (a marker, a changed hook or
            // program) reaches the next.
            dir.renew().map_err(temp_err)?;
            let pod = confine.in_pod_fs();
            write_environment(pod).map_err(temp_err)?;
            incluster::write_program(&dir, &bundle.script, &bundle.plan_json).map_err(temp_err)?;
            let confined = confinement.is_some();
            let forked = zygote.as_mut().map(|(z, _)| z.run(opts.timeout));
            let mut outcome = match forked {
                Some(Ok((outcome, alive))) => {
                    if !alive {
                        zygote = None;
                    }
                    outcome
                }
                other => {
                    if let Some(Err(why)) = other {
                        if zygote::required() {
                            return Err(SimError::Zygote(why));
                        }
                        zygote = None;
                    }
                    child::run(
                        &python,
                        &dir,
                        &env,
                        opts.timeout,
                        &confine,
                        &mut confinement,
                    )
                    .map_err(run_error)?
                }
            };
            if confined && confinement.is_none() {
                // The kernel refused Landlock as this run started: the run went on without.
                confine
                    .layers
                    .set("landlock", Err(sandbox::why_unconfined()));
                if opts.require_sandbox {
                    return Err(SimError::Unconfined(vec![(
                        "landlock",
                        sandbox::why_unconfined(),
                    )]));
                }
            }
            runs += 1;
            outcome.access = incluster::take_access_log(&dir);
            outcome.termination_message = match incluster::take_termination_message(&dir) {
                Ok(text) => text,
                Err(what) => {
                    outcome.access.push((
                        "tamper".into(),
                        format!("{} with {what}", incluster::TERMINATION_PATH),
                    ));
                    String::new()
                }
            };
            let mut cluster = lock(&ctx.cluster);
            // The program is done; the controllers finish what its requests started.
            cluster.quiesce();
            seen_values.extend(cluster.all_values());
            judge.judge_run(
                run,
                &outcome,
                &mut cluster,
                &before,
                &timeout_text,
                &seen_values,
            );
            if outcome.exit == child::Exit::TimedOut {
                timed_out = true;
                // A killed run leaves no defined state for a second one.
                break;
            }
        }
        {
            // Each finding about a request is placed at the line of create.py that sent it.
            let cluster = lock(&ctx.cluster);
            for f in &mut judge.findings {
                if f.origin.is_none() {
                    f.origin = f.request.as_deref().and_then(|r| cluster.origin(r));
                }
            }
        }
        findings.extend(judge.findings);
        generated.extend(judge.generated);
    }
    findings.extend(values::predictable(&plan, &generated));
    drop(zygote);
    drop(probes);
    drop(api);
    drop(dir);

    let order = |s: &str| SCENARIOS.iter().position(|x| *x == s).unwrap_or(usize::MAX);
    findings.sort_by(|a, b| {
        (order(a.scenario), a.run, a.rule, &a.request, &a.message).cmp(&(
            order(b.scenario),
            b.run,
            b.rule,
            &b.request,
            &b.message,
        ))
    });
    findings.dedup();
    Ok(Simulated {
        findings,
        scenarios,
        runs,
        timed_out,
        layers: confine.layers,
    })
}
