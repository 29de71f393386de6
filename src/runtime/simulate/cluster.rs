//! The fake cluster's objects and what the API server (and the controllers a credentials Job
//! relies on) does with them: Secrets, External Secrets' ExternalSecrets and Password
//! generators, and server Pods that a StatefulSet replaces. Every write is recorded as an
//! [`Event`] for the judge; values are kept only as SHA-256 hashes in events.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::patch::{PatchError, apply_json_patch, apply_merge_patch};
use super::rbac::{RequestInfo, query_values};

mod eso;

#[cfg(test)]
pub use eso::DELETE_LAG;
pub use eso::{DATA_HASH, ESO_FINALIZER, MANAGED_LABEL, data_hash};
/// How long a deleted Pod stays Terminating, and when its StatefulSet replacement runs.
pub const POD_TERMINATING: Duration = Duration::from_millis(60);
pub const POD_REPLACED: Duration = Duration::from_millis(120);
/// A namespace quota, so that a runaway program cannot fill memory with Secrets.
const MAX_SECRETS: usize = 64;
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

fn invalid(name: &str, message: &str) -> Response {
    status_error(
        422,
        "Invalid",
        &format!("Secret {name:?} is invalid: {message}"),
        name,
        "secrets",
    )
}

/// A request as the cluster handles it, already authenticated and authorized.
pub struct ApiRequest<'a> {
    pub query: &'a str,
    pub content_type: &'a str,
    pub body: &'a [u8],
    /// `METHOD /path?query`, as findings name it.
    pub label: &'a str,
}

/// A server pod of a cache or broker, with the probe port its fake server listens on.
#[derive(Debug, Clone)]
pub struct PodTemplate {
    pub port: u16,
    pub port_name: &'static str,
    pub container: &'static str,
    pub env_name: &'static str,
    pub secret: String,
    pub key: String,
}

/// Which password a replacement pod starts with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Replacement {
    /// The value its Secret holds when it starts (the normal case).
    FromSecret,
    /// This value again (a server that keeps refusing).
    Stale(Vec<u8>),
}

#[derive(Debug, Clone)]
struct PodInstance {
    uid: String,
    rv: u64,
    /// None: not running (its Secret lacked the key when it started).
    password: Option<Vec<u8>>,
    deleted_at: Option<Instant>,
}

#[derive(Debug, Clone)]
pub struct Pod {
    pub template: PodTemplate,
    pub replacement: Replacement,
    /// Its server (and its replacement's) answers probes with neither success nor refusal.
    pub unclear: bool,
    instance: Option<PodInstance>,
    replacement_due: Option<Instant>,
}

#[derive(Debug, Clone)]
struct ExternalSecret {
    obj: Value,
    remote: bool,
    /// What a store-backed one's store holds: base64 per key.
    store: Map<String, Value>,
    deletion: Option<eso::Deletion>,
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
}

/// Request text kept for the leak check per run: a runaway program cannot fill memory.
const MAX_SENT: usize = 16 * 1024 * 1024;

/// The values of a stored Secret, hashed.
pub fn secret_values(secret: &Value) -> Values {
    let mut out = Values::new();
    if let Some(data) = secret.get("data").and_then(Value::as_object) {
        for (key, value) in data {
            let bytes = value
                .as_str()
                .and_then(|v| B64.decode(v).ok())
                .unwrap_or_default();
            out.insert(key.clone(), Sha256::digest(&bytes).into());
        }
    }
    out
}

fn valid_name(name: &str) -> bool {
    name.len() <= 253
        && !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && name.as_bytes()[0].is_ascii_alphanumeric()
        && name.as_bytes()[name.len() - 1].is_ascii_alphanumeric()
}

fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 253
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
}

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
        }
    }

    /// Keeps an event for the judge; a runaway program cannot grow the log without bound.
    pub fn record(&mut self, event: Event) {
        if self.events.len() < MAX_EVENTS {
            self.events.push(event);
        }
    }

    fn next_rv(&mut self) -> u64 {
        self.rv += 1;
        self.rv
    }

    pub fn new_uid(&mut self) -> String {
        self.uid_seq += 1;
        format!("00000000-0000-4000-8000-{:012x}", self.uid_seq)
    }

    // ---- seeding (scenario setup) ----

    /// Stores a Secret as a controller would have written it; returns its uid.
    pub fn seed_secret(&mut self, mut obj: Value) -> String {
        let uid = self.new_uid();
        let rv = self.next_rv();
        let name = obj["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        obj["metadata"]["uid"] = json!(uid);
        obj["metadata"]["resourceVersion"] = json!(rv.to_string());
        obj["metadata"]["namespace"] = json!(self.namespace);
        obj["metadata"]["creationTimestamp"] = json!(TIMESTAMP);
        self.secrets.insert(name.clone(), obj);
        self.seeded_secret(&name);
        uid
    }

    /// Clears what the judge read from the previous run.
    pub fn start_run(&mut self) {
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
        } else if !body.is_empty() {
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

    pub fn seed_external_secret(&mut self, mut obj: Value, remote: bool) -> String {
        let uid = self.new_uid();
        let rv = self.next_rv();
        let name = obj["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        obj["metadata"]["uid"] = json!(uid);
        obj["metadata"]["resourceVersion"] = json!(rv.to_string());
        obj["metadata"]["namespace"] = json!(self.namespace);
        self.external_secrets.insert(
            name,
            ExternalSecret {
                obj,
                remote,
                store: Map::new(),
                deletion: None,
            },
        );
        uid
    }

    pub fn seed_generator(&mut self, name: &str) {
        let uid = self.new_uid();
        let rv = self.next_rv();
        let obj = json!({
            "apiVersion": "generators.external-secrets.io/v1alpha1", "kind": "Password",
            "metadata": {"name": name, "namespace": self.namespace, "uid": uid,
                         "resourceVersion": rv.to_string()},
            "spec": {"length": 32, "digits": 5, "symbols": 5, "noUpper": false, "allowRepeat": true},
        });
        self.generators.insert(name.to_string(), obj);
    }

    /// A running server pod that started with `password` (None: it could not start).
    pub fn seed_pod(
        &mut self,
        name: &str,
        template: PodTemplate,
        password: Option<Vec<u8>>,
        replacement: Replacement,
        unclear: bool,
    ) {
        let uid = self.new_uid();
        let rv = self.next_rv();
        let instance = PodInstance {
            uid,
            rv,
            password,
            deleted_at: None,
        };
        self.pods.insert(
            name.to_string(),
            Pod {
                template,
                replacement,
                unclear,
                instance: Some(instance),
                replacement_due: None,
            },
        );
    }

    /// The decoded value of `key` in Secret `name`, if present.
    pub fn secret_value(&self, name: &str, key: &str) -> Option<Vec<u8>> {
        let encoded = self.secrets.get(name)?.get("data")?.get(key)?.as_str()?;
        B64.decode(encoded).ok()
    }

    pub fn secret(&self, name: &str) -> Option<&Value> {
        self.secrets.get(name)
    }

    pub fn secret_names(&self) -> Vec<String> {
        self.secrets.keys().cloned().collect()
    }

    /// Every stored value up to 4 KiB (longer ones cannot fit the quoted stderr), raw and
    /// decoded, so that output can be scrubbed of them.
    pub fn all_values(&self) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for secret in self.secrets.values() {
            if let Some(data) = secret.get("data").and_then(Value::as_object) {
                for v in data
                    .values()
                    .filter_map(Value::as_str)
                    .filter(|v| v.len() <= 4096)
                {
                    out.push(v.as_bytes().to_vec());
                    if let Ok(bytes) = B64.decode(v) {
                        out.push(bytes);
                    }
                }
            }
        }
        out
    }

    pub fn external_secret_exists(&mut self, name: &str) -> bool {
        self.settle(Instant::now());
        self.external_secrets.contains_key(name)
    }

    pub fn generator_exists(&self, name: &str) -> bool {
        self.generators.contains_key(name)
    }

    // ---- time-driven controllers ----

    /// Applies what finalizers and the StatefulSet controller would have done by `now`.
    pub fn settle(&mut self, now: Instant) {
        let mut started = Vec::new();
        for (name, pod) in &mut self.pods {
            if let Some(deleted) = pod.instance.as_ref().and_then(|i| i.deleted_at)
                && now >= deleted + POD_TERMINATING
            {
                pod.instance = None;
            }
            if pod.instance.is_none() && pod.replacement_due.is_some_and(|t| now >= t) {
                pod.replacement_due = None;
                started.push(name.clone());
            }
        }
        for name in started {
            let password = match self.pods.get(&name).map(|p| p.replacement.clone()) {
                Some(Replacement::Stale(value)) => Some(value),
                Some(Replacement::FromSecret) => {
                    let t = &self.pods[&name].template;
                    self.secret_value(&t.secret.clone(), &t.key.clone())
                }
                None => None,
            };
            let uid = self.new_uid();
            let rv = self.next_rv();
            if let Some(pod) = self.pods.get_mut(&name) {
                pod.instance = Some(PodInstance {
                    uid,
                    rv,
                    password,
                    deleted_at: None,
                });
            }
        }
    }

    /// The password a pod's server accepts, if it is running, and whether its answers are
    /// unclear (a probe listener asks this).
    pub fn pod_server(&mut self, name: &str) -> Option<(Vec<u8>, bool)> {
        self.settle(Instant::now());
        let pod = self.pods.get(name)?;
        Some((pod.instance.as_ref()?.password.clone()?, pod.unclear))
    }

    /// Whether every running pod accepts the value its Secret holds now.
    pub fn pods_refusing(&mut self) -> Vec<String> {
        self.settle(Instant::now());
        let mut out = Vec::new();
        for (name, pod) in &self.pods {
            let Some(instance) = &pod.instance else {
                continue;
            };
            let Some(password) = &instance.password else {
                continue;
            };
            let current = self.secret_value(&pod.template.secret, &pod.template.key);
            if current.as_ref() != Some(password) {
                out.push(name.clone());
            }
        }
        out
    }

    // ---- the API ----

    pub fn handle(&mut self, req: &ApiRequest<'_>, info: &RequestInfo) -> Response {
        self.settle(Instant::now());
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

    fn secrets_api(&mut self, req: &ApiRequest<'_>, info: &RequestInfo) -> Response {
        let name = info.name.clone();
        match info.verb.as_str() {
            "get" => match self.secrets.get(&name) {
                Some(s) => Response {
                    status: 200,
                    body: s.clone(),
                },
                None => not_found(info),
            },
            "list" | "watch" => {
                let items = self.secrets.values().cloned().collect();
                self.list("SecretList", "v1", items, info)
            }
            "create" => {
                if !name.is_empty() {
                    return method_not_allowed(info);
                }
                let (target, resp) = self.create_secret(req);
                let changed = resp.status == 201;
                self.record_secret(
                    req.label,
                    target,
                    "create",
                    resp.status,
                    None,
                    changed,
                    false,
                    None,
                );
                resp
            }
            "update" | "patch" => {
                let before = self.secrets.get(&name).map(secret_values);
                let (resp, changed) = if info.verb == "update" {
                    self.update_secret(req, &name)
                } else {
                    self.patch_secret(req, &name)
                };
                let (verb, guarded) = if info.verb == "update" {
                    ("update", None)
                } else {
                    ("patch", Some(guarded_patch(req)))
                };
                self.record_secret(
                    req.label,
                    name,
                    verb,
                    resp.status,
                    before,
                    changed,
                    false,
                    guarded,
                );
                resp
            }
            "delete" => {
                let before = self.secrets.get(&name).map(secret_values);
                let resp = match self.secrets.remove(&name) {
                    Some(obj) => {
                        self.next_rv();
                        Response {
                            status: 200,
                            body: obj,
                        }
                    }
                    None => not_found(info),
                };
                let changed = resp.status == 200;
                self.record_secret(
                    req.label,
                    name,
                    "delete",
                    resp.status,
                    before,
                    changed,
                    false,
                    None,
                );
                resp
            }
            "deletecollection" => {
                for name in self.secret_names() {
                    let before = self.secrets.remove(&name).map(|s| secret_values(&s));
                    self.next_rv();
                    self.record_secret(
                        req.label,
                        name,
                        "deletecollection",
                        200,
                        before,
                        true,
                        false,
                        None,
                    );
                }
                Response {
                    status: 200,
                    body: json!({"kind": "Status", "apiVersion": "v1", "status": "Success"}),
                }
            }
            _ => method_not_allowed(info),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn record_secret(
        &mut self,
        label: &str,
        name: String,
        verb: &'static str,
        status: u16,
        before: Option<Values>,
        changed: bool,
        by_gc: bool,
        guarded: Option<bool>,
    ) {
        let after = self.secrets.get(&name).map(secret_values);
        let mut new_values = Vec::new();
        if let (Some(after), false) = (&after, by_gc) {
            for (key, hash) in after {
                if before.as_ref().and_then(|b| b.get(key)) != Some(hash)
                    && let Some(raw) = self.secret_value(&name, key)
                    && raw.len() <= 4096
                {
                    new_values.push((key.clone(), raw));
                }
            }
        }
        let while_targeted_by = if by_gc {
            None
        } else {
            self.external_secret_targeting(&name)
        };
        if changed
            && !by_gc
            && let Some(stored) = self.secrets.get(&name)
        {
            // What the write left outside data: a JSON patch can `copy` or `move` a value from
            // /data into a label or annotation without the request ever carrying it.
            let mut outside = stored.clone();
            if let Some(o) = outside.as_object_mut() {
                o.remove("data");
                o.remove("stringData");
            }
            self.keep_sent(label, format!("{label}\n{outside}"));
        }
        if changed {
            self.secret_changed(&name, label);
        }
        self.record(Event::SecretWrite {
            request: label.to_string(),
            name,
            verb,
            status,
            before,
            after,
            changed,
            by_gc,
            guarded,
            new_values,
            while_targeted_by,
        });
    }

    /// Checks and completes a Secret body as the API server's validation and defaulting do.
    fn normalize_secret(&self, body: Value, name: &str) -> Result<Value, Response> {
        let Value::Object(mut obj) = body else {
            return Err(bad_request("the request body is not a JSON object"));
        };
        if obj.get("kind").is_some_and(|k| k != "Secret") {
            return Err(bad_request("the body is not a Secret"));
        }
        if obj.get("apiVersion").is_some_and(|v| v != "v1") {
            return Err(bad_request("a Secret's apiVersion is v1"));
        }
        obj.insert("kind".into(), json!("Secret"));
        obj.insert("apiVersion".into(), json!("v1"));
        let mut data = match obj.remove("data") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m,
            Some(_) => return Err(invalid(name, "data: must be a map")),
        };
        match obj.remove("stringData") {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) => {
                for (k, v) in m {
                    let Some(s) = v.as_str() else {
                        return Err(invalid(name, "stringData: values must be strings"));
                    };
                    data.insert(k, json!(B64.encode(s)));
                }
            }
            Some(_) => return Err(invalid(name, "stringData: must be a map")),
        }
        let mut total = 0;
        for (k, v) in &data {
            if !valid_key(k) {
                return Err(invalid(name, &format!("data[{k:?}]: not a valid key name")));
            }
            let decoded = v.as_str().map(|s| B64.decode(s));
            match decoded {
                Some(Ok(bytes)) => total += bytes.len(),
                _ => return Err(invalid(name, &format!("data[{k:?}]: not base64"))),
            }
        }
        if total > 1 << 20 {
            return Err(invalid(
                name,
                "data: too long: must have at most 1048576 bytes",
            ));
        }
        obj.insert("data".into(), Value::Object(data));
        match obj.get("type") {
            None | Some(Value::Null) => {
                obj.insert("type".into(), json!("Opaque"));
            }
            Some(Value::String(_)) => {}
            Some(_) => return Err(invalid(name, "type: must be a string")),
        }
        match obj.get("metadata") {
            None | Some(Value::Null) => {
                obj.insert("metadata".into(), json!({}));
            }
            Some(Value::Object(_)) => {}
            Some(_) => return Err(bad_request("metadata must be an object")),
        }
        obj.remove("status");
        Ok(Value::Object(obj))
    }

    /// POST: returns the Secret name it targeted (for the judge) and the answer.
    fn create_secret(&mut self, req: &ApiRequest<'_>) -> (String, Response) {
        let body: Value = match serde_json::from_slice(req.body) {
            Ok(v) => v,
            Err(_) => return (String::new(), bad_request("the request body is not JSON")),
        };
        let meta = body.get("metadata");
        let mut name = meta
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if name.is_empty() {
            match meta
                .and_then(|m| m.get("generateName"))
                .and_then(Value::as_str)
            {
                Some(prefix) if !prefix.is_empty() => {
                    let n = self.uid_seq + 1;
                    name = format!("{prefix}{:05x}", n % 0x10_0000);
                }
                _ => {
                    return (
                        name,
                        invalid(
                            "",
                            "metadata.name: Required value: name or generateName is required",
                        ),
                    );
                }
            }
        }
        if let Some(ns) = meta
            .and_then(|m| m.get("namespace"))
            .and_then(Value::as_str)
            && !ns.is_empty()
            && ns != self.namespace
        {
            return (
                name,
                bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ),
            );
        }
        if !valid_name(&name) {
            return (
                name.clone(),
                invalid(
                    &name,
                    "metadata.name: Invalid value: not a DNS-1123 subdomain",
                ),
            );
        }
        let mut obj = match self.normalize_secret(body, &name) {
            Ok(o) => o,
            Err(resp) => return (name, resp),
        };
        if self.secrets.contains_key(&name) {
            let resp = status_error(
                409,
                "AlreadyExists",
                &format!("secrets {name:?} already exists"),
                &name,
                "secrets",
            );
            return (name, resp);
        }
        if self.secrets.len() >= MAX_SECRETS {
            let resp = status_error(
                403,
                "Forbidden",
                "exceeded quota: secrets",
                &name,
                "secrets",
            );
            return (name, resp);
        }
        let uid = self.new_uid();
        let rv = self.next_rv();
        let meta = &mut obj["metadata"];
        meta["name"] = json!(name);
        meta["namespace"] = json!(self.namespace);
        meta["uid"] = json!(uid);
        meta["resourceVersion"] = json!(rv.to_string());
        meta["creationTimestamp"] = json!(TIMESTAMP);
        if let Some(m) = meta.as_object_mut() {
            m.remove("generateName");
            m.remove("deletionTimestamp");
        }
        self.secrets.insert(name.clone(), obj.clone());
        (
            name,
            Response {
                status: 201,
                body: obj,
            },
        )
    }

    /// Stores `new` in place of Secret `name` after the checks update and patch share; says
    /// whether the stored object changed.
    fn replace_secret(&mut self, name: &str, new: Value) -> (Response, bool) {
        match self.try_replace_secret(name, new) {
            Ok(result) => result,
            Err(resp) => (resp, false),
        }
    }

    fn try_replace_secret(&mut self, name: &str, new: Value) -> Result<(Response, bool), Response> {
        let Some(current) = self.secrets.get(name).cloned() else {
            return Err(status_error(
                404,
                "NotFound",
                &format!("secrets {name:?} not found"),
                name,
                "secrets",
            ));
        };
        let mut new = self.normalize_secret(new, name)?;
        let meta = &current["metadata"];
        if new["metadata"].get("name").is_some_and(|n| n != name) {
            return Err(bad_request(
                "the name of the object does not match the name on the URL",
            ));
        }
        if new["metadata"]
            .get("namespace")
            .is_some_and(|n| n != &json!(self.namespace))
        {
            return Err(bad_request(
                "the namespace of the object does not match the namespace on the URL",
            ));
        }
        let current_rv = meta["resourceVersion"].clone();
        match new["metadata"].get("resourceVersion") {
            None | Some(Value::Null) => {}
            Some(rv) if *rv == current_rv => {}
            Some(_) => {
                return Err(status_error(
                    409,
                    "Conflict",
                    &format!(
                        "Operation cannot be fulfilled on secrets {name:?}: the object has been modified; please apply your changes to the latest version and try again"
                    ),
                    name,
                    "secrets",
                ));
            }
        }
        // The server owns these fields.
        for field in ["name", "namespace", "uid", "creationTimestamp"] {
            new["metadata"][field] = meta[field].clone();
        }
        new["metadata"]["resourceVersion"] = current_rv;
        if new == current {
            // An unchanged object is not written: no new resourceVersion, as etcd storage does.
            return Ok((
                Response {
                    status: 200,
                    body: current,
                },
                false,
            ));
        }
        let rv = self.next_rv();
        new["metadata"]["resourceVersion"] = json!(rv.to_string());
        self.secrets.insert(name.to_string(), new.clone());
        Ok((
            Response {
                status: 200,
                body: new,
            },
            true,
        ))
    }

    fn update_secret(&mut self, req: &ApiRequest<'_>, name: &str) -> (Response, bool) {
        match serde_json::from_slice::<Value>(req.body) {
            Ok(body) => self.replace_secret(name, body),
            Err(_) => (bad_request("the request body is not JSON"), false),
        }
    }

    fn patch_secret(&mut self, req: &ApiRequest<'_>, name: &str) -> (Response, bool) {
        match self.patched_secret(req, name) {
            Ok(patched) => self.replace_secret(name, patched),
            Err(resp) => (resp, false),
        }
    }

    fn patched_secret(&self, req: &ApiRequest<'_>, name: &str) -> Result<Value, Response> {
        let Some(current) = self.secrets.get(name).cloned() else {
            return Err(status_error(
                404,
                "NotFound",
                &format!("secrets {name:?} not found"),
                name,
                "secrets",
            ));
        };
        let Ok(patch) = serde_json::from_slice::<Value>(req.body) else {
            return Err(bad_request("the patch is not JSON"));
        };
        let media = media_type(req.content_type);
        match media.as_str() {
            JSON_PATCH => apply_json_patch(&current, &patch).map_err(|e| match e {
                PatchError::Malformed(m) => bad_request(&m),
                PatchError::Failed(m) => status_error(422, "Invalid", &m, "", ""),
            }),
            // A Secret has no lists with merge keys a program would patch, so a strategic merge
            // patch acts as a merge patch here.
            "application/merge-patch+json" | "application/strategic-merge-patch+json" => {
                Ok(apply_merge_patch(&current, &patch))
            }
            _ => Err(status_error(
                415,
                "UnsupportedMediaType",
                &format!(
                    "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json (got {media:?})"
                ),
                "",
                "",
            )),
        }
    }

    fn external_secrets_api(&mut self, req: &ApiRequest<'_>, info: &RequestInfo) -> Response {
        let version = format!("external-secrets.io/{}", info.api_version);
        let with_version = |es: &ExternalSecret| {
            let mut obj = es.obj.clone();
            obj["apiVersion"] = json!(version);
            obj
        };
        match info.verb.as_str() {
            "get" => match self.external_secrets.get(&info.name) {
                Some(es) => Response {
                    status: 200,
                    body: with_version(es),
                },
                None => not_found(info),
            },
            "list" | "watch" => {
                let items = self.external_secrets.values().map(with_version).collect();
                self.list("ExternalSecretList", &version, items, info)
            }
            "delete" => {
                let Some(es) = self.external_secrets.get(&info.name).cloned() else {
                    return not_found(info);
                };
                let Some(policy) = propagation_policy(req) else {
                    return status_error(
                        422,
                        "Invalid",
                        "DeleteOptions: propagationPolicy: Unsupported value",
                        "",
                        "",
                    );
                };
                self.record(Event::ExternalSecretDeleted {
                    request: req.label.to_string(),
                    name: info.name.clone(),
                    remote: es.remote,
                });
                if es.deletion.is_some() {
                    return Response {
                        status: 202,
                        body: with_version(&es),
                    };
                }
                let shown = self.begin_deletion(&info.name, &policy, req.label);
                let body = shown.as_ref().map(with_version).unwrap_or(Value::Null);
                Response { status: 202, body }
            }
            _ => {
                if is_write(info) {
                    self.record(Event::OtherWrite {
                        request: req.label.to_string(),
                    });
                }
                method_not_allowed(info)
            }
        }
    }

    /// What the garbage collector does for an Orphan delete: dependents lose the reference.
    fn orphan_dependents(&mut self, label: &str, owner_uid: &Value) {
        for name in self.secret_names() {
            let Some(secret) = self.secrets.get(&name) else {
                continue;
            };
            let Some(refs) = secret["metadata"]
                .get("ownerReferences")
                .and_then(Value::as_array)
            else {
                continue;
            };
            if !refs.iter().any(|r| r.get("uid") == Some(owner_uid)) {
                continue;
            }
            let kept: Vec<Value> = refs
                .iter()
                .filter(|r| r.get("uid") != Some(owner_uid))
                .cloned()
                .collect();
            let before = Some(secret_values(secret));
            let rv = self.next_rv();
            if let Some(secret) = self.secrets.get_mut(&name) {
                let meta = &mut secret["metadata"];
                if kept.is_empty() {
                    if let Some(m) = meta.as_object_mut() {
                        m.remove("ownerReferences");
                    }
                } else {
                    meta["ownerReferences"] = Value::Array(kept);
                }
                meta["resourceVersion"] = json!(rv.to_string());
            }
            self.record_secret(label, name, "patch", 200, before, true, true, None);
        }
    }

    /// What the garbage collector does for a Background or Foreground delete.
    fn delete_dependents(&mut self, label: &str, owner_uid: &Value) {
        for name in self.secret_names() {
            let owned = self.secrets.get(&name).is_some_and(|s| {
                s["metadata"]
                    .get("ownerReferences")
                    .and_then(Value::as_array)
                    .is_some_and(|refs| refs.iter().any(|r| r.get("uid") == Some(owner_uid)))
            });
            if owned {
                let before = self.secrets.remove(&name).map(|s| secret_values(&s));
                self.next_rv();
                self.record_secret(label, name, "delete", 200, before, true, true, None);
            }
        }
    }

    fn generators_api(&mut self, req: &ApiRequest<'_>, info: &RequestInfo) -> Response {
        match info.verb.as_str() {
            "get" => match self.generators.get(&info.name) {
                Some(g) => Response {
                    status: 200,
                    body: g.clone(),
                },
                None => not_found(info),
            },
            "list" | "watch" => {
                let items = self.generators.values().cloned().collect();
                self.list(
                    "PasswordList",
                    "generators.external-secrets.io/v1alpha1",
                    items,
                    info,
                )
            }
            "delete" => match self.generators.remove(&info.name) {
                Some(g) => {
                    self.next_rv();
                    let in_use_by = self.external_secret_using(&info.name);
                    self.record(Event::GeneratorDeleted {
                        request: req.label.to_string(),
                        name: info.name.clone(),
                        in_use_by,
                    });
                    Response {
                        status: 200,
                        body: g,
                    }
                }
                None => not_found(info),
            },
            _ => {
                if is_write(info) {
                    self.record(Event::OtherWrite {
                        request: req.label.to_string(),
                    });
                }
                method_not_allowed(info)
            }
        }
    }

    fn pod_object(&self, name: &str, pod: &Pod, instance: &PodInstance) -> Value {
        let t = &pod.template;
        let running = instance.password.is_some();
        let mut status = if running {
            json!({"phase": "Running", "podIP": "127.0.0.1", "podIPs": [{"ip": "127.0.0.1"}],
                   "conditions": [{"type": "Ready", "status": "True"}]})
        } else {
            json!({"phase": "Pending", "conditions": [{"type": "Ready", "status": "False"}],
                   "containerStatuses": [{"name": t.container, "ready": false,
                       "state": {"waiting": {"reason": "CreateContainerConfigError"}}}]})
        };
        let mut meta = json!({"name": name, "namespace": self.namespace, "uid": instance.uid,
                              "resourceVersion": instance.rv.to_string(),
                              "labels": {"app.kubernetes.io/name": t.container}});
        if instance.deleted_at.is_some() {
            meta["deletionTimestamp"] = json!(TIMESTAMP);
            status["conditions"] = json!([{"type": "Ready", "status": "False"}]);
        }
        json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{
                "name": t.container, "image": format!("{}:fake", t.container),
                "ports": [{"name": t.port_name, "containerPort": t.port, "protocol": "TCP"}],
                "env": [{"name": t.env_name,
                         "valueFrom": {"secretKeyRef": {"name": t.secret, "key": t.key}}}],
            }]},
            "status": status,
        })
    }

    fn pods_api(&mut self, req: &ApiRequest<'_>, info: &RequestInfo) -> Response {
        match info.verb.as_str() {
            "get" => match self.pods.get(&info.name) {
                Some(pod) => match &pod.instance {
                    Some(i) => Response {
                        status: 200,
                        body: self.pod_object(&info.name, pod, i),
                    },
                    None => not_found(info),
                },
                None => not_found(info),
            },
            "list" | "watch" => {
                let items = self
                    .pods
                    .iter()
                    .filter_map(|(n, p)| p.instance.as_ref().map(|i| self.pod_object(n, p, i)))
                    .collect();
                self.list("PodList", "v1", items, info)
            }
            "delete" => {
                let current = self
                    .pods
                    .get(&info.name)
                    .and_then(|p| p.instance.clone().map(|i| (p.template.clone(), i)));
                let Some((template, instance)) = current else {
                    return not_found(info);
                };
                let accepted = match &instance.password {
                    Some(p) => {
                        self.secret_value(&template.secret, &template.key).as_ref() == Some(p)
                    }
                    None => false,
                };
                self.record(Event::PodDeleted {
                    request: req.label.to_string(),
                    name: info.name.clone(),
                    running: instance.password.is_some(),
                    accepted,
                    unclear: self.pods.get(&info.name).is_some_and(|p| p.unclear),
                    terminating: instance.deleted_at.is_some(),
                });
                let now = Instant::now();
                let mut shown = None;
                if let Some(pod) = self.pods.get_mut(&info.name)
                    && let Some(i) = pod.instance.as_mut()
                {
                    if i.deleted_at.is_none() {
                        i.deleted_at = Some(now);
                        pod.replacement_due = Some(now + POD_REPLACED);
                    }
                    let i = i.clone();
                    shown = Some((pod.clone(), i));
                }
                let body = match shown {
                    Some((pod, i)) => self.pod_object(&info.name, &pod, &i),
                    None => Value::Null,
                };
                Response { status: 200, body }
            }
            _ => {
                if is_write(info) {
                    self.record(Event::OtherWrite {
                        request: req.label.to_string(),
                    });
                }
                method_not_allowed(info)
            }
        }
    }
}

