//! Rules over a whole bundle: `bundle-incomplete`, `bundle-duplicate`, `role-plan-mismatch`,
//! `job-wiring`, `job-name-hash` and `bundle-naming`.

use super::{Emit, wiring};
use crate::model::bundle::{
    Bundle, Facts, MEMBER_KINDS, Member, MemberKind, RoleRule, SUFFIX, owner_prefix,
};
use std::collections::{BTreeSet, HashMap};

/// The kinds each namespace holds for an owner whose objects are in more than one namespace
/// (one object without `metadata.namespace` is the usual case): `bundle-incomplete` names the
/// namespace a missing object is in instead of saying it is missing.
#[derive(Default)]
pub struct Siblings(HashMap<String, Vec<Spread>>);

/// One bundle of an owner: its namespace and the kinds it holds.
type Spread = (Option<String>, Vec<MemberKind>);

impl Siblings {
    /// From the bundles checked at the end, and the owner and namespace of those checked
    /// complete before (which hold every kind).
    pub fn of(bundles: &[Bundle], complete: &[(String, Option<String>)]) -> Siblings {
        let mut by_owner: HashMap<String, Vec<Spread>> = HashMap::new();
        for b in bundles {
            by_owner
                .entry(b.owner.clone())
                .or_default()
                .push((b.namespace.clone(), b.members.keys().copied().collect()));
        }
        for (owner, namespace) in complete {
            if let Some(spread) = by_owner.get_mut(owner) {
                spread.push((namespace.clone(), MEMBER_KINDS.to_vec()));
            }
        }
        by_owner.retain(|_, spread| spread.len() > 1);
        Siblings(by_owner)
    }

    /// The namespace (`None`: none given) where another bundle of `bundle`'s owner holds
    /// `kind`.
    fn holding(&self, bundle: &Bundle, kind: MemberKind) -> Option<&Option<String>> {
        self.0
            .get(&bundle.owner)?
            .iter()
            .find(|(ns, kinds)| *ns != bundle.namespace && kinds.contains(&kind))
            .map(|(ns, _)| ns)
    }

    /// Whether a bundle of the same owner without a namespace holds every kind `bundle` lacks
    /// and lacks only what `bundle` holds: that bundle's finding ("give it `namespace: ...`")
    /// says all there is to say, once.
    fn said_by_unnamespaced(&self, bundle: &Bundle, missing: &[MemberKind]) -> bool {
        bundle.namespace.is_some()
            && self.0.get(&bundle.owner).is_some_and(|spread| {
                // With a third namespace in play, each bundle speaks for itself.
                spread.len() == 2
                    && spread.iter().any(|(ns, kinds)| {
                        ns.is_none()
                            && missing.iter().all(|k| kinds.contains(k))
                            && MEMBER_KINDS
                                .iter()
                                .all(|k| kinds.contains(k) || bundle.members.contains_key(k))
                    })
            })
    }
}

pub fn check(bundle: &Bundle, siblings: &Siblings, emit: &mut Emit) {
    let id = bundle.id();
    incomplete(bundle, siblings, &id, emit);
    duplicates(bundle, &id, emit);
    role_plan(bundle, &id, emit);
    naming(bundle, &id, emit);
    linked_binding(bundle, &id, emit);
    if let Some(job) = bundle.first(MemberKind::Job) {
        if let Facts::Job(facts) = &job.facts {
            let account = bundle.name_of(MemberKind::ServiceAccount);
            let config_map = bundle.name_of(MemberKind::ConfigMap);
            let wanted = wiring::Wanted {
                account: &account,
                config_map: &config_map,
                account_automount: match bundle.first(MemberKind::ServiceAccount).map(|m| &m.facts)
                {
                    Some(Facts::ServiceAccount(automount)) => *automount,
                    _ => None,
                },
            };
            for (loc, message) in wiring::job(facts, &wanted) {
                emit.add("job-wiring", loc, message, Some(&job.object()), Some(&id));
            }
        }
        job_name(bundle, job, &id, emit);
    }
}

