//! The other writers in a render: objects that are no bundle member but can write a planned
//! Secret, recreate a retired generator or give the credentials ServiceAccount more rights
//! (bundle.md section 1, "One writer"). Each leaves a few located facts while its file's text
//! is at hand; the bundle checks compare them with the plans once every file is read.

use crate::load::source::{At, Source};
use crate::load::yaml::Node;
use crate::model::ObjectRef;
use crate::model::object::Object;

/// What kind of writer an object is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriterKind {
    Secret,
    ExternalSecret,
    /// A Password generator, or a ClusterGenerator wrapping one.
    Password {
        cluster: bool,
    },
    RoleBinding,
    ClusterRoleBinding,
    /// Another controller's object that makes it write the Secret `name` (`CONTROLLERS`).
    Controller(Controller),
    /// A Namespace object: its labels decide which namespaces a selector reaches.
    Namespace,
    /// A pod-bearing object (`WORKLOADS`): `name` is the ServiceAccount its pods run as, `loc`
    /// the field that says so (bundle.md section 1, "One identity").
    Workload,
    /// A Secret of type `kubernetes.io/service-account-token`: `name` is the ServiceAccount it
    /// holds a token of, `loc` the annotation that names it.
    Token,
}

/// The controllers whose objects write a Secret, beside External Secrets' ExternalSecret and
/// a plain Secret (which keep their own rules).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Controller {
    /// External Secrets' ClusterExternalSecret: an ExternalSecret in every namespace it reaches.
    ClusterExternalSecret,
    /// A `generate` rule of a Kyverno ClusterPolicy or Policy.
    KyvernoGenerate,
    /// Bitnami's SealedSecret: the controller unseals it into a Secret.
    SealedSecret,
    /// A Kyverno `generate` rule's `cloneList`: it copies every Secret of its source namespace
    /// that its selector matches, under the same name. The writer's `name` is the source
    /// namespace (empty when a variable gives it), `selector` the Secrets' selector.
    KyvernoCloneList,
}

impl Controller {
    pub fn describe(self) -> &'static str {
        match self {
            Controller::ClusterExternalSecret => "ClusterExternalSecret",
            Controller::KyvernoGenerate => "Kyverno generate rule",
            Controller::SealedSecret => "SealedSecret",
            Controller::KyvernoCloneList => "Kyverno generate rule's cloneList",
        }
    }
}

/// A label selector as Kubernetes reads one: every `matchLabels` pair and every expression must
/// hold; an empty selector selects everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selector {
    pub labels: Vec<(String, String)>,
    pub expressions: Vec<Expression>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expression {
    pub key: String,
    pub operator: String,
    pub values: Vec<String>,
}

/// The label every namespace carries, set by the API server to its name.
pub const NAME_LABEL: &str = "kubernetes.io/metadata.name";

impl Selector {
    /// Whether it selects a namespace with these labels; `None` when an operator is unknown.
    pub fn selects(&self, labels: &[(String, String)]) -> Option<bool> {
        let value = |key: &str| {
            labels
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
        };
        let mut all = self
            .labels
            .iter()
            .all(|(k, v)| value(k) == Some(v.as_str()));
        for e in &self.expressions {
            let v = value(&e.key);
            all &= match e.operator.as_str() {
                "In" => v.is_some_and(|v| e.values.iter().any(|x| x == v)),
                "NotIn" => v.is_none_or(|v| !e.values.iter().any(|x| x == v)),
                "Exists" => v.is_some(),
                "DoesNotExist" => v.is_none(),
                _ => return None,
            };
        }
        Some(all)
    }

    /// The label keys it reads.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.labels
            .iter()
            .map(|(k, _)| k.as_str())
            .chain(self.expressions.iter().map(|e| e.key.as_str()))
    }

    fn read(node: &Node) -> Selector {
        let text = |n: &Node| n.display_scalar().unwrap_or_default();
        Selector {
            labels: node
                .get("matchLabels")
                .and_then(Node::as_map)
                .unwrap_or_default()
                .iter()
                .map(|e| (e.key.to_string(), text(&e.value)))
                .collect(),
            expressions: node
                .get("matchExpressions")
                .and_then(Node::as_seq)
                .unwrap_or_default()
                .iter()
                .map(|x| Expression {
                    key: x.get("key").map(text).unwrap_or_default(),
                    operator: x.get("operator").map(text).unwrap_or_default(),
                    values: x
                        .get("values")
                        .and_then(Node::as_seq)
                        .unwrap_or_default()
                        .iter()
                        .map(text)
                        .collect(),
                })
                .collect(),
        }
    }
}

