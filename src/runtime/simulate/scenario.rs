//! The scenarios (what the namespace holds before the program runs, and what it must do) and
//! the judge that turns what the fake cluster recorded into findings.

use std::collections::{BTreeMap, BTreeSet};
use std::io;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Value, json};

use super::SimFinding;
use super::child::{Exit, Outcome};
use super::cluster::{
    Cluster, DATA_HASH, ESO_FINALIZER, Event, MANAGED_LABEL, PodTemplate, Replacement, SyncLoss,
    Values, data_hash, secret_values,
};
use super::incluster::random_token;
use super::probe::Protocol;

pub const A_EMPTY: &str = "a-empty-namespace";
pub const B_PARTIAL: &str = "b-partial-secrets";
pub const C_ADOPT: &str = "c-adopt-generator";
pub const D_REMOTE: &str = "d-remote-externalsecret";
pub const E_FORCED: &str = "e-forced-second-run";
pub const F_REPAIR: &str = "f-repair-wrong-server";
pub const G_STILL_WRONG: &str = "g-server-still-wrong";
pub const H_UNCLEAR: &str = "h-unclear-answer";
pub const I_UNDER_CONTROLLER: &str = "i-adopt-under-controller";
pub const J_SLOW: &str = "j-slow-controller";

pub const UNAUTHORIZED: &str = "runtime-unauthorized-request";
pub const VALUE_REWRITTEN: &str = "runtime-value-rewritten";
pub const FOREIGN_WRITE: &str = "runtime-foreign-write";
pub const ADOPTS_FOREIGN: &str = "runtime-adopts-foreign";
pub const FAILED: &str = "runtime-failed";
pub const SANDBOX_ESCAPE: &str = "runtime-sandbox-escape";
pub const NEEDLESS_WRITE: &str = "runtime-needless-write";
pub const RESTARTS_SERVER: &str = "runtime-restarts-server";
pub const INCOMPLETE: &str = "runtime-incomplete";
pub const ADOPTION_ORDER: &str = "runtime-adoption-order";
pub const UNGUARDED_PATCH: &str = "runtime-unguarded-patch";
pub const VALUE_LEAKED: &str = "runtime-value-leaked";
pub const PREDICTABLE: &str = "runtime-predictable-value";

/// The label and annotation by which Argo CD would prune an adopted Secret (ADR-072 point 3).
const INSTANCE_LABEL: &str = "app.kubernetes.io/instance";
const TRACKING_ID: &str = "argocd.argoproj.io/tracking-id";

#[derive(Debug, Clone)]
pub struct PlannedSecret {
    pub name: String,
    /// Key and planned length, sorted by key.
    pub keys: Vec<(String, usize)>,
    /// What the plan says of each key's value, as given.
    pub specs: BTreeMap<String, KeySpec>,
}

/// A key spec of plan.json: `length` (characters), and optionally `alphabet`, the string of
/// characters a value may use. Without one, a value is taken to be drawn from ASCII letters
/// and digits when its random bits are counted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeySpec {
    pub length: Option<usize>,
    pub alphabet: Option<Vec<char>>,
}

/// The alphabet assumed when the plan names none: ASCII letters and digits.
pub const DEFAULT_ALPHABET_SIZE: usize = 62;

impl KeySpec {
    fn of(spec: &Value) -> KeySpec {
        let length = spec
            .get("length")
            .and_then(Value::as_u64)
            .and_then(|l| usize::try_from(l).ok());
        let alphabet = spec.get("alphabet").and_then(Value::as_str).map(|a| {
            let mut chars: Vec<char> = a.chars().collect();
            chars.sort_unstable();
            chars.dedup();
            chars
        });
        KeySpec {
            length,
            alphabet: alphabet.filter(|a| a.len() >= 2),
        }
    }
}

/// What the simulation needs from plan.json (bundle.md section 2).
#[derive(Debug, Clone)]
pub struct Plan {
    pub secrets: Vec<PlannedSecret>,
    pub retired: Vec<String>,
    pub pods: Vec<String>,
}

impl Plan {
    pub fn plans(&self, name: &str) -> bool {
        self.secrets.iter().any(|s| s.name == name)
    }
}

const MAX_ITEMS: usize = 64;
const MAX_PODS: usize = 16;

fn string_list(plan: &Value, field: &str) -> Result<Vec<String>, String> {
    match plan.get(field) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) if items.len() <= MAX_ITEMS => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| format!("{field} must hold strings"))
            })
            .collect(),
        Some(Value::Array(_)) => Err(format!("{field} lists more than {MAX_ITEMS} names")),
        Some(_) => Err(format!("{field} must be a list")),
    }
}