/// `bundle-naming`: every member named as ADR-072 point 1 names it, for the bundle's owner.
fn naming(bundle: &Bundle, id: &str, emit: &mut Emit) {
    let owner = &bundle.owner;
    let named = format!("{owner}{SUFFIX}");
    // A second member of a kind is `bundle-duplicate`'s finding.
    for member in bundle.members.values().filter_map(|list| list.first()) {
        if member.kind == MemberKind::Job && member.name.is_empty() {
            // No `metadata.name` (a `generateName`): `job-name-hash` says which name to take.
            continue;
        }
        let fits = match member.kind {
            // The owner's cut and the hash are `job-name-hash`'s to judge.
            MemberKind::Job => has_job_shape(&member.name),
            _ => member.name == named,
        };
        if !fits {
            let expected = match member.kind {
                MemberKind::Job => format!("`{}{SUFFIX}-<h8>`", owner_prefix(owner)),
                _ => format!("`{named}`"),
            };
            emit.add(
                "bundle-naming",
                member.loc,
                format!(
                    "this {} of bundle {id} is named `{}`, not {expected} (ADR-072 point 1): \
                     the bundle is linted by its structure, but the names are a contract",
                    member.kind.name(),
                    member.name
                ),
                Some(&member.object()),
                Some(id),
            );
        }
    }
}

/// `rolebinding-wiring` for a RoleBinding named otherwise, which its subject linked to the
/// bundle (one named `<owner>-credentials` is judged field by field as it is read).
fn linked_binding(bundle: &Bundle, id: &str, emit: &mut Emit) {
    let Some(rb) = bundle.first(MemberKind::RoleBinding) else {
        return;
    };
    let Facts::RoleBinding(facts) = &rb.facts else {
        return;
    };
    if crate::model::bundle::owner_of_name(&rb.name).is_some() {
        return;
    }
    let role = bundle.name_of(MemberKind::Role);
    let account = bundle.name_of(MemberKind::ServiceAccount);
    let mut faults = Vec::new();
    if facts.role.as_deref() != Some(role.as_str()) {
        faults.push(format!("does not bind the Role `{role}`"));
    }
    if facts.subjects != 1 || facts.accounts.first().is_none_or(|(n, _)| *n != account) {
        faults.push(format!(
            "has {} subjects where its only one is the ServiceAccount `{account}`",
            facts.subjects
        ));
    }
    if !faults.is_empty() {
        emit.add(
            "rolebinding-wiring",
            rb.loc,
            format!(
                "the RoleBinding of bundle {id} {} (ADR-072 point 5)",
                faults.join(" and ")
            ),
            Some(&rb.object()),
            Some(id),
        );
    }
}

/// `<something>-credentials-<8 characters>`: a Job name whose cut and hash can be judged.
fn has_job_shape(name: &str) -> bool {
    name.rsplit_once('-')
        .is_some_and(|(head, hash)| head.ends_with(SUFFIX) && hash.chars().count() == 8)
}

/// In words, where a namespace is or is not given.
fn namespace_words(namespace: &Option<String>) -> String {
    match namespace {
        Some(ns) => format!("in namespace `{ns}`"),
        None => "without `metadata.namespace`".to_string(),
    }
}

