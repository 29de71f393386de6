//! Owners and their five objects, assembled across every file given (bundle.md section 1).
//!
//! Each recognised object leaves a [`Member`]: its identity, where it is, and the few facts the
//! bundle rules need, with their locations already computed. Files' texts and trees are dropped
//! as soon as they are read, so a 4,000-bundle tree is held as facts, not as documents.

use crate::common::Map;
use crate::load::source::At;
use crate::model::{Finding, ObjectRef, bundle_id};
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MemberKind {
    ServiceAccount,
    Role,
    RoleBinding,
    ConfigMap,
    Job,
}

pub const MEMBER_KINDS: [MemberKind; 5] = [
    MemberKind::ServiceAccount,
    MemberKind::Role,
    MemberKind::RoleBinding,
    MemberKind::ConfigMap,
    MemberKind::Job,
];

impl MemberKind {
    pub fn of(kind: &str) -> Option<MemberKind> {
        Some(match kind {
            "ServiceAccount" => MemberKind::ServiceAccount,
            "Role" => MemberKind::Role,
            "RoleBinding" => MemberKind::RoleBinding,
            "ConfigMap" => MemberKind::ConfigMap,
            "Job" => MemberKind::Job,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            MemberKind::ServiceAccount => "ServiceAccount",
            MemberKind::Role => "Role",
            MemberKind::RoleBinding => "RoleBinding",
            MemberKind::ConfigMap => "ConfigMap",
            MemberKind::Job => "Job",
        }
    }
}

/// The suffix of the four named objects and of the Job's references.
pub const SUFFIX: &str = "-credentials";
/// The Job name keeps this many characters of the owner.
pub const OWNER_PREFIX_CHARS: usize = 42;

/// Who a member belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Owner {
    Known(String),
    /// A Job that names no ServiceAccount or ConfigMap of an owner: only its name's prefix
    /// (the owner cut to 42 characters) says whose it is.
    Prefix(String),
    /// A member whose name does not say whose it is: the references between members decide
    /// (the Job's ConfigMap, the ServiceAccount the Job runs as, the binding's subject, the
    /// Role the binding names), once every file is read.
    Linked,
}

#[derive(Clone, Debug)]
pub struct RoleRule {
    pub groups: Vec<String>,
    pub resources: Vec<String>,
    pub verbs: Vec<String>,
    /// `None` when the rule has no resourceNames.
    pub names: Option<Vec<String>>,
    /// Where each of `names` stands.
    pub name_locs: Vec<At>,
    pub loc: At,
    pub names_loc: Option<At>,
    pub verbs_loc: Option<At>,
}

/// plan.json, as far as the bundle rules need it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub kind: String,
    pub secrets: Vec<String>,
    pub generators: Vec<String>,
    pub pods: Vec<String>,
    /// Where each of `secrets` and of `generators` is planned, in the file.
    pub secret_locs: Vec<At>,
    pub generator_locs: Vec<At>,
}

/// A name a bundle plans, and where.
#[derive(Clone, Debug)]
pub struct Planned {
    pub name: String,
    pub loc: Option<At>,
}

/// What the one-writer checks need of a bundle once its members are dropped.
#[derive(Clone, Debug)]
pub struct Digest {
    pub id: String,
    pub namespace: Option<String>,
    pub secrets: Vec<Planned>,
    pub generators: Vec<Planned>,
    /// The ServiceAccount the Job runs as: the bundle's own.
    pub account: String,
    /// The bundle's Role: the rights no other subject may be granted.
    pub role: String,
    /// Its Job's name and where it stands: another bundle's Job of that name in the same
    /// namespace is the same object to the API server.
    pub job: Option<(String, At)>,
    /// The member findings about the whole bundle point at.
    pub anchor: At,
}

#[derive(Clone, Debug)]
pub struct ConfigMapFacts {
    pub plan: Option<Plan>,
    /// SHA-256 state after plan.json and create.py: the Job's image completes the hash.
    pub hash_state: Option<crate::common::sha256::Sha256State>,
    /// The decoded values, kept only when a command needs them (`simulate`).
    pub plan_text: Option<String>,
    pub script: Option<String>,
    pub script_loc: Option<At>,
    /// The other keys of `data` with their values, kept only with the texts above: a
    /// container's variable may take one.
    pub other_data: Vec<(String, String)>,
}

#[derive(Clone, Debug)]
pub struct Mount {
    pub volume: String,
    pub path: String,
    pub loc: At,
    /// `subPath` (or `subPathExpr`), and where.
    pub sub_path: Option<(String, At)>,
}

