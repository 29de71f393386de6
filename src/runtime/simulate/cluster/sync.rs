//! What happens to the namespace between the Job's run and its run at the next sync: Argo CD
//! prunes what it tracks and no longer renders, deletes the hooks by their delete policy, and
//! the garbage collector deletes what only they (or nothing) owned.
//!
//! The order is the sync's: the sync phase, with its pruning, follows the PreSync hook in the
//! same sync; the Job goes when it succeeds (HookSucceeded), or by its ttlSecondsAfterFinished,
//! or at the latest when the next sync deletes the hooks before creating them again
//! (BeforeHookCreation), with the ServiceAccount, Role, RoleBinding and ConfigMap. Argo CD and
//! the TTL controller delete in the foreground, so every dependent goes too; an Orphan delete is
//! the program's choice alone and is played where it makes it (`eso`).
//!
//! Tracking: the platform's Argo CD tracks by annotation (`argocd.argoproj.io/tracking-id`,
//! `<app>:<group>/<Kind>:<namespace>/<name>`), as bundle.md's note on what Argo CD adds says.
//! A Secret the program wrote whose tracking id names that very Secret is pruned. Under label
//! tracking (`app.kubernetes.io/instance`) the instance label alone would have it pruned; the
//! platform does not track so, and that is reported as a warning, the Secret kept.

use serde_json::Value;

use super::Cluster;

const TRACKING_ID: &str = "argocd.argoproj.io/tracking-id";
const INSTANCE_LABEL: &str = "app.kubernetes.io/instance";

/// A Secret the sync cycle deletes (or, for a warning, would delete under another tracking
/// method), with the step that does it and the program's request that set it up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncLoss {
    pub secret: String,
    /// The step, in words.
    pub step: String,
    /// The program's last write of the Secret before the cycle.
    pub request: Option<String>,
    /// Only under a tracking method the platform does not use: the Secret is kept.
    pub warning: bool,
}

/// The bundle objects Argo CD deletes as hooks: the Job is `<owner>-credentials-<hash>`, the
/// others `<owner>-credentials` (bundle.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hook {
    Job,
    Other,
}

impl Cluster {
    /// Plays the cycle after a run, up to the next run of the Job (see the module's note).
    pub fn next_sync(&mut self, owner: &str) -> Vec<SyncLoss> {
        let mut losses = Vec::new();
        let mut alive = [Hook::Job, Hook::Other].to_vec();
        self.sweep(owner, &alive, &mut losses, |kind, name| {
            format!(
                "the garbage collector deletes it: its owner {kind} {name} does not exist (the namespace holds only the scenario's objects and the bundle), or has another uid"
            )
        });
        self.prune(&mut losses);
        self.sweep(owner, &alive, &mut losses, |kind, name| {
            format!("the garbage collector deletes it after Argo CD prunes its owner {kind} {name}")
        });
        alive.retain(|h| *h != Hook::Job);
        self.sweep(owner, &alive, &mut losses, |kind, name| {
            format!(
                "Argo CD deletes the hook {kind} {name} after the run (HookSucceeded; else its ttlSecondsAfterFinished, or BeforeHookCreation at the next sync), in the foreground, and the garbage collector deletes its dependents"
            )
        });
        alive.clear();
        self.sweep(owner, &alive, &mut losses, |kind, name| {
            format!(
                "the next sync deletes the hook {kind} {name} before creating it again (BeforeHookCreation), in the foreground, and the garbage collector deletes its dependents"
            )
        });
        losses
    }

    /// Argo CD's pruning at the end of the sync: the Secrets the program wrote that carry a
    /// tracking id naming themselves.
    fn prune(&mut self, losses: &mut Vec<SyncLoss>) {
        let written: Vec<(String, String)> = self
            .written_by
            .iter()
            .map(|(s, r)| (s.clone(), r.clone()))
            .collect();
        for (name, request) in written {
            let Some(secret) = self.secrets.get(&name) else {
                continue;
            };
            let meta = &secret["metadata"];
            // Argo CD takes an object with owners as a child of another, never prunes it.
            let owned = meta
                .get("ownerReferences")
                .and_then(Value::as_array)
                .is_some_and(|r| !r.is_empty());
            if owned {
                continue;
            }
            let tracked = meta["annotations"]
                .get(TRACKING_ID)
                .and_then(Value::as_str)
                .is_some_and(|id| tracking_id_names(id, &self.namespace, &name));
            let labelled = meta["labels"]
                .get(INSTANCE_LABEL)
                .and_then(Value::as_str)
                .is_some_and(|app| !app.is_empty());
            if tracked {
                self.secrets.remove(&name);
                self.next_rv();
                losses.push(SyncLoss {
                    secret: name,
                    step: format!(
                        "Argo CD prunes it at the end of the sync: its {TRACKING_ID} annotation names it, and no rendered manifest does"
                    ),
                    request: Some(request),
                    warning: false,
                });
            } else if labelled {
                losses.push(SyncLoss {
                    secret: name,
                    step: format!(
                        "it carries the {INSTANCE_LABEL} label: an Argo CD that tracks by label (its default before 3.0) prunes it at the end of the sync, although the platform's, tracking by annotation, keeps it"
                    ),
                    request: Some(request),
                    warning: true,
                });
            }
        }
    }

