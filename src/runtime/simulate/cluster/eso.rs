//! A deterministic External Secrets controller (modelled on v2.12.0's ExternalSecret reconcile)
//! and the garbage collector's handling of a deleted ExternalSecret, acting inside the fake
//! cluster after every request the program makes.
//!
//! # What it does
//! - It reconciles an ExternalSecret when a Secret it targets changes while carrying the
//!   `reconcile.external-secrets.io/managed` label (ESO watches Secret metadata with that
//!   predicate), when it asked to be requeued, and when its deletion is observed.
//! - A reconcile reads the target Secret's metadata (the partial cache, always current); a
//!   Secret without the managed label gets it by a patch, and the reconcile is requeued. It then
//!   reads the full cache, which lags one program request behind: when the two disagree on the
//!   resourceVersion, the reconcile is requeued (ESO's cache-mismatch retry).
//! - CreatedOnce is decided from the ExternalSecret's status alone: a refresh is due while
//!   `syncedResourceVersion` or `refreshTime` is empty. Otherwise the refresh is skipped only if
//!   the Secret is valid: it exists, has the managed label, and its data-hash annotation is the
//!   hash of its data. A refresh of a generator-backed ExternalSecret asks its Password
//!   generator for a new value; a deleted generator makes the refresh fail (recorded, the
//!   condition set to `SecretSyncedError`, retried after the next request), as ESO does. A
//!   store-backed one gets the values its store holds (those the scenario seeded).
//! - The Secret is written (with `creationPolicy: Owner` the controller reference and the
//!   created-by label are put back), then the status.
//!
//! # Deletion: ESO's finalizer
//! Every seeded ExternalSecret carries ESO's cleanup finalizer, as the controller adds it on its
//! first reconcile. A DELETE sets `deletionTimestamp` and, for Orphan and Foreground, the
//! garbage collector's finalizer; the object stays visible until the controller has observed
//! the deletion, run its cleanup (`deletionPolicy: Delete` deletes a Secret it controls) and
//! removed its finalizer, and the garbage collector has done its part: Orphan strips the
//! ownerReference from the dependents, Foreground deletes them first, Background deletes them
//! once the owner is gone. The finalizer was chosen over a garbage-collector delay because it
//! is what v2.12.0 does, and because it makes the order observable: the ExternalSecret is gone
//! only after the controller saw its deletion.
//!
//! # Determinism and the worst order
//! Nothing depends on the clock: the controller acts after each request, in a fixed order.
//! The deletion is observed [`DELETE_LAG`] requests after the DELETE, and never while the
//! controller still has a reconcile of that ExternalSecret queued: informers for Secrets and
//! ExternalSecrets are independent, so a Secret event may be processed against a cache that
//! does not show the deletion yet. A program that writes a planned Secret before the
//! ExternalSecret is gone therefore always meets a controller that can still refresh it.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::{Cluster, Event, TIMESTAMP, secret_values};
use crate::runtime::simulate::incluster::random_token;

pub const MANAGED_LABEL: &str = "reconcile.external-secrets.io/managed";
pub const DATA_HASH: &str = "reconcile.external-secrets.io/data-hash";
pub const ESO_FINALIZER: &str = "externalsecrets.external-secrets.io/externalsecret-cleanup";
const CREATED_BY: &str = "reconcile.external-secrets.io/created-by";
/// Requests after a DELETE of an ExternalSecret during which it is still there: the
/// controller observes the deletion at the end of the last of them.
pub const DELETE_LAG: u64 = 3;
/// How many times the observation waits for reconciles of the same ExternalSecret still
/// queued (a failing refresh is retried with backoff, which must not block the deletion).
const MAX_POSTPONED: u8 = 4;
/// Reconciles per request, so that a controller that keeps requeueing cannot spin.
const MAX_RECONCILES: usize = 64;
/// The Password generator's default length in External Secrets.
const DEFAULT_LENGTH: usize = 24;

/// A DELETE the controller and the garbage collector have still to act on.
#[derive(Debug, Clone)]
pub struct Deletion {
    /// The request, which findings about the garbage collector's work name.
    pub request: String,
    /// Orphan, Background or Foreground.
    pub policy: String,
    due: u64,
    postponed: u8,
}