#[derive(Clone, Debug)]
pub struct Volume {
    pub name: String,
    pub config_map: Option<String>,
    pub loc: At,
    /// `items`, when the volume projects only some keys: each key, its mode and place.
    pub items: Option<(Vec<Item>, At)>,
    /// Where `optional: true` stands.
    pub optional: Option<At>,
    pub default_mode: Option<(i64, At)>,
}

/// One projected key of a ConfigMap volume: the key, its mode, where it stands.
pub type Item = (String, Option<i64>, At);

/// `automountServiceAccountToken` as written, and where.
pub type Automount = Option<(bool, At)>;

#[derive(Clone, Debug)]
pub struct JobFacts {
    pub name: String,
    /// Where missing pod fields are reported: the pod template's `spec` key.
    pub pod_loc: At,
    pub service_account: Option<(String, At)>,
    pub volumes: Vec<Volume>,
    /// The first container: the one that runs the program.
    pub container_loc: Option<At>,
    pub mounts: Vec<Mount>,
    /// `command` then `args`, and where they stand.
    pub command: Vec<String>,
    pub command_loc: Option<At>,
    pub image: Option<(String, At)>,
    pub automount: Automount,
    /// The pod sets an fsGroup: the ConfigMap's files then belong to that group.
    pub fs_group: bool,
    /// The first container's `runAsUser` and `runAsGroup`, its own or else the pod's (as
    /// Kubernetes resolves them); None where neither sets an integer.
    pub run_as_user: Option<i64>,
    pub run_as_group: Option<i64>,
    /// What the kubelet builds the first container's environment from.
    pub env: ContainerEnv,
}

/// The parts of a Job that decide its container's environment, as written: `env` and
/// `envFrom` of the first container, its resources, and the pod template's labels and
/// annotations (which `fieldRef` may read).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContainerEnv {
    pub env: Vec<EnvEntry>,
    pub env_from: Vec<EnvFromEntry>,
    /// `limits.cpu`, `requests.memory`, ...: each quantity as written.
    pub resources: Vec<(String, String)>,
    pub labels: Vec<(String, String)>,
    pub annotations: Vec<(String, String)>,
}

/// One `env` entry: the variable's name and where its value comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvEntry {
    pub name: String,
    pub source: EnvSource,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EnvSource {
    /// `value`, its `$(VAR)` references not yet expanded ("" where nothing is set).
    Value(String),
    /// `valueFrom.fieldRef.fieldPath`.
    Field(String),
    /// `valueFrom.resourceFieldRef`: the resource and its divisor, if any.
    Resource {
        resource: String,
        divisor: Option<String>,
    },
    /// `valueFrom.configMapKeyRef` or `secretKeyRef`.
    Key(ObjectKey),
    /// What no API server admits (why).
    Invalid(String),
}

/// A key of a ConfigMap or Secret that a variable takes its value from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectKey {
    pub secret: bool,
    pub name: String,
    pub key: String,
    pub optional: bool,
}

/// One `envFrom` entry: every key of a ConfigMap or Secret, behind `prefix`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvFromEntry {
    pub secret: bool,
    pub name: String,
    pub prefix: String,
    pub optional: bool,
}

/// What a RoleBinding links: the Role it names and the ServiceAccounts it binds (name and
/// namespace as written).
#[derive(Clone, Debug, Default)]
pub struct BindingFacts {
    pub role: Option<String>,
    pub accounts: Vec<(String, Option<String>)>,
    /// How many subjects it has, of any kind.
    pub subjects: usize,
}

#[derive(Clone, Debug)]
pub enum Facts {
    ServiceAccount(Automount),
    Role(Vec<RoleRule>),
    RoleBinding(BindingFacts),
    ConfigMap(Box<ConfigMapFacts>),
    Job(Box<JobFacts>),
}

#[derive(Clone, Debug)]
pub struct Member {
    pub kind: MemberKind,
    pub namespace: Option<String>,
    pub owner: Owner,
    /// The object's own name (its kind is `kind`, its namespace `namespace`).
    pub name: String,
    /// The object's name, where findings about the whole object point.
    pub loc: At,
    pub facts: Facts,
    /// `None` for a member recognised by itself (its structure, or its name and hook
    /// annotation). `Some` for a candidate that is a member only if its bundle proves real:
    /// its findings wait here until then, and are dropped with it otherwise.
    pub held: Option<Vec<Finding>>,
}