/// Reads plan.json; `kind` decides whether server pods exist (cache and broker only).
pub fn parse_plan(plan_json: &str, kind: &str) -> Result<Plan, String> {
    let plan: Value =
        serde_json::from_str(plan_json).map_err(|e| format!("plan.json is not JSON: {e}"))?;
    let Some(items) = plan.get("secrets").and_then(Value::as_array) else {
        return Err("plan.json has no `secrets` list".into());
    };
    if items.len() > MAX_ITEMS {
        return Err(format!("plan.json plans more than {MAX_ITEMS} Secrets"));
    }
    let mut secrets = Vec::new();
    for item in items {
        let name = item
            .get("name")
            .and_then(Value::as_str)
            .ok_or("a planned Secret lacks a `name`")?;
        let keys_obj = item
            .get("keys")
            .and_then(Value::as_object)
            .ok_or("a planned Secret lacks `keys`")?;
        if keys_obj.len() > MAX_ITEMS {
            return Err(format!("Secret {name:?} plans more than {MAX_ITEMS} keys"));
        }
        let specs = keys_obj
            .iter()
            .map(|(k, v)| (k.clone(), KeySpec::of(v)))
            .collect();
        let keys = keys_obj
            .iter()
            .map(|(k, v)| {
                let len = v
                    .get("length")
                    .and_then(Value::as_u64)
                    .unwrap_or(32)
                    .clamp(8, 128);
                (k.clone(), usize::try_from(len).unwrap_or(32))
            })
            .collect();
        secrets.push(PlannedSecret {
            name: name.to_string(),
            keys,
            specs,
        });
    }
    let pods = if matches!(kind, "cache" | "broker") {
        string_list(&plan, "serverPods")?
    } else {
        Vec::new()
    };
    if pods.len() > MAX_PODS {
        return Err(format!("plan.json lists more than {MAX_PODS} server pods"));
    }
    Ok(Plan {
        secrets,
        retired: string_list(&plan, "retiredGenerators")?,
        pods,
    })
}

pub fn protocol(kind: &str) -> Protocol {
    if kind == "broker" {
        Protocol::Nats
    } else {
        Protocol::Valkey
    }
}

/// The key of the first planned Secret that a server pod reads as its password.
pub fn pod_template(plan: &Plan, kind: &str, port: u16) -> Option<PodTemplate> {
    let first = plan.secrets.first()?;
    let key = first
        .keys
        .iter()
        .map(|(k, _)| k.clone())
        .find(|k| k == "password")
        .or_else(|| first.keys.first().map(|(k, _)| k.clone()))?;
    let nats = protocol(kind) == Protocol::Nats;
    Some(PodTemplate {
        port,
        port_name: if nats { "client" } else { "valkey" },
        container: if nats { "nats" } else { "valkey" },
        env_name: if nats {
            "NATS_PASSWORD"
        } else {
            "VALKEY_PASSWORD"
        },
        secret: first.name.clone(),
        key,
    })
}

/// What a run must end with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// Exit 0 and the ADR's end state.
    Success,
    /// Exit non-zero and no write at all.
    Stop,
    /// Exit 2 after restarting each refusing server once.
    ExitTwo,
    /// Exit 0 and the ADR's end state, or a non-zero exit that gave up waiting (what it wrote
    /// before is judged as ever): the slow controller's scenario.
    SuccessOrGiveUp,
}

pub struct ScenarioDef {
    pub id: &'static str,
    pub expect: Expect,
    /// Server pods start between the two runs (they read the Secrets the first run created).
    pub pods_between_runs: bool,
}

pub fn scenarios(with_pods: bool) -> Vec<ScenarioDef> {
    let def = |id, expect, pods_between_runs| ScenarioDef {
        id,
        expect,
        pods_between_runs,
    };
    let mut out = vec![
        def(A_EMPTY, Expect::Success, false),
        def(B_PARTIAL, Expect::Success, false),
        def(C_ADOPT, Expect::Success, false),
        def(D_REMOTE, Expect::Stop, false),
        def(E_FORCED, Expect::Success, true),
    ];
    if with_pods {
        out.push(def(F_REPAIR, Expect::Success, false));
        out.push(def(G_STILL_WRONG, Expect::ExitTwo, false));
        out.push(def(H_UNCLEAR, Expect::Success, false));
    }
    out.push(def(I_UNDER_CONTROLLER, Expect::Success, false));
    out.push(def(J_SLOW, Expect::SuccessOrGiveUp, false));
    out
}

fn encode_all(values: &[(String, String)]) -> Value {
    let data: serde_json::Map<String, Value> = values
        .iter()
        .map(|(k, v)| (k.clone(), json!(B64.encode(v))))
        .collect();
    Value::Object(data)
}

fn values_for(keys: &[(String, usize)]) -> io::Result<Vec<(String, String)>> {
    keys.iter()
        .map(|(k, len)| Ok((k.clone(), random_token(*len)?)))
        .collect()
}

/// How the server pods of a scenario start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodStart {
    /// With the value their Secret holds now (not running if it has none).
    Current,
    /// With another value (issue #316); the replacement reads the Secret, or refuses again.
    Stale { keep_refusing: bool },
    /// With the current value, but their servers answer probes unclearly.
    Unclear,
}

pub fn start_pods(
    cluster: &mut Cluster,
    templates: &[(String, PodTemplate)],
    start: PodStart,
) -> io::Result<()> {
    for (name, template) in templates {
        let current = cluster.secret_value(&template.secret, &template.key);
        let (password, replacement) = match start {
            PodStart::Current | PodStart::Unclear => (current, Replacement::FromSecret),
            PodStart::Stale { keep_refusing } => {
                let old = random_token(32)?.into_bytes();
                let replacement = if keep_refusing {
                    Replacement::Stale(old.clone())
                } else {
                    Replacement::FromSecret
                };
                (Some(old), replacement)
            }
        };
        cluster.seed_pod(
            name,
            template.clone(),
            password,
            replacement,
            start == PodStart::Unclear,
        );
    }
    Ok(())
}