/// The controller's queue and caches.
#[derive(Debug, Default)]
pub struct Controller {
    /// Program requests handled so far.
    tick: u64,
    /// (ExternalSecret, the request that started the chain), in arrival order.
    queue: VecDeque<(String, String)>,
    /// Requeued: run after the program's next request.
    later: Vec<(String, String)>,
    /// The full cache: each Secret's resourceVersion as of the end of the previous request.
    full_cache: BTreeMap<String, Value>,
    /// Secrets whose last known state carried the managed label.
    managed: BTreeSet<String>,
    /// Refresh failures already recorded, per (ExternalSecret, trigger).
    failed: BTreeSet<(String, String)>,
    /// A slow controller: it observes no deletion while the program runs (longer than any
    /// patience: until the Job's activeDeadlineSeconds ends the pod, or for ever without one).
    slow: bool,
}

/// The data-hash annotation the fake controller writes: a digest of the keys and values.
/// (External Secrets uses its own hash; only whether it matches the data matters here.)
pub fn data_hash(data: Option<&Value>) -> String {
    let mut pairs: Vec<(&String, &str)> = data
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k, v.as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default();
    pairs.sort();
    let mut h = Sha256::new();
    for (k, v) in pairs {
        h.update(k.as_bytes());
        h.update([0]);
        h.update(v.as_bytes());
        h.update([0]);
    }
    crate::common::hex(&h.finalize()[..16])
}

fn label<'v>(obj: &'v Value, key: &str) -> Option<&'v str> {
    obj["metadata"]["labels"].get(key).and_then(Value::as_str)
}

/// The Secret an ExternalSecret writes: `spec.target.name`, by default its own name.
fn target_of<'v>(name: &'v str, es: &'v Value) -> &'v str {
    es["spec"]["target"]["name"]
        .as_str()
        .filter(|n| !n.is_empty())
        .unwrap_or(name)
}

/// The Password generator a generator-backed ExternalSecret uses.
fn generator_of(es: &Value) -> Option<&str> {
    es["spec"]["dataFrom"].as_array()?.iter().find_map(|d| {
        let r = &d["sourceRef"]["generatorRef"];
        (r["kind"] == "Password")
            .then(|| r["name"].as_str())
            .flatten()
    })
}

fn synced(es: &Value) -> bool {
    let status = &es["status"];
    status["syncedResourceVersion"]
        .as_str()
        .is_some_and(|s| !s.is_empty())
        && status["refreshTime"]
            .as_str()
            .is_some_and(|s| !s.is_empty())
}

/// ESO's shouldRefresh, without a clock: CreatedOnce and OnChange decide from the status alone
/// (the program cannot change an ExternalSecret's spec), and Periodic would also refresh once
/// its interval has passed, which never happens here. So every policy refreshes exactly while
/// no completed sync is recorded.
fn should_refresh(es: &Value) -> bool {
    !synced(es)
}

impl Cluster {
    /// A Secret changed: External Secrets hears of it when the Secret carries (or carried) the
    /// managed label, and queues every ExternalSecret that targets it.
    pub(super) fn secret_changed(&mut self, name: &str, trigger: &str) {
        let managed_now = self
            .secrets
            .get(name)
            .is_some_and(|s| label(s, MANAGED_LABEL) == Some("true"));
        let heard = managed_now || self.controller.managed.contains(name);
        if managed_now {
            self.controller.managed.insert(name.to_string());
        } else {
            self.controller.managed.remove(name);
        }
        if !heard {
            return;
        }
        let targeting: Vec<String> = self
            .external_secrets
            .iter()
            .filter(|(n, es)| target_of(n, &es.obj) == name)
            .map(|(n, _)| n.clone())
            .collect();
        for es in targeting {
            if !self.controller.queue.iter().any(|(q, _)| *q == es) {
                self.controller.queue.push_back((es, trigger.to_string()));
            }
        }
    }

    /// A seeded Secret, as the controller's caches already know it.
    pub(super) fn seeded_secret(&mut self, name: &str) {
        if let Some(s) = self.secrets.get(name) {
            let rv = s["metadata"]["resourceVersion"].clone();
            if label(s, MANAGED_LABEL) == Some("true") {
                self.controller.managed.insert(name.to_string());
            }
            self.controller.full_cache.insert(name.to_string(), rv);
        }
    }

    /// What a store-backed ExternalSecret's store holds: the data of its seeded Secret.
    pub fn set_store(&mut self, external_secret: &str, data: Map<String, Value>) {
        if let Some(es) = self.external_secrets.get_mut(external_secret) {
            es.store = data;
        }
    }

