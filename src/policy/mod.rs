//! Kyverno policies generated from the object rules of the catalog: one policy per rule, carrying
//! the very CEL text the linter evaluates (the rule's match condition from `_match.yaml`, its
//! variables and its validations, copied verbatim), so the cluster enforces what `credlint check`
//! reported before merge.
//!
//! Three flavors, their shapes following the published APIs:
//! - `validatingpolicy` (default): Kyverno `ValidatingPolicy`, `policies.kyverno.io/v1` (Kyverno
//!   1.17+). `spec.matchConstraints.resourceRules`, `spec.matchConditions`, `spec.variables`,
//!   `spec.validations`, `spec.validationActions`, `spec.failurePolicy`, as in
//!   `ValidatingPolicySpec` of kyverno/api.
//! - `clusterpolicy`: Kyverno `ClusterPolicy`, `kyverno.io/v1`, one rule with `celPreconditions`
//!   and `validate.cel` (`variables`, `expressions`) and the per-rule `validate.failureAction`
//!   (Kyverno 1.13 to 1.16).
//! - `vap`: the native `ValidatingAdmissionPolicy` and its `ValidatingAdmissionPolicyBinding`,
//!   `admissionregistration.k8s.io/v1` (Kubernetes 1.30+), where `validationActions` lives on the
//!   binding.
//!
//! This module depends on the catalog only, never on the engine: what it writes is decided by
//! `rules/` and the options.

pub mod emit;

use crate::lint::catalog::{Catalog, Resource, Rule};
use crate::model::Severity;
pub use emit::Y;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Flavor {
    #[default]
    ValidatingPolicy,
    ClusterPolicy,
    Vap,
}

impl Flavor {
    pub fn as_str(self) -> &'static str {
        match self {
            Flavor::ValidatingPolicy => "validatingpolicy",
            Flavor::ClusterPolicy => "clusterpolicy",
            Flavor::Vap => "vap",
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct Options {
    pub flavor: Flavor,
    /// `[Audit]` instead of `[Deny]` (`failureAction: Audit` for a ClusterPolicy).
    pub audit: bool,
    /// The CREDENTIALS_IMAGE baked into the `credentialsImage` variable; '' when unset.
    pub credentials_image: String,
    /// Per-rule severities that replace the catalog's (`[rules.severity]` of credlint.toml).
    pub severity: Vec<(String, Severity)>,
    /// Namespaces no policy looks at (`exempt-namespaces` of credlint.toml); `None`:
    /// [`SYSTEM_NAMESPACES`].
    pub exempt_namespaces: Option<Vec<String>>,
}

/// The namespaces the policies leave alone unless credlint.toml says otherwise: the cluster's
/// own, where no bundle lives and where a denied update could stop the control plane.
pub const SYSTEM_NAMESPACES: [&str; 3] = ["kube-system", "kube-public", "kube-node-lease"];

impl Options {
    /// The namespaces no policy looks at.
    pub fn exempt(&self) -> Vec<&str> {
        match &self.exempt_namespaces {
            Some(names) => names.iter().map(String::as_str).collect(),
            None => SYSTEM_NAMESPACES.to_vec(),
        }
    }

    /// A namespace selector that leaves the exempt namespaces out (`kubernetes.io/metadata.name`
    /// is set by the API server on every namespace); `None` when none is exempt. A
    /// cluster-scoped object is never skipped by it.
    fn namespace_selector(&self) -> Option<Y> {
        let exempt = self.exempt();
        (!exempt.is_empty()).then(|| {
            Y::map([(
                "matchExpressions",
                Y::Seq(vec![Y::map([
                    ("key", Y::str("kubernetes.io/metadata.name")),
                    ("operator", Y::str("NotIn")),
                    ("values", Y::strs(exempt)),
                ])]),
            )])
        })
    }

    /// The rule's severity in this generation: the override, else the catalog's.
    pub fn severity(&self, rule: &Rule) -> Severity {
        self.severity
            .iter()
            .find(|(id, _)| *id == rule.id)
            .map_or(rule.severity, |(_, s)| *s)
    }

    /// `validationActions` for a ValidatingPolicy or a VAP binding: what the linter reports as
    /// an error is denied, a warning is only reported (a warning to the client and an audit
    /// event), and `--audit` audits everything.
    fn actions(&self, rule: &Rule) -> Y {
        match (self.audit, self.severity(rule)) {
            (true, _) => Y::strs(["Audit"]),
            (false, Severity::Error) => Y::strs(["Deny"]),
            (false, Severity::Warning) => Y::strs(["Warn", "Audit"]),
        }
    }

    /// A ClusterPolicy rule's `validate.failureAction`, which has no Warn: a warning audits.
    fn failure_action(&self, rule: &Rule) -> &'static str {
        match (self.audit, self.severity(rule)) {
            (false, Severity::Error) => "Enforce",
            _ => "Audit",
        }
    }
}

/// The policy of one rule: one document, or two for `vap` (the policy and its binding).
#[derive(Clone, Debug)]
pub struct Generated {
    pub rule: String,
    pub documents: Vec<Y>,
}

/// The first words of every file credlint generates: `--out` replaces or removes only files that
/// start with them.
pub const MARKER: &str = "# Generated by `credlint policies`";

/// Operations the policies look at: Argo CD creates hooks, `kubectl apply` may update them.
const OPERATIONS: [&str; 2] = ["CREATE", "UPDATE"];

/// The variable a rule reads the configured credentials image from.
const IMAGE_VARIABLE: &str = "credentialsImage";

/// One policy per object rule, sorted by rule id.
pub fn generate(catalog: &Catalog, options: &Options) -> Vec<Generated> {
    let mut out: Vec<Generated> = catalog
        .rules
        .iter()
        .filter(|r| r.object.is_some())
        .map(|rule| Generated {
            rule: rule.id.clone(),
            documents: documents(catalog, rule, options),
        })
        .collect();
    out.sort_by(|a, b| a.rule.cmp(&b.rule));
    out
}

/// Where a rule's policy is written under `--out`.
pub fn policy_path(rule: &str) -> String {
    format!("{rule}/{rule}.yaml")
}

/// The text of one policy file.
pub fn file_text(generated: &Generated) -> String {
    let mut out = format!(
        "{MARKER} from rules/{}.yaml: do not edit.\n",
        generated.rule
    );
    join_documents(&mut out, &generated.documents);
    out
}

/// Every policy as one multi-document YAML stream (what `credlint policies` prints).
pub fn stream(all: &[Generated]) -> String {
    let mut out = format!("{MARKER} from rules/: do not edit.\n");
    let docs: Vec<Y> = all.iter().flat_map(|g| g.documents.clone()).collect();
    join_documents(&mut out, &docs);
    out
}

/// `kustomization.yaml` listing every policy file, for `kubectl apply -k`.
pub fn kustomization(all: &[Generated]) -> String {
    let doc = Y::map([
        ("apiVersion", Y::str("kustomize.config.k8s.io/v1beta1")),
        ("kind", Y::str("Kustomization")),
        (
            "resources",
            Y::strs(all.iter().map(|g| policy_path(&g.rule))),
        ),
    ]);
    format!(
        "{MARKER} from rules/: do not edit.\n{}",
        emit::document(&doc)
    )
}

fn join_documents(out: &mut String, docs: &[Y]) {
    for (i, doc) in docs.iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        out.push_str(&emit::document(doc));
    }
}

