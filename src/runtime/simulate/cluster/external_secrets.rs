//! ExternalSecrets (external-secrets.io v1 and v1beta1): seeding, get and list, and the delete
//! that leaves them to the controller's finalizer with the request's propagation policy.

use serde_json::{Map, Value, json};

use super::{
    ApiRequest, Cluster, Event, ExternalSecret, Response, is_write, method_not_allowed, not_found,
    status_error,
};
use crate::runtime::simulate::rbac::{RequestInfo, query_values};

impl Cluster {
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

    pub fn external_secret_exists(&mut self, name: &str) -> bool {
        self.settle(self.now());
        self.external_secrets.contains_key(name)
    }

    pub(super) fn external_secrets_api(
        &mut self,
        req: &ApiRequest<'_>,
        info: &RequestInfo,
    ) -> Response {
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