    /// An ExternalSecret that still exists (terminating or not) and writes Secret `name`.
    pub(super) fn external_secret_targeting(&self, name: &str) -> Option<String> {
        self.external_secrets
            .iter()
            .find(|(n, es)| target_of(n, &es.obj) == name)
            .map(|(n, _)| n.clone())
    }

    /// An ExternalSecret that still exists (terminating or not) and uses generator `name`.
    pub(super) fn external_secret_using(&self, generator: &str) -> Option<String> {
        self.external_secrets
            .iter()
            .find(|(_, es)| generator_of(&es.obj) == Some(generator))
            .map(|(n, _)| n.clone())
    }

    /// A DELETE: the object is marked, the garbage collector's finalizer added for Orphan and
    /// Foreground, and the controller will observe it [`DELETE_LAG`] requests later.
    pub(super) fn begin_deletion(
        &mut self,
        name: &str,
        policy: &str,
        request: &str,
    ) -> Option<super::ExternalSecret> {
        let rv = self.next_rv();
        // The DELETE's own step comes first, then DELETE_LAG requests.
        let due = self.controller.tick + 1 + DELETE_LAG;
        let es = self.external_secrets.get_mut(name)?;
        let meta = &mut es.obj["metadata"];
        meta["deletionTimestamp"] = json!(TIMESTAMP);
        meta["resourceVersion"] = json!(rv.to_string());
        let mut finalizers: Vec<Value> = meta["finalizers"].as_array().cloned().unwrap_or_default();
        let gc = match policy {
            "Orphan" => Some("orphan"),
            "Foreground" => Some("foregroundDeletion"),
            _ => None,
        };
        if let Some(f) = gc {
            finalizers.push(json!(f));
        }
        meta["finalizers"] = Value::Array(finalizers);
        es.deletion = Some(Deletion {
            request: request.to_string(),
            policy: policy.to_string(),
            due,
            postponed: 0,
        });
        Some(es.clone())
    }

    /// What the controller and the garbage collector do after one program request: the
    /// requeued reconciles and those Secret events started, then the deletions now observed,
    /// then the full cache catches up.
    /// Makes the controller slow (see [`Controller::slow`]) or not.
    pub fn set_slow_controller(&mut self, slow: bool) {
        self.controller.slow = slow;
    }

    pub fn after_request(&mut self) {
        self.controller.tick += 1;
        let later = std::mem::take(&mut self.controller.later);
        for item in later {
            if !self.controller.queue.iter().any(|(q, _)| *q == item.0) {
                self.controller.queue.push_back(item);
            }
        }
        let mut done = 0;
        while let Some((es, trigger)) = self.controller.queue.pop_front() {
            if done >= MAX_RECONCILES {
                self.controller.later.push((es, trigger));
                continue;
            }
            done += 1;
            self.reconcile(&es, &trigger);
        }
        let tick = self.controller.tick;
        let due: Vec<String> = self
            .external_secrets
            .iter()
            .filter(|_| !self.controller.slow)
            .filter(|(_, es)| es.deletion.as_ref().is_some_and(|d| d.due <= tick))
            .map(|(n, _)| n.clone())
            .collect();
        for name in due {
            let pending = self.controller.later.iter().any(|(q, _)| *q == name);
            let Some(d) = self
                .external_secrets
                .get_mut(&name)
                .and_then(|es| es.deletion.as_mut())
            else {
                continue;
            };
            if pending && d.postponed < MAX_POSTPONED {
                // Its Secret events are processed first: the worst order for the program.
                d.postponed += 1;
                continue;
            }
            self.finish_deletion(&name);
        }
        self.controller.full_cache = self
            .secrets
            .iter()
            .map(|(n, s)| (n.clone(), s["metadata"]["resourceVersion"].clone()))
            .collect();
    }

    /// What the controllers finish once the program has exited and time passes: every queued
    /// reconcile runs and every deletion completes (still after the reconciles queued for it).
    pub fn quiesce(&mut self) {
        self.pass_time();
        self.settle(self.now());
        // Once the program is done, even a slow controller gets to the deletions.
        let slow = std::mem::replace(&mut self.controller.slow, false);
        for _ in 0..2 * (MAX_POSTPONED as usize + 2) {
            let busy = !self.controller.queue.is_empty()
                || !self.controller.later.is_empty()
                || self.external_secrets.values().any(|e| e.deletion.is_some());
            if !busy {
                break;
            }
            for es in self.external_secrets.values_mut() {
                if let Some(d) = es.deletion.as_mut() {
                    d.due = 0;
                }
            }
            self.after_request();
        }
        self.controller.slow = slow;
    }

