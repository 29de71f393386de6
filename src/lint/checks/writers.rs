//! One writer, one identity (bundle.md section 1): `secret-rendered`, `eso-targets-planned`,
//! `writer-rendered`, `plan-shared-secret`, `generator-rendered`, `rbac-extra-binding` and
//! `identity-reused`, decided once every file is read, from each bundle's digest and the other
//! writers of the render.

use super::Emit;
use crate::common::spread::Spread;
use crate::common::{Map, Set};
use crate::load::source::At;
use crate::model::bundle::{Bundle, Digest, MemberKind};
use crate::model::writers::{
    Controller, NAME_LABEL, Subject, Writer, WriterKind, holds_account, may_meet,
};
use crate::model::{ObjectRef, Severity};
use std::collections::BTreeSet;

/// What the checks compare, gathered while the bundles are checked and dropped.
#[derive(Default)]
pub struct Render {
    pub digests: Vec<Digest>,
    pub writers: Vec<Writer>,
    /// Where the RoleBindings of every bundle are named: a bundle's own binding, even a second
    /// one, is judged by `rolebinding-wiring` and `bundle-duplicate`, not as another binding.
    pub member_bindings: Set<At>,
    /// The Jobs of every bundle, even a second one: whatever a member Job runs as is
    /// `job-wiring`'s, not another workload borrowing an identity.
    pub member_jobs: Set<ObjectRef>,
}

impl Render {
    /// Keeps what the checks need of a bundle that is one.
    pub fn add(&mut self, bundle: &Bundle) {
        for m in bundle
            .members
            .get(&MemberKind::RoleBinding)
            .into_iter()
            .flatten()
        {
            self.member_bindings.insert(m.loc);
        }
        for m in bundle.members.get(&MemberKind::Job).into_iter().flatten() {
            self.member_jobs.insert(m.object());
        }
        self.digests.extend(bundle.digest());
    }
}

/// The indexes of the render's bundles by the names writers meet them by.
struct Indexes<'d> {
    by_secret: Map<&'d str, Vec<&'d Digest>>,
    by_generator: Map<&'d str, Vec<&'d Digest>>,
    by_account: Map<&'d str, Vec<usize>>,
    by_role: Map<&'d str, Vec<usize>>,
}

