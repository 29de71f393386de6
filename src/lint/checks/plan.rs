//! `plan-invalid`: plan.json must be JSON and follow bundle.md section 2. Problems point into
//! the plan's own lines when it is a literal block.

use crate::load::block::LiteralBlock;
use crate::load::source::{LineIndex, Source};
use crate::load::yaml::{self, Node, Parsed, Span, Value};
use crate::model::bundle::Plan;

pub const PLAN_KINDS: &[&str] = &["cache", "broker", "bucket", "component"];

/// A problem with its rule and its span in the file.
pub type Problem = (&'static str, Span, String);

const INVALID: &str = "plan-invalid";
const HOLDS_VALUE: &str = "plan-holds-value";

/// Reads and checks the plan of a credentials ConfigMap. Returns what could be read (so the
/// Role can still be compared with it) and the problems found.
pub fn check(config_map: &Node, owner: &str, source: &Source) -> (Option<Plan>, Vec<Problem>) {
    let mut problems = Vec::new();
    let Some(node) = config_map.at(&["data", "plan.json"]) else {
        let at = config_map.entry("data").map_or_else(
            || crate::load::locate::root_span(config_map),
            |e| e.key_span,
        );
        problems.push((INVALID, at, "the ConfigMap has no plan.json".to_string()));
        return (None, problems);
    };
    let Some(text) = node.as_str() else {
        problems.push((
            INVALID,
            node.span,
            format!("plan.json is {}, not a string", node.type_name()),
        ));
        return (None, problems);
    };
    let mapper = PlanMapper::new(source, node, text);
    if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(text) {
        let at = mapper.at_line_col(e.line().saturating_sub(1), e.column().saturating_sub(1));
        let message = e.to_string();
        let message = message.split(" at line ").next().unwrap_or(&message);
        problems.push((
            INVALID,
            at,
            format!("plan.json is not valid JSON: {message}"),
        ));
        return (None, problems);
    }
    // Valid JSON is YAML too: parsing it again gives spans for every key and value.
    let parsed = yaml::parse(text);
    let Some(Parsed::Document(doc)) = parsed.into_iter().next() else {
        return (None, problems);
    };
    let root = &doc.root;
    let mut report_as = |rule: &'static str, span: Span, message: String| {
        problems.push((rule, mapper.at(span), message))
    };
    let Some(_) = root.as_map() else {
        report_as(INVALID, root.span, "plan.json is not a JSON object".into());
        return (None, problems);
    };

    match root.get("owner").map(|n| (n, n.as_str())) {
        None => report_as(INVALID, root.span, "plan.json has no `owner`".into()),
        Some((n, None)) => report_as(INVALID, n.span, "`owner` is not a string".into()),
        Some((n, Some(o))) if o != owner => report_as(
            INVALID,
            n.span,
            format!("plan.json plans for owner `{o}`, but its ConfigMap belongs to `{owner}`"),
        ),
        _ => {}
    }

    let kind = match root.get("kind") {
        None => {
            report_as(INVALID, root.span, "plan.json has no `kind`".into());
            String::new()
        }
        Some(n) => match n.as_str() {
            Some(k) if PLAN_KINDS.contains(&k) => k.to_string(),
            _ => {
                report_as(
                    INVALID,
                    n.span,
                    format!(
                        "`kind` is `{}`, not one of cache, broker, bucket or component",
                        n.display_scalar().unwrap_or_else(|| n.type_name().into())
                    ),
                );
                String::new()
            }
        },
    };

    let mut secrets = Vec::new();
    let mut secret_locs = Vec::new();
    match root.get("secrets") {
        None => report_as(INVALID, root.span, "plan.json plans no `secrets`".into()),
        Some(n) => match n.as_seq() {
            None => report_as(INVALID, n.span, "`secrets` is not a list".into()),
            Some([]) => report_as(
                INVALID,
                n.span,
                "`secrets` is empty: the plan creates nothing".into(),
            ),
            Some(items) => {
                for item in items {
                    match secret(item, &mut report_as) {
                        Some(name) if secrets.contains(&name) => report_as(
                            INVALID,
                            item.span,
                            format!("Secret `{name}` is planned twice"),
                        ),
                        Some(name) => {
                            let at = item.get("name").map_or(item.span, |n| n.span);
                            secret_locs.push(source.at(mapper.at(at)));
                            secrets.push(name)
                        }
                        None => {}
                    }
                }
            }
        },
    }

    let (generators, generator_locs): (Vec<String>, Vec<_>) =
        names(root, "retiredGenerators", &mut report_as)
            .into_iter()
            .map(|(name, span)| (name, source.at(mapper.at(span))))
            .unzip();
    let pods: Vec<String> = names(root, "serverPods", &mut report_as)
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    if !pods.is_empty() && (kind == "bucket" || kind == "component") {
        let at = root.get("serverPods").map_or(root.span, |n| n.span);
        report_as(
            INVALID,
            at,
            format!("a {kind} has no server pods to probe: `serverPods` is for caches and brokers"),
        );
    }
    (
        Some(Plan {
            kind,
            secrets,
            generators,
            pods,
            secret_locs,
            generator_locs,
        }),
        problems,
    )
}

