//! The rule catalog, embedded from `rules/`: one YAML file per rule (id, title, severity, scope,
//! ADR point, rationale, remediation; for object rules the CEL that decides them), plus
//! `rules/_match.yaml`, the named CEL conditions that say which objects a rule looks at.

use crate::load::yaml::{self, Node, Parsed};
use crate::model::{Scope, Severity};
use std::sync::OnceLock;

include!(concat!(env!("OUT_DIR"), "/rule_files.rs"));

/// A Kubernetes resource an object rule can match.
#[derive(Debug, PartialEq, Eq)]
pub struct Resource {
    pub plural: &'static str,
    pub group: &'static str,
    pub versions: &'static [&'static str],
    pub kind: &'static str,
}

pub const RESOURCES: &[Resource] = &[
    Resource {
        plural: "serviceaccounts",
        group: "",
        versions: &["v1"],
        kind: "ServiceAccount",
    },
    Resource {
        plural: "configmaps",
        group: "",
        versions: &["v1"],
        kind: "ConfigMap",
    },
    Resource {
        plural: "roles",
        group: "rbac.authorization.k8s.io",
        versions: &["v1"],
        kind: "Role",
    },
    Resource {
        plural: "rolebindings",
        group: "rbac.authorization.k8s.io",
        versions: &["v1"],
        kind: "RoleBinding",
    },
    Resource {
        plural: "jobs",
        group: "batch",
        versions: &["v1"],
        kind: "Job",
    },
    Resource {
        plural: "externalsecrets",
        group: "external-secrets.io",
        versions: &["v1", "v1beta1"],
        kind: "ExternalSecret",
    },
    Resource {
        plural: "clustersecretstores",
        group: "external-secrets.io",
        versions: &["v1", "v1beta1"],
        kind: "ClusterSecretStore",
    },
];

impl Resource {
    /// The resource an object is, from its apiVersion group and kind (any version: a version the
    /// API server does not serve is its problem, not a reason to skip the object).
    pub fn of(api_version: &str, kind: &str) -> Option<&'static Resource> {
        let group = crate::model::object::api_group(api_version);
        RESOURCES
            .iter()
            .find(|r| r.kind == kind && r.group == group)
    }

    pub fn by_plural(plural: &str) -> Option<&'static Resource> {
        RESOURCES.iter().find(|r| r.plural == plural)
    }
}

#[derive(Debug)]
pub struct Validation {
    pub expression: String,
    /// The policy's message: a sentence that stands alone.
    pub message: String,
    /// What the linter says about the located node, with `{value}` for its value.
    pub detail: Option<String>,
}

#[derive(Debug)]
pub struct ObjectRule {
    pub resources: Vec<&'static Resource>,
    /// Name of a condition in `_match.yaml`.
    pub condition: Option<String>,
    pub variables: Vec<(String, String)>,
    pub validations: Vec<Validation>,
}

#[derive(Debug)]
pub struct Rule {
    pub id: String,
    pub title: String,
    pub severity: Severity,
    pub scope: Scope,
    /// The ADR point the rule enforces, e.g. "ADR-072 Decision 5 (rights)".
    pub adr: String,
    pub rationale: String,
    pub remediation: String,
    /// The section of docs/bundle.md that states what the rule holds the bundle to (`"3"`),
    /// for the rules that check the bundle contract.
    pub contract: Option<String>,
    pub object: Option<ObjectRule>,
}

impl Rule {
    /// Where the rule is documented: `docs/rules.md#<id>` in the repository Cargo.toml names.
    pub fn doc_url(&self) -> String {
        format!(
            "{}/blob/main/{}",
            REPOSITORY.trim_end_matches('/'),
            self.doc_path()
        )
    }

    /// The rule's entry in the repository: `docs/rules.md#<id>`.
    pub fn doc_path(&self) -> String {
        format!("docs/rules.md#{}", self.id)
    }
}

/// The repository Cargo.toml's `repository` names, where the rule documentation lives.
pub const REPOSITORY: &str = env!("CARGO_PKG_REPOSITORY");

// A build without it would print rule addresses that lead nowhere.
const _: () = assert!(
    !REPOSITORY.is_empty(),
    "Cargo.toml must name the repository"
);

#[derive(Debug)]
pub struct Catalog {
    pub rules: Vec<Rule>,
    /// Named match conditions, in file order.
    pub conditions: Vec<(String, String)>,
}