impl<'d> Indexes<'d> {
    /// Built in two halves side by side (`spread`): the planned names, and the accounts and
    /// Roles. On a render of thousands of bundles these maps are most of the check, and it
    /// runs once every file is read, when the other threads have nothing else to do.
    fn of(digests: &'d [Digest], spread: &impl Spread) -> Indexes<'d> {
        let ((by_secret, by_generator), (by_account, by_role)) = spread.join(
            || {
                let mut by_secret: Map<&str, Vec<&Digest>> = Map::default();
                let mut by_generator: Map<&str, Vec<&Digest>> = Map::default();
                for bundle in digests {
                    for s in &bundle.secrets {
                        by_secret.entry(&s.name).or_default().push(bundle);
                    }
                    for g in &bundle.generators {
                        by_generator.entry(&g.name).or_default().push(bundle);
                    }
                }
                (by_secret, by_generator)
            },
            || {
                // One account and one Role a bundle: sized once, not grown a rehash at a time.
                let mut by_account: Map<&str, Vec<usize>> =
                    Map::with_capacity_and_hasher(digests.len(), <_>::default());
                let mut by_role: Map<&str, Vec<usize>> =
                    Map::with_capacity_and_hasher(digests.len(), <_>::default());
                for (i, bundle) in digests.iter().enumerate() {
                    by_account.entry(&bundle.account).or_default().push(i);
                    by_role.entry(&bundle.role).or_default().push(i);
                }
                (by_account, by_role)
            },
        );
        Indexes {
            by_secret,
            by_generator,
            by_account,
            by_role,
        }
    }
}

pub fn check(render: &Render, emit: &mut Emit, spread: &impl Spread) {
    // Each writer meets only the bundles that plan its name or own the account it binds:
    // indexes by name keep a render of thousands of bundles (each with its own RoleBinding, a
    // writer) linear rather than bundles x writers.
    let ix = Indexes::of(&render.digests, spread);
    // The names bundles share and the walk over the other writers read the indexes alone:
    // they run side by side, and their findings are joined in this order.
    let (shared, walked) = spread.join(
        || {
            let mut part = emit.sibling();
            shared_secrets(&ix.by_secret, &mut part);
            shared_jobs(&render.digests, &mut part);
            part.findings
        },
        || {
            let mut part = emit.sibling();
            writers(render, &ix, &mut part);
            part.findings
        },
    );
    emit.findings.extend(shared);
    emit.findings.extend(walked);
}

/// Every writer of the render against the bundles it meets.
fn writers(render: &Render, ix: &Indexes, emit: &mut Emit) {
    let Indexes {
        by_secret,
        by_generator,
        by_account,
        by_role,
    } = ix;
    // The labels of the Namespace objects the render holds, for selectors.
    let namespaces: Map<&str, &Writer> = render
        .writers
        .iter()
        .filter(|w| w.kind == WriterKind::Namespace)
        .map(|w| (w.name.as_str(), w))
        .collect();
    // The Secrets the render holds, by name, for the clone lists that copy them.
    let mut secrets: Map<&str, Vec<&Writer>> = Map::default();
    for w in render
        .writers
        .iter()
        .filter(|w| w.kind == WriterKind::Secret)
    {
        secrets.entry(&w.name).or_default().push(w);
    }
    for writer in &render.writers {
        if render.member_bindings.contains(&writer.loc) {
            continue;
        }
        match writer.kind {
            WriterKind::Secret | WriterKind::ExternalSecret => {
                for bundle in named(by_secret, &writer.name) {
                    planned_secret(bundle, writer, emit);
                }
            }
            WriterKind::Controller(Controller::KyvernoCloneList) => {
                // A clone list names no Secret: it meets every bundle (there are few).
                for bundle in &render.digests {
                    cloned(bundle, writer, &secrets, emit);
                }
            }
            WriterKind::Controller(_) => {
                for bundle in named(by_secret, &writer.name) {
                    controller_writes(bundle, writer, &namespaces, emit);
                }
            }
            WriterKind::Namespace => {}
            WriterKind::Workload | WriterKind::Token => {
                // Most workloads run as an account no bundle owns: that lookup first, the
                // member Jobs' set (a whole object's hash) only for those that meet one.
                let Some(owners) = by_account.get(writer.name.as_str()) else {
                    continue;
                };
                if writer.kind == WriterKind::Workload
                    && render.member_jobs.contains(&writer.object)
                {
                    continue;
                }
                for &i in owners {
                    borrowed_identity(&render.digests[i], writer, emit);
                }
            }
            WriterKind::Password { cluster } => {
                for bundle in named(by_generator, &writer.name) {
                    retired_generator(bundle, writer, cluster, emit);
                }
            }
            WriterKind::RoleBinding | WriterKind::ClusterRoleBinding => {
                // A group may hold any bundle's account; a ServiceAccount subject names one.
                let bundles: BTreeSet<usize> = if writer.subjects.iter().any(|s| s.kind == "Group")
                {
                    (0..render.digests.len()).collect()
                } else {
                    writer
                        .subjects
                        .iter()
                        .filter_map(|s| by_account.get(account_named(s)?))
                        .flatten()
                        .copied()
                        .collect()
                };
                for i in bundles {
                    extra_binding(&render.digests[i], writer, emit);
                }
                let granted = writer.role.as_deref().and_then(|r| by_role.get(r));
                for &i in granted.into_iter().flatten() {
                    granted_role(&render.digests[i], writer, emit);
                }
            }
        }
    }
}

/// The bundles that plan `name`, each once (a bundle that plans one name twice pushed it twice
/// in a row).
fn named<'d>(index: &Map<&str, Vec<&'d Digest>>, name: &str) -> Vec<&'d Digest> {
    let mut bundles = index.get(name).cloned().unwrap_or_default();
    bundles.dedup_by(|a, b| std::ptr::eq(*a, *b));
    bundles
}

/// The plan entry of `bundle` for the Secret `name`, with its index in the plan.
fn planned_entry<'b>(
    bundle: &'b Digest,
    name: &str,
) -> Option<(usize, &'b crate::model::bundle::Planned)> {
    bundle
        .secrets
        .iter()
        .enumerate()
        .find(|(_, s)| s.name == name)
}

