//! Kyverno `ValidatingPolicy` resources (`policies.kyverno.io` v1, v1beta1, v1alpha1) evaluated
//! on manifests the way Kyverno evaluates them at admission, with credlint's CEL:
//!
//! 1. `matchConstraints`: resource rules by API group, version, resource and operation (a
//!    manifest is a CREATE), exclusions, object selector, namespace selector by namespace name;
//!    Pod policies also apply to pod controllers through Kyverno's autogen.
//! 2. `matchConditions` in order: one false skips the policy; an error (none false) denies under
//!    `failurePolicy: Fail` and skips under `Ignore`.
//! 3. `variables` in order, each readable by the later ones and by the validations.
//! 4. `validations`: false denies with `messageExpression`, else `message`, else the expression;
//!    an evaluation error denies under `failurePolicy: Fail`.
//!
//! `validationActions` with Deny make a denial an error; Audit or Warn only, a warning. A policy
//! credlint cannot evaluate faithfully is never evaluated half-way: it becomes a problem naming
//! the reason, located in the policy file (see [`support`]).

mod autogen;
mod matching;
pub mod report;
pub mod spec;
pub mod support;

use crate::lint::cel::{Bound, Cel, Program};
use crate::load::input::{self, InputError};
use crate::load::locate::Path;
use crate::load::yaml::{self, Node, Parsed, Span};
use crate::model::Severity;
use crate::model::object::Object;
pub use matching::{OPERATION, Target};
use spec::{Body, MatchResources, Problem, Reader};
use support::Place;

/// Whether objects of a kind live in a namespace (as credlint's resource table knows them).
pub fn namespaced(group: &str, kind: &str, has_namespace: bool) -> bool {
    matching::resource_of(group, kind, has_namespace).1
}

/// API versions of the ValidatingPolicy kind, newest first.
pub const VERSIONS: &[&str] = &[
    "policies.kyverno.io/v1",
    "policies.kyverno.io/v1beta1",
    "policies.kyverno.io/v1alpha1",
];

/// A policy file given with `--policy`.
#[derive(Clone, Debug)]
pub struct PolicyFile {
    /// The path as shown in findings.
    pub display: String,
    pub text: String,
}

/// A policy that cannot be evaluated faithfully: where, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Unsupported {
    /// Index into [`PolicySet::files`].
    pub file: usize,
    pub span: Span,
    /// The policy's name, when it has one.
    pub policy: Option<String>,
    pub reason: String,
}

struct CompiledValidation {
    expression: Program,
    message: Option<String>,
    message_expression: Option<Program>,
}

/// The policy as it applies to one family of resources (the policy itself, or an autogen rule).
struct Variant {
    constraints: MatchResources,
    conditions: Vec<(String, Program)>,
    variables: Vec<(String, Program)>,
    validations: Vec<CompiledValidation>,
    audits: Vec<(String, Program)>,
}

pub struct Policy {
    pub name: String,
    /// Index into [`PolicySet::files`].
    pub file: usize,
    pub span: Span,
    pub severity: Severity,
    fail_closed: bool,
    active: bool,
    variants: Vec<Variant>,
}

/// One reason a policy denies an object.
#[derive(Clone, Debug, PartialEq)]
pub struct Denial {
    pub message: String,
    /// The nodes of the object that make the validation false, when they can be found.
    pub paths: Vec<Path>,
    /// The validation could not be evaluated (denied under `failurePolicy: Fail`).
    pub error: bool,
}

/// An object prepared for evaluation by [`PolicySet::subject`].
pub struct Subject<'n, 'a> {
    node: &'n Node<'a>,
    /// The object before an UPDATE (`None`: a CREATE, `oldObject` is null).
    old: Option<&'n Node<'a>>,
    target: Target,
    bound: std::cell::OnceCell<(Bound, Bound, Bound)>,
}

/// What a policy does with an object.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// The policy does not select the object.
    NotMatched,
    Admitted,
    Denied(Vec<Denial>),
    /// Whether the policy applies depends on what the manifest does not say.
    Undecidable(String),
}

impl Verdict {
    pub fn denies(&self) -> bool {
        matches!(self, Verdict::Denied(_))
    }
}

pub struct PolicySet {
    pub files: Vec<PolicyFile>,
    pub policies: Vec<Policy>,
    pub unsupported: Vec<Unsupported>,
    /// Documents that are policies of some kind, supported or not.
    pub policy_documents: usize,
    cel: Cel,
}