/// A subject of a binding.
#[derive(Clone, Debug)]
pub struct Subject {
    pub kind: String,
    pub name: String,
    /// As written; `None` or empty means the binding's own namespace (for a RoleBinding).
    pub namespace: Option<String>,
    pub loc: At,
}

#[derive(Clone, Debug)]
pub struct Writer {
    pub kind: WriterKind,
    pub object: ObjectRef,
    /// The object's own namespace, as written.
    pub namespace: Option<String>,
    /// The name it writes or is known by: the Secret's, the ExternalSecret's target, the
    /// generator's, the binding's.
    pub name: String,
    /// The node that makes it a writer: the name, or the ExternalSecret's target.
    pub loc: At,
    /// For an ExternalSecret, whether a generator backs it (else a store); for a Kyverno
    /// generate rule, whether it synchronizes (recreates the Secret when it changes).
    pub generated: bool,
    pub subjects: Vec<Subject>,
    /// For a ClusterExternalSecret's namespace selector: the namespaces it reaches (the writer's
    /// `namespace` is then unset).
    pub selector: Option<Selector>,
    /// For a Namespace or a Secret, its labels as written.
    pub labels: Vec<(String, String)>,
    /// Where the written Secret is named, when the writer sits elsewhere (a selector).
    pub target: Option<At>,
    /// For a RoleBinding whose roleRef is a Role, the Role's name.
    pub role: Option<String>,
}

/// Every writer an object is: one for most kinds, one per generate rule or reached namespace
/// for the controllers that write many.
pub fn writers(obj: &Object, source: &Source) -> Vec<Writer> {
    if let Some(entry) = CONTROLLERS
        .iter()
        .find(|c| c.group == obj.group() && c.kind == obj.kind)
    {
        return (entry.read)(obj, source);
    }
    if (obj.group(), obj.kind) == ("", "Namespace") {
        let Some(name) = obj.name.filter(|n| !n.is_empty()) else {
            return Vec::new();
        };
        let labels = labels_of(obj.root);
        let mut w = plain(
            WriterKind::Namespace,
            obj,
            source,
            name.to_string(),
            obj.anchor(),
        );
        w.namespace = None;
        w.labels = labels;
        return vec![w];
    }
    let mut out: Vec<Writer> = writer(obj, source).into_iter().collect();
    out.extend(workload(obj, source));
    out.extend(token(obj, source));
    out
}

/// The pod-bearing kinds, and where each holds its pod spec.
const WORKLOADS: &[(&str, &str, &[&str])] = &[
    ("", "Pod", &["spec"]),
    ("", "ReplicationController", &["spec", "template", "spec"]),
    ("apps", "Deployment", &["spec", "template", "spec"]),
    ("apps", "StatefulSet", &["spec", "template", "spec"]),
    ("apps", "DaemonSet", &["spec", "template", "spec"]),
    ("apps", "ReplicaSet", &["spec", "template", "spec"]),
    ("batch", "Job", &["spec", "template", "spec"]),
    (
        "batch",
        "CronJob",
        &["spec", "jobTemplate", "spec", "template", "spec"],
    ),
];

/// The ServiceAccount a pod-bearing object's pods run as, at the field that names it:
/// `serviceAccountName`, else the deprecated `serviceAccount` the API server still copies into
/// it when it is empty. None runs as `default`, which no bundle owns.
fn workload(obj: &Object, source: &Source) -> Option<Writer> {
    let (_, _, path) = WORKLOADS
        .iter()
        .find(|(group, kind, _)| *group == obj.group() && *kind == obj.kind)?;
    let pod = obj.root.at(path)?;
    let (name, node) =
        text_at(pod, &["serviceAccountName"]).or_else(|| text_at(pod, &["serviceAccount"]))?;
    Some(plain(
        WriterKind::Workload,
        obj,
        source,
        name.to_string(),
        node,
    ))
}

/// The annotation that names the ServiceAccount a token Secret is for.
pub const TOKEN_ACCOUNT: &str = "kubernetes.io/service-account.name";

/// A Secret of type `kubernetes.io/service-account-token`: the token controller fills it with a
/// long-lived token of the ServiceAccount its annotation names, in the Secret's namespace.
fn token(obj: &Object, source: &Source) -> Option<Writer> {
    if (obj.group(), obj.kind) != ("", "Secret")
        || obj.root.get("type").and_then(Node::as_str)
            != Some("kubernetes.io/service-account-token")
    {
        return None;
    }
    let (name, node) = text_at(obj.root, &["metadata", "annotations", TOKEN_ACCOUNT])?;
    Some(plain(
        WriterKind::Token,
        obj,
        source,
        name.to_string(),
        node,
    ))
}

