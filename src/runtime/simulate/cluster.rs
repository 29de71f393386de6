//! The fake cluster's objects and what the API server (and the controllers a credentials Job
//! relies on) does with them: Secrets, External Secrets' ExternalSecrets and Password
//! generators, and server Pods that a StatefulSet replaces. Every write is recorded as an
//! [`Event`] for the judge; values are kept only as SHA-256 hashes in events.
//!
//! This file holds what every resource shares: the [`Cluster`] state, the event log, the
//! request and response types and the routing of a request to its resource. Each API family
//! has its own module (`secrets`, `external_secrets`, `generators`, `pods`); the External
//! Secrets controller and the garbage collector act in `eso`.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::rbac::RequestInfo;

mod apply;
mod eso;
mod external_secrets;
mod generators;
mod pods;
mod secrets;
mod sync;

#[cfg(test)]
pub use eso::DELETE_LAG;
pub use eso::{DATA_HASH, ESO_FINALIZER, MANAGED_LABEL, data_hash};
use pods::Pod;
#[cfg(test)]
pub use pods::{POD_REPLACED, nanos};
pub use pods::{PodTemplate, Replacement};
pub use secrets::secret_values;
use secrets::strip_secret_data;
pub use sync::SyncLoss;

const MAX_EVENTS: usize = 10_000;
const TIMESTAMP: &str = "2026-11-01T00:00:00Z";

/// Hash of each key's decoded value.
pub type Values = BTreeMap<String, [u8; 32]>;

/// What a write request did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The authorizer refused the request.
    Denied { request: String },
    /// An authorized write to a Secret, whatever its outcome; `before`/`after` are the Secret's
    /// values around it (None: absent), `changed` whether the stored object changed.
    SecretWrite {
        request: String,
        name: String,
        verb: &'static str,
        status: u16,
        before: Option<Values>,
        after: Option<Values>,
        changed: bool,
        /// Done by the garbage collector because of `request` (an ExternalSecret delete).
        by_gc: bool,
        /// For a patch: whether it is a JSON patch whose first operation tests
        /// `/metadata/resourceVersion`.
        guarded: Option<bool>,
        /// The raw values of the keys this write added or changed (kept in memory only, for
        /// the checks on generated values; never printed).
        new_values: Vec<(String, Vec<u8>)>,
        /// An ExternalSecret targeting this Secret that still existed (even terminating).
        while_targeted_by: Option<String>,
    },
    /// External Secrets wrote (or deleted) a Secret in a reconcile that `trigger` started.
    ControllerWrite {
        trigger: String,
        external_secret: String,
        name: String,
        before: Option<Values>,
        after: Option<Values>,
        /// Why it refreshed, in words.
        reason: String,
    },
    /// A refresh `trigger` started failed because the ExternalSecret's generator is gone.
    RefreshFailed {
        trigger: String,
        external_secret: String,
        name: String,
        generator: String,
        reason: String,
    },
    ExternalSecretDeleted {
        request: String,
        name: String,
        remote: bool,
    },
    GeneratorDeleted {
        request: String,
        name: String,
        /// An ExternalSecret that still exists and uses this generator.
        in_use_by: Option<String>,
    },
    /// `accepted`: the pod's server accepts the password its Secret holds now.
    PodDeleted {
        request: String,
        name: String,
        running: bool,
        accepted: bool,
        /// Its server answers a probe with neither success nor a refusal.
        unclear: bool,
        terminating: bool,
    },
    /// Another authorized write (e.g. to a resource the fake serves no further).
    OtherWrite { request: String },
    /// Any request, authorized or not, with what it carries besides Secret data (its path,
    /// query and body without the values of `data`/`stringData` and of `/data` patch
    /// operations): where a value must never appear.
    Sent { request: String, text: String },
}

/// An HTTP answer: status and JSON body.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub body: Value,
}

/// Kubernetes `Status` error body.
pub fn status_error(code: u16, reason: &str, message: &str, name: &str, kind: &str) -> Response {
    let mut details = Map::new();
    if !name.is_empty() {
        details.insert("name".into(), json!(name));
    }
    if !kind.is_empty() {
        details.insert("kind".into(), json!(kind));
    }
    let mut body = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code,
    });
    if !details.is_empty() {
        body["details"] = Value::Object(details);
    }
    Response { status: code, body }
}

fn not_found(info: &RequestInfo) -> Response {
    status_error(
        404,
        "NotFound",
        &format!("{} {:?} not found", info.resource, info.name),
        &info.name,
        &info.resource,
    )
}

fn no_such_resource() -> Response {
    status_error(
        404,
        "NotFound",
        "the server could not find the requested resource",
        "",
        "",
    )
}