impl Member {
    /// The object a finding about this member names.
    pub fn object(&self) -> ObjectRef {
        ObjectRef {
            kind: self.kind.name().to_string(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
        }
    }
}

/// One owner's objects.
#[derive(Debug)]
pub struct Bundle {
    pub namespace: Option<String>,
    pub owner: String,
    /// Members of each kind, in file order (more than one is a duplicate).
    pub members: BTreeMap<MemberKind, Vec<Member>>,
}

impl Bundle {
    pub fn id(&self) -> String {
        bundle_id(self.namespace.as_deref(), &self.owner)
    }

    pub fn first(&self, kind: MemberKind) -> Option<&Member> {
        self.members.get(&kind).and_then(|m| m.first())
    }

    pub fn config_map(&self) -> Option<&ConfigMapFacts> {
        match &self.first(MemberKind::ConfigMap)?.facts {
            Facts::ConfigMap(cm) => Some(cm),
            _ => None,
        }
    }

    pub fn plan(&self) -> Option<&Plan> {
        self.config_map()?.plan.as_ref()
    }

    /// Whether the bundle is one: some member of it was recognised by itself. A bundle of
    /// candidates alone (an application's `ci-credentials` ServiceAccount) is none.
    pub fn is_real(&self) -> bool {
        self.members.values().flatten().any(|m| m.held.is_none())
    }

    /// The findings its candidates held, now that it is real.
    pub fn release(&mut self) -> Vec<Finding> {
        let id = self.id();
        let mut out = Vec::new();
        for m in self.members.values_mut().flatten() {
            for mut f in m.held.take().unwrap_or_default() {
                f.bundle = Some(id.clone());
                out.push(f);
            }
        }
        out
    }

    /// The name of its member of `kind`, else the name ADR-072 gives it.
    pub fn name_of(&self, kind: MemberKind) -> String {
        match self.first(kind) {
            Some(m) => m.name.clone(),
            None => format!("{}{SUFFIX}", self.owner),
        }
    }

    /// What the one-writer checks keep of the bundle.
    pub fn digest(&self) -> Option<Digest> {
        let anchor = self.anchor()?.loc;
        let planned = |names: &[String], locs: &[At]| -> Vec<Planned> {
            names
                .iter()
                .enumerate()
                .map(|(i, n)| Planned {
                    name: n.clone(),
                    loc: locs.get(i).copied(),
                })
                .collect()
        };
        let (secrets, generators) = match self.plan() {
            Some(p) => (
                planned(&p.secrets, &p.secret_locs),
                planned(&p.generators, &p.generator_locs),
            ),
            None => (Vec::new(), Vec::new()),
        };
        Some(Digest {
            id: self.id(),
            namespace: self.namespace.clone(),
            secrets,
            generators,
            account: self.name_of(MemberKind::ServiceAccount),
            role: self.name_of(MemberKind::Role),
            // Its first Job: a second one is `bundle-duplicate`'s, and a streamed run hands it
            // over after the bundle, so only the first is known in every mode.
            job: self.first(MemberKind::Job).map(|m| (m.name.clone(), m.loc)),
            anchor,
        })
    }

