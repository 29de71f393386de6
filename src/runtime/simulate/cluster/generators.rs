//! Password generators (generators.external-secrets.io v1alpha1): seeding, get, list and
//! delete.

use serde_json::json;

use super::{ApiRequest, Cluster, Event, Response, is_write, method_not_allowed, not_found};
use crate::runtime::simulate::rbac::RequestInfo;

impl Cluster {
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

    pub fn generator_exists(&self, name: &str) -> bool {
        self.generators.contains_key(name)
    }

    pub(super) fn generators_api(&mut self, req: &ApiRequest<'_>, info: &RequestInfo) -> Response {
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
}