/// Fills a fresh cluster with what scenario `id` starts from.
pub fn setup(
    id: &str,
    cluster: &mut Cluster,
    plan: &Plan,
    templates: &[(String, PodTemplate)],
) -> io::Result<()> {
    let ns = cluster.namespace.clone();
    match id {
        B_PARTIAL => {
            for s in &plan.secrets {
                // Every key but the last exists, beside a key no plan names any more.
                let mut values = values_for(&s.keys[..s.keys.len().saturating_sub(1)])?;
                values.push(("legacy".into(), random_token(24)?));
                cluster.seed_secret(
                    json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                    "metadata": {"name": s.name}, "data": encode_all(&values)}),
                );
            }
            start_pods(cluster, templates, PodStart::Current)?;
        }
        C_ADOPT | D_REMOTE | I_UNDER_CONTROLLER | J_SLOW => {
            // The slow controller: a deletion is not observed while the program runs.
            cluster.set_slow_controller(id == J_SLOW);
            for g in &plan.retired {
                cluster.seed_generator(g);
            }
            for (i, s) in plan.secrets.iter().enumerate() {
                let remote = id == D_REMOTE && i + 1 == plan.secrets.len();
                let stale = id == I_UNDER_CONTROLLER;
                seed_external_secret(cluster, &ns, plan, i, s, remote, stale)?;
            }
            start_pods(cluster, templates, PodStart::Current)?;
        }
        F_REPAIR | G_STILL_WRONG | H_UNCLEAR => {
            for s in &plan.secrets {
                let values = values_for(&s.keys)?;
                cluster.seed_secret(
                    json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                    "metadata": {"name": s.name}, "data": encode_all(&values)}),
                );
            }
            let start = match id {
                F_REPAIR => PodStart::Stale {
                    keep_refusing: false,
                },
                G_STILL_WRONG => PodStart::Stale {
                    keep_refusing: true,
                },
                _ => PodStart::Unclear,
            };
            start_pods(cluster, templates, start)?;
        }
        _ => {}
    }
    Ok(())
}

/// An External Secrets 5.4-era ExternalSecret for planned Secret `s`, with the Secret it wrote,
/// as a running controller left them: ESO's finalizer on the ExternalSecret, its sync recorded
/// in the status, the Secret labelled as managed. `stale`: the Secret's data-hash annotation no
/// longer matches its data (it was changed after the last sync, as a hand edit or an earlier,
/// interrupted adoption leaves it), so that the controller refreshes on its next reconcile.
fn seed_external_secret(
    cluster: &mut Cluster,
    ns: &str,
    plan: &Plan,
    i: usize,
    s: &PlannedSecret,
    remote: bool,
    stale: bool,
) -> io::Result<()> {
    let app = format!("{ns}-platform");
    let spec = if remote {
        let data: Vec<Value> = s
            .keys
            .iter()
            .map(|(k, _)| json!({"secretKey": k, "remoteRef": {"key": format!("{ns}/{}", s.name), "property": k}}))
            .collect();
        json!({"refreshInterval": "1h", "secretStoreRef": {"kind": "ClusterSecretStore", "name": "vault"},
               "target": {"name": s.name, "creationPolicy": "Owner"}, "data": data})
    } else {
        let generator = plan
            .retired
            .get(i % plan.retired.len().max(1))
            .cloned()
            .unwrap_or_else(|| format!("{}-password", s.name));
        json!({"refreshInterval": "0", "refreshPolicy": "CreatedOnce",
               "target": {"name": s.name, "creationPolicy": "Owner", "deletionPolicy": "Retain"},
               "dataFrom": [{"sourceRef": {"generatorRef": {
                   "apiVersion": "generators.external-secrets.io/v1alpha1", "kind": "Password", "name": generator}}}]})
    };
    let es = json!({
        "apiVersion": "external-secrets.io/v1beta1", "kind": "ExternalSecret",
        "metadata": {"name": s.name, "labels": {INSTANCE_LABEL: app}, "finalizers": [ESO_FINALIZER],
                     "annotations": {TRACKING_ID: format!("{app}:external-secrets.io/ExternalSecret:{ns}/{}", s.name)}},
        "spec": spec,
        "status": {"refreshTime": "2026-10-01T00:00:00Z", "syncedResourceVersion": "1-0",
                   "conditions": [{"type": "Ready", "status": "True", "reason": "SecretSynced"}]},
    });
    let uid = cluster.seed_external_secret(es, remote);
    // A generator makes one key, `password`; a store gives every key.
    let keys: Vec<(String, usize)> = if remote || !s.keys.iter().any(|(k, _)| k == "password") {
        s.keys.clone()
    } else {
        s.keys
            .iter()
            .filter(|(k, _)| k == "password")
            .cloned()
            .collect()
    };
    let values = values_for(&keys)?;
    let data = encode_all(&values);
    let hash = if stale {
        // The hash of what the Secret held before its last change.
        data_hash(Some(&encode_all(&values_for(&keys)?)))
    } else {
        data_hash(Some(&data))
    };
    cluster.seed_secret(json!({
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {
            "name": s.name,
            "labels": {INSTANCE_LABEL: app, MANAGED_LABEL: "true"},
            "annotations": {TRACKING_ID: format!("{app}:/Secret:{ns}/{}", s.name), DATA_HASH: hash},
            "ownerReferences": [{"apiVersion": "external-secrets.io/v1beta1", "kind": "ExternalSecret",
                                 "name": s.name, "uid": uid, "controller": true, "blockOwnerDeletion": true}],
        },
        "data": data.clone(),
    }));
    if remote && let Value::Object(store) = data {
        cluster.set_store(&s.name, store);
    }
    Ok(())
}

