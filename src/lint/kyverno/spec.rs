//! Reading a `ValidatingPolicy` document into plain data, field by field as Kyverno's
//! `ValidatingPolicySpec` (kyverno/api, `policies.kyverno.io` v1alpha1, v1beta1 and v1 share it)
//! and the embedded `admissionregistration.k8s.io/v1` types declare them. A field credlint does
//! not know, or knows but cannot evaluate faithfully, is a problem located at that field: the
//! policy is then reported, never evaluated half-way.

use crate::load::yaml::{Node, Span, Value};

/// Why a policy cannot be evaluated faithfully, and where.
#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    pub span: Span,
    pub reason: String,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Selector {
    pub labels: Vec<(String, String)>,
    /// `(key, operator, values)`; operators In, NotIn, Exists, DoesNotExist.
    pub expressions: Vec<(String, String, Vec<String>)>,
}

impl Selector {
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty() && self.expressions.is_empty()
    }

    /// Whether a label set is selected, as metav1.LabelSelector decides.
    pub fn selects(&self, labels: &[(String, String)]) -> bool {
        let get = |key: &str| labels.iter().find(|(k, _)| k == key).map(|(_, v)| v);
        self.labels.iter().all(|(k, v)| get(k) == Some(v))
            && self.expressions.iter().all(|(key, op, values)| {
                let value = get(key);
                match op.as_str() {
                    "In" => value.is_some_and(|v| values.contains(v)),
                    "NotIn" => value.is_none_or(|v| !values.contains(v)),
                    "Exists" => value.is_some(),
                    "DoesNotExist" => value.is_none(),
                    _ => false,
                }
            })
    }

    /// The label keys the selector reads.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.labels
            .iter()
            .map(|(k, _)| k.as_str())
            .chain(self.expressions.iter().map(|(k, _, _)| k.as_str()))
    }
}

/// One `NamedRuleWithOperations`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResourceRule {
    pub groups: Vec<String>,
    pub versions: Vec<String>,
    pub resources: Vec<String>,
    pub operations: Vec<String>,
    pub names: Vec<String>,
    pub scope: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct MatchResources {
    pub rules: Vec<ResourceRule>,
    pub exclude: Vec<ResourceRule>,
    pub namespace_selector: Selector,
    pub object_selector: Selector,
    /// `matchPolicy: Exact`; the default is Equivalent.
    pub exact: bool,
}

/// An expression with where it was written.
#[derive(Clone, Debug, PartialEq)]
pub struct Text {
    pub text: String,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Validation {
    pub expression: Text,
    pub message: Option<String>,
    pub message_expression: Option<Text>,
}

/// What the evaluation needs of a policy's spec: the parts autogen rewrites.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Body {
    pub constraints: Option<MatchResources>,
    pub conditions: Vec<(String, Text)>,
    pub variables: Vec<(String, Text)>,
    pub validations: Vec<Validation>,
    pub audits: Vec<(String, Text)>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    pub body: Body,
    pub fail_closed: bool,
    pub actions: Vec<String>,
    /// `autogen.podControllers.controllers`, when given.
    pub controllers: Option<Vec<String>>,
    pub autogen_enabled: bool,
    pub admission: bool,
    pub background: bool,
}

/// Reads fields, recording problems instead of stopping.
pub struct Reader {
    pub problems: Vec<Problem>,
}

impl Reader {
    fn problem(&mut self, span: Span, reason: impl Into<String>) {
        self.problems.push(Problem {
            span,
            reason: reason.into(),
        });
    }

    /// The entries of a mapping; a key not in `known` is a problem, unless `why` explains it.
    fn fields<'n, 'a>(
        &mut self,
        node: &'n Node<'a>,
        path: &str,
        known: &[&str],
        why: &dyn Fn(&str) -> Option<String>,
    ) -> Vec<(&'n str, &'n Node<'a>)> {
        let Some(entries) = node.as_map() else {
            if !node.is_null() {
                self.problem(node.span, format!("`{path}` is not a mapping"));
            }
            return Vec::new();
        };
        let mut out = Vec::new();
        for e in entries {
            let key: &str = &e.key;
            if known.contains(&key) {
                out.push((key, &e.value));
            } else {
                let reason = why(key).unwrap_or_else(|| {
                    format!("`{path}.{key}` is not a field credlint knows, so it cannot say what Kyverno would do with it")
                });
                self.problem(e.key_span, reason);
            }
        }
        out
    }

