//! From a recognised object to its [`Member`]: the owner it belongs to and the facts the
//! bundle rules need, located while the file's text is at hand.

use crate::load::locate::{Seg, span_for};
use crate::load::source::Source;
use crate::load::yaml::{Node, Value};
use crate::model::bundle::{
    Automount, BindingFacts, ConfigMapFacts, ContainerEnv, EnvEntry, EnvFromEntry, EnvSource,
    Facts, JobFacts, Member, MemberKind, Mount, ObjectKey, Owner, Plan, RoleRule, SUFFIX, Volume,
    owner_of_name, owner_prefix,
};
use crate::model::object::Object;

/// What to keep beyond the facts.
#[derive(Clone, Copy, Debug, Default)]
pub struct Keep {
    /// Keep the assembled bundles in the outcome (JUnit suites).
    pub bundles: bool,
    /// Keep plan.json and create.py texts too (for `simulate`).
    pub programs: bool,
}

/// The member `object` is, whose owner [`owner`] gave.
pub fn member(
    object: &Object,
    kind: MemberKind,
    owner: Owner,
    source: &Source,
    plan: Option<Plan>,
    keep: Keep,
) -> Member {
    let name = object.name.unwrap_or("");
    let facts = match kind {
        MemberKind::ServiceAccount => Facts::ServiceAccount(automount(object.root, source)),
        MemberKind::RoleBinding => Facts::RoleBinding(binding(object.root)),
        MemberKind::Role => Facts::Role(role_rules(object.root, source)),
        MemberKind::ConfigMap => {
            Facts::ConfigMap(Box::new(config_map(object.root, source, plan, keep)))
        }
        MemberKind::Job => Facts::Job(Box::new(job(object.root, name, source))),
    };
    Member {
        kind,
        namespace: object.namespace.map(str::to_string),
        owner,
        name: name.to_string(),
        loc: source.at(object.anchor().span),
        facts,
        held: None,
    }
}

/// Whose a member is. A name `O-credentials` says it; a ConfigMap named otherwise belongs to
/// the owner its plan.json names; a Job to the owner of what it references; any other member
/// to the bundle its references link it to (`Owner::Linked`).
pub fn owner(object: &Object, kind: MemberKind) -> Owner {
    let name = object.name.unwrap_or("");
    match kind {
        MemberKind::Job => job_owner(object.root, name),
        MemberKind::ConfigMap => Owner::Known(config_map_owner(object.root, name)),
        _ => match owner_of_name(name) {
            Some(owner) => Owner::Known(owner.to_string()),
            None => Owner::Linked,
        },
    }
}

/// The owner of a credentials ConfigMap: its name's, else the `owner` its plan.json names,
/// else the name itself.
pub fn config_map_owner(root: &Node, name: &str) -> String {
    if let Some(owner) = owner_of_name(name) {
        return owner.to_string();
    }
    root.at(&["data", "plan.json"])
        .and_then(Node::as_str)
        .and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok())
        .and_then(|plan| plan.get("owner")?.as_str().map(str::to_string))
        .filter(|o| !o.is_empty())
        .unwrap_or_else(|| name.to_string())
}

/// Whether an object that is not recognised by itself may still be a member: its findings are
/// then held until its bundle proves real. A ServiceAccount, Role, RoleBinding or ConfigMap named like a
/// member, or carrying a hook annotation (the renderer writes members as hooks); a Job mounting
/// a ConfigMap (the one it mounts may be a bundle's, by structure). A Job's name alone makes no
/// candidate: an application's `x-credentials-5eed1e55` with no hook and no program is none of
/// credlint's business (docs/bundle.md section 1).
pub fn candidate(object: &Object, kind: MemberKind) -> bool {
    let name = object.name.unwrap_or("");
    match kind {
        MemberKind::Job => object
            .root
            .at(&["spec", "template", "spec", "volumes"])
            .and_then(Node::as_seq)
            .unwrap_or_default()
            .iter()
            .any(|v| v.at(&["configMap", "name"]).is_some()),
        _ => {
            owner_of_name(name).is_some()
                || object
                    .root
                    .at(&["metadata", "annotations"])
                    .and_then(Node::as_map)
                    .unwrap_or_default()
                    .iter()
                    .any(|e| e.key == "argocd.argoproj.io/hook" || e.key == "helm.sh/hook")
        }
    }
}

/// Whether a ConfigMap holds the program and its plan: what makes it a bundle's by structure
/// (the policies' `credentials-object`). One of the two alone does not: an application's
/// `db-init-scripts` may well hold a `create.py`; a ConfigMap named like a member or carrying a
/// hook that holds only one is a [`candidate`].
pub fn holds_program(root: &Node) -> bool {
    root.get("data")
        .is_some_and(|d| d.get("create.py").is_some() && d.get("plan.json").is_some())
}

