//! `plan-invalid`: plan.json must be JSON and follow bundle.md section 2. Problems point into
//! the plan's own lines when it is a literal block.

use crate::load::block::LiteralBlock;
use crate::load::source::{LineIndex, Source};
use crate::load::yaml::{self, Node, Parsed, Span, Value};
use crate::model::bundle::Plan;

pub const PLAN_KINDS: &[&str] = &["cache", "broker", "bucket", "component"];

/// A problem with its span in the file.
pub type Problem = (Span, String);

/// Reads and checks the plan of a credentials ConfigMap. Returns what could be read (so the
/// Role can still be compared with it) and the problems found.
pub fn check(config_map: &Node, owner: &str, source: &Source) -> (Option<Plan>, Vec<Problem>) {
    let mut problems = Vec::new();
    let Some(node) = config_map.at(&["data", "plan.json"]) else {
        let at = config_map.entry("data").map_or_else(
            || crate::load::locate::root_span(config_map),
            |e| e.key_span,
        );
        problems.push((at, "the ConfigMap has no plan.json".to_string()));
        return (None, problems);
    };
    let Some(text) = node.as_str() else {
        problems.push((
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
        problems.push((at, format!("plan.json is not valid JSON: {message}")));
        return (None, problems);
    }
    // Valid JSON is YAML too: parsing it again gives spans for every key and value.
    let parsed = yaml::parse(text);
    let Some(Parsed::Document(doc)) = parsed.into_iter().next() else {
        return (None, problems);
    };
    let root = &doc.root;
    let mut report = |span: Span, message: String| problems.push((mapper.at(span), message));
    let Some(_) = root.as_map() else {
        report(root.span, "plan.json is not a JSON object".into());
        return (None, problems);
    };

    match root.get("owner").map(|n| (n, n.as_str())) {
        None => report(root.span, "plan.json has no `owner`".into()),
        Some((n, None)) => report(n.span, "`owner` is not a string".into()),
        Some((n, Some(o))) if o != owner => report(
            n.span,
            format!("plan.json plans for owner `{o}`, but its ConfigMap belongs to `{owner}`"),
        ),
        _ => {}
    }

    let kind = match root.get("kind") {
        None => {
            report(root.span, "plan.json has no `kind`".into());
            String::new()
        }
        Some(n) => match n.as_str() {
            Some(k) if PLAN_KINDS.contains(&k) => k.to_string(),
            _ => {
                report(
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
    match root.get("secrets") {
        None => report(root.span, "plan.json plans no `secrets`".into()),
        Some(n) => match n.as_seq() {
            None => report(n.span, "`secrets` is not a list".into()),
            Some([]) => report(
                n.span,
                "`secrets` is empty: the plan creates nothing".into(),
            ),
            Some(items) => {
                for item in items {
                    match secret(item, &mut report) {
                        Some(name) if secrets.contains(&name) => {
                            report(item.span, format!("Secret `{name}` is planned twice"))
                        }
                        Some(name) => secrets.push(name),
                        None => {}
                    }
                }
            }
        },
    }

    let generators = names(root, "retiredGenerators", &mut report);
    let pods = names(root, "serverPods", &mut report);
    if !pods.is_empty() && (kind == "bucket" || kind == "component") {
        let at = root.get("serverPods").map_or(root.span, |n| n.span);
        report(
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
        }),
        problems,
    )
}

/// One entry of `secrets`: its name, when it is well formed.
fn secret(item: &Node, report: &mut impl FnMut(Span, String)) -> Option<String> {
    if item.as_map().is_none() {
        report(
            item.span,
            "each entry of `secrets` is an object with `name` and `keys`".into(),
        );
        return None;
    }
    let name = match item.get("name").map(|n| (n, n.as_str())) {
        Some((_, Some(name))) if !name.is_empty() => Some(name.to_string()),
        Some((n, _)) => {
            report(
                n.span,
                "a planned Secret's `name` is a non-empty string".into(),
            );
            None
        }
        None => {
            report(item.span, "a planned Secret has no `name`".into());
            None
        }
    };
    match item.get("keys") {
        Some(keys) if keys.as_map().is_some_and(|k| !k.is_empty()) => {}
        Some(keys) => report(
            keys.span,
            "`keys` is an object naming at least one key".into(),
        ),
        None => report(item.span, "a planned Secret has no `keys`".into()),
    }
    name
}

fn names(root: &Node, key: &str, report: &mut impl FnMut(Span, String)) -> Vec<String> {
    let Some(node) = root.get(key) else {
        return Vec::new();
    };
    match &node.value {
        Value::Null => Vec::new(),
        Value::Seq(items) if items.iter().all(|i| i.as_str().is_some()) => items
            .iter()
            .filter_map(|i| i.as_str().map(str::to_string))
            .collect(),
        _ => {
            report(node.span, format!("`{key}` is a list of names"));
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
        let [(span, message)] = problems.as_slice() else {
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