impl std::fmt::Debug for PolicySet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicySet")
            .field("files", &self.files.len())
            .field("policies", &self.policies.len())
            .field("unsupported", &self.unsupported.len())
            .finish()
    }
}

impl PolicySet {
    /// Reads the policy files and folders named on the command line (folders walked as `check`
    /// walks them).
    pub fn load<P: AsRef<std::ffi::OsStr>>(paths: &[P]) -> Result<PolicySet, Vec<InputError>> {
        let collected = input::collect(paths, &[]);
        let found = collected.files;
        // A policy left out (a link out of the folder, a FIFO) would silently not apply.
        let mut errors = collected.errors;
        errors.extend(collected.warnings);
        let mut files = Vec::new();
        for file in &found {
            match input::read(file) {
                Ok(bytes) => files.push(PolicyFile {
                    display: file.display.clone(),
                    text: lossy(&bytes),
                }),
                Err(message) => errors.push(InputError {
                    path: file.display.clone(),
                    message,
                }),
            }
        }
        if errors.is_empty() {
            Ok(PolicySet::new(files))
        } else {
            Err(errors)
        }
    }

    pub fn new(files: Vec<PolicyFile>) -> PolicySet {
        let mut set = PolicySet {
            files: Vec::new(),
            policies: Vec::new(),
            unsupported: Vec::new(),
            policy_documents: 0,
            cel: Cel::new(),
        };
        for (index, file) in files.iter().enumerate() {
            set.read_file(index, &file.text);
        }
        set.files = files;
        set
    }

    fn read_file(&mut self, file: usize, text: &str) {
        for parsed in yaml::parse(text) {
            let doc = match parsed {
                Parsed::Document(doc) => doc,
                Parsed::Error(e) | Parsed::Unread(e) => {
                    self.policy_documents += 1;
                    self.unsupported.push(Unsupported {
                        file,
                        span: e.span,
                        policy: None,
                        reason: format!("the document does not parse: {}", e.message),
                    });
                    continue;
                }
            };
            let mut objects = Vec::new();
            crate::model::object::objects(&doc.root, &mut objects);
            for obj in objects {
                self.read_document(file, &obj);
            }
        }
    }

    fn read_document(&mut self, file: usize, obj: &Object) {
        let group = obj.group();
        let is_policy_kind = obj.kind.ends_with("Policy") || obj.kind.ends_with("PolicyBinding");
        let policy_group = matches!(
            group,
            "kyverno.io" | "policies.kyverno.io" | "admissionregistration.k8s.io"
        );
        if !is_policy_kind && !policy_group {
            return;
        }
        self.policy_documents += 1;
        let anchor = obj.anchor().span;
        let name = obj.name.map(str::to_string);
        let unsupported = |reason: String| Unsupported {
            file,
            span: anchor,
            policy: name.clone(),
            reason,
        };
        if obj.kind != "ValidatingPolicy" {
            let reason = format!(
                "a {} ({}) is not a Kyverno ValidatingPolicy, the one kind `check --policy` evaluates",
                obj.kind, obj.api_version
            );
            self.unsupported.push(unsupported(reason));
            return;
        }
        if !VERSIONS.contains(&obj.api_version) {
            let reason = format!(
                "apiVersion `{}` is not one credlint knows for a ValidatingPolicy ({})",
                obj.api_version,
                VERSIONS.join(", ")
            );
            self.unsupported.push(unsupported(reason));
            return;
        }
        let Some(name) = obj.name.filter(|n| !n.is_empty()) else {
            self.unsupported
                .push(unsupported("the policy has no metadata.name".into()));
            return;
        };
        let mut reader = Reader {
            problems: Vec::new(),
        };
        let raw = match obj.root.get("spec") {
            Some(spec) => spec::read(spec, &mut reader),
            None => {
                self.unsupported
                    .push(unsupported("the policy has no spec".into()));
                return;
            }
        };
        if raw.body.constraints.is_none() {
            reader.problems.push(Problem {
                span: anchor,
                reason: "the policy has no spec.matchConstraints, which Kyverno requires".into(),
            });
        }
        if let Some(m) = &raw.body.constraints
            && !matching::namespace_selector_supported(&m.namespace_selector)
        {
            reader.problems.push(Problem {
                span: anchor,
                reason: format!(
                    "the namespace selector reads namespace labels other than `{}`, which live in the cluster",
                    matching::NAMESPACE_NAME_LABEL
                ),
            });
        }
        let mut variants = Vec::new();
        let mut bodies = vec![raw.body.clone()];
        bodies.extend(autogen::variants(&raw).into_iter().map(|(_, b)| b));
        for body in &bodies {
            if let Some(variant) = self.compile(body, &mut reader) {
                variants.push(variant);
            }
        }
        if !reader.problems.is_empty() {
            // Several autogen variants repeat a problem of the policy's own text: report it once.
            reader.problems.dedup();
            let mut seen = Vec::new();
            for p in reader.problems {
                if seen.contains(&(p.span, p.reason.clone())) {
                    continue;
                }
                seen.push((p.span, p.reason.clone()));
                self.unsupported.push(Unsupported {
                    file,
                    span: p.span,
                    policy: Some(name.to_string()),
                    reason: p.reason,
                });
            }
            return;
        }
        let deny = raw.actions.is_empty() || raw.actions.iter().any(|a| a == "Deny");
        self.policies.push(Policy {
            name: name.to_string(),
            file,
            span: anchor,
            // Without admission the policy only reports, in background scans.
            severity: if deny && raw.admission {
                Severity::Error
            } else {
                Severity::Warning
            },
            fail_closed: raw.fail_closed,
            active: raw.admission || raw.background,
            variants,
        });
    }