    fn string(&mut self, node: &Node, path: &str) -> Option<String> {
        match &node.value {
            Value::Str(s) => Some(s.to_string()),
            Value::Null => None,
            _ => {
                self.problem(node.span, format!("`{path}` is not a string"));
                None
            }
        }
    }

    fn strings(&mut self, node: &Node, path: &str) -> Vec<String> {
        match &node.value {
            Value::Seq(items) => items
                .iter()
                .filter_map(|i| self.string(i, &format!("{path}[]")))
                .collect(),
            Value::Null => Vec::new(),
            _ => {
                self.problem(node.span, format!("`{path}` is not a list"));
                Vec::new()
            }
        }
    }

    fn list<'n, 'a>(&mut self, node: &'n Node<'a>, path: &str) -> &'n [Node<'a>] {
        match &node.value {
            Value::Seq(items) => items,
            Value::Null => &[],
            _ => {
                self.problem(node.span, format!("`{path}` is not a list"));
                &[]
            }
        }
    }

    fn boolean(&mut self, node: &Node, path: &str) -> Option<bool> {
        match &node.value {
            Value::Bool(b) => Some(*b),
            Value::Null => None,
            _ => {
                self.problem(node.span, format!("`{path}` is not a boolean"));
                None
            }
        }
    }

    fn text(&mut self, node: &Node, path: &str) -> Option<Text> {
        self.string(node, path).map(|text| Text {
            text,
            span: node.span,
        })
    }
}

fn no_reason(_: &str) -> Option<String> {
    None
}

/// Reads `spec` of a ValidatingPolicy.
pub fn read(spec: &Node, r: &mut Reader) -> Spec {
    let mut out = Spec {
        body: Body::default(),
        fail_closed: true,
        actions: Vec::new(),
        controllers: None,
        autogen_enabled: true,
        admission: true,
        background: true,
    };
    let why = |key: &str| -> Option<String> {
        match key {
            "paramKind" | "paramRef" => Some(format!(
                "`spec.{key}`: the policy takes its parameters from a resource in the cluster, which credlint cannot read"
            )),
            _ => None,
        }
    };
    let known = [
        "matchConstraints",
        "validations",
        "failurePolicy",
        "auditAnnotations",
        "matchConditions",
        "variables",
        "autogen",
        "validationActions",
        "webhookConfiguration",
        "evaluation",
    ];
    for (key, node) in r.fields(spec, "spec", &known, &why) {
        match key {
            "matchConstraints" => out.body.constraints = Some(match_resources(node, r)),
            "validations" => {
                for (i, v) in r.list(node, "spec.validations").iter().enumerate() {
                    if let Some(v) = validation(v, i, r) {
                        out.body.validations.push(v);
                    }
                }
            }
            "failurePolicy" => match r.string(node, "spec.failurePolicy").as_deref() {
                Some("Fail") | None => out.fail_closed = true,
                Some("Ignore") => out.fail_closed = false,
                Some(other) => r.problem(
                    node.span,
                    format!("`spec.failurePolicy: {other}` is neither Fail nor Ignore"),
                ),
            },
            "auditAnnotations" => {
                for a in r.list(node, "spec.auditAnnotations") {
                    let mut key = None;
                    let mut value = None;
                    for (k, n) in r.fields(
                        a,
                        "spec.auditAnnotations[]",
                        &["key", "valueExpression"],
                        &no_reason,
                    ) {
                        match k {
                            "key" => key = r.string(n, "spec.auditAnnotations[].key"),
                            _ => value = r.text(n, "spec.auditAnnotations[].valueExpression"),
                        }
                    }
                    if let (Some(k), Some(v)) = (key, value) {
                        out.body.audits.push((k, v));
                    }
                }
            }
            "matchConditions" => out.body.conditions = named(node, "spec.matchConditions", r),
            "variables" => out.body.variables = named(node, "spec.variables", r),
            "autogen" => autogen(node, &mut out, r),
            "validationActions" => out.actions = r.strings(node, "spec.validationActions"),
            "webhookConfiguration" => {
                // Only the webhook's timeout: it does not change what is admitted.
                r.fields(
                    node,
                    "spec.webhookConfiguration",
                    &["timeoutSeconds"],
                    &no_reason,
                );
            }
            _ => evaluation(node, &mut out, r),
        }
    }
    out
}