/// A Job belongs to the owner whose ConfigMap it mounts, else whose ServiceAccount it runs as,
/// else (by its truncated name) to the owner whose first 42 characters it carries. When the
/// ConfigMap and the ServiceAccount name two owners, the one the name carries wins: the other
/// reference is then the Job's wiring fault, not a second bundle. A Job whose names say none
/// of this is linked by its ConfigMap once every file is read.
pub fn job_owner(root: &Node, name: &str) -> Owner {
    let pod = root.at(&["spec", "template", "spec"]);
    let from_volume = pod
        .and_then(|p| p.get("volumes"))
        .and_then(Node::as_seq)
        .unwrap_or_default()
        .iter()
        .filter_map(|v| v.at(&["configMap", "name"]).and_then(Node::as_str))
        .find_map(owner_of_name);
    let from_account = pod
        .and_then(|p| {
            p.get("serviceAccountName")
                .or_else(|| p.get("serviceAccount"))
        })
        .and_then(Node::as_str)
        .and_then(owner_of_name);
    // <owner[:42]>-credentials-<h8>
    let prefix = name
        .rsplit_once('-')
        .and_then(|(head, _)| head.strip_suffix(SUFFIX));
    let owner = match (from_volume, from_account) {
        (Some(volume), Some(account))
            if prefix.is_some_and(|p| owner_prefix(account) == p && owner_prefix(volume) != p) =>
        {
            Some(account)
        }
        (volume, account) => volume.or(account),
    };
    match (owner, prefix) {
        (Some(owner), _) => Owner::Known(owner.to_string()),
        (None, Some(prefix)) => Owner::Prefix(prefix.to_string()),
        (None, None) => Owner::Linked,
    }
}

fn automount(root: &Node, source: &Source) -> Automount {
    let node = root.get("automountServiceAccountToken")?;
    match node.value {
        Value::Bool(b) => Some((b, source.at(node.span))),
        _ => None,
    }
}

fn binding(root: &Node) -> BindingFacts {
    let text = |n: &Node, key| n.get(key).and_then(Node::as_str).map(str::to_string);
    BindingFacts {
        role: root
            .get("roleRef")
            .filter(|r| text(r, "kind").as_deref() == Some("Role"))
            .and_then(|r| text(r, "name")),
        accounts: root
            .get("subjects")
            .and_then(Node::as_seq)
            .unwrap_or_default()
            .iter()
            .filter(|s| text(s, "kind").as_deref() == Some("ServiceAccount"))
            .filter_map(|s| {
                Some((
                    text(s, "name")?,
                    text(s, "namespace").filter(|n| !n.is_empty()),
                ))
            })
            .collect(),
        subjects: root
            .get("subjects")
            .and_then(Node::as_seq)
            .map_or(0, <[Node]>::len),
    }
}

fn strings(node: Option<&Node>) -> Vec<String> {
    let mut out: Vec<String> = node
        .and_then(Node::as_seq)
        .unwrap_or_default()
        .iter()
        .filter_map(|n| n.display_scalar())
        .collect();
    // Kept for every Role of a large render: no spare capacity.
    out.shrink_to_fit();
    out
}

fn role_rules(root: &Node, source: &Source) -> Vec<RoleRule> {
    let Some(rules) = root.get("rules").and_then(Node::as_seq) else {
        return Vec::new();
    };
    let mut out: Vec<RoleRule> = rules
        .iter()
        .enumerate()
        .map(|(i, rule)| {
            let name_nodes: Vec<&Node> = rule
                .get("resourceNames")
                .and_then(Node::as_seq)
                .unwrap_or_default()
                .iter()
                .filter(|n| n.display_scalar().is_some())
                .collect();
            let names = rule.get("resourceNames").map(|_| {
                name_nodes
                    .iter()
                    .filter_map(|n| n.display_scalar())
                    .collect()
            });
            let path = [Seg::Key("rules".into()), Seg::Index(i)];
            RoleRule {
                groups: strings(rule.get("apiGroups")),
                resources: strings(rule.get("resources")),
                verbs: strings(rule.get("verbs")),
                names,
                name_locs: name_nodes.iter().map(|n| source.at(n.span)).collect(),
                loc: source.at(span_for(root, &path)),
                names_loc: rule.entry("resourceNames").map(|e| source.at(e.key_span)),
                verbs_loc: rule.entry("verbs").map(|e| source.at(e.key_span)),
            }
        })
        .collect();
    out.shrink_to_fit();
    out
}