    /// The member that stands for the bundle when one of its objects is missing.
    pub fn anchor(&self) -> Option<&Member> {
        self.members
            .values()
            .flatten()
            .min_by(|a, b| a.loc.cmp(&b.loc))
    }
}

/// The owner a named object implies: `shop-sessions-credentials` belongs to `shop-sessions`.
pub fn owner_of_name(name: &str) -> Option<&str> {
    name.strip_suffix(SUFFIX).filter(|o| !o.is_empty())
}

/// The first 42 characters of an owner, as the Job name carries it.
pub fn owner_prefix(owner: &str) -> &str {
    match owner.char_indices().nth(OWNER_PREFIX_CHARS) {
        Some((i, _)) => &owner[..i],
        None => owner,
    }
}

/// Groups members into bundles keyed by namespace and owner, in a stable order. A Job known
/// only by its name's prefix joins the owner of its namespace whose first 42 characters match.
pub fn assemble(members: Vec<Member>) -> Vec<Bundle> {
    let mut assembler = Assembler::new(false);
    for m in members {
        assembler.add(m);
    }
    assembler.finish().bundles
}

type Key = (Option<String>, String);

enum Slot {
    Open(Bundle),
    /// A bundle handed back complete: where the first member of each kind stands, for a later
    /// duplicate.
    Done([Option<At>; 5]),
}

/// What adding a member did.
pub enum Added {
    /// The member waits for the rest of its bundle.
    Open,
    /// The member completed its bundle, handed over to be checked and dropped.
    Complete(Bundle),
    /// The member belongs to a bundle already handed over, which has one of its kind.
    Duplicate(LateDuplicate),
}

pub struct LateDuplicate {
    pub member: Member,
    pub first: At,
    pub bundle: String,
}

/// What is left when every file is read.
pub struct Finished {
    /// The bundles not handed over (incomplete ones; all of them when bundles are kept).
    pub bundles: Vec<Bundle>,
    pub duplicates: Vec<LateDuplicate>,
    /// Every bundle seen, handed over or not.
    pub count: usize,
}

/// Bundles built as files are read, so no list of every member is ever held beside them. In
/// compact mode a bundle is handed back as soon as it has all five kinds, and only where its
/// first members stand is kept: a 4,000-bundle render is then held as locations, not facts.
pub struct Assembler {
    bundles: BTreeMap<Key, Slot>,
    /// Jobs known only by their name's prefix, placed once every owner is known.
    pending: Vec<Member>,
    /// Members whose references decide their bundle, placed once every file is read.
    linked: Vec<Member>,
    /// Which bundle a name refers to: a ConfigMap, the ServiceAccount a Job runs as (or a
    /// ServiceAccount member), the Role a binding names. Kept after a bundle is handed over,
    /// so a member linked to it later still finds it.
    /// A randomly seeded hash ([`Map`]), not the word hash: the names are the input's, and a
    /// crafted set of them must not make the map quadratic.
    links: Map<(Option<String>, Link, String), Key>,
    compact: bool,
}

/// What a link names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Link {
    ConfigMap,
    ServiceAccount,
    Role,
}

/// The names a placed member lets others link to.
fn links_of(member: &Member) -> Vec<(Link, &str)> {
    match &member.facts {
        Facts::ConfigMap(_) => vec![(Link::ConfigMap, member.name.as_str())],
        Facts::ServiceAccount(_) => vec![(Link::ServiceAccount, member.name.as_str())],
        Facts::Job(job) => job
            .service_account
            .iter()
            .map(|(sa, _)| (Link::ServiceAccount, sa.as_str()))
            .collect(),
        Facts::RoleBinding(b) => b.role.iter().map(|r| (Link::Role, r.as_str())).collect(),
        Facts::Role(_) => Vec::new(),
    }
}

/// The names a linked member looks for, best first.
fn wanted(member: &Member) -> Vec<(Link, String)> {
    match &member.facts {
        Facts::Job(job) => job
            .volumes
            .iter()
            .filter_map(|v| v.config_map.clone())
            .map(|n| (Link::ConfigMap, n))
            .collect(),
        Facts::ServiceAccount(_) => vec![(Link::ServiceAccount, member.name.clone())],
        // A subject of another namespace is not the bundle's (that is `rbac-extra-binding`).
        Facts::RoleBinding(b) => b
            .accounts
            .iter()
            .filter(|(_, ns)| ns.is_none() || *ns == member.namespace)
            .map(|(n, _)| (Link::ServiceAccount, n.clone()))
            .collect(),
        Facts::Role(_) => vec![(Link::Role, member.name.clone())],
        Facts::ConfigMap(_) => Vec::new(),
    }
}

/// The order linked members are placed in: each links to one placed before it.
fn link_order(kind: MemberKind) -> u8 {
    match kind {
        MemberKind::ConfigMap => 0,
        MemberKind::Job => 1,
        MemberKind::ServiceAccount => 2,
        MemberKind::RoleBinding => 3,
        MemberKind::Role => 4,
    }
}

impl Assembler {
    pub fn new(compact: bool) -> Self {
        Assembler {
            bundles: BTreeMap::new(),
            pending: Vec::new(),
            linked: Vec::new(),
            links: Map::default(),
            compact,
        }
    }

    pub fn add(&mut self, member: Member) -> Added {
        match &member.owner {
            Owner::Known(owner) => {
                let key = (member.namespace.clone(), owner.clone());
                self.place(key, member)
            }
            Owner::Prefix(_) => {
                self.pending.push(member);
                Added::Open
            }
            Owner::Linked => {
                self.linked.push(member);
                Added::Open
            }
        }
    }

    /// [`place`](Self::place) once every file is read: the bundle stays open however complete
    /// it is (a late member may still be its duplicate), whatever the compact mode says.
    fn place_late(&mut self, key: Key, member: Member) -> Added {
        let compact = std::mem::replace(&mut self.compact, false);
        let added = self.place(key, member);
        self.compact = compact;
        added
    }

