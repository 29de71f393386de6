//! Server-side apply of a Secret (`PATCH` with `application/apply-patch+yaml`), as the API
//! server answers it: `fieldManager` required; the Secret created if absent; otherwise the
//! applied fields merged in, a field another manager set to another value a conflict (409)
//! unless `force=true`, and the fields this manager applied before but omits now removed.
//!
//! Ownership is kept per field the program can set (each key of `data`, each label and
//! annotation, `type`), shared by the managers that applied the same value: what no apply set
//! belongs to another manager (the one that created or last updated it). The body is read as JSON, the subset of YAML a program without a YAML
//! library sends; other YAML is answered 400.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::{ApiRequest, Cluster, Response, TIMESTAMP, bad_request, status_error};

pub(super) const APPLY_PATCH: &str = "application/apply-patch+yaml";

/// What an apply did: the answer, whether the stored Secret changed, whether it created it.
pub(super) struct Applied {
    pub response: Response,
    pub changed: bool,
    pub created: bool,
}

/// `field=value` of a query string.
fn query_value<'q>(query: &'q str, field: &str) -> Option<&'q str> {
    query
        .split('&')
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| *k == field)
        .map(|(_, v)| v)
}

/// The fields of a Secret an apply can own, with their values: `data.<key>`,
/// `metadata.labels.<key>`, `metadata.annotations.<key>`, `type`.
fn fields(obj: &Value) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let maps = [
        ("data", &obj["data"]),
        ("metadata.labels", &obj["metadata"]["labels"]),
        ("metadata.annotations", &obj["metadata"]["annotations"]),
    ];
    for (prefix, map) in maps {
        if let Some(m) = map.as_object() {
            out.extend(m.iter().map(|(k, v)| (format!("{prefix}.{k}"), v.clone())));
        }
    }
    if let Some(t) = obj.get("type") {
        out.push(("type".into(), t.clone()));
    }
    out
}

/// The place of field `path` in a Secret: its map and key (`type` has no map).
fn place(path: &str) -> (&[&'static str], &str) {
    for (prefix, at) in [
        ("data.", &["data"][..]),
        ("metadata.labels.", &["metadata", "labels"][..]),
        ("metadata.annotations.", &["metadata", "annotations"][..]),
    ] {
        if let Some(key) = path.strip_prefix(prefix) {
            return (at, key);
        }
    }
    (&[], path)
}

fn get_field<'v>(obj: &'v Value, path: &str) -> Option<&'v Value> {
    let (at, key) = place(path);
    at.iter().try_fold(obj, |v, p| v.get(p))?.get(key)
}

fn set_field(obj: &mut Value, path: &str, value: Option<Value>) {
    let (at, key) = place(path);
    let mut target = obj;
    for p in at {
        if !target.get(*p).is_some_and(Value::is_object) {
            target[*p] = Value::Object(Map::new());
        }
        target = &mut target[*p];
    }
    if let Some(map) = target.as_object_mut() {
        match value {
            Some(v) => {
                map.insert(key.to_string(), v);
            }
            None => {
                map.remove(key);
            }
        }
    }
}

impl Cluster {
    pub(super) fn apply_secret(&mut self, req: &ApiRequest<'_>, name: &str) -> Applied {
        let refuse = |response| Applied {
            response,
            changed: false,
            created: false,
        };
        let manager = query_value(req.query, "fieldManager").unwrap_or("");
        if manager.is_empty() {
            return refuse(bad_request(
                "PATCH with application/apply-patch+yaml requires the fieldManager query parameter",
            ));
        }
        let force = query_value(req.query, "force") == Some("true");
        let Ok(body) = serde_json::from_slice::<Value>(req.body) else {
            return refuse(bad_request(
                "the apply body is not JSON (the fake API server reads the JSON subset of YAML)",
            ));
        };
        let body_name = body["metadata"]["name"].as_str().unwrap_or("");
        if body_name != name {
            return refuse(bad_request(&format!(
                "the name of the object ({body_name:?}) does not match the name on the URL ({name:?})"
            )));
        }
        if body.get("kind") != Some(&json!("Secret"))
            || body.get("apiVersion") != Some(&json!("v1"))
        {
            return refuse(bad_request(
                "an applied Secret states apiVersion v1 and kind Secret",
            ));
        }
        let applied = match self.normalize_secret(body, name) {
            Ok(obj) => obj,
            Err(resp) => return refuse(resp),
        };
        let applied_fields = fields(&applied);
        let Some(current) = self.secrets.get(name).cloned() else {
            return self.apply_create(name, applied, manager, &applied_fields);
        };
        // The managers other than this one that own a field (what no apply set belongs to
        // the manager that created or updated it).
        let others = |path: &str| -> Vec<String> {
            match self.apply_owners.get(&(name.to_string(), path.to_string())) {
                Some(owners) => owners.iter().filter(|o| *o != manager).cloned().collect(),
                None => vec!["before-first-apply".into()],
            }
        };
        let conflicts: Vec<(String, Vec<String>)> = applied_fields
            .iter()
            .filter(|(path, value)| get_field(&current, path).is_some_and(|now| now != value))
            .map(|(path, _)| (path.clone(), others(path)))
            .filter(|(_, others)| !others.is_empty())
            .collect();
        if !conflicts.is_empty() && !force {
            let list: Vec<String> = conflicts
                .iter()
                .map(|(p, owners)| format!("conflict with {:?}: .{p}", owners.join(", ")))
                .collect();
            return refuse(status_error(
                409,
                "Conflict",
                &format!(
                    "Apply failed with {} conflict(s): {}",
                    conflicts.len(),
                    list.join("; ")
                ),
                name,
                "secrets",
            ));
        }
        let mut merged = current.clone();
        // Fields this manager applied before and omits now lose it as an owner, and are
        // removed when no manager owns them any more.
        let dropped: Vec<String> = self
            .apply_owners
            .iter()
            .filter(|((secret, path), owners)| {
                secret == name
                    && owners.contains(manager)
                    && !applied_fields.iter().any(|(p, _)| p == path)
            })
            .map(|((_, path), _)| path.clone())
            .collect();
        for path in &dropped {
            let key = (name.to_string(), path.clone());
            if let Some(owners) = self.apply_owners.get_mut(&key) {
                owners.remove(manager);
                if owners.is_empty() {
                    self.apply_owners.remove(&key);
                    set_field(&mut merged, path, None);
                }
            }
        }
        for (path, value) in &applied_fields {
            let key = (name.to_string(), path.clone());
            let same = get_field(&current, path) == Some(value);
            set_field(&mut merged, path, Some(value.clone()));
            let owners = self.apply_owners.entry(key).or_default();
            if !same {
                // A changed value (no conflict, or forced) is this manager's alone.
                owners.clear();
            }
            owners.insert(manager.to_string());
        }
        let (response, changed) = self.replace_secret(name, merged);
        Applied {
            response,
            changed,
            created: false,
        }
    }