fn config_map(root: &Node, source: &Source, plan: Option<Plan>, keep: Keep) -> ConfigMapFacts {
    let plan_text = root.at(&["data", "plan.json"]).and_then(Node::as_str);
    let script = root.at(&["data", "create.py"]).and_then(Node::as_str);
    let hash_state = match (plan_text, script) {
        (Some(plan_text), Some(script)) => {
            // The two texts are hashed where they lie: no concatenation is built.
            let mut state = crate::common::sha256::Sha256State::default();
            state.update(plan_text.as_bytes());
            state.update(script.as_bytes());
            Some(state)
        }
        _ => None,
    };
    ConfigMapFacts {
        plan,
        hash_state,
        plan_text: plan_text.filter(|_| keep.programs).map(str::to_string),
        script: script.filter(|_| keep.programs).map(str::to_string),
        // Findings about the program as a whole point at its key.
        script_loc: root
            .get("data")
            .and_then(|d| d.entry("create.py"))
            .map(|e| source.at(e.key_span)),
        other_data: root
            .get("data")
            .filter(|_| keep.programs)
            .map(Node::scalar_pairs)
            .unwrap_or_default()
            .into_iter()
            .filter(|(k, _)| k != "plan.json" && k != "create.py")
            .collect(),
    }
}

fn job(root: &Node, name: &str, source: &Source) -> JobFacts {
    let pod_path = [
        Seg::Key("spec".into()),
        Seg::Key("template".into()),
        Seg::Key("spec".into()),
    ];
    let pod = root.at(&["spec", "template", "spec"]);
    let loc_of = |node: &Node| source.at(node.span);
    // `serviceAccount` is the deprecated alias the API server copies into serviceAccountName.
    let service_account = pod
        .and_then(|p| {
            p.get("serviceAccountName")
                .or_else(|| p.get("serviceAccount"))
        })
        .and_then(|n| Some((n.as_str()?.to_string(), loc_of(n))));
    let volumes = pod
        .and_then(|p| p.get("volumes"))
        .and_then(Node::as_seq)
        .unwrap_or_default()
        .iter()
        .map(|v| Volume {
            name: v
                .get("name")
                .and_then(Node::as_str)
                .unwrap_or("")
                .to_string(),
            config_map: v
                .at(&["configMap", "name"])
                .and_then(Node::as_str)
                .map(str::to_string),
            loc: source.at(v
                .at(&["configMap", "name"])
                .or_else(|| v.get("name"))
                .map_or(v.span, |n| n.span)),
            items: v.at(&["configMap", "items"]).map(|items| {
                let list = items
                    .as_seq()
                    .unwrap_or_default()
                    .iter()
                    .map(|i| {
                        let key = i.get("key").and_then(Node::as_str).unwrap_or("");
                        (key.to_string(), int(i.get("mode")), source.at(i.span))
                    })
                    .collect();
                (list, source.at(items.span))
            }),
            optional: v
                .at(&["configMap", "optional"])
                .filter(|n| matches!(n.value, Value::Bool(true)))
                .map(|n| source.at(n.span)),
            default_mode: v
                .at(&["configMap", "defaultMode"])
                .and_then(|n| Some((int(Some(n))?, source.at(n.span)))),
        })
        .collect();
    let container = pod
        .and_then(|p| p.get("containers"))
        .and_then(Node::as_seq)
        .and_then(|c| c.first());
    let mut container_path = pod_path.to_vec();
    container_path.extend([Seg::Key("containers".into()), Seg::Index(0)]);
    let mounts = container
        .and_then(|c| c.get("volumeMounts"))
        .and_then(Node::as_seq)
        .unwrap_or_default()
        .iter()
        .map(|m| Mount {
            volume: m
                .get("name")
                .and_then(Node::as_str)
                .unwrap_or("")
                .to_string(),
            path: m
                .get("mountPath")
                .and_then(Node::as_str)
                .unwrap_or("")
                .to_string(),
            loc: source.at(m.get("mountPath").map_or(m.span, |n| n.span)),
            sub_path: m
                .get("subPath")
                .or_else(|| m.get("subPathExpr"))
                .and_then(|n| Some((n.as_str()?.to_string(), source.at(n.span))))
                .filter(|(p, _)| !p.is_empty()),
        })
        .collect();
    let command_node = container.and_then(|c| c.entry("command").or_else(|| c.entry("args")));
    let mut command = strings(container.and_then(|c| c.get("command")));
    command.extend(strings(container.and_then(|c| c.get("args"))));
    JobFacts {
        name: name.to_string(),
        pod_loc: source.at(span_for(root, &pod_path)),
        service_account,
        volumes,
        container_loc: container.map(|_| source.at(span_for(root, &container_path))),
        mounts,
        command,
        command_loc: command_node.map(|e| source.at(e.key_span)),
        image: container
            .and_then(|c| c.get("image"))
            .and_then(|n| Some((n.as_str()?.to_string(), loc_of(n)))),
        automount: pod.and_then(|p| automount(p, source)),
        fs_group: pod
            .and_then(|p| p.at(&["securityContext", "fsGroup"]))
            .is_some_and(|n| !n.is_null()),
        run_as_user: effective(pod, container, "runAsUser"),
        run_as_group: effective(pod, container, "runAsGroup"),
        env: container_env(root, container),
    }
}