/// resourceVersion and value hashes of every Secret, as the ADR's e2e compares them.
pub type Snapshot = BTreeMap<String, (Value, Values)>;

pub fn snapshot(cluster: &Cluster) -> Snapshot {
    cluster
        .secret_names()
        .into_iter()
        .filter_map(|n| {
            cluster.secret(&n).map(|s| {
                (
                    n,
                    (s["metadata"]["resourceVersion"].clone(), secret_values(s)),
                )
            })
        })
        .collect()
}

/// Hides every known value (raw or base64) in text the program printed, longest first so that
/// a value inside another is not left half visible.
pub fn redact(text: &str, values: &BTreeSet<Vec<u8>>) -> String {
    let mut sorted: Vec<&Vec<u8>> = values.iter().collect();
    sorted.sort_by_key(|v| std::cmp::Reverse(v.len()));
    let mut out = text.to_string();
    for v in sorted {
        if let Ok(s) = std::str::from_utf8(v)
            && s.len() >= 4
        {
            out = out.replace(s, "[redacted]");
        }
    }
    out
}

/// The last lines of stderr, short enough for a message.
fn stderr_summary(tail: &str) -> String {
    let lines: Vec<&str> = tail.lines().filter(|l| !l.trim().is_empty()).collect();
    let last = lines[lines.len().saturating_sub(6)..].join(" | ");
    let chars: Vec<char> = last.chars().collect();
    let trimmed: String = chars[chars.len().saturating_sub(600)..].iter().collect();
    if trimmed.is_empty() {
        "stderr is empty".into()
    } else {
        format!("stderr ends: {trimmed}")
    }
}

/// Turns one scenario's events into findings.
pub struct Judge<'a> {
    plan: &'a Plan,
    scenario: &'static str,
    expect: Expect,
    /// Hashes of every value that has existed in the scenario, per Secret.
    known: BTreeMap<String, Values>,
    pub findings: Vec<SimFinding>,
    /// The values the program created for planned keys, for the checks across scenarios.
    pub generated: Vec<Generated>,
    /// Secrets the sync cycle deleted with their values (already reported): the next run
    /// creates them, rightly.
    lost_at_sync: BTreeSet<String>,
    /// The first run gave up waiting (the slow controller's scenario): the second is the
    /// first to finish the work, not a forced re-run that must change nothing.
    gave_up: bool,
}

/// A value the program created for a planned key (kept in memory only, never printed).
#[derive(Debug, Clone)]
pub struct Generated {
    pub scenario: &'static str,
    pub run: u8,
    pub secret: String,
    pub key: String,
    pub value: Vec<u8>,
}

struct RunContext<'a> {
    run: u8,
    flagged: BTreeSet<String>,
    pod_deletes: BTreeMap<String, usize>,
    wrote: bool,
    remote_secret: Option<&'a str>,
    /// Successful writes per Secret in this run.
    writes: BTreeMap<String, usize>,
    /// What each request carried besides Secret data.
    sent: Vec<(String, String)>,
}

impl<'a> Judge<'a> {
    pub fn new(plan: &'a Plan, def: &ScenarioDef, cluster: &Cluster) -> Self {
        let known = snapshot(cluster)
            .into_iter()
            .map(|(n, (_, v))| (n, v))
            .collect();
        Judge {
            plan,
            scenario: def.id,
            expect: def.expect,
            known,
            findings: Vec::new(),
            generated: Vec::new(),
            lost_at_sync: BTreeSet::new(),
            gave_up: false,
        }
    }

    fn push(&mut self, rule: &'static str, run: u8, request: Option<&str>, message: String) {
        self.findings.push(SimFinding {
            rule,
            scenario: self.scenario,
            run,
            request: request.map(str::to_string),
            message,
            warning: false,
            origin: None,
        });
    }