fn incomplete(bundle: &Bundle, siblings: &Siblings, id: &str, emit: &mut Emit) {
    let Some(anchor) = bundle.anchor() else {
        return;
    };
    let missing: Vec<MemberKind> = MEMBER_KINDS
        .into_iter()
        .filter(|kind| !bundle.members.contains_key(kind))
        .collect();
    let elsewhere: Vec<(MemberKind, &Option<String>)> = missing
        .iter()
        .filter_map(|&kind| siblings.holding(bundle, kind).map(|ns| (kind, ns)))
        .collect();
    if siblings.said_by_unnamespaced(bundle, &missing) {
        return;
    }
    // Every missing object is there, in one other namespace (or none): one finding that says
    // which, not one per object. Anchored on this bundle's first member, the odd one out when
    // a single object lacks its namespace.
    if !missing.is_empty()
        && elsewhere.len() == missing.len()
        && elsewhere.iter().all(|(_, ns)| *ns == elsewhere[0].1)
    {
        let there = elsewhere[0].1;
        let kinds: Vec<&str> = missing.iter().map(|k| k.name()).collect();
        let fix = match (there, &bundle.namespace) {
            (Some(ns), None) => format!("give it `namespace: {ns}`"),
            (Some(ns), Some(_)) => {
                format!("render every object of the owner in one namespace (`{ns}` or this one)")
            }
            (None, _) => "give every object of the owner the same `metadata.namespace`".to_string(),
        };
        emit.add(
            "bundle-incomplete",
            anchor.loc,
            format!(
                "bundle {id} has no {}: this {} is {}, and the owner's {} {} {}: {fix}",
                kinds.join(", "),
                anchor.kind.name(),
                namespace_words(&bundle.namespace),
                kinds.join(", "),
                if kinds.len() == 1 { "is" } else { "are" },
                namespace_words(there),
            ),
            Some(&anchor.object()),
            Some(id),
        );
        return;
    }
    for kind in missing {
        let expected = match kind {
            MemberKind::Job => format!("a Job `{}{SUFFIX}-<h8>`", owner_prefix(&bundle.owner)),
            _ => format!("`{}{SUFFIX}`", bundle.owner),
        };
        let note = match siblings.holding(bundle, kind) {
            Some(there) => format!(
                " (the owner's {} is {}: one namespace holds the whole bundle)",
                kind.name(),
                namespace_words(there)
            ),
            None => String::new(),
        };
        emit.add(
            "bundle-incomplete",
            anchor.loc,
            format!(
                "bundle {id} has no {}: expected {expected} beside this {}{note}",
                kind.name(),
                anchor.kind.name()
            ),
            Some(&anchor.object()),
            Some(id),
        );
    }
}

pub fn duplicate_message(id: &str, kind: MemberKind) -> String {
    format!("bundle {id} has a second {}", kind.name())
}

fn duplicates(bundle: &Bundle, id: &str, emit: &mut Emit) {
    for members in bundle.members.values() {
        let Some((first, rest)) = members.split_first() else {
            continue;
        };
        for extra in rest {
            emit.add(
                "bundle-duplicate",
                extra.loc,
                duplicate_message(id, extra.kind),
                Some(&extra.object()),
                Some(id),
            )
            .label(first.loc, "the first one");
        }
    }
}

/// Which list of the plan a rule's names must equal.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Shape {
    Secrets,
    ExternalSecrets,
    Generators,
    Pods,
}

impl Shape {
    fn of(group: &str, resource: &str) -> Option<Shape> {
        match (group, resource) {
            ("", "secrets") => Some(Shape::Secrets),
            ("external-secrets.io", "externalsecrets") => Some(Shape::ExternalSecrets),
            ("generators.external-secrets.io", "passwords") => Some(Shape::Generators),
            ("", "pods") => Some(Shape::Pods),
            _ => None,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Shape::Secrets => "get and patch on secrets",
            Shape::ExternalSecrets => "get and delete on externalsecrets",
            Shape::Generators => "delete on passwords",
            Shape::Pods => "get and delete on pods",
        }
    }