/// The first container's `env`, `envFrom` and resources, and the pod template's labels and
/// annotations. An `env` entry without a name is left out (no API server admits one).
fn container_env(root: &Node, container: Option<&Node>) -> ContainerEnv {
    fn list<'n, 'a>(node: Option<&'n Node<'a>>, key: &str) -> &'n [Node<'a>] {
        node.and_then(|n| n.get(key))
            .and_then(Node::as_seq)
            .unwrap_or_default()
    }
    let env = list(container, "env")
        .iter()
        .filter_map(|entry| {
            let name = entry.get("name").and_then(Node::as_str)?.to_string();
            let source = match entry.get("valueFrom").filter(|n| !n.is_null()) {
                None => match entry.get("value").filter(|n| !n.is_null()) {
                    None => EnvSource::Value(String::new()),
                    Some(v) => v.as_str().map_or_else(
                        || EnvSource::Invalid("its `value` is not a string".into()),
                        |v| EnvSource::Value(v.to_string()),
                    ),
                },
                Some(from) => value_from(from),
            };
            Some(EnvEntry { name, source })
        })
        .collect();
    let env_from = list(container, "envFrom")
        .iter()
        .filter_map(|entry| {
            let (secret, object) = match (entry.get("configMapRef"), entry.get("secretRef")) {
                (Some(c), None) => (false, c),
                (None, Some(s)) => (true, s),
                _ => return None,
            };
            Some(EnvFromEntry {
                secret,
                name: text(object.get("name")),
                prefix: text(entry.get("prefix")),
                optional: optional(object),
            })
        })
        .collect();
    let mut resources = Vec::new();
    for group in ["limits", "requests"] {
        for e in container
            .and_then(|c| c.at(&["resources", group]))
            .and_then(Node::as_map)
            .unwrap_or_default()
        {
            if let Some(q) = e.value.display_scalar() {
                resources.push((format!("{group}.{}", e.key), q));
            }
        }
    }
    let pairs = |key: &str| {
        root.at(&["spec", "template", "metadata", key])
            .map(Node::scalar_pairs)
            .unwrap_or_default()
    };
    ContainerEnv {
        env,
        env_from,
        resources,
        labels: pairs("labels"),
        annotations: pairs("annotations"),
    }
}

/// A string field's text ("" where it is missing or not a string).
fn text(node: Option<&Node>) -> String {
    node.and_then(Node::as_str).unwrap_or("").to_string()
}

/// Whether a reference says `optional: true`.
fn optional(node: &Node) -> bool {
    matches!(
        node.get("optional").map(|n| &n.value),
        Some(Value::Bool(true))
    )
}

/// An `env` entry's `valueFrom`: exactly one source, as the API server requires.
fn value_from(from: &Node) -> EnvSource {
    let sources: Vec<&str> = [
        "fieldRef",
        "resourceFieldRef",
        "configMapKeyRef",
        "secretKeyRef",
    ]
    .into_iter()
    .filter(|k| from.get(k).is_some_and(|n| !n.is_null()))
    .collect();
    let [kind] = sources.as_slice() else {
        return EnvSource::Invalid("its `valueFrom` names no single source".into());
    };
    let node = from.get(kind).unwrap_or(from);
    match *kind {
        "fieldRef" => EnvSource::Field(text(node.get("fieldPath"))),
        "resourceFieldRef" => EnvSource::Resource {
            resource: text(node.get("resource")),
            divisor: node.get("divisor").and_then(Node::display_scalar),
        },
        _ => EnvSource::Key(ObjectKey {
            secret: *kind == "secretKeyRef",
            name: text(node.get("name")),
            key: text(node.get("key")),
            optional: optional(node),
        }),
    }
}

/// A security-context field of the container, or else of the pod (a null is unset).
fn effective(pod: Option<&Node>, container: Option<&Node>, field: &str) -> Option<i64> {
    [container, pod]
        .into_iter()
        .flatten()
        .find_map(|n| n.at(&["securityContext", field]).filter(|v| !v.is_null()))
        .and_then(|n| int(Some(n)))
}

fn int(node: Option<&Node>) -> Option<i64> {
    match node?.value {
        Value::Int(n) => Some(n),
        _ => None,
    }
}