/// An object's labels as written.
fn labels_of(root: &Node) -> Vec<(String, String)> {
    root.at(&["metadata", "labels"])
        .map(Node::scalar_pairs)
        .unwrap_or_default()
}

/// One kind of object that makes a controller write Secrets: a new kind is one entry here.
struct ControllerEntry {
    group: &'static str,
    kind: &'static str,
    read: fn(&Object, &Source) -> Vec<Writer>,
}

const CONTROLLERS: &[ControllerEntry] = &[
    ControllerEntry {
        group: "external-secrets.io",
        kind: "ClusterExternalSecret",
        read: cluster_external_secret,
    },
    ControllerEntry {
        group: "kyverno.io",
        kind: "ClusterPolicy",
        read: kyverno_generate,
    },
    ControllerEntry {
        group: "kyverno.io",
        kind: "Policy",
        read: kyverno_generate,
    },
    ControllerEntry {
        group: "bitnami.com",
        kind: "SealedSecret",
        read: sealed_secret,
    },
];

fn plain(kind: WriterKind, obj: &Object, source: &Source, name: String, node: &Node) -> Writer {
    Writer {
        kind,
        object: obj.reference(),
        namespace: obj.namespace.map(str::to_string),
        name,
        loc: source.at(node.span),
        generated: false,
        subjects: Vec::new(),
        selector: None,
        labels: Vec::new(),
        target: None,
        role: None,
    }
}

/// A non-empty string at `path`, with its node.
fn text_at<'n, 'a>(node: &'n Node<'a>, path: &[&str]) -> Option<(&'n str, &'n Node<'a>)> {
    node.at(path)
        .and_then(|n| n.as_str().filter(|s| !s.is_empty()).map(|s| (s, n)))
}

/// The SealedSecret unseals into the Secret its template names, else its own name, in its
/// own namespace (the template's namespace cannot move it).
fn sealed_secret(obj: &Object, source: &Source) -> Vec<Writer> {
    let own = obj.root.at(&["metadata", "name"]);
    let Some((name, node)) = text_at(obj.root, &["spec", "template", "metadata", "name"])
        .or_else(|| own.and_then(|n| n.as_str().filter(|s| !s.is_empty()).map(|s| (s, n))))
    else {
        return Vec::new();
    };
    let kind = WriterKind::Controller(Controller::SealedSecret);
    vec![plain(kind, obj, source, name.to_string(), node)]
}

/// Each `generate` rule (and each `foreach` entry of one) that creates a Secret of a literal
/// name, with `data` or `clone`. A namespace given by a variable may be any namespace; a name
/// given by one cannot be compared with a plan and is left out. A Policy generates only in
/// its own namespace.
fn kyverno_generate(obj: &Object, source: &Source) -> Vec<Writer> {
    let cluster = obj.kind == "ClusterPolicy";
    let mut out = Vec::new();
    for rule in obj
        .root
        .at(&["spec", "rules"])
        .and_then(Node::as_seq)
        .unwrap_or_default()
    {
        let Some(generate) = rule.get("generate") else {
            continue;
        };
        let synchronize = generate.get("synchronize").map(|n| &n.value)
            == Some(&crate::load::yaml::Value::Bool(true));
        let mut targets = vec![generate];
        targets.extend(
            generate
                .get("foreach")
                .and_then(Node::as_seq)
                .unwrap_or_default(),
        );
        for target in targets {
            let namespace = if cluster {
                text_at(target, &["namespace"])
                    .map(|(n, _)| n)
                    .filter(|n| !n.contains("{{"))
                    .map(str::to_string)
            } else {
                obj.namespace.map(str::to_string)
            };
            if let Some(list) = target.get("cloneList") {
                out.extend(clone_list(obj, source, list, namespace, synchronize));
                continue;
            }
            let kind = target.get("kind").and_then(Node::as_str);
            let version = target
                .get("apiVersion")
                .and_then(Node::as_str)
                .unwrap_or("v1");
            if kind != Some("Secret") || version != "v1" {
                continue;
            }
            if target.get("data").is_none() && target.get("clone").is_none() {
                continue;
            }
            let Some((name, node)) = text_at(target, &["name"]).filter(|(n, _)| !n.contains("{{"))
            else {
                continue;
            };
            let mut w = plain(
                WriterKind::Controller(Controller::KyvernoGenerate),
                obj,
                source,
                name.to_string(),
                node,
            );
            w.namespace = namespace;
            w.generated = synchronize;
            out.push(w);
        }
    }
    out
}