const JSON_PATCH: &str = "application/json-patch+json";

/// The media type of a Content-Type header, without parameters, lowercased.
fn media_type(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// Drops the values a Secret write may carry (`data`, `stringData`, and the values of patch
/// operations on `/data`) from a request body; what is left must never hold a value.
fn strip_secret_data(body: &mut Value, resource: &str, content_type: &str) {
    if resource != "secrets" {
        return;
    }
    let json_patch = media_type(content_type) == JSON_PATCH;
    match body {
        Value::Array(ops) if json_patch => {
            for op in ops.iter_mut() {
                let path = op.get("path").and_then(Value::as_str).unwrap_or("");
                if (path == "/data"
                    || path.starts_with("/data/")
                    || path == "/stringData"
                    || path.starts_with("/stringData/"))
                    && let Some(o) = op.as_object_mut()
                {
                    o.remove("value");
                }
            }
        }
        Value::Object(obj) => {
            obj.remove("data");
            obj.remove("stringData");
        }
        _ => {}
    }
}

/// A JSON patch whose first operation tests `/metadata/resourceVersion` (ADR-072 point 2);
/// a merge patch has no operations, so it never is.
fn guarded_patch(req: &ApiRequest<'_>) -> bool {
    let json_patch = media_type(req.content_type) == JSON_PATCH;
    let first = serde_json::from_slice::<Value>(req.body)
        .ok()
        .and_then(|v| v.as_array().and_then(|ops| ops.first().cloned()));
    json_patch
        && first.is_some_and(|op| {
            op.get("op") == Some(&json!("test"))
                && op.get("path") == Some(&json!("/metadata/resourceVersion"))
        })
}

fn is_write(info: &RequestInfo) -> bool {
    matches!(
        info.verb.as_str(),
        "create" | "update" | "patch" | "delete" | "deletecollection"
    )
}

/// DeleteOptions from the body when there is one, else from the query, as the API server reads
/// them; the default for ExternalSecrets (custom resources) is Background.
fn propagation_policy(req: &ApiRequest<'_>) -> Option<String> {
    let from_body = (!req.body.iter().all(u8::is_ascii_whitespace))
        .then(|| serde_json::from_slice::<Value>(req.body).ok())
        .flatten();
    let (policy, orphan) = match &from_body {
        Some(opts) => (
            opts.get("propagationPolicy")
                .and_then(Value::as_str)
                .map(str::to_string),
            opts.get("orphanDependents").and_then(Value::as_bool),
        ),
        None => (
            query_values(req.query, "propagationPolicy").next(),
            query_values(req.query, "orphanDependents")
                .next()
                .map(|v| v == "true"),
        ),
    };
    match (policy.as_deref(), orphan) {
        (Some(p @ ("Orphan" | "Background" | "Foreground")), None) => Some(p.to_string()),
        (Some(_), _) => None,
        (None, Some(true)) => Some("Orphan".to_string()),
        (None, _) => Some("Background".to_string()),
    }
}