/// One entry of `secrets`: its name, when it is well formed.
fn secret(item: &Node, report_as: &mut impl FnMut(&'static str, Span, String)) -> Option<String> {
    if item.as_map().is_none() {
        report_as(
            INVALID,
            item.span,
            "each entry of `secrets` is an object with `name` and `keys`".into(),
        );
        return None;
    }
    let name = match item.get("name").map(|n| (n, n.as_str())) {
        Some((_, Some(name))) if !name.is_empty() => Some(name.to_string()),
        Some((n, _)) => {
            report_as(
                INVALID,
                n.span,
                "a planned Secret's `name` is a non-empty string".into(),
            );
            None
        }
        None => {
            report_as(INVALID, item.span, "a planned Secret has no `name`".into());
            None
        }
    };
    match item.get("keys") {
        Some(keys) if keys.as_map().is_some_and(|k| !k.is_empty()) => {}
        Some(keys) => report_as(
            INVALID,
            keys.span,
            "`keys` is an object naming at least one key".into(),
        ),
        None => report_as(INVALID, item.span, "a planned Secret has no `keys`".into()),
    }
    key_specs(item, name.as_deref().unwrap_or("?"), report_as);
    name
}

/// The shortest and longest value a key spec may ask for. The program takes 1 to 4096; fewer
/// than 16 characters of its 62-letter alphabet are under 96 random bits.
pub const LENGTHS: std::ops::RangeInclusive<i64> = 16..=4096;

/// Field names that carry a value rather than say how to make one.
const VALUE_FIELDS: &[&str] = &[
    "value",
    "data",
    "stringData",
    "secret",
    "password",
    "literal",
    "plain",
    "base64",
    "b64",
    "default",
    "text",
    "content",
    "raw",
];

/// The key specs of one planned Secret (`keys`), and what the entry itself carries.
fn key_specs(item: &Node, secret: &str, report: &mut impl FnMut(&'static str, Span, String)) {
    // A planned Secret says which keys to generate; `data` or `stringData` beside them are the
    // values themselves.
    for field in ["data", "stringData", "value"] {
        if let Some(e) = item.entry(field) {
            report(
                HOLDS_VALUE,
                e.key_span,
                format!(
                    "the planned Secret `{secret}` carries `{field}`: plan.json says how to \
                     generate each key, never what it holds, and values never reach git (ADR-072 \
                     point 7). Remove it and rotate the committed value"
                ),
            );
        }
    }
    let Some(keys) = item.get("keys").and_then(Node::as_map) else {
        return;
    };
    for entry in keys {
        let key = &entry.key;
        let spec = &entry.value;
        match &spec.value {
            Value::Str(_) => report(
                HOLDS_VALUE,
                spec.span,
                format!(
                    "key `{key}` of `{secret}` is a string, a value in git (ADR-072 point 7): a \
                     key spec says how to generate the key. Write {{\"length\": 32}} instead and \
                     rotate the committed value"
                ),
            ),
            Value::Map(fields) => {
                let mut length = false;
                for field in fields {
                    let name = field.key.as_ref();
                    if name == "length" {
                        length = true;
                        match field.value.value {
                            Value::Int(n) if LENGTHS.contains(&n) => {}
                            _ => report(
                                INVALID,
                                field.value.span,
                                format!(
                                    "`length` of key `{key}` of `{secret}` is {}, not an \
                                     integer from {} to {}: fewer than {} characters of the \
                                     62-letter alphabet hold under 96 random bits",
                                    field
                                        .value
                                        .display_for_message()
                                        .map_or("not a number".to_string(), |v| format!("`{v}`")),
                                    LENGTHS.start(),
                                    LENGTHS.end(),
                                    LENGTHS.start()
                                ),
                            ),
                        }
                    } else if name == "alphabet" {
                        // The characters to draw from (simulate's key checks honour it): a
                        // set of symbols, not a value, but one symbol would make the value
                        // constant.
                        let distinct = match &field.value.value {
                            Value::Str(a) => {
                                a.chars().collect::<std::collections::BTreeSet<_>>().len()
                            }
                            _ => 0,
                        };
                        if distinct < 2 {
                            report(
                                INVALID,
                                field.value.span,
                                format!(
                                    "`alphabet` of key `{key}` of `{secret}` is a string of at \
                                     least two different characters to draw from"
                                ),
                            );
                        }
                    } else if VALUE_FIELDS.contains(&name)
                        || matches!(field.value.value, Value::Str(_))
                    {
                        report(
                            HOLDS_VALUE,
                            field.key_span,
                            format!(
                                "key `{key}` of `{secret}` carries `{name}`, a value rather than \
                                 how to generate one (ADR-072 point 7): a key spec takes \
                                 `length` and `alphabet` only. Remove it and rotate the committed value"
                            ),
                        );
                    } else {
                        report(
                            INVALID,
                            field.key_span,
                            format!(
                                "unknown key-spec field `{name}` in key `{key}` of `{secret}`: \
                                 a key spec takes `length` and `alphabet` only"
                            ),
                        );
                    }
                }
                if !length {
                    report(
                        INVALID,
                        spec.span,
                        format!("key `{key}` of `{secret}` has no `length`"),
                    );
                }
            }
            _ => report(
                INVALID,
                spec.span,
                format!(
                    "key `{key}` of `{secret}` is {}, not a key spec such as {{\"length\": 32}}",
                    spec.type_name()
                ),
            ),
        }
    }
}

fn names(
    root: &Node,
    key: &str,
    report_as: &mut impl FnMut(&'static str, Span, String),
) -> Vec<(String, Span)> {
    let Some(node) = root.get(key) else {
        return Vec::new();
    };
    match &node.value {
        Value::Null => Vec::new(),
        Value::Seq(items) if items.iter().all(|i| i.as_str().is_some()) => items
            .iter()
            .filter_map(|i| Some((i.as_str()?.to_string(), i.span)))
            .collect(),
        _ => {
            report_as(INVALID, node.span, format!("`{key}` is a list of names"));
            Vec::new()
        }
    }
}

/// Maps positions in plan.json's text to the file.
struct PlanMapper<'s> {
    source: &'s Source<'s>,
    value_span: Span,
    block: Option<LiteralBlock>,
    lines: LineIndex,
    text: &'s str,
}

impl<'s> PlanMapper<'s> {
    fn new(source: &'s Source<'s>, node: &Node, text: &'s str) -> Self {
        PlanMapper {
            source,
            value_span: node.span,
            block: LiteralBlock::of(source, node),
            lines: LineIndex::new(text),
            text,
        }
    }

    fn at_line_col(&self, line: usize, byte_col: usize) -> Span {
        match self
            .block
            .and_then(|b| b.offset(self.source, line, byte_col))
        {
            Some(at) => self.source.char_at(at),
            None => self.value_span,
        }
    }

    /// A span inside the plan's text, mapped to the file (on its first line).
    fn at(&self, span: Span) -> Span {
        let Some(block) = self.block else {
            return self.value_span;
        };
        let line = self.lines.line_of(span.start());
        let line_start = self.lines.line_start(line).unwrap_or(0);
        let line_end = self.text[line_start..]
            .find('\n')
            .map_or(self.text.len(), |i| line_start + i);
        let start = block.offset(self.source, line, span.start() - line_start);
        let end = block.offset(self.source, line, span.end().min(line_end) - line_start);
        match (start, end) {
            (Some(s), Some(e)) => self.source.snap(Span::new(s, e)),
            _ => self.value_span,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plan cut short at the very end of the file: serde_json's error lies one past the last
    /// byte, and the finding must still lie inside the file.
    #[test]
    fn a_plan_cut_at_the_end_of_the_file_is_located_inside_it() {
        let text = "kind: ConfigMap\ndata:\n  plan.json: |\n    {\"owner\": \"é";
        let Some(Parsed::Document(d)) = yaml::parse(text).into_iter().next() else {
            panic!()
        };
        let source = Source::new(0, text);
        let (plan, problems) = check(&d.root, "x", &source);
        assert!(plan.is_none());
        let [(_, span, message)] = problems.as_slice() else {
            panic!("{problems:?}")
        };
        assert!(
            message.starts_with("plan.json is not valid JSON"),
            "{message}"
        );
        assert!(span.end() <= text.len() && text.is_char_boundary(span.start()));
        assert_eq!(source.loc(*span).line, 4);
    }
}