impl Catalog {
    /// The embedded catalog, parsed once. The files are checked by the test suite, so a bad
    /// file cannot reach a release; should one anyway, the error names it.
    pub fn get() -> &'static Catalog {
        static CATALOG: OnceLock<Catalog> = OnceLock::new();
        CATALOG.get_or_init(|| match Catalog::parse(RULE_FILES) {
            Ok(catalog) => catalog,
            Err(e) => panic!("the embedded rule catalog is invalid: {e}"),
        })
    }

    pub fn rule(&self, id: &str) -> Option<&Rule> {
        self.rules.iter().find(|r| r.id == id)
    }

    pub fn condition(&self, name: &str) -> Option<&str> {
        self.conditions
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, c)| c.as_str())
    }

    pub fn parse(files: &[(&str, &str)]) -> Result<Catalog, String> {
        let mut rules = Vec::new();
        let mut conditions = Vec::new();
        for (name, text) in files {
            let root = parse_one(name, text)?;
            if *name == "_match.yaml" {
                for entry in root.as_map().ok_or(format!("{name}: not a mapping"))? {
                    let expr = entry
                        .value
                        .as_str()
                        .ok_or(format!("{name}: `{}` is not a string", entry.key))?;
                    let expr = compose(expr.trim(), &conditions)
                        .map_err(|e| format!("{name}: `{}`: {e}", entry.key))?;
                    conditions.push((entry.key.to_string(), expr));
                }
                continue;
            }
            let rule = Rule::from_node(&root).map_err(|e| format!("{name}: {e}"))?;
            if format!("{}.yaml", rule.id) != *name {
                return Err(format!(
                    "{name}: the file name must be the rule id `{}`",
                    rule.id
                ));
            }
            rules.push(rule);
        }
        for rule in &rules {
            if let Some(cond) = rule.object.as_ref().and_then(|o| o.condition.as_ref())
                && !conditions.iter().any(|(n, _)| n == cond)
            {
                return Err(format!("{}: unknown condition `{cond}`", rule.id));
            }
        }
        rules.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(Catalog { rules, conditions })
    }
}

/// Replaces `${name}` by the earlier condition `name`, in parentheses.
fn compose(expr: &str, earlier: &[(String, String)]) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = expr;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find('}').ok_or("unclosed `${`")? + start;
        let name = &rest[start + 2..end];
        let (_, text) = earlier
            .iter()
            .find(|(n, _)| n == name)
            .ok_or(format!("`{name}` is not an earlier condition"))?;
        out.push('(');
        out.push_str(text);
        out.push(')');
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn parse_one<'a>(name: &str, text: &'a str) -> Result<Node<'a>, String> {
    match yaml::parse(text).into_iter().next() {
        Some(Parsed::Document(d)) if d.duplicate_keys.is_empty() => Ok(d.root),
        Some(Parsed::Document(_)) => Err(format!("{name}: duplicate key")),
        Some(Parsed::Error(e) | Parsed::Unread(e)) => Err(format!("{name}: {}", e.message)),
        None => Err(format!("{name}: empty")),
    }
}

/// Reads the fields of a mapping, refusing keys it was not asked about.
struct Fields<'n, 'a> {
    node: &'n Node<'a>,
    known: Vec<&'static str>,
}

impl<'n, 'a> Fields<'n, 'a> {
    fn new(node: &'n Node<'a>) -> Result<Self, String> {
        node.as_map().ok_or("expected a mapping")?;
        Ok(Fields {
            node,
            known: Vec::new(),
        })
    }

    fn opt(&mut self, key: &'static str) -> Option<&'n Node<'a>> {
        self.known.push(key);
        self.node.get(key)
    }

    fn string(&mut self, key: &'static str) -> Result<String, String> {
        self.opt_string(key)?.ok_or(format!("`{key}` is required"))
    }

    fn opt_string(&mut self, key: &'static str) -> Result<Option<String>, String> {
        match self.opt(key) {
            None => Ok(None),
            Some(n) => n
                .as_str()
                .map(|s| Some(s.trim().to_string()))
                .ok_or(format!("`{key}` must be a string")),
        }
    }

    fn finish(self) -> Result<(), String> {
        for e in self.node.as_map().unwrap_or_default() {
            if !self.known.contains(&e.key.as_ref()) {
                return Err(format!("unknown key `{}`", e.key));
            }
        }
        Ok(())
    }
}