fn documents(catalog: &Catalog, rule: &Rule, options: &Options) -> Vec<Y> {
    match options.flavor {
        Flavor::ValidatingPolicy => vec![validating_policy(catalog, rule, options)],
        Flavor::ClusterPolicy => vec![cluster_policy(catalog, rule, options)],
        Flavor::Vap => {
            vec![
                admission_policy(catalog, rule, options),
                Y::map([
                    ("apiVersion", Y::str("admissionregistration.k8s.io/v1")),
                    ("kind", Y::str("ValidatingAdmissionPolicyBinding")),
                    (
                        "metadata",
                        Y::map([("name", Y::str(binding_name(&rule.id)))]),
                    ),
                    (
                        "spec",
                        Y::map([
                            ("policyName", Y::str(&rule.id)),
                            ("validationActions", options.actions(rule)),
                        ]),
                    ),
                ]),
            ]
        }
    }
}

/// The name of a rule's ValidatingAdmissionPolicyBinding.
pub fn binding_name(rule: &str) -> String {
    format!("{rule}-binding")
}

fn validating_policy(catalog: &Catalog, rule: &Rule, options: &Options) -> Y {
    let mut spec = vec![
        ("validationActions", options.actions(rule)),
        ("failurePolicy", Y::str("Fail")),
    ];
    spec.extend(cel_spec(catalog, rule, options));
    Y::map([
        ("apiVersion", Y::str("policies.kyverno.io/v1")),
        ("kind", Y::str("ValidatingPolicy")),
        ("metadata", metadata(rule, options, Some("1.17.0"))),
        ("spec", Y::map(spec)),
    ])
}

fn admission_policy(catalog: &Catalog, rule: &Rule, options: &Options) -> Y {
    let mut spec = vec![("failurePolicy", Y::str("Fail"))];
    spec.extend(cel_spec(catalog, rule, options));
    Y::map([
        ("apiVersion", Y::str("admissionregistration.k8s.io/v1")),
        ("kind", Y::str("ValidatingAdmissionPolicy")),
        ("metadata", metadata(rule, options, None)),
        ("spec", Y::map(spec)),
    ])
}

