//! Kyverno's autogen of Pod policies for pod controllers, as its `pkg/cel/autogen` does for a
//! ValidatingPolicy: when the policy matches exactly `pods` of the core group, version v1 (one
//! resource rule, no resource names, no exclusions, no object or namespace selector), it also
//! applies to DaemonSets, Deployments, ReplicaSets, StatefulSets and Jobs with `object.spec`
//! read as `object.spec.template.spec` and `object.metadata` as
//! `object.spec.template.metadata`, and to CronJobs through `spec.jobTemplate.spec.template`.
//! The rewrite is textual over the whole spec, `oldObject` too, and leaves a path alone where it
//! continues with `.name` or `.namespace` (the controller's own name and namespace).
//! `autogen.podControllers.controllers` narrows the controllers (resource names, as Kyverno's
//! table keys them).

use super::spec::{Body, MatchResources, ResourceRule, Spec, Text, Validation};

/// Controllers Kyverno generates for: resource, group, version, and the rewrite they need.
const CONTROLLERS: &[(&str, &str, &str, Rewrite)] = &[
    ("daemonsets", "apps", "v1", Rewrite::Template),
    ("deployments", "apps", "v1", Rewrite::Template),
    ("replicasets", "apps", "v1", Rewrite::Template),
    ("statefulsets", "apps", "v1", Rewrite::Template),
    ("jobs", "batch", "v1", Rewrite::Template),
    ("cronjobs", "batch", "v1", Rewrite::JobTemplate),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Rewrite {
    /// Kyverno's "defaults": the pod template of the controller.
    Template,
    /// Kyverno's "cronjobs": the pod template of the CronJob's job template.
    JobTemplate,
}

impl Rewrite {
    fn replacements(self) -> [(&'static str, &'static str); 2] {
        match self {
            Rewrite::Template => [
                ("spec", "spec.template.spec"),
                ("metadata", "spec.template.metadata"),
            ],
            Rewrite::JobTemplate => [
                ("spec", "spec.jobTemplate.spec.template.spec"),
                ("metadata", "spec.jobTemplate.spec.template.metadata"),
            ],
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Rewrite::Template => "defaults",
            Rewrite::JobTemplate => "cronjobs",
        }
    }
}

/// Whether the match constraints select Pods only, so that Kyverno generates for controllers.
fn can_autogen(m: &MatchResources) -> bool {
    let [rule] = m.rules.as_slice() else {
        return false;
    };
    m.namespace_selector.is_empty()
        && m.object_selector.is_empty()
        && m.exclude.is_empty()
        && rule.names.is_empty()
        && rule.groups == [""]
        && rule.versions == ["v1"]
        && rule.resources == ["pods"]
}

/// The bodies Kyverno adds for pod controllers, each named `defaults` or `cronjobs`.
pub fn variants(spec: &Spec) -> Vec<(&'static str, Body)> {
    let Some(m) = &spec.body.constraints else {
        return Vec::new();
    };
    if !spec.autogen_enabled || !can_autogen(m) {
        return Vec::new();
    }
    let operations = m.rules[0].operations.clone();
    if operations.is_empty() {
        return Vec::new();
    }
    let wanted = |resource: &str| {
        spec.controllers
            .as_ref()
            .is_none_or(|c| c.iter().any(|x| x == resource))
    };
    let mut out = Vec::new();
    for rewrite in [Rewrite::Template, Rewrite::JobTemplate] {
        let targets: Vec<_> = CONTROLLERS
            .iter()
            .filter(|(resource, _, _, r)| *r == rewrite && wanted(resource))
            .collect();
        if targets.is_empty() {
            continue;
        }
        // One resource rule per group and version, resources sorted (as Kyverno builds them).
        let mut rules: Vec<ResourceRule> = Vec::new();
        for (resource, group, version, _) in &targets {
            match rules
                .iter_mut()
                .find(|r| r.groups == [*group] && r.versions == [*version])
            {
                Some(rule) => rule.resources.push(resource.to_string()),
                None => rules.push(ResourceRule {
                    groups: vec![group.to_string()],
                    versions: vec![version.to_string()],
                    resources: vec![resource.to_string()],
                    operations: operations.clone(),
                    ..ResourceRule::default()
                }),
            }
        }
        for rule in &mut rules {
            rule.resources.sort();
        }
        rules.sort_by(|a, b| (&a.groups, &a.versions).cmp(&(&b.groups, &b.versions)));
        let body = &spec.body;
        let text = |t: &Text| Text {
            text: rewrite_text(&t.text, rewrite),
            span: t.span,
        };
        let named = |list: &[(String, Text)]| -> Vec<(String, Text)> {
            list.iter()
                .map(|(n, t)| (rewrite_text(n, rewrite), text(t)))
                .collect()
        };
        out.push((
            rewrite.name(),
            Body {
                constraints: Some(MatchResources {
                    rules,
                    ..MatchResources::default()
                }),
                conditions: named(&body.conditions),
                variables: named(&body.variables),
                validations: body
                    .validations
                    .iter()
                    .map(|v| Validation {
                        expression: text(&v.expression),
                        message: v.message.as_deref().map(|m| rewrite_text(m, rewrite)),
                        message_expression: v.message_expression.as_ref().map(text),
                    })
                    .collect(),
                audits: named(&body.audits),
            },
        ));
    }
    out
}

fn rewrite_text(text: &str, rewrite: Rewrite) -> String {
    let mut out = text.to_string();
    for (from, to) in rewrite.replacements() {
        for root in ["object.", "oldObject."] {
            out = replace(&out, &format!("{root}{from}"), &format!("{root}{to}"));
        }
    }
    out
}

/// Replaces every occurrence of `from` with `to`, except where `from` continues with `.name` or
/// `.namespace` as a whole segment.
fn replace(text: &str, from: &str, to: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(from) {
        out.push_str(&rest[..at]);
        let after = &rest[at + from.len()..];
        out.push_str(if is_protected(after) { from } else { to });
        rest = after;
    }
    out.push_str(rest);
    out
}

fn is_protected(after: &str) -> bool {
    [".namespace", ".name"].iter().any(|suffix| {
        after.strip_prefix(suffix).is_some_and(|next| {
            !next
                .chars()
                .next()
                .is_some_and(|c| c == '_' || c.is_ascii_alphanumeric())
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_move_into_the_pod_template_but_names_stay() {
        let t = "object.spec.containers.all(c, has(c.image)) && object.metadata.name != '' && object.metadata.labels.app == 'x' && oldObject.spec.x == 1 && object.metadata.nameSuffix";
        assert_eq!(
            rewrite_text(t, Rewrite::Template),
            "object.spec.template.spec.containers.all(c, has(c.image)) && object.metadata.name != '' && object.spec.template.metadata.labels.app == 'x' && oldObject.spec.template.spec.x == 1 && object.spec.template.metadata.nameSuffix"
        );
        assert_eq!(
            rewrite_text("object.spec.hostNetwork", Rewrite::JobTemplate),
            "object.spec.jobTemplate.spec.template.spec.hostNetwork"
        );
    }
}
