//! The object rules compiled: the CEL of every object rule and match condition of the catalog,
//! the profiles that say which programs an object of each resource can need, and the verdicts
//! remembered by what each program reads of an object (the members of a large render differ
//! mostly in names, which few programs read).

use crate::lint::Options;
use crate::lint::catalog::{Catalog, RESOURCES, Resource, Validation};
use crate::lint::cel::reads::{self, Pattern};
use crate::lint::cel::{Cel, Compiled, RuleSet, Verdict};
use crate::lint::checks::Emit;
use crate::lint::verdicts::{ObjectVerdicts, VerdictCache, Verdicts};
use crate::load::locate::span_for;
use crate::load::source::Source;
use crate::load::yaml::{Node, Span};
use crate::model::ObjectRef;
use crate::model::bundle::MemberKind;
use crate::model::object::Object;
use std::collections::HashMap;

/// The condition that says whether an object belongs to a bundle.
pub const MEMBER_CONDITION: &str = "credentials-member";

pub(crate) struct ObjectRule {
    pub(crate) id: &'static str,
    resources: &'static [&'static Resource],
    pub(crate) condition: Option<&'static str>,
    /// Each validation with its slot in the verdict cache.
    validations: Vec<(Compiled, &'static Validation, usize)>,
}

/// The compiled rules and what their verdicts are remembered by.
pub struct Programs {
    cel: Cel,
    pub(crate) rules: Vec<ObjectRule>,
    rule_set: RuleSet,
    /// Match conditions with their slot in the verdict cache.
    conditions: HashMap<&'static str, (Compiled, usize)>,
    /// Verdicts by the projection of the object each program can observe, one per program.
    pub(crate) verdicts: Vec<VerdictCache>,
    /// Per resource (as in `RESOURCES`), the programs its objects can need.
    pub(crate) profiles: Vec<Profile>,
    /// Schema verdicts (clean or not) by the shape of the object (`schema::shape`).
    shapes: VerdictCache<bool>,
}

/// The programs that can run on objects of one resource.
pub(crate) struct Profile {
    pub(crate) resource: &'static Resource,
    /// The rules for the resource, by index in `Engine::rules`.
    pub(crate) rules: Vec<usize>,
    /// What the member condition, the rules' conditions and their validations read, together.
    pub(crate) pattern: Pattern,
    /// All the verdicts an object needed, by its key on `pattern`.
    pub(crate) verdicts: VerdictCache<Verdicts>,
}

impl Programs {
    pub(crate) fn compile(
        catalog: &'static Catalog,
        options: &Options,
    ) -> Result<Programs, String> {
        let cel = Cel::new();
        let mut rule_set = RuleSet::default();
        let mut slots = 0;
        let mut conditions = HashMap::new();
        for (name, text) in &catalog.conditions {
            let program = cel
                .compile(text)
                .map_err(|e| format!("condition {name}: {e}"))?;
            conditions.insert(name.as_str(), (rule_set.prepare(program, text), slots));
            slots += 1;
        }
        let mut rules = Vec::new();
        for rule in &catalog.rules {
            let Some(object) = &rule.object else { continue };
            // The configured image is a constant the `job-image-pinned` rule reads as a variable.
            let image = options.credentials_image.as_deref().unwrap_or("");
            let texts: Vec<&str> = object
                .validations
                .iter()
                .map(|v| v.expression.as_str())
                .collect();
            let compiled = rule_set
                .add(
                    &cel,
                    &object.variables,
                    &[("credentialsImage", image)],
                    &texts,
                )
                .map_err(|e| format!("{}: {e}", rule.id))?;
            rules.push(ObjectRule {
                id: &rule.id,
                resources: &object.resources,
                condition: object.condition.as_deref(),
                validations: compiled
                    .validations
                    .into_iter()
                    .zip(&object.validations)
                    .map(|(c, v)| {
                        slots += 1;
                        (c, v, slots - 1)
                    })
                    .collect(),
            });
        }
        let verdicts = (0..slots).map(|_| VerdictCache::default()).collect();
        let profiles = RESOURCES
            .iter()
            .map(|resource| {
                let ids: Vec<usize> = (0..rules.len())
                    .filter(|&i| rules[i].resources.contains(&resource))
                    .collect();
                let member = MemberKind::of(resource.kind).map(|_| MEMBER_CONDITION);
                let conditions = member
                    .into_iter()
                    .chain(ids.iter().filter_map(|&i| rules[i].condition))
                    .filter_map(|name| conditions.get(name))
                    .map(|(c, _)| &c.pattern);
                let validations = ids
                    .iter()
                    .flat_map(|&i| rules[i].validations.iter().map(|(c, _, _)| &c.pattern));
                Profile {
                    resource,
                    pattern: Pattern::union(conditions.chain(validations)),
                    rules: ids,
                    verdicts: VerdictCache::default(),
                }
            })
            .collect();
        Ok(Programs {
            cel,
            rules,
            rule_set,
            conditions,
            verdicts,
            profiles,
            shapes: VerdictCache::default(),
        })
    }