    fn apply_create(
        &mut self,
        name: &str,
        mut obj: Value,
        manager: &str,
        applied_fields: &[(String, Value)],
    ) -> Applied {
        let uid = self.new_uid();
        let rv = self.next_rv();
        let meta = &mut obj["metadata"];
        meta["namespace"] = json!(self.namespace);
        meta["uid"] = json!(uid);
        meta["resourceVersion"] = json!(rv.to_string());
        meta["creationTimestamp"] = json!(TIMESTAMP);
        self.apply_owners.retain(|(secret, _), _| secret != name);
        for (path, _) in applied_fields {
            self.apply_owners.insert(
                (name.to_string(), path.clone()),
                BTreeSet::from([manager.to_string()]),
            );
        }
        self.secrets.insert(name.to_string(), obj.clone());
        Applied {
            response: Response {
                status: 201,
                body: obj,
            },
            changed: true,
            created: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(cluster: &mut Cluster, query: &str, body: &Value) -> Applied {
        let body = serde_json::to_vec(body).unwrap();
        let req = ApiRequest {
            query,
            content_type: APPLY_PATCH,
            body: &body,
            label: "PATCH",
        };
        cluster.apply_secret(&req, "s")
    }

    #[test]
    fn an_apply_creates_merges_and_conflicts_as_the_api_server_does() {
        let mut cluster = Cluster::new("shop");
        let secret = |data: Value| json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": data});
        let created = apply(
            &mut cluster,
            "fieldManager=a",
            &secret(json!({"k": "eA=="})),
        );
        assert_eq!((created.response.status, created.created), (201, true));
        assert_eq!(
            cluster.secret("s").unwrap()["metadata"]["namespace"],
            "shop"
        );
        // Another manager: the same value is shared, not a conflict; another value is.
        let same = apply(
            &mut cluster,
            "fieldManager=b",
            &secret(json!({"k": "eA=="})),
        );
        assert_eq!((same.response.status, same.changed), (200, false));
        let other = apply(
            &mut cluster,
            "fieldManager=b",
            &secret(json!({"k": "eQ=="})),
        );
        assert_eq!(other.response.status, 409);
        assert!(
            other.response.body["message"]
                .as_str()
                .unwrap()
                .contains("\"a\"")
        );
        let forced = apply(
            &mut cluster,
            "fieldManager=b&force=true",
            &secret(json!({"k": "eQ=="})),
        );
        assert_eq!(
            (forced.response.status, forced.changed),
            (200, true),
            "{}",
            forced.response.body
        );
        assert_eq!(cluster.secret_value("s", "k").unwrap(), b"y");
        // A body naming another object, or of another kind, is refused.
        let mut elsewhere = secret(json!({}));
        elsewhere["metadata"]["name"] = json!("t");
        assert_eq!(
            apply(&mut cluster, "fieldManager=a", &elsewhere)
                .response
                .status,
            400
        );
        let mut map = secret(json!({}));
        map["kind"] = json!("ConfigMap");
        assert_eq!(
            apply(&mut cluster, "fieldManager=a", &map).response.status,
            400
        );
    }

    #[test]
    fn fields_are_found_and_set_where_they_live() {
        let mut obj = json!({"type": "Opaque", "data": {"a": "eA=="},
                             "metadata": {"labels": {"l": "1"}}});
        let got: Vec<String> = fields(&obj).into_iter().map(|(p, _)| p).collect();
        assert_eq!(got, ["data.a", "metadata.labels.l", "type"]);
        set_field(&mut obj, "metadata.annotations.n", Some(json!("v")));
        set_field(&mut obj, "data.a", None);
        assert_eq!(obj["metadata"]["annotations"]["n"], "v");
        assert!(obj["data"].get("a").is_none());
        assert_eq!(get_field(&obj, "type"), Some(&json!("Opaque")));
        assert_eq!(
            query_value("fieldManager=me&force=true", "force"),
            Some("true")
        );
    }
}