    /// One reconcile of ExternalSecret `name`, as the controller sees it (a deletion not yet
    /// observed is not seen).
    fn reconcile(&mut self, name: &str, trigger: &str) {
        let Some(es) = self
            .external_secrets
            .get(name)
            .map(|e| (e.obj.clone(), e.remote))
        else {
            return;
        };
        let (obj, remote) = es;
        let target = target_of(name, &obj).to_string();
        let partial = self.secrets.get(&target).cloned();
        if let Some(p) = &partial
            && label(p, MANAGED_LABEL) != Some("true")
        {
            // Label it so that the metadata watch sees it, and come back.
            let rv = self.next_rv();
            if let Some(s) = self.secrets.get_mut(&target) {
                if !s["metadata"]["labels"].is_object() {
                    s["metadata"]["labels"] = json!({});
                }
                s["metadata"]["labels"][MANAGED_LABEL] = json!("true");
                s["metadata"]["resourceVersion"] = json!(rv.to_string());
            }
            self.secret_changed(&target, trigger);
            self.controller
                .later
                .push((name.to_string(), trigger.to_string()));
            return;
        }
        let current_rv = partial
            .as_ref()
            .map(|p| p["metadata"]["resourceVersion"].clone());
        if self.controller.full_cache.get(&target) != current_rv.as_ref() {
            // The full cache has not caught up with the metadata cache: retry shortly.
            self.controller
                .later
                .push((name.to_string(), trigger.to_string()));
            return;
        }
        let creation = obj["spec"]["target"]["creationPolicy"]
            .as_str()
            .unwrap_or("Owner")
            .to_string();
        let invalid = match &partial {
            _ if creation == "Orphan" => None,
            None => Some("the Secret is missing"),
            Some(s) if label(s, MANAGED_LABEL) != Some("true") => {
                Some("the Secret lacks the managed label")
            }
            Some(s)
                if s["metadata"]["annotations"][DATA_HASH].as_str()
                    != Some(data_hash(s.get("data")).as_str()) =>
            {
                Some("its data-hash annotation differs from the hash of its data")
            }
            Some(_) => None,
        };
        let reason = match (should_refresh(&obj), invalid) {
            (false, None) => return,
            (true, _) => "its status records no completed sync".to_string(),
            (false, Some(why)) => format!("the Secret looks invalid to External Secrets ({why})"),
        };
        let provided: Map<String, Value> = if remote {
            self.external_secrets
                .get(name)
                .map(|e| e.store.clone())
                .unwrap_or_default()
        } else {
            let Some(generator) = generator_of(&obj).map(str::to_string) else {
                return;
            };
            let Some(spec) = self.generators.get(&generator).map(|g| g["spec"].clone()) else {
                if self
                    .controller
                    .failed
                    .insert((name.to_string(), trigger.to_string()))
                {
                    self.record(Event::RefreshFailed {
                        trigger: trigger.to_string(),
                        external_secret: name.to_string(),
                        name: target.clone(),
                        generator,
                        reason,
                    });
                }
                if let Some(e) = self.external_secrets.get_mut(name) {
                    e.obj["status"]["conditions"] = json!([{"type": "Ready", "status": "False",
                        "reason": "SecretSyncedError", "message": "could not get secret data from provider"}]);
                }
                // ESO returns the error: the request is retried with backoff.
                self.controller
                    .later
                    .push((name.to_string(), trigger.to_string()));
                return;
            };
            let length = spec["length"]
                .as_u64()
                .and_then(|l| usize::try_from(l).ok())
                .unwrap_or(DEFAULT_LENGTH)
                .clamp(1, 1024);
            let Ok(value) = random_token(length) else {
                return;
            };
            let mut m = Map::new();
            m.insert("password".into(), json!(B64.encode(value)));
            m
        };
        if creation == "None" || (creation == "Merge" && partial.is_none()) {
            self.mark_synced(name);
            return;
        }
        self.write_target(
            name, &obj, &target, partial, provided, &creation, trigger, &reason,
        );
        self.mark_synced(name);
    }