    /// The sync cycle between the runs (`Cluster::next_sync`): a Secret it deletes with its
    /// values is created again, with new ones, by the Job at the next sync.
    pub fn judge_sync(&mut self, losses: &[SyncLoss]) {
        if self.expect == Expect::Stop {
            return;
        }
        for loss in losses {
            let name = &loss.secret;
            if loss.warning {
                self.push(VALUE_REWRITTEN, 1, loss.request.as_deref(), format!(
                    "Secret {name}: {}, and the Job of the sync after creates it again with new values; a created Secret carries no Argo CD tracking metadata (ADR-072 points 2 and 3)", loss.step));
                if let Some(f) = self.findings.last_mut() {
                    f.warning = true;
                }
                continue;
            }
            let had_values = self.known.get(name).is_some_and(|v| !v.is_empty());
            if !had_values {
                continue;
            }
            self.known.remove(name);
            self.lost_at_sync.insert(name.clone());
            let set_up = if loss.request.is_some() {
                "this request wrote it so"
            } else {
                "the scenario seeded it so"
            };
            self.push(VALUE_REWRITTEN, 1, loss.request.as_deref(), format!(
                "between this run and the next sync, {}: Secret {name} goes with its values, and the Job of the next sync creates it again with new ones ({set_up}; a created Secret carries no ownerReference and no Argo CD tracking metadata; ADR-072 points 2 and 3)", loss.step));
        }
    }

    /// Judges run `run`: its events, its exit, and the state it left.
    pub fn judge_run(
        &mut self,
        run: u8,
        outcome: &Outcome,
        cluster: &mut Cluster,
        before: &Snapshot,
        timeout_text: &str,
        seen_values: &BTreeSet<Vec<u8>>,
    ) {
        let events = std::mem::take(&mut cluster.events);
        let remote_secret = if self.expect == Expect::Stop {
            self.plan.secrets.last().map(|s| s.name.as_str())
        } else {
            None
        };
        let mut ctx = RunContext {
            run,
            flagged: BTreeSet::new(),
            pod_deletes: BTreeMap::new(),
            wrote: false,
            remote_secret,
            writes: BTreeMap::new(),
            sent: Vec::new(),
        };
        for event in &events {
            self.judge_event(event, &mut ctx);
        }
        self.judge_leaks(run, outcome, &ctx.sent, seen_values);
        self.judge_output_size(run, outcome);
        for (kind, detail) in &outcome.access {
            let detail = redact(detail, seen_values);
            let what = match kind.as_str() {
                "write" => format!("wrote or changed {detail}, outside its run folder"),
                "read" => {
                    format!("read {detail}, outside its run folder and the interpreter's files")
                }
                "connect" => {
                    format!("connected to {detail}, which is not the API server (or a server pod)")
                }
                "exec" => format!(
                    "started a program or loaded a library ({detail}), whose file and network access simulate cannot see"
                ),
                "inspect" => format!(
                    "walked the interpreter's objects or set a tracer ({detail}), the way to reach and silence simulate's own checks"
                ),
                "tamper" => format!(
                    "replaced {detail}, which credlint does not read (a link could point it at a host file, a FIFO could hang it)"
                ),
                _ => continue,
            };
            self.push(SANDBOX_ESCAPE, run, None, format!("{what}: a credentials Job talks to the API server and its servers, with a read-only root filesystem (ADR-072 points 5 and 6)"));
        }
        let tail = || stderr_summary(&redact(&outcome.stderr_tail, seen_values));
        match (outcome.exit, self.expect) {
            (Exit::TimedOut, _) => {
                self.push(FAILED, run, None, format!("did not finish within {timeout_text} and was killed; {}", tail()))
            }
            (Exit::Signal(sig), _) => self.push(FAILED, run, None, format!("was killed by signal {sig}; {}", tail())),
            (Exit::Code(0), Expect::Success | Expect::SuccessOrGiveUp) => {
                self.check_end_state(run, cluster)
            }
            (Exit::Code(_), Expect::SuccessOrGiveUp) => self.gave_up = true,
            (Exit::Code(code), Expect::Success) => self.push(
                FAILED,
                run,
                None,
                format!("exited with status {code} where the scenario expects success; {}", tail()),
            ),
            (Exit::Code(0), Expect::Stop) if !ctx.wrote => self.push(
                INCOMPLETE,
                run,
                None,
                format!(
                    "exited 0 although a remote ExternalSecret owns planned Secret {}: the program must stop with a non-zero exit before writing (ADR-072 point 3)",
                    remote_secret.unwrap_or_default()
                ),
            ),
            (Exit::Code(_), Expect::Stop) => {}
            (Exit::Code(0), Expect::ExitTwo) => self.push(
                INCOMPLETE,
                run,
                None,
                "exited 0 although a server pod still refuses its Secret's password after its restart: the Job must fail with exit 2 (ADR-072 point 4)".into(),
            ),
            (Exit::Code(2), Expect::ExitTwo) => {}
            (Exit::Code(code), Expect::ExitTwo) => self.push(
                FAILED,
                run,
                None,
                format!("exited with status {code}; a server that still refuses after its restart makes the program exit 2; {}", tail()),
            ),
        }
        if run == 2 && !self.gave_up {
            self.compare_snapshots(run, cluster, before, &ctx.flagged);
        }
    }

