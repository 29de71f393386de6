//! Secrets: what the API server's validation and defaulting make of a create, update, patch
//! or delete, each write recorded for the judge, and the seeding and reading of stored values.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::apply::APPLY_PATCH;
use super::{
    ApiRequest, Cluster, Event, Response, TIMESTAMP, Values, bad_request, method_not_allowed,
    not_found, status_error,
};
use crate::runtime::simulate::patch::{PatchError, apply_json_patch, apply_merge_patch};
use crate::runtime::simulate::rbac::RequestInfo;

/// A namespace quota, so that a runaway program cannot fill memory with Secrets.
const MAX_SECRETS: usize = 64;

fn invalid(name: &str, message: &str) -> Response {
    status_error(
        422,
        "Invalid",
        &format!("Secret {name:?} is invalid: {message}"),
        name,
        "secrets",
    )
}

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

    pub(super) fn secrets_api(&mut self, req: &ApiRequest<'_>, info: &RequestInfo) -> Response {
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
            "patch" if media_type(req.content_type) == APPLY_PATCH => {
                let before = self.secrets.get(&name).map(secret_values);
                let applied = self.apply_secret(req, &name);
                // Judged as any write: a create where it made the Secret, else an unguarded
                // patch (an apply tests no resourceVersion).
                let (verb, guarded) = if applied.created {
                    ("create", None)
                } else {
                    ("patch", Some(false))
                };
                self.record_secret(
                    req.label,
                    name,
                    verb,
                    applied.response.status,
                    before,
                    applied.changed,
                    false,
                    guarded,
                );
                applied.response
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
    pub(super) fn record_secret(
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
        if changed && !by_gc && after.is_some() {
            self.written_by.insert(name.clone(), label.to_string());
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
    pub(super) fn normalize_secret(&self, body: Value, name: &str) -> Result<Value, Response> {
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
        self.apply_owners.retain(|(secret, _), _| *secret != name);
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
    pub(super) fn replace_secret(&mut self, name: &str, new: Value) -> (Response, bool) {
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
                    "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got {media:?})"
                ),
                "",
                "",
            )),
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
pub(super) fn strip_secret_data(body: &mut Value, resource: &str, content_type: &str) {
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