fn validation(node: &Node, i: usize, r: &mut Reader) -> Option<Validation> {
    let path = format!("spec.validations[{i}]");
    let mut expression = None;
    let mut message = None;
    let mut message_expression = None;
    let known = ["expression", "message", "messageExpression", "reason"];
    for (key, n) in r.fields(node, &path, &known, &no_reason) {
        match key {
            "expression" => expression = r.text(n, &format!("{path}.expression")),
            "message" => message = r.string(n, &format!("{path}.message")),
            "messageExpression" => {
                message_expression = r.text(n, &format!("{path}.messageExpression"))
            }
            // The HTTP reason of the denial: it does not change whether the object is denied.
            _ => {
                r.string(n, &format!("{path}.reason"));
            }
        }
    }
    match expression {
        Some(expression) => Some(Validation {
            expression,
            message,
            message_expression,
        }),
        None => {
            r.problem(node.span, format!("`{path}` has no expression"));
            None
        }
    }
}

/// `matchConditions` and `variables`: lists of `{name, expression}`.
fn named(node: &Node, path: &str, r: &mut Reader) -> Vec<(String, Text)> {
    let mut out = Vec::new();
    for item in r.list(node, path) {
        let mut name = None;
        let mut expression = None;
        for (key, n) in r.fields(
            item,
            &format!("{path}[]"),
            &["name", "expression"],
            &no_reason,
        ) {
            match key {
                "name" => name = r.string(n, &format!("{path}[].name")),
                _ => expression = r.text(n, &format!("{path}[].expression")),
            }
        }
        match (name, expression) {
            (Some(name), Some(expression)) => out.push((name, expression)),
            _ => r.problem(
                item.span,
                format!("an entry of `{path}` lacks its name or expression"),
            ),
        }
    }
    out
}

fn match_resources(node: &Node, r: &mut Reader) -> MatchResources {
    let mut out = MatchResources::default();
    let known = [
        "namespaceSelector",
        "objectSelector",
        "resourceRules",
        "excludeResourceRules",
        "matchPolicy",
    ];
    for (key, n) in r.fields(node, "spec.matchConstraints", &known, &no_reason) {
        let path = format!("spec.matchConstraints.{key}");
        match key {
            "namespaceSelector" => out.namespace_selector = selector(n, &path, r),
            "objectSelector" => out.object_selector = selector(n, &path, r),
            "resourceRules" => out.rules = resource_rules(n, &path, r),
            "excludeResourceRules" => out.exclude = resource_rules(n, &path, r),
            _ => match r.string(n, &path).as_deref() {
                Some("Exact") => out.exact = true,
                Some("Equivalent") | None => out.exact = false,
                Some(other) => r.problem(
                    n.span,
                    format!("`{path}: {other}` is neither Exact nor Equivalent"),
                ),
            },
        }
    }
    out
}

fn resource_rules(node: &Node, path: &str, r: &mut Reader) -> Vec<ResourceRule> {
    let mut out = Vec::new();
    let known = [
        "apiGroups",
        "apiVersions",
        "resources",
        "operations",
        "resourceNames",
        "scope",
    ];
    for item in r.list(node, path) {
        let mut rule = ResourceRule::default();
        for (key, n) in r.fields(item, &format!("{path}[]"), &known, &no_reason) {
            let field = format!("{path}[].{key}");
            match key {
                "apiGroups" => rule.groups = r.strings(n, &field),
                "apiVersions" => rule.versions = r.strings(n, &field),
                "resources" => rule.resources = r.strings(n, &field),
                "operations" => rule.operations = r.strings(n, &field),
                "resourceNames" => rule.names = r.strings(n, &field),
                _ => match r.string(n, &field).as_deref() {
                    Some(s @ ("*" | "Cluster" | "Namespaced")) => rule.scope = Some(s.to_string()),
                    None => {}
                    Some(other) => r.problem(n.span, format!("`{field}: {other}` is not a scope")),
                },
            }
        }
        out.push(rule);
    }
    out
}