    #[allow(clippy::too_many_arguments)]
    fn write_target(
        &mut self,
        name: &str,
        es: &Value,
        target: &str,
        partial: Option<Value>,
        provided: Map<String, Value>,
        creation: &str,
        trigger: &str,
        reason: &str,
    ) {
        let before = partial.as_ref().map(secret_values);
        let mut secret = match &partial {
            Some(s) => s.clone(),
            None => {
                let uid = self.new_uid();
                json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                       "metadata": {"name": target, "namespace": self.namespace, "uid": uid,
                                    "creationTimestamp": TIMESTAMP}, "data": {}})
            }
        };
        if !secret["data"].is_object() {
            secret["data"] = json!({});
        }
        for (k, v) in provided {
            secret["data"][k] = v;
        }
        let uid = es["metadata"]["uid"].clone();
        let meta = &mut secret["metadata"];
        let mut refs: Vec<Value> = meta["ownerReferences"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        refs.retain(|r| r["uid"] != uid);
        if !meta["labels"].is_object() {
            meta["labels"] = json!({});
        }
        if !meta["annotations"].is_object() {
            meta["annotations"] = json!({});
        }
        if creation == "Owner" {
            refs.push(json!({"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
                             "name": name, "uid": uid, "controller": true, "blockOwnerDeletion": true}));
            meta["labels"][CREATED_BY] = json!(data_hash(Some(&json!({"es": name}))));
        } else if let Some(l) = meta["labels"].as_object_mut() {
            l.remove(CREATED_BY);
        }
        if refs.is_empty() {
            if let Some(m) = meta.as_object_mut() {
                m.remove("ownerReferences");
            }
        } else {
            meta["ownerReferences"] = Value::Array(refs);
        }
        meta["labels"][MANAGED_LABEL] = json!("true");
        let hash = data_hash(secret.get("data"));
        secret["metadata"]["annotations"][DATA_HASH] = json!(hash);
        if partial.as_ref() == Some(&secret) {
            return;
        }
        let rv = self.next_rv();
        secret["metadata"]["resourceVersion"] = json!(rv.to_string());
        let after = Some(secret_values(&secret));
        self.secrets.insert(target.to_string(), secret);
        self.record(Event::ControllerWrite {
            trigger: trigger.to_string(),
            external_secret: name.to_string(),
            name: target.to_string(),
            before,
            after,
            reason: reason.to_string(),
        });
        self.secret_changed(target, trigger);
    }

    /// The status, written after the Secret: the sync is recorded.
    fn mark_synced(&mut self, name: &str) {
        let rv = self.next_rv();
        if let Some(e) = self.external_secrets.get_mut(name) {
            e.obj["status"]["refreshTime"] = json!(TIMESTAMP);
            e.obj["status"]["syncedResourceVersion"] = json!(format!("1-{rv}"));
            e.obj["status"]["conditions"] =
                json!([{"type": "Ready", "status": "True", "reason": "SecretSynced"}]);
            e.obj["metadata"]["resourceVersion"] = json!(rv.to_string());
        }
    }

    /// The controller observes the deletion (cleanup, then its finalizer removed) and the
    /// garbage collector acts by the propagation policy; then the object is gone.
    fn finish_deletion(&mut self, name: &str) {
        let Some(es) = self.external_secrets.get(name).cloned() else {
            return;
        };
        let Some(deletion) = es.deletion.clone() else {
            return;
        };
        let uid = es.obj["metadata"]["uid"].clone();
        let target = target_of(name, &es.obj).to_string();
        if es.obj["spec"]["target"]["deletionPolicy"] == "Delete" {
            let controlled = self.secrets.get(&target).is_some_and(|s| {
                s["metadata"]["ownerReferences"]
                    .as_array()
                    .is_some_and(|refs| {
                        refs.iter()
                            .any(|r| r["uid"] == uid && r["controller"] == true)
                    })
            });
            if controlled {
                let before = self.secrets.remove(&target).map(|s| secret_values(&s));
                self.next_rv();
                self.record(Event::ControllerWrite {
                    trigger: deletion.request.clone(),
                    external_secret: name.to_string(),
                    name: target.clone(),
                    before,
                    after: None,
                    reason: "its deletionPolicy is Delete".into(),
                });
                self.secret_changed(&target, &deletion.request);
            }
        }
        match deletion.policy.as_str() {
            "Orphan" => self.orphan_dependents(&deletion.request, &uid),
            "Foreground" => self.delete_dependents(&deletion.request, &uid),
            _ => {}
        }
        self.external_secrets.remove(name);
        if deletion.policy == "Background" {
            self.delete_dependents(&deletion.request, &uid);
        }
        self.controller.queue.retain(|(q, _)| q != name);
        self.controller.later.retain(|(q, _)| q != name);
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
}