fn planned_secret(bundle: &Digest, writer: &Writer, emit: &mut Emit) {
    if !may_meet(writer.namespace.as_deref(), bundle.namespace.as_deref()) {
        return;
    }
    let Some((index, planned)) = planned_entry(bundle, &writer.name) else {
        return;
    };
    let id = &bundle.id;
    let name = &writer.name;
    let (rule, message) = match writer.kind {
        WriterKind::Secret => (
            "secret-rendered",
            format!(
                "the Secret `{name}` is rendered here, but bundle {id} plans it (plan.json \
                 `secrets[{index}]`): Argo CD would apply it over the generated value on every \
                 sync, and its value is in git (ADR-072 points 2 and 7). Remove it from the \
                 render"
            ),
        ),
        _ => (
            "eso-targets-planned",
            format!(
                "this ExternalSecret ({}) writes the Secret `{name}`, which bundle {id} plans \
                 (plan.json `secrets[{index}]`): two writers of one Secret, and Argo CD \
                 recreates what the Job adopts (ADR-072 points 2 and 3). Remove the \
                 ExternalSecret or target another Secret",
                if writer.generated {
                    "backed by a generator"
                } else {
                    "backed by a store"
                }
            ),
        ),
    };
    let finding = emit.add(rule, writer.loc, message, Some(&writer.object), Some(id));
    if let Some(loc) = planned.loc {
        finding.label(loc, "planned here");
    }
}

/// Whether a writer reaches the bundle's namespace: `Some(true)` or `Some(false)` when the
/// render decides it, `None` with the reason when it does not.
fn reaches(
    writer: &Writer,
    bundle: &Digest,
    namespaces: &Map<&str, &Writer>,
) -> Result<bool, String> {
    let Some(selector) = &writer.selector else {
        return Ok(may_meet(
            writer.namespace.as_deref(),
            bundle.namespace.as_deref(),
        ));
    };
    let Some(ns) = bundle.namespace.as_deref() else {
        return Err(format!(
            "bundle {} names no namespace, so whether this selector reaches where it lands \
             cannot be decided from the render",
            bundle.id
        ));
    };
    let mut labels = vec![(NAME_LABEL.to_string(), ns.to_string())];
    match namespaces.get(ns) {
        Some(object) => labels.extend(
            object
                .labels
                .iter()
                .filter(|(k, _)| k != NAME_LABEL)
                .cloned(),
        ),
        // Without the Namespace object only its name label is known.
        None if selector.keys().all(|k| k == NAME_LABEL) => {}
        None => {
            return Err(format!(
                "the render holds no Namespace `{ns}`, so whether this selector reaches it \
                 cannot be decided"
            ));
        }
    }
    selector
        .selects(&labels)
        .ok_or_else(|| "the selector has an operator Kubernetes does not know".to_string())
}

fn controller_writes(
    bundle: &Digest,
    writer: &Writer,
    namespaces: &Map<&str, &Writer>,
    emit: &mut Emit,
) {
    let WriterKind::Controller(controller) = writer.kind else {
        return;
    };
    let Some((index, planned)) = planned_entry(bundle, &writer.name) else {
        return;
    };
    let id = &bundle.id;
    let name = &writer.name;
    let what = controller.describe();
    let how = if writer.generated {
        ", and it synchronizes: it rewrites the Secret whenever it changes"
    } else {
        ""
    };
    let finding = match reaches(writer, bundle, namespaces) {
        Ok(false) => return,
        Ok(true) => emit.add(
            "writer-rendered",
            writer.loc,
            format!(
                "this {what} makes its controller write the Secret `{name}`, which bundle {id} \
                 plans (plan.json `secrets[{index}]`){how}: two writers of one Secret, and the \
                 generated value is replaced or fought over (ADR-072 points 2 and 8). Remove it, \
                 or make it write a Secret no bundle plans"
            ),
            Some(&writer.object),
            Some(id),
        ),
        Err(why) => {
            let finding = emit.add(
                "writer-rendered",
                writer.loc,
                format!(
                    "this {what} writes the Secret `{name}`, which bundle {id} plans (plan.json \
                     `secrets[{index}]`), in the namespaces it selects; {why}. Check that it \
                     cannot reach the bundle's namespace, or make it write another Secret"
                ),
                Some(&writer.object),
                Some(id),
            );
            finding.severity = Severity::Warning;
            finding
        }
    };
    if let Some(target) = writer.target {
        finding.label(target, "the Secret it writes");
    }
    if let Some(loc) = planned.loc {
        finding.label(loc, "planned here");
    }
}