fn method_not_allowed(info: &RequestInfo) -> Response {
    status_error(
        405,
        "MethodNotAllowed",
        &format!(
            "{} is not supported on {} by this fake API server",
            info.verb, info.resource
        ),
        "",
        "",
    )
}

fn bad_request(message: &str) -> Response {
    status_error(400, "BadRequest", message, "", "")
}

/// A request as the cluster handles it, already authenticated and authorized.
pub struct ApiRequest<'a> {
    pub query: &'a str,
    pub content_type: &'a str,
    pub body: &'a [u8],
    /// `METHOD /path?query`, as findings name it.
    pub label: &'a str,
}

/// A stored ExternalSecret: its API (`external_secrets`) and the controller (`eso`) both
/// read and change it.
#[derive(Debug, Clone)]
struct ExternalSecret {
    obj: Value,
    remote: bool,
    /// What a store-backed one's store holds: base64 per key.
    store: Map<String, Value>,
    deletion: Option<eso::Deletion>,
}

/// Every string in `value` end to end (an object's members in key order).
fn join_strings(value: &Value, into: &mut String) {
    match value {
        Value::String(s) => into.push_str(s),
        Value::Array(items) => items.iter().for_each(|v| join_strings(v, into)),
        Value::Object(members) => members.values().for_each(|v| join_strings(v, into)),
        _ => {}
    }
}

/// The state of the fake namespace.
#[derive(Debug)]
pub struct Cluster {
    pub namespace: String,
    rv: u64,
    uid_seq: u64,
    secrets: BTreeMap<String, Value>,
    external_secrets: BTreeMap<String, ExternalSecret>,
    generators: BTreeMap<String, Value>,
    pods: BTreeMap<String, Pod>,
    pub events: Vec<Event>,
    /// The External Secrets controller's queue and caches.
    controller: eso::Controller,
    /// Bytes of request text kept for the leak check in this run (bounded by [`MAX_SENT`]).
    sent_bytes: usize,
    /// Per Secret, the program's last request that changed it: the sync cycle names it.
    written_by: BTreeMap<String, String>,
    /// Server-side apply: the field managers of each (Secret, field) an apply set.
    apply_owners: BTreeMap<(String, String), std::collections::BTreeSet<String>>,
    /// The line of create.py each request was first sent from in this scenario (see
    /// `server::request_origin`), for findings; bounded like the event log.
    origins: BTreeMap<String, u32>,
    /// Virtual time, in nanoseconds since the scenario began: the program's clock (the
    /// `sitecustomize` hook's, which its sleeps advance) as its requests report it, added to
    /// where the run began. It only moves forward. Controllers that wait decide by it.
    clock: u64,
    /// `clock` when the current run began: the program's clock starts at 0 in every run.
    run_base: u64,
}

/// What a request without a clock header costs in virtual time: a round trip.
pub const REQUEST_NANOS: u64 = 1_000_000;
/// How much virtual time passes once the program has exited, before the run is judged: the
/// controllers finish what its requests started.
const QUIESCE_NANOS: u64 = 60 * 1_000_000_000;

/// Request text kept for the leak check per run: a runaway program cannot fill memory.
const MAX_SENT: usize = 16 * 1024 * 1024;

impl Cluster {
    pub fn new(namespace: &str) -> Self {
        Cluster {
            namespace: namespace.to_string(),
            rv: 100,
            uid_seq: 0,
            secrets: BTreeMap::new(),
            external_secrets: BTreeMap::new(),
            generators: BTreeMap::new(),
            pods: BTreeMap::new(),
            events: Vec::new(),
            controller: eso::Controller::default(),
            sent_bytes: 0,
            written_by: BTreeMap::new(),
            apply_owners: BTreeMap::new(),
            origins: BTreeMap::new(),
            clock: 0,
            run_base: 0,
        }
    }

    /// Keeps an event for the judge; a runaway program cannot grow the log without bound.
    pub fn record(&mut self, event: Event) {
        if self.events.len() < MAX_EVENTS {
            self.events.push(event);
        }
    }

    /// Notes that `label` was sent from line `line` of create.py. The first line a request
    /// was sent from in the scenario names it: a program retries from where it first sent.
    pub fn note_origin(&mut self, label: &str, line: u32) {
        if self.origins.len() < MAX_EVENTS && !self.origins.contains_key(label) {
            self.origins.insert(label.to_string(), line);
        }
    }

    /// The cluster's virtual time now (nanoseconds since the scenario began).
    pub fn now(&self) -> u64 {
        self.clock
    }