/// A `cloneList` that copies Secrets (its `kinds` name `v1/Secret`, or `Secret`) from its
/// source namespace into `namespace` (the rule's target; `None` when a variable gives it).
fn clone_list(
    obj: &Object,
    source: &Source,
    list: &Node,
    namespace: Option<String>,
    synchronize: bool,
) -> Option<Writer> {
    let secrets = list
        .get("kinds")
        .and_then(Node::as_seq)
        .unwrap_or_default()
        .iter()
        .any(|k| matches!(k.as_str(), Some("Secret" | "v1/Secret")));
    if !secrets {
        return None;
    }
    let from = text_at(list, &["namespace"])
        .map(|(n, _)| n)
        .filter(|n| !n.contains("{{"))
        .unwrap_or("");
    let kind = WriterKind::Controller(Controller::KyvernoCloneList);
    let mut w = plain(kind, obj, source, from.to_string(), list);
    w.namespace = namespace;
    w.generated = synchronize;
    // Without a selector it clones every Secret of the namespace.
    let selector = list.get("selector").filter(|n| !n.is_null());
    w.selector = Some(selector.map(Selector::read).unwrap_or_default());
    w.target = selector.map(|n| source.at(n.span));
    Some(w)
}

/// A ClusterExternalSecret creates an ExternalSecret in each namespace its list names and each
/// its selectors reach; the ExternalSecret writes `target.name`, else the name it is given
/// (`externalSecretName`, else the ClusterExternalSecret's own).
fn cluster_external_secret(obj: &Object, source: &Source) -> Vec<Writer> {
    let spec = obj.root.get("spec");
    let named = spec
        .and_then(|s| text_at(s, &["externalSecretSpec", "target", "name"]))
        .or_else(|| spec.and_then(|s| text_at(s, &["externalSecretName"])))
        .or_else(|| text_at(obj.root, &["metadata", "name"]));
    let (Some(spec), Some((name, name_node))) = (spec, named) else {
        return Vec::new();
    };
    let kind = WriterKind::Controller(Controller::ClusterExternalSecret);
    let target = source.at(name_node.span);
    let mut out = Vec::new();
    for item in spec
        .get("namespaces")
        .and_then(Node::as_seq)
        .unwrap_or_default()
    {
        if let Some(ns) = item.as_str().filter(|s| !s.is_empty()) {
            let mut w = plain(kind, obj, source, name.to_string(), item);
            w.namespace = Some(ns.to_string());
            w.target = Some(target);
            out.push(w);
        }
    }
    let selectors = spec.get("namespaceSelector").into_iter().chain(
        spec.get("namespaceSelectors")
            .and_then(Node::as_seq)
            .unwrap_or_default(),
    );
    for node in selectors.filter(|n| !n.is_null()) {
        let mut w = plain(kind, obj, source, name.to_string(), node);
        w.namespace = None;
        w.selector = Some(Selector::read(node));
        w.target = Some(target);
        out.push(w);
    }
    out
}