    fn place(&mut self, key: Key, member: Member) -> Added {
        for (link, name) in links_of(&member) {
            self.links
                .entry((member.namespace.clone(), link, name.to_string()))
                .or_insert_with(|| key.clone());
        }
        // The key is moved in, not copied: most members find their bundle there already.
        let entry = self.bundles.entry(key);
        if let std::collections::btree_map::Entry::Occupied(found) = &entry
            && let Slot::Done(firsts) = found.get()
        {
            return match firsts[kind_index(member.kind)] {
                Some(first) => Added::Duplicate(LateDuplicate {
                    member,
                    first,
                    bundle: bundle_id(found.key().0.as_deref(), &found.key().1),
                }),
                None => Added::Open,
            };
        }
        let slot = entry.or_insert_with_key(|key| {
            Slot::Open(Bundle {
                namespace: key.0.clone(),
                owner: key.1.clone(),
                members: BTreeMap::new(),
            })
        });
        match slot {
            // Taken above.
            Slot::Done(_) => Added::Open,
            Slot::Open(bundle) => {
                insert(bundle, member);
                let complete = MEMBER_KINDS.iter().all(|k| bundle.members.contains_key(k));
                if !(self.compact && complete) {
                    return Added::Open;
                }
                let mut firsts = [None; 5];
                for (kind, list) in &bundle.members {
                    firsts[kind_index(*kind)] = list.first().map(|m| m.loc);
                }
                match std::mem::replace(slot, Slot::Done(firsts)) {
                    Slot::Open(bundle) => Added::Complete(bundle),
                    Slot::Done(_) => Added::Open,
                }
            }
        }
    }

    pub fn finish(mut self) -> Finished {
        let mut duplicates = Vec::new();
        for m in std::mem::take(&mut self.pending) {
            let Owner::Prefix(prefix) = &m.owner else {
                continue;
            };
            let found = self
                .bundles
                .keys()
                .find(|(ns, owner)| *ns == m.namespace && owner_prefix(owner) == prefix)
                .cloned();
            let key = found.unwrap_or_else(|| (m.namespace.clone(), prefix.clone()));
            if let Added::Duplicate(d) = self.place_late(key, m) {
                duplicates.push(d);
            }
        }
        let mut linked = std::mem::take(&mut self.linked);
        linked.sort_by_key(|m| (link_order(m.kind), m.loc));
        for m in linked {
            let found = wanted(&m).into_iter().find_map(|(link, name)| {
                self.links.get(&(m.namespace.clone(), link, name)).cloned()
            });
            // Linked to no bundle: not a member, and its findings go with it.
            let Some(key) = found else { continue };
            if let Added::Duplicate(d) = self.place_late(key, m) {
                duplicates.push(d);
            }
        }
        let seen = self.bundles.len();
        let mut bundles: Vec<Bundle> = self
            .bundles
            .into_values()
            .filter_map(|slot| match slot {
                Slot::Open(b) => Some(b),
                Slot::Done(_) => None,
            })
            .collect();
        // Candidates alone make no bundle: their findings are dropped with them.
        let open = bundles.len();
        bundles.retain(Bundle::is_real);
        let count = seen - (open - bundles.len());
        for b in &mut bundles {
            for list in b.members.values_mut() {
                // Members placed once every file was read come after those placed on arrival,
                // as when the bundle is handed over complete: the first of a kind is the same
                // either way.
                list.sort_by_key(|x| (!matches!(x.owner, Owner::Known(_)), x.loc));
                list.shrink_to_fit();
            }
        }
        Finished {
            bundles,
            duplicates,
            count,
        }
    }
}

fn kind_index(kind: MemberKind) -> usize {
    MEMBER_KINDS.iter().position(|k| *k == kind).unwrap_or(0)
}

fn insert(bundle: &mut Bundle, member: Member) {
    // Nearly every kind has one member: a list sized for four would double the facts kept.
    bundle
        .members
        .entry(member.kind)
        .or_insert_with(|| Vec::with_capacity(1))
        .push(member);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_names() {
        assert_eq!(
            owner_of_name("shop-sessions-credentials"),
            Some("shop-sessions")
        );
        assert_eq!(owner_of_name("-credentials"), None);
        assert_eq!(owner_of_name("shop"), None);
        let long = "a".repeat(50);
        assert_eq!(owner_prefix(&long).len(), 42);
        assert_eq!(owner_prefix("short"), "short");
    }
}