    /// The verdict of `compiled` on `root`: from the cache when an object with the same
    /// projection was judged before, else evaluated in `bound`, the object's own context (made
    /// on first need and shared by its rules).
    fn decide(
        &self,
        compiled: &Compiled,
        slot: usize,
        root: &Node,
        bound: &mut Option<crate::lint::cel::Bound>,
    ) -> Verdict {
        self.verdicts[slot].get_or(
            |key| reads::key(root, &compiled.pattern, key),
            || match bound {
                Some(bound) => {
                    self.rule_set.bind(bound, &compiled.needs);
                    bound.check(&compiled.program)
                }
                // No context for the whole object yet: judge the part the program observes,
                // which for a match condition is a name or two, not the whole object.
                None => {
                    let mut pruned = self.cel.bind(&reads::prune(root, &compiled.pattern));
                    self.rule_set.bind(&mut pruned, &compiled.needs);
                    pruned.check(&compiled.program)
                }
            },
        )
    }
}

impl Programs {
    /// The schema check, done once per shape of object: the members of a clean render differ in
    /// names, which the check does not read.
    pub(crate) fn schema_check(&self, obj: &Object) -> Vec<crate::lint::schema::SchemaIssue> {
        let check = || crate::lint::schema::check(obj.root, obj.api_version, obj.kind);
        if !crate::lint::schema::has_shape(obj.root) {
            return check();
        }
        let mut found = None;
        let clean = self.shapes.get_or(
            |key| crate::lint::schema::shape(obj.root, obj.api_version, obj.kind, key),
            || {
                let issues = check();
                let clean = issues.is_empty();
                found = Some(issues);
                clean
            },
        );
        match found {
            Some(issues) => issues,
            None if clean => Vec::new(),
            // Known to fail: the issues carry this object's places and words.
            None => check(),
        }
    }

    /// Whether the named match condition holds for `obj`.
    pub(crate) fn holds(
        &self,
        name: &str,
        obj: &Object,
        bound: &mut Option<crate::lint::cel::Bound>,
        verdicts: &mut ObjectVerdicts,
    ) -> bool {
        self.conditions.get(name).is_some_and(|(compiled, slot)| {
            verdicts.get(*slot, || self.decide(compiled, *slot, obj.root, bound)) == Verdict::Pass
        })
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn object_rule(
        &self,
        rule: &ObjectRule,
        obj: &Object,
        bound: &mut Option<crate::lint::cel::Bound>,
        verdicts: &mut ObjectVerdicts,
        source: &Source,
        emit: &mut Emit,
        reference: &ObjectRef,
        bundle: Option<&str>,
        admitted: bool,
    ) {
        for (compiled, validation, slot) in &rule.validations {
            let verdict = verdicts.get(*slot, || self.decide(compiled, *slot, obj.root, bound));
            if verdict == Verdict::Pass || (!admitted && matches!(verdict, Verdict::Error(_))) {
                continue;
            }
            // A denial is located in the object's own context, with its variables bound.
            let bound = bound.get_or_insert_with(|| self.cel.bind(obj.root));
            self.rule_set.bind(bound, &compiled.needs);
            let program = &compiled.program;
            let mut spans: Vec<(Span, Option<String>)> = bound
                .blame(program, obj.root, &self.rule_set)
                .iter()
                .map(|path| {
                    let span = span_for(obj.root, path);
                    let reach = crate::load::locate::reach(obj.root, path);
                    let value = reach
                        .complete
                        .then(|| reach.node.display_for_message())
                        .flatten();
                    (span, value)
                })
                .collect();
            spans.dedup_by(|a, b| a.0 == b.0);
            if spans.is_empty() {
                spans.push((obj.anchor().span, None));
            }
            // A detail states why the node fails; when the rule could not be evaluated, that
            // was never established, so only the message and the error are shown.
            let detail = validation
                .detail
                .as_ref()
                .filter(|_| verdict == Verdict::Deny);
            for (span, value) in spans {
                let mut message = match (detail, value) {
                    (Some(detail), Some(value)) => {
                        format!(
                            "{}. {}",
                            detail.replace("{value}", &value),
                            validation.message
                        )
                    }
                    (Some(detail), None) if !detail.contains("{value}") => {
                        format!("{detail}. {}", validation.message)
                    }
                    _ => validation.message.clone(),
                };
                if let Verdict::Error(e) = &verdict {
                    message.push_str(&format!(" (the rule could not be evaluated here: {e})"));
                }
                emit.add(rule.id, source.loc(span), message, Some(reference), bundle);
            }
        }
    }
}