/// A Kyverno clone list that copies Secrets into the bundle's namespace: it writes a planned
/// Secret when its source namespace holds one of that name that its selector matches. The
/// render decides it only where it holds that Secret; elsewhere the finding is a warning.
fn cloned(bundle: &Digest, writer: &Writer, secrets: &Map<&str, Vec<&Writer>>, emit: &mut Emit) {
    if !may_meet(writer.namespace.as_deref(), bundle.namespace.as_deref()) {
        return;
    }
    let id = &bundle.id;
    let from = writer.name.as_str();
    let selector = writer.selector.clone().unwrap_or_default();
    let how = if writer.generated {
        ", and it synchronizes: it rewrites the copy whenever the source changes"
    } else {
        ""
    };
    let mut undecided = Vec::new();
    for (index, planned) in bundle.secrets.iter().enumerate() {
        let held: Vec<&&Writer> = secrets
            .get(planned.name.as_str())
            .into_iter()
            .flatten()
            .filter(|s| !from.is_empty() && s.namespace.as_deref() == Some(from))
            .collect();
        let verdicts: Vec<Option<bool>> =
            held.iter().map(|s| selector.selects(&s.labels)).collect();
        if let Some(source) = held
            .iter()
            .zip(&verdicts)
            .find(|(_, v)| **v == Some(true))
            .map(|(s, _)| s)
        {
            let name = &planned.name;
            let finding = emit.add(
                "writer-rendered",
                writer.loc,
                format!(
                    "this Kyverno generate rule's cloneList copies the Secret `{name}` of \
                     namespace `{from}` into the namespace of bundle {id}, which plans it \
                     (plan.json `secrets[{index}]`){how}: two writers of one Secret, and the \
                     generated value is replaced (ADR-072 points 2 and 8). Make the selector \
                     leave it out, or remove the cloneList"
                ),
                Some(&writer.object),
                Some(id),
            );
            finding.label(source.loc, "the Secret it copies");
            if let Some(loc) = planned.loc {
                finding.label(loc, "planned here");
            }
        } else if held.is_empty() || verdicts.contains(&None) {
            undecided.push(format!("`{}`", planned.name));
        }
    }
    if undecided.is_empty() {
        return;
    }
    let source = if from.is_empty() {
        "a namespace a variable gives".to_string()
    } else {
        format!("namespace `{from}`")
    };
    let finding = emit.add(
        "writer-rendered",
        writer.loc,
        format!(
            "this Kyverno generate rule's cloneList copies the Secrets of {source} that its \
             selector matches into the namespace of bundle {id}, under their own names{how}; \
             the render does not hold the source Secrets named like the planned {}, so whether \
             it writes one of them cannot be decided (ADR-072 points 2 and 8). Make the \
             selector exclude the planned Secrets, or keep the cloneList out of the bundle's \
             namespace",
            undecided.join(", ")
        ),
        Some(&writer.object),
        Some(id),
    );
    finding.severity = Severity::Warning;
    if let Some(target) = writer.target {
        finding.label(target, "the selector");
    }
}

/// Two bundles that plan one Secret where their namespaces may meet: two Jobs write it.
fn shared_secrets(by_secret: &Map<&str, Vec<&Digest>>, emit: &mut Emit) {
    // A name one bundle plans meets no other: only shared names are sorted and walked (a
    // render plans thousands of names, nearly all once).
    let mut names: Vec<&&str> = by_secret
        .iter()
        .filter(|(_, bundles)| bundles.len() > 1)
        .map(|(name, _)| name)
        .collect();
    names.sort();
    for name in names {
        // In the order of their bundles' places, not of when each bundle was complete, so a
        // streamed run names the same bundle "later" as a kept one.
        let mut bundles = named(by_secret, name);
        bundles.sort_by_key(|b| b.anchor);
        for (i, later) in bundles.iter().enumerate() {
            let Some(first) = bundles[..i].iter().find(|b| {
                b.id != later.id && may_meet(b.namespace.as_deref(), later.namespace.as_deref())
            }) else {
                continue;
            };
            let Some((index, planned)) = later
                .secrets
                .iter()
                .enumerate()
                .find(|(_, s)| s.name == **name)
            else {
                continue;
            };
            let finding = emit.add(
                "plan-shared-secret",
                planned.loc.unwrap_or(later.anchor),
                format!(
                    "bundle {} plans the Secret `{name}` (plan.json `secrets[{index}]`), and \
                     bundle {} plans it too: two Jobs create and patch one Secret, and each \
                     takes the other's value for its own (ADR-072 point 2). Give each bundle its \
                     own Secrets",
                    later.id, first.id
                ),
                None,
                Some(&later.id),
            );
            let other = first
                .secrets
                .iter()
                .find(|s| s.name == **name)
                .and_then(|s| s.loc)
                .unwrap_or(first.anchor);
            finding.label(other, "planned here too");
        }
    }
}