    fn compile(&self, body: &Body, reader: &mut Reader) -> Option<Variant> {
        let mut failed = false;
        let mut compile = |text: &spec::Text, place: Place| -> Option<Program> {
            let program = match self.cel.compile_untrusted(&text.text) {
                Ok(p) => p,
                Err(e) => {
                    reader.problems.push(Problem {
                        span: text.span,
                        reason: format!("the expression does not compile: {}", first_line(&e)),
                    });
                    failed = true;
                    return None;
                }
            };
            if let Err(reason) = support::check(&program.usage(), place) {
                reader.problems.push(Problem {
                    span: text.span,
                    reason,
                });
                failed = true;
                return None;
            }
            Some(program)
        };
        let named =
            |list: &[(String, spec::Text)],
             place,
             compile: &mut dyn FnMut(&spec::Text, Place) -> Option<Program>| {
                list.iter()
                    .filter_map(|(n, t)| Some((n.clone(), compile(t, place)?)))
                    .collect::<Vec<_>>()
            };
        let conditions = named(&body.conditions, Place::MatchCondition, &mut compile);
        let variables = named(&body.variables, Place::Body, &mut compile);
        let audits = named(&body.audits, Place::Body, &mut compile);
        let mut validations = Vec::new();
        for v in &body.validations {
            let expression = compile(&v.expression, Place::Body);
            let message_expression = v
                .message_expression
                .as_ref()
                .and_then(|m| compile(m, Place::Body));
            if let Some(expression) = expression {
                validations.push(CompiledValidation {
                    expression,
                    message: v.message.clone(),
                    message_expression,
                });
            }
        }
        if failed {
            return None;
        }
        Some(Variant {
            constraints: body.constraints.clone().unwrap_or_default(),
            conditions,
            variables,
            validations,
            audits,
        })
    }

    /// An object made ready for every policy: its identity as a request, converted for CEL
    /// once (when a policy selects it).
    pub fn subject<'n, 'a>(&self, object: &'n Node<'a>) -> Option<Subject<'n, 'a>> {
        let obj = Object::from_node(object)?;
        Some(Subject {
            node: object,
            old: None,
            target: Target::of(&obj),
            bound: std::cell::OnceCell::new(),
        })
    }

    /// An UPDATE of `old` to `object`, as the API server hands it to admission: what a
    /// controller's or a user's change meets in the cluster.
    pub fn update<'n, 'a>(
        &self,
        old: &'n Node<'a>,
        object: &'n Node<'a>,
    ) -> Option<Subject<'n, 'a>> {
        let mut subject = self.subject(object)?;
        subject.old = Some(old);
        subject.target.operation = "UPDATE";
        Some(subject)
    }

    /// What policy `index` does with an object.
    pub fn decide(&self, index: usize, object: &Node) -> Verdict {
        match self.subject(object) {
            Some(subject) => self.decide_for(index, &subject),
            None => Verdict::NotMatched,
        }
    }