    /// The garbage collector: deletes every Secret with owner references none of which names
    /// an object that exists (hooks count while in `alive`), until none is left; `why` words
    /// the step by the first owner it names.
    fn sweep(
        &mut self,
        owner: &str,
        alive: &[Hook],
        losses: &mut Vec<SyncLoss>,
        why: impl Fn(&str, &str) -> String,
    ) {
        loop {
            let mut gone = Vec::new();
            for (name, secret) in &self.secrets {
                let Some(refs) = secret["metadata"]
                    .get("ownerReferences")
                    .and_then(Value::as_array)
                    .filter(|r| !r.is_empty())
                else {
                    continue;
                };
                if refs.iter().any(|r| self.owner_exists(owner, alive, r)) {
                    continue;
                }
                let kind = refs[0].get("kind").and_then(Value::as_str).unwrap_or("");
                let owner_name = refs[0].get("name").and_then(Value::as_str).unwrap_or("");
                gone.push((name.clone(), why(kind, owner_name)));
            }
            if gone.is_empty() {
                return;
            }
            for (name, step) in gone {
                self.secrets.remove(&name);
                self.next_rv();
                losses.push(SyncLoss {
                    request: self.written_by.get(&name).cloned(),
                    secret: name,
                    step,
                    warning: false,
                });
            }
        }
    }

    /// Whether an owner reference names an object of the namespace: by kind, name and uid for
    /// what the fake cluster holds; by kind and name for the bundle's hooks, whose uids a
    /// program cannot read (with any other uid the garbage collector deletes the dependent at
    /// once, which the cycle plays at the latest when the hook goes).
    fn owner_exists(&self, owner: &str, alive: &[Hook], r: &Value) -> bool {
        let kind = r.get("kind").and_then(Value::as_str).unwrap_or("");
        let name = r.get("name").and_then(Value::as_str).unwrap_or("");
        let uid = r.get("uid");
        let same = |obj: &Value| obj["metadata"].get("uid") == uid;
        let hook_name = format!("{owner}-credentials");
        match kind {
            "Secret" => self.secrets.get(name).is_some_and(same),
            "ExternalSecret" => self
                .external_secrets
                .get(name)
                .is_some_and(|e| same(&e.obj)),
            "Password" => self.generators.get(name).is_some_and(same),
            "Pod" => self
                .pods
                .get(name)
                .is_some_and(|p| p.uid().is_some() && uid.and_then(Value::as_str) == p.uid()),
            "Job" => {
                alive.contains(&Hook::Job)
                    && (name == hook_name
                        || name
                            .strip_prefix(&hook_name)
                            .is_some_and(|rest| rest.starts_with('-')))
            }
            "ConfigMap" | "ServiceAccount" | "Role" | "RoleBinding" => {
                alive.contains(&Hook::Other) && name == hook_name
            }
            _ => false,
        }
    }
}

