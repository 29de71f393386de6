//! The object rules decided in Rust, in a table keyed by the kind of bundle member they read:
//! plan.json, the create.py block and its program on the ConfigMap, the RoleBinding's wiring.
//! Each check sees one member and writes its findings and the facts the bundle needs.

use super::{Emit, plan, runtime, text, wiring};
use crate::load::source::Source;
use crate::load::yaml::Span;
use crate::model::ObjectRef;
use crate::model::bundle::{self, MemberKind, Plan};
use crate::model::object::Object;

/// A bundle member as the checks see it.
pub struct MemberObject<'a, 't> {
    pub obj: &'a Object<'a, 't>,
    pub source: &'a Source<'t>,
    /// The owner its names or references imply (empty where only references link it).
    pub owner: &'a str,
    pub reference: &'a ObjectRef,
    pub bundle: Option<&'a str>,
}

impl MemberObject<'_, '_> {
    fn add(&self, emit: &mut Emit, rule: &str, span: Span, message: impl Into<String>) {
        emit.add(
            rule,
            self.source.loc(span),
            message,
            Some(self.reference),
            self.bundle,
        );
    }
}

/// What the checks leave besides findings.
#[derive(Default)]
pub struct ObjectFacts {
    /// plan.json as read, for the bundle rules.
    pub plan: Option<Plan>,
    /// The line where the create.py pragma belongs (`pragma-misplaced` spares it).
    pub header_line: Option<usize>,
    /// The program, analysed once the rest of its documents are linted.
    pub program: Option<runtime::Program>,
}

/// One Rust object rule: it reads a member and writes into `emit` and `facts`.
pub type ObjectCheck = fn(&MemberObject, &mut Emit, &mut ObjectFacts);

/// Every Rust object rule, by the kind of member it reads, in the order they run.
pub const OBJECT_CHECKS: &[(MemberKind, ObjectCheck)] = &[
    (MemberKind::ConfigMap, plan_json),
    (MemberKind::ConfigMap, script_block),
    (MemberKind::ConfigMap, program),
    (MemberKind::RoleBinding, rolebinding_wiring),
];

/// The checks for a member of `kind`.
pub fn checks_for(kind: MemberKind) -> impl Iterator<Item = ObjectCheck> {
    OBJECT_CHECKS
        .iter()
        .filter(move |(k, _)| *k == kind)
        .map(|(_, check)| *check)
}

/// `plan-invalid`, `plan-holds-value`: plan.json read against the contract.
fn plan_json(m: &MemberObject, emit: &mut Emit, facts: &mut ObjectFacts) {
    let (read, problems) = plan::check(m.obj.root, m.owner, m.source);
    facts.plan = read;
    for (rule, span, message) in problems {
        m.add(emit, rule, span, message);
    }
}

/// `script-not-literal`, `pragma-missing`: how create.py is written in the YAML.
fn script_block(m: &MemberObject, emit: &mut Emit, facts: &mut ObjectFacts) {
    let mut problems = Vec::new();
    facts.header_line = text::check_script(m.obj.root, m.source, &mut problems);
    for (rule, span, message) in problems {
        m.add(emit, rule, span, message);
    }
}

/// The static runtime rules on create.py, taken up after the rest of the documents.
fn program(m: &MemberObject, _: &mut Emit, facts: &mut ObjectFacts) {
    if let Some(script) = m.obj.root.at(&["data", "create.py"]) {
        facts.program = runtime::Program::of(script, m.source);
    }
}

/// `rolebinding-wiring`. A binding named otherwise is linked to its bundle later; its names are
/// then `bundle-naming`'s finding.
fn rolebinding_wiring(m: &MemberObject, emit: &mut Emit, _: &mut ObjectFacts) {
    if bundle::owner_of_name(m.obj.name.unwrap_or("")).is_none() {
        return;
    }
    for (span, message) in wiring::rolebinding(m.obj.root, m.owner, m.obj.namespace) {
        m.add(emit, "rolebinding-wiring", span, message);
    }
}