/// `matchConstraints`, `matchConditions`, `variables` and `validations`, shared by the
/// ValidatingPolicy and the ValidatingAdmissionPolicy (Kyverno's type embeds the native one's).
fn cel_spec(catalog: &Catalog, rule: &Rule, options: &Options) -> Vec<(&'static str, Y)> {
    let Some(object) = &rule.object else {
        return Vec::new();
    };
    let mut constraints = Vec::new();
    if let Some(selector) = options.namespace_selector() {
        constraints.push(("namespaceSelector", selector));
    }
    constraints.push(("resourceRules", resource_rules(&object.resources)));
    let mut spec = vec![("matchConstraints", Y::map(constraints))];
    spec.push(("matchConditions", Y::Seq(match_conditions(catalog, rule))));
    let variables = variables(rule, options);
    if !variables.is_empty() {
        spec.push(("variables", Y::Seq(variables)));
    }
    spec.push(("validations", Y::Seq(validations(rule))));
    spec
}

fn cluster_policy(catalog: &Catalog, rule: &Rule, options: &Options) -> Y {
    let Some(object) = &rule.object else {
        return Y::Null;
    };
    let kinds: Vec<&str> = object.resources.iter().map(|r| r.kind).collect();
    let mut entry = vec![
        ("name", Y::str(&rule.id)),
        (
            "match",
            Y::map([(
                "any",
                Y::Seq(vec![Y::map([(
                    "resources",
                    Y::map([
                        ("kinds", Y::strs(kinds)),
                        ("operations", Y::strs(OPERATIONS)),
                    ]),
                )])]),
            )]),
        ),
    ];
    let exempt = options.exempt();
    if !exempt.is_empty() {
        entry.push((
            "exclude",
            Y::map([(
                "any",
                Y::Seq(vec![Y::map([(
                    "resources",
                    Y::map([("namespaces", Y::strs(exempt))]),
                )])]),
            )]),
        ));
    }
    entry.push(("celPreconditions", Y::Seq(match_conditions(catalog, rule))));
    let mut cel = Vec::new();
    let variables = variables(rule, options);
    if !variables.is_empty() {
        cel.push(("variables", Y::Seq(variables)));
    }
    cel.push(("expressions", Y::Seq(validations(rule))));
    entry.push((
        "validate",
        Y::map([
            ("failureAction", Y::str(options.failure_action(rule))),
            ("cel", Y::map(cel)),
        ]),
    ));
    Y::map([
        ("apiVersion", Y::str("kyverno.io/v1")),
        ("kind", Y::str("ClusterPolicy")),
        ("metadata", metadata(rule, options, Some("1.13.0"))),
        (
            "spec",
            Y::map([
                ("background", Y::Bool(true)),
                ("rules", Y::Seq(vec![Y::map(entry)])),
            ]),
        ),
    ])
}

fn metadata(rule: &Rule, options: &Options, kyverno_version: Option<&str>) -> Y {
    let kinds: Vec<&str> = rule
        .object
        .as_ref()
        .map(|o| o.resources.iter().map(|r| r.kind).collect())
        .unwrap_or_default();
    let severity = match options.severity(rule) {
        Severity::Error => "high",
        Severity::Warning => "medium",
    };
    let mut annotations = vec![
        ("policies.kyverno.io/title", Y::str(one_line(&rule.title))),
        (
            "policies.kyverno.io/category",
            Y::str("ADR-072 credentials bundle"),
        ),
        ("policies.kyverno.io/severity", Y::str(severity)),
        ("policies.kyverno.io/subject", Y::str(kinds.join(","))),
    ];
    if let Some(version) = kyverno_version {
        annotations.push(("policies.kyverno.io/minversion", Y::str(version)));
    }
    annotations.push((
        "policies.kyverno.io/description",
        Y::str(one_line(&format!(
            "{} Enforces {}. Fix: {}",
            rule.rationale, rule.adr, rule.remediation
        ))),
    ));
    Y::map([
        ("name", Y::str(&rule.id)),
        ("annotations", Y::map(annotations)),
    ])
}