    fn resource(self) -> &'static str {
        match self {
            Shape::Secrets => "secrets",
            Shape::ExternalSecrets => "externalsecrets",
            Shape::Generators => "passwords",
            Shape::Pods => "pods",
        }
    }

    /// The verbs ADR-072 point 5 grants on the names.
    fn verbs(self) -> &'static [&'static str] {
        match self {
            Shape::Secrets => &["get", "patch"],
            Shape::ExternalSecrets | Shape::Pods => &["get", "delete"],
            Shape::Generators => &["delete"],
        }
    }

    /// The field of plan.json that lists the names.
    fn planned(self) -> &'static str {
        match self {
            Shape::Secrets | Shape::ExternalSecrets => "`secrets`",
            Shape::Generators => "`retiredGenerators`",
            Shape::Pods => "`serverPods`",
        }
    }
}

fn role_plan(bundle: &Bundle, id: &str, emit: &mut Emit) {
    let (Some(role), Some(plan)) = (bundle.first(MemberKind::Role), bundle.plan()) else {
        return;
    };
    let Facts::Role(rules) = &role.facts else {
        return;
    };
    let expected = |shape: Shape| -> BTreeSet<&str> {
        let list = match shape {
            Shape::Secrets | Shape::ExternalSecrets => &plan.secrets,
            Shape::Generators => &plan.generators,
            Shape::Pods if matches!(plan.kind.as_str(), "cache" | "broker") => &plan.pods,
            Shape::Pods => return BTreeSet::new(),
        };
        list.iter().map(String::as_str).collect()
    };
    // Create cannot be limited by name: one unnamed rule creates every planned Secret.
    let creates = rules.iter().any(|r| {
        let any = |list: &[String], want: &str| list.iter().any(|x| x == want || x == "*");
        any(&r.groups, "") && any(&r.resources, "secrets") && any(&r.verbs, "create")
    });
    if !creates && !plan.secrets.is_empty() {
        emit.add(
            "role-plan-mismatch",
            role.loc,
            "the Role has no rule that creates secrets: the Job could not create the Secrets \
             plan.json plans (`secrets`)",
            Some(&role.object()),
            Some(id),
        );
    }
    for shape in [
        Shape::Secrets,
        Shape::ExternalSecrets,
        Shape::Generators,
        Shape::Pods,
    ] {
        // Whether server pods belong in the Role depends on the kind; an unknown kind is
        // `plan-invalid`'s finding, and the pods rule cannot be judged without it.
        if shape == Shape::Pods && plan.kind.is_empty() {
            continue;
        }
        // The rules that grant this shape by name; create on secrets is the unnamed rule.
        let granting: Vec<&RoleRule> = rules
            .iter()
            .filter(|r| {
                r.groups
                    .iter()
                    .any(|g| r.resources.iter().any(|x| Shape::of(g, x) == Some(shape)))
                    && !(shape == Shape::Secrets && r.verbs.iter().all(|v| v == "create"))
            })
            .collect();
        // An unnamed rule is `role-unnamed-rule`'s finding; comparing its names means nothing.
        if granting
            .iter()
            .any(|r| r.names.as_ref().is_none_or(Vec::is_empty))
        {
            continue;
        }
        let want = expected(shape);
        let have: BTreeSet<&str> = granting
            .iter()
            .flat_map(|r| r.names.iter().flatten().map(String::as_str))
            .collect();
        for rule in &granting {
            if want.is_empty() {
                // The whole rule is one the renderer leaves out.
                let why =
                    if shape == Shape::Pods && !matches!(plan.kind.as_str(), "cache" | "broker") {
                        format!("a {} has no server pods", plan.kind)
                    } else {
                        format!("plan.json has no {}", shape.planned())
                    };
                emit.add(
                    "role-plan-mismatch",
                    rule.loc,
                    format!(
                        "the Role grants {} by name, but {why}: the rule is left out when it \
                         names nothing",
                        shape.describe()
                    ),
                    Some(&role.object()),
                    Some(id),
                );
                continue;
            }
            let names = rule.names.iter().flatten();
            for (name, loc) in names.zip(&rule.name_locs) {
                if want.contains(name.as_str()) {
                    continue;
                }
                emit.add(
                    "role-plan-mismatch",
                    *loc,
                    format!(
                        "the Role names `{name}` for {}, which plan.json does not plan ({})",
                        shape.describe(),
                        shape.planned()
                    ),
                    Some(&role.object()),
                    Some(id),
                );
            }
        }
        let missing: Vec<&str> = want.difference(&have).copied().collect();
        if !missing.is_empty() {
            let loc = granting
                .first()
                .and_then(|r| r.names_loc)
                .unwrap_or(role.loc);
            emit.add(
                "role-plan-mismatch",
                loc,
                format!(
                    "the Role does not name {} for {}, which plan.json plans ({}): the Job would \
                     be refused",
                    quote_all(&missing),
                    shape.describe(),
                    shape.planned()
                ),
                Some(&role.object()),
                Some(id),
            );
        }
        // Every verb of the shape, for every planned name the Role does name.
        for verb in shape.verbs() {
            let grants = |r: &RoleRule, name: &str| {
                r.names.iter().flatten().any(|n| n == name)
                    && r.verbs.iter().any(|v| v == verb || v == "*")
            };
            let lacking: Vec<&str> = want
                .intersection(&have)
                .copied()
                .filter(|n| !granting.iter().any(|r| grants(r, n)))
                .collect();
            let Some(rule) = granting.iter().find(|r| {
                r.names
                    .iter()
                    .flatten()
                    .any(|n| lacking.contains(&n.as_str()))
            }) else {
                continue;
            };
            emit.add(
                "role-plan-mismatch",
                rule.verbs_loc.unwrap_or(rule.loc),
                format!(
                    "the Role does not grant {verb} on {} {}, which plan.json plans ({}): the \
                     Job would be refused",
                    shape.resource(),
                    quote_all(&lacking),
                    shape.planned()
                ),
                Some(&role.object()),
                Some(id),
            );
        }
    }
}