    /// A request arrives: `program` is the program's clock as the request reports it
    /// (nanoseconds since the run began), None when it reports none (a round trip passes). A
    /// clock that goes back, forged or not, is ignored: time only moves forward.
    pub fn advance_clock(&mut self, program: Option<u64>) {
        let to = match program {
            Some(ns) => self.run_base.saturating_add(ns),
            None => self.clock.saturating_add(REQUEST_NANOS),
        };
        self.clock = self.clock.max(to);
    }

    /// Lets virtual time pass after the program exited (see [`QUIESCE_NANOS`]).
    pub fn pass_time(&mut self) {
        self.clock = self.clock.saturating_add(QUIESCE_NANOS);
    }

    /// The line of create.py `label` was first sent from in this scenario.
    pub fn origin(&self, label: &str) -> Option<u32> {
        self.origins.get(label).copied()
    }

    fn next_rv(&mut self) -> u64 {
        self.rv += 1;
        self.rv
    }

    pub fn new_uid(&mut self) -> String {
        self.uid_seq += 1;
        format!("00000000-0000-4000-8000-{:012x}", self.uid_seq)
    }

    /// Clears what the judge read from the previous run.
    pub fn start_run(&mut self) {
        self.run_base = self.clock;
        self.events.clear();
        self.sent_bytes = 0;
    }

    /// Records what a request carries besides Secret data, for the leak check. Bounded: a
    /// request's text is cut at 64 KiB, and a run keeps at most [`MAX_SENT`] bytes of it.
    pub fn record_sent(&mut self, label: &str, resource: &str, content_type: &str, body: &[u8]) {
        if self.sent_bytes >= MAX_SENT {
            return;
        }
        let mut text = label.to_string();
        if let Ok(mut value) = serde_json::from_slice::<Value>(body) {
            strip_secret_data(&mut value, resource, content_type);
            text.push('\n');
            text.push_str(&value.to_string());
            // The strings of the body end to end as well: a value cut into parts shorter than
            // the leak window, one per annotation, is whole again.
            text.push('\n');
            join_strings(&value, &mut text);
        } else if !body.is_empty() && resource != "secrets" {
            // A Secret body that is not JSON (YAML for an apply) is refused unread, and its
            // data, which the leak check may not see, cannot be told from the rest.
            text.push('\n');
            text.push_str(&String::from_utf8_lossy(body));
        }
        self.keep_sent(label, text);
    }

    /// Keeps `text` as something `label` wrote outside Secret data, within the run's bound.
    fn keep_sent(&mut self, label: &str, mut text: String) {
        if self.sent_bytes >= MAX_SENT {
            return;
        }
        let mut cut = text.len().min(64 * 1024);
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        self.sent_bytes += text.len();
        self.record(Event::Sent {
            request: label.to_string(),
            text,
        });
    }

    pub fn handle(&mut self, req: &ApiRequest<'_>, info: &RequestInfo) -> Response {
        self.settle(self.now());
        if !info.is_resource {
            return match info.path.trim_end_matches('/') {
                "/version" => Response {
                    status: 200,
                    body: json!({"major": "1", "minor": "34", "gitVersion": "v1.34.0-credlint-fake"}),
                },
                _ => no_such_resource(),
            };
        }
        let served = match (info.api_group.as_str(), info.resource.as_str()) {
            ("", "secrets" | "pods") => info.api_version == "v1",
            ("external-secrets.io", "externalsecrets") => {
                info.api_version == "v1" || info.api_version == "v1beta1"
            }
            ("generators.external-secrets.io", "passwords") => info.api_version == "v1alpha1",
            _ => false,
        };
        if !served || info.namespace != self.namespace || !info.subresource.is_empty() {
            if is_write(info) {
                self.record(Event::OtherWrite {
                    request: req.label.to_string(),
                });
            }
            return no_such_resource();
        }
        match info.resource.as_str() {
            "secrets" => self.secrets_api(req, info),
            "externalsecrets" => self.external_secrets_api(req, info),
            "passwords" => self.generators_api(req, info),
            _ => self.pods_api(req, info),
        }
    }

    fn list(
        &self,
        kind: &str,
        api_version: &str,
        items: Vec<Value>,
        info: &RequestInfo,
    ) -> Response {
        if info.verb == "watch" {
            // A watch would stream events; the program gets an empty stream that ends at once.
            return Response {
                status: 200,
                body: Value::Null,
            };
        }
        let items: Vec<Value> = items
            .into_iter()
            .filter(|o| info.name.is_empty() || o["metadata"]["name"] == info.name.as_str())
            .collect();
        Response {
            status: 200,
            body: json!({"kind": kind, "apiVersion": api_version,
                         "metadata": {"resourceVersion": self.rv.to_string()}, "items": items}),
        }
    }
}

fn is_write(info: &RequestInfo) -> bool {
    matches!(
        info.verb.as_str(),
        "create" | "update" | "patch" | "delete" | "deletecollection"
    )
}