    /// What policy `index` does with a prepared object.
    pub fn decide_for(&self, index: usize, subject: &Subject) -> Verdict {
        let Some(policy) = self.policies.get(index) else {
            return Verdict::NotMatched;
        };
        if !policy.active {
            return Verdict::NotMatched;
        }
        let target = &subject.target;
        let mut variant = None;
        for v in &policy.variants {
            match matching::matches(&v.constraints, target) {
                Ok(true) => {
                    variant = Some(v);
                    break;
                }
                Ok(false) => {}
                Err(reason) => return Verdict::Undecidable(reason),
            }
        }
        let Some(variant) = variant else {
            return Verdict::NotMatched;
        };
        let object = subject.node;
        let (bound, request, old) = subject.bound.get_or_init(|| {
            (
                self.cel.bind(object),
                self.cel.bind_json(&request(target)),
                match subject.old {
                    Some(old) => self.cel.bind(old),
                    None => self.cel.bind_null(),
                },
            )
        });
        let globals = [("object", bound), ("oldObject", old), ("request", request)];

        // Match conditions see no variables.
        let bare = self.cel.activate_globals(&globals, &[], &[]);
        let mut condition_error = None;
        for (name, program) in &variant.conditions {
            match bare.check(program) {
                crate::lint::cel::Verdict::Pass => {}
                crate::lint::cel::Verdict::Deny => return Verdict::NotMatched,
                crate::lint::cel::Verdict::Error(e) => {
                    condition_error.get_or_insert((name.clone(), e));
                }
            }
        }
        if let Some((name, e)) = condition_error {
            if !policy.fail_closed {
                return Verdict::NotMatched;
            }
            return Verdict::Denied(vec![Denial {
                message: format!(
                    "the match condition `{name}` could not be evaluated ({e}), and the policy's failurePolicy is Fail"
                ),
                paths: Vec::new(),
                error: true,
            }]);
        }

        let activation = self.cel.activate_globals(&globals, &variant.variables, &[]);
        let mut denials = Vec::new();
        for v in &variant.validations {
            match activation.check(&v.expression) {
                crate::lint::cel::Verdict::Pass => {}
                crate::lint::cel::Verdict::Deny => {
                    let message = v
                        .message_expression
                        .as_ref()
                        .and_then(|m| activation.string(m).ok())
                        .filter(|m| usable_message(m))
                        .or_else(|| v.message.clone().filter(|m| !m.trim().is_empty()))
                        .unwrap_or_else(|| format!("failed expression: {}", v.expression.text()));
                    denials.push(Denial {
                        message,
                        paths: activation.blame(&v.expression, object),
                        error: false,
                    });
                }
                crate::lint::cel::Verdict::Error(e) if policy.fail_closed => denials.push(Denial {
                    message: format!(
                        "the expression `{}` could not be evaluated ({e}), and the policy's failurePolicy is Fail",
                        one_line(v.expression.text())
                    ),
                    paths: Vec::new(),
                    error: true,
                }),
                crate::lint::cel::Verdict::Error(_) => {}
            }
        }
        if policy.fail_closed {
            for (key, program) in &variant.audits {
                if let Err(e) = activation.string(program)
                    && !e.contains("not a string")
                {
                    denials.push(Denial {
                        message: format!(
                            "the audit annotation `{key}` could not be evaluated ({e}), and the policy's failurePolicy is Fail"
                        ),
                        paths: Vec::new(),
                        error: true,
                    });
                }
            }
        }
        if denials.is_empty() {
            Verdict::Admitted
        } else {
            Verdict::Denied(denials)
        }
    }
}

/// The text of a file, each byte that is not UTF-8 read as `?` (offsets stay those of the file,
/// as the reports that show it again expect).
fn lossy(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        out.extend(std::iter::repeat_n('?', chunk.invalid().len()));
    }
    out
}

/// A messageExpression result Kubernetes uses: not blank, one line, at most 5,000 characters.
fn usable_message(m: &str) -> bool {
    !m.trim().is_empty() && !m.contains('\n') && m.chars().count() <= 5000
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or("").trim().to_string()
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The admission request for creating the object.
fn request(t: &Target) -> serde_json::Value {
    let kind = serde_json::json!({"group": t.group, "version": t.version, "kind": t.kind});
    let resource =
        serde_json::json!({"group": t.group, "version": t.version, "resource": t.resource});
    serde_json::json!({
        "kind": kind,
        "resource": resource,
        "subResource": "",
        "requestKind": kind,
        "requestResource": resource,
        "requestSubResource": "",
        "name": t.name,
        "namespace": t.namespace.clone().unwrap_or_default(),
        "operation": t.operation,
        "dryRun": false,
    })
}

#[cfg(test)]
mod tests;