fn quote_all(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `h8`: the first 8 hex characters of SHA-256 over plan.json, create.py and the image.
pub fn job_hash(state: &crate::common::sha256::Sha256State, image: &str) -> String {
    let mut state = state.clone();
    state.update(image.as_bytes());
    h8(&state.finalize())
}

/// The first 8 hex characters of a digest.
pub fn h8(digest: &[u8]) -> String {
    crate::common::hex(&digest[..digest.len().min(4)])
}

pub fn expected_job_name(owner: &str, h8: &str) -> String {
    format!("{}{SUFFIX}-{h8}", owner_prefix(owner))
}

fn job_name(bundle: &Bundle, job: &Member, id: &str, emit: &mut Emit) {
    let Facts::Job(facts) = &job.facts else {
        return;
    };
    let Some(state) = bundle.config_map().and_then(|cm| cm.hash_state.as_ref()) else {
        return;
    };
    let Some((image, _)) = &facts.image else {
        return;
    };
    let expected = expected_job_name(&bundle.owner, &job_hash(state, image));
    // A name of another shape is `bundle-naming`'s finding; the hash is judged in names that
    // have the shape.
    if facts.name != expected && (facts.name.is_empty() || has_job_shape(&facts.name)) {
        let cm = bundle.first(MemberKind::ConfigMap).map(|m| m.loc);
        let message = if facts.name.is_empty() {
            // A hook Job with `generateName` only: the API server adds a random suffix, so the
            // name can never carry the hash Argo CD needs to see a change.
            format!(
                "the Job has no `metadata.name` (a `generateName` gets a random suffix, which \
                 cannot carry the hash of what it runs): name it `{expected}`"
            )
        } else {
            format!(
                "the Job is named `{}`, but for the plan, program and image it runs it is `{expected}`",
                facts.name
            )
        };
        let finding = emit.add(
            "job-name-hash",
            job.loc,
            message,
            Some(&job.object()),
            Some(id),
        );
        if let Some(cm) = cm {
            finding.label(cm, "plan.json and create.py come from here");
        }
    }
}