    fn judge_event(&mut self, event: &Event, ctx: &mut RunContext<'_>) {
        let run = ctx.run;
        let stop = self.expect == Expect::Stop;
        let before_stop = "although a remote ExternalSecret owns a planned Secret: the program must stop before writing anything (ADR-072 point 3)";
        match event {
            Event::Denied { request } => self.push(
                UNAUTHORIZED,
                run,
                Some(request),
                "the bundle's Role does not allow this request, so the API server answers 403 Forbidden (ADR-072 point 5)".into(),
            ),
            Event::SecretWrite { request, name, verb, status, before, after, changed, by_gc, guarded, new_values, while_targeted_by } => {
                if *by_gc {
                    let had_values = self.known.get(name).is_some_and(|v| !v.is_empty());
                    if after.is_none() && had_values && !stop {
                        ctx.flagged.insert(name.clone());
                        self.push(VALUE_REWRITTEN, run, Some(request), format!(
                            "the garbage collector deleted Secret {name} with its values because this delete did not use propagationPolicy Orphan (ADR-072 point 3)"));
                    }
                    return;
                }
                ctx.wrote = true;
                if !self.plan.plans(name) {
                    ctx.flagged.insert(name.clone());
                    self.push(FOREIGN_WRITE, run, Some(request), format!(
                        "{verb} of Secret {name:?}, which the plan does not name: the program writes only its planned Secrets (ADR-072 point 5)"));
                    return;
                }
                if stop {
                    let message = if ctx.remote_secret == Some(name.as_str()) {
                        format!("{verb} of Secret {name}, which a remote (store-backed) ExternalSecret owns: it is not ours to replace (ADR-072 point 3)")
                    } else {
                        format!("{verb} of Secret {name} {before_stop}")
                    };
                    self.push(ADOPTS_FOREIGN, run, Some(request), message);
                    return;
                }
                if !(200..300).contains(status) {
                    return;
                }
                if *changed && let Some(es) = while_targeted_by {
                    self.push(ADOPTION_ORDER, run, Some(request), format!(
                        "{verb} of Secret {name} while ExternalSecret {es}, which writes it, still exists: External Secrets may still refresh it from a cache that has not seen the deletion; write a planned Secret only after its ExternalSecret is gone (ADR-072 point 3)"));
                }
                if *changed {
                    self.judge_guard(name, verb, before.is_some(), *guarded, request, ctx);
                    self.judge_generated(name, new_values, request, ctx.run);
                }
                let known = self.known.entry(name.clone()).or_default();
                let lost: Vec<String> = known
                    .iter()
                    .filter(|(k, h)| after.as_ref().and_then(|a| a.get(*k)) != Some(*h))
                    .map(|(k, _)| k.clone())
                    .collect();
                if let Some(after) = after {
                    known.extend(after.iter().map(|(k, h)| (k.clone(), *h)));
                }
                if !lost.is_empty() {
                    ctx.flagged.insert(name.clone());
                    let keys = lost.join(", ");
                    let message = match *verb {
                        "delete" | "deletecollection" => format!("deleted Secret {name}, and with it the existing value of {keys}: only create may write a value, once (ADR-072 point 2)"),
                        "create" => format!("created Secret {name} anew with a different value for {keys} after its earlier value was deleted (ADR-072 point 2)"),
                        _ => format!("{verb} changed the existing value of {keys} in Secret {name}: no operation may touch an existing /data/<key> (ADR-072 point 2)"),
                    };
                    self.push(VALUE_REWRITTEN, run, Some(request), message);
                } else if !changed {
                    ctx.flagged.insert(name.clone());
                    self.push(NEEDLESS_WRITE, run, Some(request), format!(
                        "{verb} of Secret {name} changed nothing: a Secret with nothing to change is not written at all (ADR-072 point 2)"));
                } else if run == 2 && !self.lost_at_sync.contains(name) && !self.gave_up {
                    ctx.flagged.insert(name.clone());
                    self.push(NEEDLESS_WRITE, run, Some(request), format!(
                        "the second run wrote Secret {name} although the first left nothing missing; a forced re-run must not change any resourceVersion (ADR-072 point 2)"));
                }
            }
            Event::ExternalSecretDeleted { request, name, remote } => {
                ctx.wrote = true;
                if *remote {
                    self.push(ADOPTS_FOREIGN, run, Some(request), format!(
                        "deleted ExternalSecret {name}, which reads a secret store and is not generator-backed: it is not ours to replace (ADR-072 point 3)"));
                } else if stop {
                    self.push(ADOPTS_FOREIGN, run, Some(request), format!("deleted ExternalSecret {name} {before_stop}"));
                }
            }
            Event::GeneratorDeleted { request, name, in_use_by } => {
                ctx.wrote = true;
                if stop {
                    self.push(ADOPTS_FOREIGN, run, Some(request), format!("deleted Password generator {name} {before_stop}"));
                } else if let Some(es) = in_use_by {
                    self.push(ADOPTION_ORDER, run, Some(request), format!(
                        "deleted Password generator {name} while ExternalSecret {es}, which uses it, still exists: External Secrets can no longer refresh it, and a refresh it still makes fails and is retried until a generator of that name exists again; delete the ExternalSecret with propagationPolicy Orphan, wait for it to go, then delete its generators (ADR-072 point 3)"));
                }
            }
            Event::ControllerWrite { trigger, external_secret, name, before: _, after, reason } => {
                let known = self.known.entry(name.clone()).or_default();
                let changed: Vec<String> = known
                    .iter()
                    .filter(|(k, h)| after.as_ref().and_then(|a| a.get(*k)) != Some(*h))
                    .map(|(k, _)| k.clone())
                    .collect();
                if let Some(after) = after {
                    known.extend(after.iter().map(|(k, h)| (k.clone(), *h)));
                }
                if changed.is_empty() || stop {
                    return;
                }
                ctx.flagged.insert(name.clone());
                let keys = changed.join(", ");
                let what = if after.is_some() {
                    format!("wrote a new value for {keys} of Secret {name}")
                } else {
                    format!("deleted Secret {name} with its value of {keys}")
                };
                self.push(VALUE_REWRITTEN, run, Some(trigger), format!(
                    "this request let External Secrets reconcile ExternalSecret {external_secret}, which refreshed because {reason} and {what}: the issue #316 race; write a planned Secret only after its ExternalSecret is gone (ADR-072 points 2 and 3)"));
            }
            Event::RefreshFailed { trigger, external_secret, name, generator, reason } => {
                if stop {
                    return;
                }
                ctx.flagged.insert(name.clone());
                self.push(VALUE_REWRITTEN, run, Some(trigger), format!(
                    "this request let External Secrets refresh ExternalSecret {external_secret} ({reason}); its Password generator {generator} is already deleted, so the refresh failed and is retried, and it writes a new value to Secret {name} as soon as a generator of that name exists again: write a planned Secret only after its ExternalSecret is gone (ADR-072 points 2 and 3)"));
            }
            Event::Sent { request, text } => ctx.sent.push((request.clone(), text.clone())),
            Event::PodDeleted { request, name, running, accepted, unclear, terminating } => {
                ctx.wrote = true;
                if stop {
                    self.push(ADOPTS_FOREIGN, run, Some(request), format!("deleted pod {name} {before_stop}"));
                    return;
                }
                let count = ctx.pod_deletes.entry(name.clone()).or_default();
                *count += 1;
                let message = if *terminating || *count > 1 {
                    format!("deleted pod {name} a second time in one run: a refusing server is deleted once (ADR-072 point 4)")
                } else if !running {
                    format!("deleted pod {name}, which was not running: only a running server that refuses its password is restarted (ADR-072 point 4)")
                } else if *unclear {
                    format!(
                        "deleted pod {name}, whose server gave no clear answer: an unknown answer never restarts a pod (ADR-072 point 4)"
                    )
                } else if *accepted {
                    format!("deleted pod {name}, whose server accepts its Secret's password: a correct server is never restarted (ADR-072 point 4)")
                } else {
                    return;
                };
                self.push(RESTARTS_SERVER, run, Some(request), message);
            }
            Event::OtherWrite { request } => {
                ctx.wrote = true;
                if stop {
                    self.push(ADOPTS_FOREIGN, run, Some(request), format!("wrote {before_stop}"));
                }
            }
        }
    }