/// Two bundles that render a Job of one name where their namespaces may meet: the API server
/// holds one object, so one bundle's Job replaces the other's, or Argo CD reports a resource
/// that two sources render.
fn shared_jobs(digests: &[Digest], emit: &mut Emit) {
    let mut by_job: Map<&str, Vec<(&Digest, At)>> = Map::default();
    for bundle in digests {
        if let Some((name, loc)) = &bundle.job {
            by_job.entry(name).or_default().push((bundle, *loc));
        }
    }
    // As in `shared_secrets`: a Job name one bundle renders is never shared.
    let mut names: Vec<&&str> = by_job
        .iter()
        .filter(|(_, jobs)| jobs.len() > 1)
        .map(|(name, _)| name)
        .collect();
    names.sort();
    for name in names {
        let mut jobs = by_job[*name].clone();
        // In file order, whatever order the bundles were completed in.
        jobs.sort_by_key(|(_, loc)| *loc);
        for (i, (later, loc)) in jobs.iter().enumerate() {
            let Some((first, first_loc)) = jobs[..i].iter().find(|(b, _)| {
                b.id != later.id && may_meet(b.namespace.as_deref(), later.namespace.as_deref())
            }) else {
                continue;
            };
            emit.add(
                "plan-shared-secret",
                *loc,
                format!(
                    "bundle {} renders the Job `{name}`, and bundle {} renders a Job of that name \
                     in the same namespace: the API server keeps one, so one bundle's Job runs \
                     the other's plan, or neither runs its own (ADR-072 points 1 and 2). Name \
                     each bundle's Job `<owner[:42]>-credentials-<h8>` from its own plan, \
                     program and image",
                    later.id, first.id
                ),
                Some(&ObjectRef {
                    kind: "Job".to_string(),
                    namespace: later.namespace.clone(),
                    name: name.to_string(),
                }),
                Some(&later.id),
            )
            .label(*first_loc, "the other bundle's Job");
        }
    }
}

fn retired_generator(bundle: &Digest, writer: &Writer, cluster: bool, emit: &mut Emit) {
    // A ClusterGenerator has no namespace; the Job deletes `passwords` in its own.
    if !cluster && !may_meet(writer.namespace.as_deref(), bundle.namespace.as_deref()) {
        return;
    }
    let Some((index, retired)) = bundle
        .generators
        .iter()
        .enumerate()
        .find(|(_, g)| g.name == writer.name)
    else {
        return;
    };
    let id = &bundle.id;
    let what = if cluster {
        "the ClusterGenerator wrapping a Password"
    } else {
        "the Password generator"
    };
    let finding = emit.add(
        "generator-rendered",
        writer.loc,
        format!(
            "{what} `{}` is still rendered, but bundle {id} retires it (plan.json \
             `retiredGenerators[{index}]`): the Job deletes it and Argo CD creates it again on \
             every sync (ADR-072 point 3). Remove it from the render",
            writer.name
        ),
        Some(&writer.object),
        Some(id),
    );
    if let Some(loc) = retired.loc {
        finding.label(loc, "retired here");
    }
}

/// How a subject of a binding names the bundle's ServiceAccount, if it does: as a
/// ServiceAccount (a subject without a namespace is a RoleBinding's own; a ClusterRoleBinding
/// has none, so such a subject binds nothing), or as the User name RBAC gives it.
fn names_account(subject: &Subject, writer: &Writer, bundle: &Digest) -> Option<String> {
    let cluster = writer.kind == WriterKind::ClusterRoleBinding;
    let account = &bundle.account;
    match subject.kind.as_str() {
        "ServiceAccount" => {
            let namespace = subject.namespace.as_deref().or(if cluster {
                None
            } else {
                writer.namespace.as_deref()
            });
            (subject.name == *account
                && !(cluster && namespace.is_none())
                && may_meet(namespace, bundle.namespace.as_deref()))
            .then(|| format!("binds the credentials ServiceAccount `{account}`"))
        }
        // RBAC authorizes a ServiceAccount's requests as this user name too.
        "User" => {
            let (namespace, name) = subject
                .name
                .strip_prefix("system:serviceaccount:")?
                .split_once(':')?;
            (name == account && may_meet(Some(namespace), bundle.namespace.as_deref())).then(|| {
                format!(
                    "binds the user `{}`, which is how RBAC names the credentials \
                     ServiceAccount `{account}`",
                    subject.name
                )
            })
        }
        _ => None,
    }
}