/// One resource rule per API group, in the order the rule names its resources.
fn resource_rules(resources: &[&'static Resource]) -> Y {
    let mut groups: Vec<(&str, &[&str], Vec<&str>)> = Vec::new();
    for r in resources {
        match groups
            .iter_mut()
            .find(|(g, v, _)| *g == r.group && *v == r.versions)
        {
            Some((_, _, plurals)) => plurals.push(r.plural),
            None => groups.push((r.group, r.versions, vec![r.plural])),
        }
    }
    Y::Seq(
        groups
            .into_iter()
            .map(|(group, versions, plurals)| {
                Y::map([
                    ("apiGroups", Y::strs([group])),
                    ("apiVersions", Y::strs(versions)),
                    ("operations", Y::strs(OPERATIONS)),
                    ("resources", Y::strs(plurals)),
                ])
            })
            .collect(),
    )
}

/// The conditions under which a policy looks at an object at all: the rule's own (which objects
/// are bundle members), then [`NOT_METADATA_ONLY`] and [`not_suppressed`].
fn match_conditions(catalog: &Catalog, rule: &Rule) -> Vec<Y> {
    let mut out = Vec::new();
    let condition =
        |name: &str, text: &str| Y::map([("name", Y::str(name)), ("expression", Y::str(text))]);
    if let Some(name) = rule.object.as_ref().and_then(|o| o.condition.as_deref())
        && let Some(text) = catalog.condition(name)
    {
        out.push(condition(name, text));
    }
    out.push(condition("not-metadata-only-update", NOT_METADATA_ONLY));
    out.push(condition("not-suppressed", &not_suppressed(catalog, rule)));
    out
}

/// An UPDATE that changes nothing but metadata the rules do not read (finalizers, owner
/// references, managed fields) is admitted whatever the object holds: a controller removing its
/// finalizer from an object that was non-compliant before the policy arrived must not be
/// stopped. Labels and annotations count as content (the hook rules and suppressions read them),
/// so an UPDATE that breaks a compliant object is still judged. `oldObject` is null on CREATE and
/// set on every UPDATE, so the operation alone guards it. (A conditional rather than `||`:
/// cel-python evaluates both sides of `||`, and a macro over a null `oldObject` would then fail
/// where cel-go never looks; and cel-python has no `!=` between a map and null.)
const NOT_METADATA_ONLY: &str = "request.operation == 'UPDATE' \
? !(object.all(k, k == 'metadata' || k == 'status' || (k in oldObject && object[k] == oldObject[k])) \
&& oldObject.all(k, k == 'metadata' || k == 'status' || k in object) \
&& (has(object.metadata.annotations) ? object.metadata.annotations : {}) \
== (has(oldObject.metadata.annotations) ? oldObject.metadata.annotations : {}) \
&& (has(object.metadata.labels) ? object.metadata.labels : {}) \
== (has(oldObject.metadata.labels) ? oldObject.metadata.labels : {})) : true";

/// A `credlint.io/ignore` annotation that accepts this rule, read as `check` reads it
/// (`<rule-id>[,<rule-id>...]: <reason>`: every id known or `policy:<name>`, a reason after the
/// colon), admits the object, so the cluster accepts what review accepted. An annotation `check`
/// calls `ignore-invalid` accepts nothing here either.
fn not_suppressed(catalog: &Catalog, rule: &Rule) -> String {
    let known: Vec<&str> = catalog
        .rules
        .iter()
        .map(|r| r.id.as_str())
        .filter(|id| *id != "ignore-invalid" && *id != "ignore-unused")
        .collect();
    let any = format!("(?:policy:[^,:]+|{})", known.join("|"));
    let pattern = format!(
        "^\\\\s*(?:{any}\\\\s*,\\\\s*)*{id}\\\\s*(?:,\\\\s*{any}\\\\s*)*:\\\\s*\\\\S",
        id = rule.id
    );
    format!(
        "!(has(object.metadata.annotations) && '{annotation}' in object.metadata.annotations \
         && object.metadata.annotations['{annotation}'].matches('{pattern}'))",
        annotation = crate::model::outcome::IGNORE_ANNOTATION
    )
}

/// The rule's variables, after `credentialsImage` when the rule reads it.
fn variables(rule: &Rule, options: &Options) -> Vec<Y> {
    let Some(object) = &rule.object else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if reads_image(rule) {
        out.push(Y::map([
            ("name", Y::str(IMAGE_VARIABLE)),
            ("expression", Y::str(cel_string(&options.credentials_image))),
        ]));
    }
    for (name, expression) in &object.variables {
        out.push(Y::map([
            ("name", Y::str(name)),
            ("expression", Y::str(expression)),
        ]));
    }
    out
}

fn validations(rule: &Rule) -> Vec<Y> {
    let Some(object) = &rule.object else {
        return Vec::new();
    };
    object
        .validations
        .iter()
        .map(|v| {
            Y::map([
                ("expression", Y::str(&v.expression)),
                ("message", Y::str(one_line(&v.message))),
            ])
        })
        .collect()
}

fn reads_image(rule: &Rule) -> bool {
    let needle = format!("variables.{IMAGE_VARIABLE}");
    rule.object.as_ref().is_some_and(|o| {
        o.variables.iter().any(|(_, e)| e.contains(&needle))
            || o.validations.iter().any(|v| v.expression.contains(&needle))
    })
}

/// Kubernetes refuses messages with line breaks.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A CEL string literal: `'...'` with `\` and `'` escaped and control characters as `\u` escapes.
pub fn cel_string(text: &str) -> String {
    let mut out = String::from("'");
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

#[cfg(test)]
mod tests;