    /// Point 2: a patch of an existing Secret starts by testing its resourceVersion, and a run
    /// writes each Secret once.
    fn judge_guard(
        &mut self,
        name: &str,
        verb: &str,
        existed: bool,
        guarded: Option<bool>,
        request: &str,
        ctx: &mut RunContext<'_>,
    ) {
        let run = ctx.run;
        if verb == "patch" && existed && guarded == Some(false) {
            ctx.flagged.insert(name.to_string());
            self.push(UNGUARDED_PATCH, run, Some(request), format!(
                "patched Secret {name} without a first operation that tests /metadata/resourceVersion: a change made since the program read it would be overwritten (ADR-072 point 2)"));
        }
        let count = ctx.writes.entry(name.to_string()).or_default();
        *count += 1;
        // A write already judged (a value lost, say) is not counted again.
        if *count == 2 && !ctx.flagged.contains(name) {
            ctx.flagged.insert(name.to_string());
            self.push(UNGUARDED_PATCH, run, Some(request), format!(
                "wrote Secret {name} a second time in one run: each Secret is created, or completed by one guarded patch, once (ADR-072 point 2)"));
        }
    }

    /// Point 2 and the plan's key specs: each created planned key has the planned length and
    /// alphabet. The values are kept for the checks across scenarios.
    fn judge_generated(
        &mut self,
        name: &str,
        values: &[(String, Vec<u8>)],
        request: &str,
        run: u8,
    ) {
        let Some(planned) = self.plan.secrets.iter().find(|s| s.name == name) else {
            return;
        };
        for (key, value) in values {
            let Some(spec) = planned.specs.get(key) else {
                continue;
            };
            let text = String::from_utf8_lossy(value);
            let count = text.chars().count();
            if let Some(length) = spec.length
                && count != length
            {
                self.push(INCOMPLETE, run, Some(request), format!(
                    "created key {key} of Secret {name} with a value of {count} characters where the plan asks for {length} (ADR-072 point 2)"));
            }
            if let Some(alphabet) = &spec.alphabet {
                let outside = std::str::from_utf8(value).map_or(true, |t| {
                    t.chars().any(|c| alphabet.binary_search(&c).is_err())
                });
                if outside {
                    self.push(INCOMPLETE, run, Some(request), format!(
                        "created key {key} of Secret {name} with characters outside the plan's alphabet (ADR-072 point 2)"));
                }
            }
            self.generated.push(Generated {
                scenario: self.scenario,
                run,
                secret: name.to_string(),
                key: key.clone(),
                value: value.clone(),
            });
        }
    }