/// The account a subject names, by either form, for the index of bundles by account.
fn account_named(subject: &Subject) -> Option<&str> {
    match subject.kind.as_str() {
        "ServiceAccount" => Some(&subject.name),
        "User" => subject
            .name
            .strip_prefix("system:serviceaccount:")?
            .split_once(':')
            .map(|(_, name)| name),
        _ => None,
    }
}

/// Whether a RoleBinding grants the bundle's own Role, where the bundle's namespace may be.
fn grants_role(writer: &Writer, bundle: &Digest) -> bool {
    writer.role.as_deref() == Some(bundle.role.as_str())
        && may_meet(writer.namespace.as_deref(), bundle.namespace.as_deref())
}

fn binding_kind(writer: &Writer) -> &'static str {
    if writer.kind == WriterKind::ClusterRoleBinding {
        "ClusterRoleBinding"
    } else {
        "RoleBinding"
    }
}

fn extra_binding(bundle: &Digest, writer: &Writer, emit: &mut Emit) {
    let id = &bundle.id;
    let account = &bundle.account;
    for subject in &writer.subjects {
        let why = match subject.kind.as_str() {
            // A group given the credentials Role itself is `identity-reused`'s.
            "Group"
                if holds_account(&subject.name, bundle.namespace.as_deref())
                    && !grants_role(writer, bundle) =>
            {
                format!(
                    "binds the group `{}`, which holds the credentials ServiceAccount `{account}`",
                    subject.name
                )
            }
            _ => match names_account(subject, writer, bundle) {
                Some(why) => why,
                None => continue,
            },
        };
        emit.add(
            "rbac-extra-binding",
            subject.loc,
            format!(
                "this {} {why} of bundle {id}: it gets rights beyond its Role's (ADR-072 point \
                 5). Remove the subject; the credentials ServiceAccount is bound by its own \
                 RoleBinding only",
                binding_kind(writer)
            ),
            Some(&writer.object),
            Some(id),
        )
        .label(bundle.anchor, "the bundle");
    }
}

/// Another RoleBinding of the credentials Role: every subject but the ServiceAccount itself
/// (which `rbac-extra-binding` reports) borrows the Job's rights.
fn granted_role(bundle: &Digest, writer: &Writer, emit: &mut Emit) {
    if !grants_role(writer, bundle) {
        return;
    }
    let id = &bundle.id;
    for subject in &writer.subjects {
        if names_account(subject, writer, bundle).is_some() {
            continue;
        }
        emit.add(
            "identity-reused",
            subject.loc,
            format!(
                "this RoleBinding grants the credentials Role `{}` of bundle {id} to the {} \
                 `{}`: it can create Secrets and get and patch the planned ones, the rights \
                 that are the credentials Job's alone (ADR-072 point 5). Remove the subject, or \
                 bind a Role of its own",
                bundle.role, subject.kind, subject.name
            ),
            Some(&writer.object),
            Some(id),
        )
        .label(bundle.anchor, "the bundle");
    }
}

/// A workload that runs as the credentials ServiceAccount, or a token Secret issued for it.
fn borrowed_identity(bundle: &Digest, writer: &Writer, emit: &mut Emit) {
    if !may_meet(writer.namespace.as_deref(), bundle.namespace.as_deref()) {
        return;
    }
    let id = &bundle.id;
    let account = &bundle.account;
    let message = if writer.kind == WriterKind::Token {
        format!(
            "this Secret holds a long-lived token of `{account}`, the ServiceAccount of the \
             credentials Job of bundle {id}: whoever reads it has the Job's rights, to create Secrets and \
             get and patch the planned ones (ADR-072 point 5). Remove it; the Job needs no token \
             Secret"
        )
    } else {
        format!(
            "this {} runs as `{account}`, the ServiceAccount of the credentials Job of \
             bundle {id}: its pods can create Secrets and get and patch the planned ones, rights that are \
             the Job's alone (ADR-072 point 5). Give it a ServiceAccount of its own",
            writer.object.kind
        )
    };
    emit.add(
        "identity-reused",
        writer.loc,
        message,
        Some(&writer.object),
        Some(id),
    )
    .label(bundle.anchor, "the bundle");
}