/// Whether tracking id `id` (`<app>:<group>/<Kind>:<namespace>/<name>`) names Secret `name`
/// of `namespace`: Argo CD takes a resource whose id names another as not its own.
fn tracking_id_names(id: &str, namespace: &str, name: &str) -> bool {
    let mut parts = id.splitn(3, ':');
    let (Some(app), Some(group_kind), Some(ns_name)) = (parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let Some((group, kind)) = group_kind.split_once('/') else {
        return false;
    };
    let (ns, n) = ns_name.split_once('/').unwrap_or(("", ns_name));
    !app.is_empty() && group.is_empty() && kind == "Secret" && ns == namespace && n == name
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn secret(cluster: &mut Cluster, name: &str, meta: Value) -> String {
        let mut obj = json!({"apiVersion": "v1", "kind": "Secret", "metadata": meta,
                             "data": {"password": "c2VjcmV0LXZhbHVlLTE="}});
        obj["metadata"]["name"] = json!(name);
        cluster.seed_secret(obj)
    }

    fn owned_by(kind: &str, name: &str, uid: &str) -> Value {
        json!({"ownerReferences": [{"apiVersion": "v1", "kind": kind, "name": name, "uid": uid}]})
    }

    fn lost(losses: &[SyncLoss]) -> Vec<(&str, bool)> {
        losses
            .iter()
            .map(|l| (l.secret.as_str(), l.warning))
            .collect()
    }

    #[test]
    fn the_cycle_deletes_what_only_hooks_or_absent_owners_owned() {
        let mut cluster = Cluster::new("shop");
        let es = cluster.seed_external_secret(
            json!({"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
                   "metadata": {"name": "kept-es"}, "spec": {}}),
            false,
        );
        secret(&mut cluster, "plain", json!({}));
        secret(
            &mut cluster,
            "by-es",
            owned_by("ExternalSecret", "kept-es", &es),
        );
        secret(
            &mut cluster,
            "by-es-other-uid",
            owned_by("ExternalSecret", "kept-es", "x"),
        );
        secret(
            &mut cluster,
            "by-deployment",
            owned_by("Deployment", "shop", "d"),
        );
        let job = secret(
            &mut cluster,
            "by-job",
            owned_by("Job", "shop-sessions-credentials-1a2b3c4d", "j"),
        );
        secret(
            &mut cluster,
            "by-by-job",
            owned_by("Secret", "by-job", &job),
        );
        secret(
            &mut cluster,
            "by-cm",
            owned_by("ConfigMap", "shop-sessions-credentials", "c"),
        );
        // A Secret with a solid owner beside a gone one stays, as the collector keeps it.
        let mut both = owned_by("ConfigMap", "shop-sessions-credentials", "c");
        both["ownerReferences"]
            .as_array_mut()
            .unwrap()
            .push(json!({"kind": "ExternalSecret", "name": "kept-es", "uid": es}));
        secret(&mut cluster, "by-cm-and-es", both);
        let losses = cluster.next_sync("shop-sessions");
        let mut gone: Vec<&str> = losses.iter().map(|l| l.secret.as_str()).collect();
        gone.sort_unstable();
        assert_eq!(
            gone,
            [
                "by-by-job",
                "by-cm",
                "by-deployment",
                "by-es-other-uid",
                "by-job"
            ]
        );
        for kept in ["plain", "by-es", "by-cm-and-es"] {
            assert!(cluster.secret(kept).is_some(), "{kept}");
        }
        let step = |name: &str| &losses.iter().find(|l| l.secret == name).unwrap().step;
        assert!(
            step("by-job").contains("HookSucceeded"),
            "{}",
            step("by-job")
        );
        assert!(step("by-by-job").contains("HookSucceeded"));
        assert!(step("by-cm").contains("BeforeHookCreation"));
        assert!(step("by-deployment").contains("does not exist"));
    }

    #[test]
    fn pruning_takes_what_the_program_wrote_with_a_tracking_id_naming_it() {
        let mut cluster = Cluster::new("shop");
        let tracked = json!({"annotations": {TRACKING_ID: "shop-platform:/Secret:shop/tracked"}});
        secret(&mut cluster, "tracked", tracked.clone());
        secret(
            &mut cluster,
            "seeded-tracked",
            json!({"annotations": {TRACKING_ID: "shop-platform:/Secret:shop/seeded-tracked"}}),
        );
        secret(
            &mut cluster,
            "copied-id",
            json!({"annotations": {TRACKING_ID: "shop-platform:/Secret:shop/other"}}),
        );
        secret(
            &mut cluster,
            "labelled",
            json!({"labels": {INSTANCE_LABEL: "shop-platform"}}),
        );
        let mut owned = tracked;
        owned["ownerReferences"] = owned_by("ExternalSecret", "x", "y")["ownerReferences"].clone();
        owned["annotations"][TRACKING_ID] = json!("shop-platform:/Secret:shop/child");
        secret(&mut cluster, "child", owned);
        for name in ["tracked", "copied-id", "labelled", "child"] {
            cluster
                .written_by
                .insert(name.into(), format!("POST {name}"));
        }
        let losses = cluster.next_sync("shop-sessions");
        let mut got = lost(&losses);
        got.sort_unstable();
        // `child` has an owner: Argo CD never prunes it, but its owner is absent, so the
        // garbage collector takes it first.
        assert_eq!(
            got,
            [("child", false), ("labelled", true), ("tracked", false)]
        );
        assert!(cluster.secret("tracked").is_none());
        assert!(cluster.secret("labelled").is_some());
        assert!(cluster.secret("seeded-tracked").is_some());
        assert!(cluster.secret("copied-id").is_some());
        let tracked = losses.iter().find(|l| l.secret == "tracked").unwrap();
        assert_eq!(tracked.request.as_deref(), Some("POST tracked"));
        assert!(tracked.step.contains("prunes"));
    }

    #[test]
    fn a_tracking_id_is_read_as_argo_cd_reads_it() {
        assert!(tracking_id_names(
            "shop-platform:/Secret:shop/app",
            "shop",
            "app"
        ));
        assert!(!tracking_id_names(
            "shop-platform:/Secret:shop/other",
            "shop",
            "app"
        ));
        assert!(!tracking_id_names(
            "shop-platform:external-secrets.io/ExternalSecret:shop/app",
            "shop",
            "app"
        ));
        assert!(!tracking_id_names(":/Secret:shop/app", "shop", "app"));
        assert!(!tracking_id_names("shop-platform", "shop", "app"));
    }
}