impl Rule {
    fn from_node(node: &Node) -> Result<Rule, String> {
        let mut f = Fields::new(node)?;
        let id = f.string("id")?;
        let title = f.string("title")?;
        let severity = f.string("severity")?;
        let severity = Severity::parse(&severity).ok_or(format!("bad severity `{severity}`"))?;
        let scope = f.string("scope")?;
        let scope = Scope::parse(&scope).ok_or(format!("bad scope `{scope}`"))?;
        let adr = f.string("adr")?;
        let rationale = f.string("rationale")?;
        let remediation = f.string("remediation")?;
        let contract = f.opt_string("contract")?;
        let object = match (f.opt("match"), scope) {
            (Some(m), Scope::Object) => Some(ObjectRule {
                resources: parse_match(m)?.0,
                condition: parse_match(m)?.1,
                variables: parse_variables(f.opt("variables"))?,
                validations: parse_validations(f.opt("validations"))?,
            }),
            (None, Scope::Object) => return Err("an object rule needs `match`".into()),
            (Some(_), _) => return Err("only object rules carry `match`".into()),
            (None, _) => None,
        };
        f.finish()?;
        Ok(Rule {
            id,
            title,
            severity,
            scope,
            adr,
            rationale,
            remediation,
            contract,
            object,
        })
    }
}

type MatchSpec = (Vec<&'static Resource>, Option<String>);

fn parse_match(node: &Node) -> Result<MatchSpec, String> {
    let mut f = Fields::new(node)?;
    let resources = f
        .opt("resources")
        .and_then(Node::as_seq)
        .ok_or("`match.resources` must be a list")?
        .iter()
        .map(|r| {
            let plural = r.as_str().unwrap_or_default();
            Resource::by_plural(plural).ok_or(format!("unknown resource `{plural}`"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let condition = f.opt_string("condition")?;
    f.finish()?;
    Ok((resources, condition))
}

fn parse_variables(node: Option<&Node>) -> Result<Vec<(String, String)>, String> {
    let Some(node) = node else {
        return Ok(Vec::new());
    };
    node.as_seq()
        .ok_or("`variables` must be a list")?
        .iter()
        .map(|v| {
            let mut f = Fields::new(v)?;
            let pair = (f.string("name")?, f.string("expression")?);
            f.finish()?;
            Ok(pair)
        })
        .collect()
}

fn parse_validations(node: Option<&Node>) -> Result<Vec<Validation>, String> {
    let items = node
        .and_then(Node::as_seq)
        .ok_or("an object rule needs a list of `validations`")?;
    if items.is_empty() {
        return Err("an object rule needs at least one validation".into());
    }
    items
        .iter()
        .map(|v| {
            let mut f = Fields::new(v)?;
            let validation = Validation {
                expression: f.string("expression")?,
                message: f.string("message")?,
                detail: f.opt_string("detail")?,
            };
            f.finish()?;
            Ok(validation)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lint::cel::Cel;

    #[test]
    fn the_embedded_catalog_parses_and_every_expression_compiles() {
        let catalog = Catalog::parse(RULE_FILES).unwrap();
        assert!(catalog.rules.len() >= 31);
        let cel = Cel::new();
        for (name, text) in &catalog.conditions {
            assert!(!text.contains("${"), "{name}");
            cel.compile(text)
                .unwrap_or_else(|e| panic!("condition {name}: {e}"));
        }
        for rule in &catalog.rules {
            let Some(object) = &rule.object else { continue };
            for (name, expr) in &object.variables {
                cel.compile(expr)
                    .unwrap_or_else(|e| panic!("{} variable {name}: {e}", rule.id));
            }
            for v in &object.validations {
                cel.compile(&v.expression)
                    .unwrap_or_else(|e| panic!("{}: {e}", rule.id));
            }
        }
    }

    #[test]
    fn bad_rule_files_are_refused_with_their_name() {
        let err = Catalog::parse(&[("x.yaml", "id: other\ntitle: t\nseverity: error\nscope: input\nadr: a\nrationale: r\nremediation: m.\n")]).unwrap_err();
        assert!(err.contains("file name"), "{err}");
        let err = Catalog::parse(&[("x.yaml", "id: x\ntitle: t\nseverity: error\nscope: input\nadr: a\nrationale: r\nremediation: m.\ncolour: red\n")]).unwrap_err();
        assert!(err.contains("unknown key `colour`"), "{err}");
        let err = Catalog::parse(&[("_match.yaml", "a: ${b}\n")]).unwrap_err();
        assert!(err.contains("not an earlier condition"), "{err}");
    }

    #[test]
    fn resources_are_found_by_group_and_kind() {
        assert_eq!(Resource::of("batch/v1", "Job").unwrap().plural, "jobs");
        assert_eq!(
            Resource::of("v1", "ConfigMap").unwrap().plural,
            "configmaps"
        );
        assert!(Resource::of("apps/v1", "Job").is_none());
        assert_eq!(
            Resource::of("external-secrets.io/v1beta1", "ExternalSecret")
                .unwrap()
                .plural,
            "externalsecrets"
        );
    }
}