/// The writer an object is, if it is one.
pub fn writer(obj: &Object, source: &Source) -> Option<Writer> {
    let kind = match (obj.group(), obj.kind) {
        ("", "Secret") => WriterKind::Secret,
        ("external-secrets.io", "ExternalSecret") => WriterKind::ExternalSecret,
        ("generators.external-secrets.io", "Password") => WriterKind::Password { cluster: false },
        // A ClusterGenerator is a wrapper: only one that wraps a Password is one.
        ("generators.external-secrets.io", "ClusterGenerator")
            if obj.root.at(&["spec", "kind"]).and_then(Node::as_str) == Some("Password") =>
        {
            WriterKind::Password { cluster: true }
        }
        ("rbac.authorization.k8s.io", "RoleBinding") => WriterKind::RoleBinding,
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => WriterKind::ClusterRoleBinding,
        _ => return None,
    };
    let name_node = obj.root.at(&["metadata", "name"]);
    let mut name = obj.name.unwrap_or("").to_string();
    let mut node = name_node.unwrap_or_else(|| obj.anchor());
    let mut generated = false;
    if kind == WriterKind::ExternalSecret {
        // The target defaults to the ExternalSecret's own name.
        if let Some(target) = obj
            .root
            .at(&["spec", "target", "name"])
            .filter(|n| n.as_str().is_some_and(|s| !s.is_empty()))
        {
            name = target.as_str().unwrap_or("").to_string();
            node = target;
        }
        generated = ["data", "dataFrom"].iter().any(|list| {
            obj.root
                .at(&["spec", list])
                .and_then(Node::as_seq)
                .unwrap_or_default()
                .iter()
                .any(|d| d.at(&["sourceRef", "generatorRef"]).is_some())
        });
    }
    if name.is_empty() {
        return None;
    }
    // Only a RoleBinding can grant a Role (a ClusterRoleBinding's roleRef is a ClusterRole).
    let role = obj
        .root
        .get("roleRef")
        .filter(|r| {
            kind == WriterKind::RoleBinding && r.get("kind").and_then(Node::as_str) == Some("Role")
        })
        .and_then(|r| text_at(r, &["name"]))
        .map(|(n, _)| n.to_string());
    let subjects = match kind {
        WriterKind::RoleBinding | WriterKind::ClusterRoleBinding => obj
            .root
            .get("subjects")
            .and_then(Node::as_seq)
            .unwrap_or_default()
            .iter()
            .map(|s| {
                let text = |key| s.get(key).and_then(Node::as_str).unwrap_or("").to_string();
                Subject {
                    kind: text("kind"),
                    name: text("name"),
                    namespace: Some(text("namespace")).filter(|n| !n.is_empty()),
                    loc: source.at(s.get("name").map_or(s.span, |n| n.span)),
                }
            })
            .collect(),
        _ => Vec::new(),
    };
    // A Secret's labels decide which clone lists copy it.
    let labels = if kind == WriterKind::Secret {
        labels_of(obj.root)
    } else {
        Vec::new()
    };
    Some(Writer {
        kind,
        object: obj.reference(),
        namespace: obj.namespace.map(str::to_string),
        name,
        loc: source.at(node.span),
        generated,
        subjects,
        selector: None,
        labels,
        target: None,
        role,
    })
}

/// Whether two namespaces can be the same once applied: an object without one lands in the
/// destination namespace of its Argo CD Application, which the render does not show.
pub fn may_meet(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    }
}

/// The groups every ServiceAccount of `namespace` belongs to.
pub fn holds_account(group: &str, namespace: Option<&str>) -> bool {
    match group {
        "system:serviceaccounts" | "system:authenticated" => true,
        _ => group
            .strip_prefix("system:serviceaccounts:")
            .is_some_and(|ns| namespace.is_none_or(|n| n == ns)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_that_hold_a_service_account() {
        assert!(holds_account("system:serviceaccounts", Some("shop")));
        assert!(holds_account("system:authenticated", Some("shop")));
        assert!(holds_account("system:serviceaccounts:shop", Some("shop")));
        assert!(!holds_account("system:serviceaccounts:other", Some("shop")));
        assert!(!holds_account("system:unauthenticated", Some("shop")));
        assert!(!holds_account("system:masters", Some("shop")));
    }

    fn labels(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn expression(key: &str, operator: &str, values: &[&str]) -> Expression {
        Expression {
            key: key.into(),
            operator: operator.into(),
            values: values.iter().map(|v| v.to_string()).collect(),
        }
    }

    #[test]
    fn selectors_read_labels_as_kubernetes_does() {
        let ns = labels(&[(NAME_LABEL, "shop"), ("team", "commerce")]);
        assert_eq!(
            Selector::default().selects(&ns),
            Some(true),
            "empty selects all"
        );
        let by_label = Selector {
            labels: labels(&[("team", "commerce")]),
            expressions: Vec::new(),
        };
        assert_eq!(by_label.selects(&ns), Some(true));
        assert_eq!(by_label.selects(&labels(&[("team", "web")])), Some(false));
        let cases = [
            (expression("team", "In", &["web", "commerce"]), true),
            (expression("team", "In", &["web"]), false),
            (expression(NAME_LABEL, "NotIn", &["shop"]), false),
            (expression("tier", "NotIn", &["backend"]), true),
            (expression("tier", "Exists", &[]), false),
            (expression("tier", "DoesNotExist", &[]), true),
        ];
        for (e, want) in cases {
            let s = Selector {
                labels: Vec::new(),
                expressions: vec![e.clone()],
            };
            assert_eq!(s.selects(&ns), Some(want), "{e:?}");
        }
        let unknown = Selector {
            labels: Vec::new(),
            expressions: vec![expression("team", "Gt", &["1"])],
        };
        assert_eq!(unknown.selects(&ns), None);
    }

    #[test]
    fn namespaces_meet_unless_both_are_given_and_differ() {
        assert!(may_meet(Some("a"), Some("a")));
        assert!(!may_meet(Some("a"), Some("b")));
        assert!(may_meet(None, Some("b")));
    }
}