    /// Point 7: no value (of any Secret of the scenario) in the program's output or in any
    /// field it sent other than Secret data.
    fn judge_leaks(
        &mut self,
        run: u8,
        outcome: &Outcome,
        sent: &[(String, String)],
        seen_values: &BTreeSet<Vec<u8>>,
    ) {
        let index = super::values::LeakIndex::new(seen_values);
        let streams = [
            ("standard output", &outcome.stdout),
            ("standard error", &outcome.stderr),
            ("termination message", &outcome.termination_message),
        ];
        for (stream, text) in streams {
            if index.found_in(text.as_bytes()) {
                self.push(VALUE_LEAKED, run, None, format!(
                    "a value of a Secret (as text or encoded: base64, hex, percent-encoding or string escapes, whole or a long part) appears on the program's {stream}: values never reach logs or the Job's output (ADR-072 point 7)"));
            }
        }
        for (request, text) in sent {
            if index.found_in(text.as_bytes()) {
                self.push(VALUE_LEAKED, run, Some(request), "a value of a Secret (as text or encoded: base64, hex, percent-encoding or string escapes, whole, a long part or in parts across fields) is sent outside Secret data (in the path, a label, an annotation or another object): values are written only to Secret data (ADR-072 point 7)".into());
            }
        }
    }

    /// A stream past the cap: a Job's log is no dump, and what was dropped went unchecked.
    fn judge_output_size(&mut self, run: u8, outcome: &Outcome) {
        let cap = super::child::OUTPUT_CAP as u64;
        for (stream, len) in [
            ("standard output", outcome.stdout_len),
            ("standard error", outcome.stderr_len),
        ] {
            if len > cap {
                self.push(FAILED, run, None, format!(
                    "wrote {len} bytes to its {stream}, over the {} MiB that simulate keeps: the rest was read and dropped, unchecked for values; a credentials Job logs a few lines",
                    cap / (1024 * 1024)));
            }
        }
    }

    /// After exit 0 where success is expected: the state ADR-072 points 2-4 promise.
    fn check_end_state(&mut self, run: u8, cluster: &mut Cluster) {
        let mut problems = Vec::new();
        for s in &self.plan.secrets {
            let Some(secret) = cluster.secret(&s.name) else {
                problems.push(format!("Secret {} does not exist", s.name));
                continue;
            };
            for (key, _) in &s.keys {
                if secret.get("data").and_then(|d| d.get(key)).is_none() {
                    problems.push(format!("Secret {} lacks planned key {key}", s.name));
                }
            }
            if matches!(self.scenario, C_ADOPT | I_UNDER_CONTROLLER | J_SLOW) {
                let meta = &secret["metadata"];
                let es_owned = meta
                    .get("ownerReferences")
                    .and_then(Value::as_array)
                    .is_some_and(|refs| {
                        refs.iter()
                            .any(|r| r.get("kind") == Some(&json!("ExternalSecret")))
                    });
                if es_owned {
                    problems.push(format!(
                        "Secret {} still has an ExternalSecret ownerReference",
                        s.name
                    ));
                }
                if meta
                    .get("annotations")
                    .and_then(|a| a.get(TRACKING_ID))
                    .is_some()
                {
                    problems.push(format!(
                        "Secret {} still carries the Argo CD tracking id",
                        s.name
                    ));
                }
                if meta
                    .get("labels")
                    .and_then(|l| l.get(INSTANCE_LABEL))
                    .is_some()
                {
                    problems.push(format!(
                        "Secret {} still carries the {INSTANCE_LABEL} label",
                        s.name
                    ));
                }
                if cluster.external_secret_exists(&s.name) {
                    problems.push(format!("ExternalSecret {} still exists", s.name));
                }
            }
        }
        if matches!(self.scenario, C_ADOPT | I_UNDER_CONTROLLER | J_SLOW) {
            for g in &self.plan.retired {
                if cluster.generator_exists(g) {
                    problems.push(format!("retired Password generator {g} still exists"));
                }
            }
        }
        if self.scenario == F_REPAIR {
            for pod in cluster.pods_refusing() {
                problems.push(format!(
                    "server pod {pod} still refuses its Secret's password"
                ));
            }
        }
        for problem in problems {
            self.push(
                INCOMPLETE,
                run,
                None,
                format!("exited 0 but {problem} (ADR-072 points 2-4)"),
            );
        }
    }

    /// The ADR's e2e check: every Secret keeps its value hashes and resourceVersion across a
    /// forced second run. Reported only where no event already explained the change.
    fn compare_snapshots(
        &mut self,
        run: u8,
        cluster: &Cluster,
        before: &Snapshot,
        flagged: &BTreeSet<String>,
    ) {
        let after = snapshot(cluster);
        for (name, (rv, values)) in before {
            if flagged.contains(name) {
                continue;
            }
            match after.get(name) {
                Some((rv2, values2)) if values2 == values && rv2 == rv => {}
                Some((_, values2)) if values2 == values => self.push(NEEDLESS_WRITE, run, None, format!(
                    "Secret {name} has a new resourceVersion after the second run: a forced re-run must write nothing (ADR-072 point 2)")),
                _ => self.push(VALUE_REWRITTEN, run, None, format!(
                    "Secret {name} lost or changed a value during the second run (ADR-072 point 2)")),
            }
        }
    }
}
