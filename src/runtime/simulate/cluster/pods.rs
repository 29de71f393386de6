//! Server pods of a cache or broker: seeding, get, list and delete, and the StatefulSet
//! controller that starts a replacement once a deleted pod has terminated.

use std::time::Duration;

use serde_json::{Value, json};

use super::{
    ApiRequest, Cluster, Event, Response, TIMESTAMP, is_write, method_not_allowed, not_found,
};
use crate::runtime::simulate::rbac::RequestInfo;

/// How long a deleted Pod stays Terminating, and when its StatefulSet replacement runs.
pub const POD_TERMINATING: Duration = Duration::from_millis(60);
pub const POD_REPLACED: Duration = Duration::from_millis(120);

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
    /// The cluster's virtual time of the DELETE (see `Cluster::now`).
    deleted_at: Option<u64>,
}

#[derive(Debug, Clone)]
pub struct Pod {
    pub template: PodTemplate,
    pub replacement: Replacement,
    /// Its server (and its replacement's) answers probes with neither success nor refusal.
    pub unclear: bool,
    instance: Option<PodInstance>,
    replacement_due: Option<u64>,
}

/// A duration in the cluster's virtual nanoseconds.
pub fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Pod {
    /// The uid of the pod instance that exists now, if one does.
    pub(super) fn uid(&self) -> Option<&str> {
        self.instance.as_ref().map(|i| i.uid.as_str())
    }
}

impl Cluster {
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

    /// Applies what finalizers and the StatefulSet controller would have done by `now`, the
    /// cluster's virtual time.
    pub fn settle(&mut self, now: u64) {
        let mut started = Vec::new();
        for (name, pod) in &mut self.pods {
            if let Some(deleted) = pod.instance.as_ref().and_then(|i| i.deleted_at)
                && now >= deleted.saturating_add(nanos(POD_TERMINATING))
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
        self.settle(self.now());
        let pod = self.pods.get(name)?;
        Some((pod.instance.as_ref()?.password.clone()?, pod.unclear))
    }

    /// Whether every running pod accepts the value its Secret holds now.
    pub fn pods_refusing(&mut self) -> Vec<String> {
        self.settle(self.now());
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

    pub(super) fn pods_api(&mut self, req: &ApiRequest<'_>, info: &RequestInfo) -> Response {
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
                let now = self.now();
                let mut shown = None;
                if let Some(pod) = self.pods.get_mut(&info.name)
                    && let Some(i) = pod.instance.as_mut()
                {
                    if i.deleted_at.is_none() {
                        i.deleted_at = Some(now);
                        pod.replacement_due = Some(now.saturating_add(nanos(POD_REPLACED)));
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