fn selector(node: &Node, path: &str, r: &mut Reader) -> Selector {
    let mut out = Selector::default();
    for (key, n) in r.fields(node, path, &["matchLabels", "matchExpressions"], &no_reason) {
        if key == "matchLabels" {
            // Every key of matchLabels is a label, so no field check here.
            match n.as_map() {
                Some(entries) => {
                    for e in entries {
                        let field = format!("{path}.matchLabels.{}", e.key);
                        if let Some(v) = r.string(&e.value, &field) {
                            out.labels.push((e.key.to_string(), v));
                        }
                    }
                }
                None if n.is_null() => {}
                None => r.problem(n.span, format!("`{path}.matchLabels` is not a mapping")),
            }
            continue;
        }
        for item in r.list(n, &format!("{path}.matchExpressions")) {
            let mut k = None;
            let mut op = None;
            let mut values = Vec::new();
            let field = format!("{path}.matchExpressions[]");
            for (name, v) in r.fields(item, &field, &["key", "operator", "values"], &no_reason) {
                match name {
                    "key" => k = r.string(v, &format!("{field}.key")),
                    "operator" => op = r.string(v, &format!("{field}.operator")),
                    _ => values = r.strings(v, &format!("{field}.values")),
                }
            }
            match (k, op) {
                (Some(k), Some(op)) if matches!(op.as_str(), "In" | "NotIn" | "Exists" | "DoesNotExist") => {
                    out.expressions.push((k, op, values))
                }
                (_, op) => r.problem(
                    item.span,
                    format!(
                        "`{field}` needs a key and one of the operators In, NotIn, Exists, DoesNotExist{}",
                        op.map(|o| format!(" (not {o})")).unwrap_or_default()
                    ),
                ),
            }
        }
    }
    out
}

fn autogen(node: &Node, out: &mut Spec, r: &mut Reader) {
    for (key, n) in r.fields(
        node,
        "spec.autogen",
        &["podControllers", "validatingAdmissionPolicy"],
        &no_reason,
    ) {
        let path = format!("spec.autogen.{key}");
        if key == "validatingAdmissionPolicy" {
            // Whether Kyverno also writes a native policy: the same checks either way.
            for (_, v) in r.fields(n, &path, &["enabled"], &no_reason) {
                r.boolean(v, &format!("{path}.enabled"));
            }
            continue;
        }
        for (field, v) in r.fields(n, &path, &["enabled", "controllers"], &no_reason) {
            if field == "enabled" {
                if let Some(enabled) = r.boolean(v, &format!("{path}.enabled")) {
                    out.autogen_enabled = enabled;
                }
            } else {
                out.controllers = Some(r.strings(v, &format!("{path}.controllers")));
            }
        }
    }
}

fn evaluation(node: &Node, out: &mut Spec, r: &mut Reader) {
    for (key, n) in r.fields(
        node,
        "spec.evaluation",
        &["mode", "admission", "background"],
        &no_reason,
    ) {
        let path = format!("spec.evaluation.{key}");
        match key {
            "mode" => match r.string(n, &path).as_deref() {
                Some("Kubernetes") | None => {}
                Some(other) => r.problem(
                    n.span,
                    format!("`{path}: {other}`: the policy evaluates {other} payloads, not Kubernetes objects"),
                ),
            },
            _ => {
                let known: &[&str] = if key == "background" {
                    &["enabled", "interval"]
                } else {
                    &["enabled"]
                };
                for (field, v) in r.fields(n, &path, known, &no_reason) {
                    if field == "enabled" {
                        let enabled = r.boolean(v, &format!("{path}.enabled")).unwrap_or(true);
                        if key == "admission" {
                            out.admission = enabled;
                        } else {
                            out.background = enabled;
                        }
                    } else {
                        r.string(v, &format!("{path}.{field}"));
                    }
                }
            }
        }
    }
}
