//! The `schema` rule: reads an object of a checked kind into its Kubernetes type, as the API
//! server decodes it, and reports what the server would refuse: unknown fields (at the key, with
//! the closest known field when one is near) and values of the wrong type or format (at the
//! value). k8s-openapi drops unknown fields silently; `serde_ignored` reports them.
//!
//! serde stops at the first type error, so each one found is masked (read as `null`, which Go
//! accepts anywhere) and the object read again, until a pass succeeds: every error is reported,
//! not only the first.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use serde::de::DeserializeOwned;

use crate::load::yaml::de::{self, Context, ErrorKind, PathSegment, describe, path_string};
use crate::load::yaml::{Node, Span, Value};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaIssue {
    pub span: Span,
    pub message: String,
}

/// Passes over one object at most; each pass after the first goes past one more error.
const MAX_PASSES: usize = 32;

type Checker = fn(&Node<'_>, &str) -> Vec<SchemaIssue>;

fn checker(api_version: &str, kind: &str) -> Option<Checker> {
    Some(match (api_version, kind) {
        ("v1", "ServiceAccount") => run::<ServiceAccount>,
        ("v1", "ConfigMap") => run::<ConfigMap>,
        ("rbac.authorization.k8s.io/v1", "Role") => run::<Role>,
        ("rbac.authorization.k8s.io/v1", "RoleBinding") => run::<RoleBinding>,
        ("batch/v1", "Job") => run::<Job>,
        _ => return None,
    })
}

/// The kinds this rule checks: v1 ServiceAccount, v1 ConfigMap, rbac.authorization.k8s.io/v1 Role
/// and RoleBinding, batch/v1 Job. Returns no issue for any other apiVersion/kind.
pub fn check(root: &Node, api_version: &str, kind: &str) -> Vec<SchemaIssue> {
    match checker(api_version, kind) {
        Some(run) => run(root, kind),
        None => Vec::new(),
    }
}

/// Whether objects of this apiVersion and kind are checked against the API types (for the
/// tests that hold the list to what the rules read).
#[cfg(any(test, feature = "testkit"))]
pub fn is_checked(api_version: &str, kind: &str) -> bool {
    checker(api_version, kind).is_some()
}

/// Whether an object's verdict follows from its `shape` alone: a ConfigMap's `binaryData` is
/// checked as base64, so its strings' text matters.
pub fn has_shape(root: &Node<'_>) -> bool {
    root.get("binaryData").is_none()
}

/// The object as this check sees it, written to `out` to key a cache of verdicts: the kind,
/// every key, the type of every value, numbers and booleans exactly, and a string's text only
/// where the text can change the verdict. Only `Quantity` and `Time` look into a string read
/// into a field, and both refuse one that does not start with a digit, a sign or a point; any
/// other string reads alike into every field (k8s-openapi has no string enums in these kinds).
/// Two objects with the same shape, where `has_shape` holds, are both clean or both not.
pub fn shape(root: &Node<'_>, api_version: &str, kind: &str, out: &mut Vec<u8>) {
    text(api_version, out);
    text(kind, out);
    node_shape(root, out);
}

fn text(s: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn node_shape(node: &Node<'_>, out: &mut Vec<u8>) {
    match &node.value {
        Value::Null => out.push(b'n'),
        Value::Bool(b) => out.push(if *b { b't' } else { b'f' }),
        Value::Int(i) => {
            out.push(b'i');
            out.extend_from_slice(&i.to_le_bytes());
        }
        Value::Float(f) => {
            out.push(b'd');
            out.extend_from_slice(&f.to_bits().to_le_bytes());
        }
        Value::Str(s) => match s.as_bytes().first() {
            Some(b) if !matches!(b, b'0'..=b'9' | b'+' | b'-' | b'.') => out.push(b's'),
            _ => {
                out.push(b'S');
                text(s, out);
            }
        },
        Value::Seq(items) => {
            out.push(b'[');
            out.extend_from_slice(&(items.len() as u64).to_le_bytes());
            for item in items {
                node_shape(item, out);
            }
        }
        Value::Map(entries) => {
            out.push(b'{');
            out.extend_from_slice(&(entries.len() as u64).to_le_bytes());
            for entry in entries {
                text(&entry.key, out);
                node_shape(&entry.value, out);
            }
        }
    }
}

fn run<T: DeserializeOwned>(root: &Node<'_>, kind: &str) -> Vec<SchemaIssue> {
    let mut cx = Context::go_json().with_newtype_check(check_newtype);
    let mut issues = Vec::new();
    if kind == "ConfigMap" {
        check_binary_data(root, &mut cx, &mut issues);
    }
    let mut unknown_seen: Vec<Span> = Vec::new();
    for _ in 0..MAX_PASSES {
        let mut ignored: Vec<Vec<PathSegment>> = Vec::new();
        let result: Result<T, de::Error> =
            serde_ignored::deserialize(cx.deserializer(root), |path| {
                ignored.push(segments(&path));
            });
        // Later passes see the same unknown fields again.
        for path in &ignored {
            let issue = unknown_field(root, &cx, path, kind);
            if !unknown_seen.contains(&issue.span) {
                unknown_seen.push(issue.span);
                issues.push(issue);
            }
        }
        match result {
            Ok(_) => break,
            Err(e) => {
                issues.push(type_issue(root, &e, kind));
                if !cx.mask_error(&e) {
                    break;
                }
            }
        }
    }
    issues.sort_by_key(|i| (i.span.start, i.span.end));
    issues
}

/// serde_ignored's path, root first. Map keys and struct fields are alike there.
fn segments(path: &serde_ignored::Path<'_>) -> Vec<PathSegment> {
    use serde_ignored::Path;
    let mut out = Vec::new();
    let mut step = path;
    loop {
        step = match step {
            Path::Root => break,
            Path::Seq { parent, index } => {
                out.push(PathSegment::Index(*index));
                parent
            }
            Path::Map { parent, key } => {
                out.push(PathSegment::Key(key.clone()));
                parent
            }
            Path::Some { parent }
            | Path::NewtypeStruct { parent }
            | Path::NewtypeVariant { parent } => parent,
        };
    }
    out.reverse();
    out
}

/// Follows a path from the root; `None` if it leaves the tree.
fn walk<'n, 'a>(root: &'n Node<'a>, path: &[PathSegment]) -> Option<&'n Node<'a>> {
    path.iter().try_fold(root, |node, segment| match segment {
        PathSegment::Field(key) | PathSegment::Key(key) => node.get(key),
        PathSegment::Index(i) => node.as_seq()?.get(*i),
    })
}

fn unknown_field(root: &Node<'_>, cx: &Context, path: &[PathSegment], kind: &str) -> SchemaIssue {
    let located = match path.split_last() {
        Some((PathSegment::Key(name), parents)) => walk(root, parents)
            .and_then(|parent| Some((parent, parent.entry(name)?, name, parents))),
        _ => None,
    };
    let Some((parent, entry, name, parents)) = located else {
        // serde_ignored only reports struct fields; should that change, still say where.
        return SchemaIssue {
            span: walk(root, path).unwrap_or(root).span,
            message: format!(
                "`{}` is ignored by the {kind} type; the API server rejects unknown fields",
                path_string(path)
            ),
        };
    };
    let place = if parents.is_empty() {
        format!("the {kind}")
    } else {
        format!("`{}`", path_string(parents))
    };
    let mut message =
        format!("unknown field `{name}` in {place} (the API server rejects unknown fields)");
    if let Some(near) = cx
        .struct_fields(parent)
        .and_then(|known| closest(name, known))
    {
        message.push_str(&format!("; did you mean `{near}`?"));
    }
    SchemaIssue {
        span: entry.key_span,
        message,
    }
}

/// The known field nearest to `name`, if it is near enough to be the one meant: same letters in
/// another case, or a few edits for a longer name.
fn closest<'f>(name: &str, known: &[&'f str]) -> Option<&'f str> {
    if let Some(same) = known.iter().find(|k| k.eq_ignore_ascii_case(name)) {
        return Some(same);
    }
    let name: Vec<char> = name.chars().collect();
    // Field names are short; a long key is no typo of one and would make the distance costly.
    if name.len() > 64 {
        return None;
    }
    let limit = (name.len() / 4).clamp(1, 3);
    known
        .iter()
        .map(|k| (edit_distance(&name, k), *k))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Edits (insert, delete, replace, swap of neighbours) between two names.
fn edit_distance(a: &[char], b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    // Rows i-2, i-1 and i of the usual table.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur: Vec<usize> = vec![0; b.len() + 1];
    for (i, &ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            let mut d = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
            if i > 0 && j > 0 && a.get(i - 1) == Some(&cb) && b.get(j - 1) == Some(&ca) {
                d = d.min(before[j - 1] + 1);
            }
            cur[j + 1] = d;
        }
        std::mem::swap(&mut before, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

fn type_issue(root: &Node<'_>, e: &de::Error, kind: &str) -> SchemaIssue {
    let path: Vec<PathSegment> = e.path().cloned().collect();
    let span = e.span.unwrap_or(root.span);
    let node = walk(root, &path);
    let (expected, found) = match &e.kind {
        ErrorKind::Type { expected, found } | ErrorKind::Value { expected, found } => {
            (expected_phrase(e.newtype, expected), found.clone())
        }
        // A type's own complaint (e.g. an unparsable time): say what was expected when the
        // newtype tells, else pass the complaint on.
        ErrorKind::Custom(message) => match (e.newtype, node) {
            (Some(newtype), Some(node)) => (expected_phrase(Some(newtype), ""), describe(node)),
            _ => {
                return SchemaIssue {
                    span,
                    message: format!(
                        "{} is invalid: {message}; the API server rejects the {kind}",
                        subject(&path, kind)
                    ),
                };
            }
        },
        ErrorKind::MissingField(_) | ErrorKind::UnknownField { .. } => {
            return SchemaIssue {
                span,
                message: format!(
                    "{}: {}; the API server rejects the {kind}",
                    subject(&path, kind),
                    e.description()
                ),
            };
        }
    };
    // A number or boolean where a string belongs is almost always a missing pair of quotes.
    let quote = expected == "a string"
        && node
            .is_some_and(|n| matches!(n.value, Value::Int(_) | Value::Float(_) | Value::Bool(_)));
    let hint = if quote { " (quote it)" } else { "" };
    let message = match map_values(&path) {
        Some(values) => {
            let must = match plural(&expected) {
                Some(p) => format!("must be {p}"),
                None => format!("must each be {expected}"),
            };
            format!(
                "{values} {must}, found {found} at `{}`{hint}; the API server rejects the {kind}",
                path_string(&path)
            )
        }
        None => format!(
            "{} must be {expected}, found {found}{hint}; the API server rejects the {kind}",
            subject(&path, kind)
        ),
    };
    SchemaIssue { span, message }
}

/// How a message names the failing place: the path as a user writes it.
fn subject(path: &[PathSegment], kind: &str) -> String {
    if path.is_empty() {
        format!("the {kind}")
    } else {
        format!("`{}`", path_string(path))
    }
}

/// For a value of a map (labels, annotations, ConfigMap data, resource limits), the name of
/// what the map holds: the key is the user's own, the rule is about all the values.
fn map_values(path: &[PathSegment]) -> Option<String> {
    let (PathSegment::Key(_), parents) = path.split_last()? else {
        return None;
    };
    Some(match parents.last() {
        Some(PathSegment::Field(f)) if f == "annotations" => "annotation values".to_string(),
        Some(PathSegment::Field(f)) if f == "labels" => "label values".to_string(),
        _ => format!("values of `{}`", path_string(parents)),
    })
}

fn plural(expected: &str) -> Option<&'static str> {
    Some(match expected {
        "a string" => "strings",
        "a boolean" => "booleans",
        "an integer" => "integers",
        "a number" => "numbers",
        "a mapping" => "mappings",
        "a sequence" => "sequences",
        _ => return None,
    })
}

const QUANTITY: &str = "a quantity (a number, or a string such as `250m`, `1.5` or `64Mi`)";

/// What the user should write, in their words rather than the Rust type's name.
fn expected_phrase(newtype: Option<&str>, expected: &str) -> String {
    match (newtype, expected) {
        (Some("Quantity"), _) | (_, "Quantity") => QUANTITY.to_string(),
        (Some("Time"), _) => "an RFC 3339 time such as `2024-05-01T12:00:00Z`".to_string(),
        (Some("MicroTime"), _) => {
            "an RFC 3339 time such as `2024-05-01T12:00:00.000000Z`".to_string()
        }
        (_, "IntOrString") => "an integer or a string".to_string(),
        _ => expected.to_string(),
    }
}

/// Formats k8s-openapi leaves unchecked but the API server refuses to decode.
fn check_newtype(name: &'static str, node: &Node<'_>) -> Result<(), String> {
    match (name, &node.value) {
        ("Quantity", Value::Str(s)) if !is_quantity(s) => Err(QUANTITY.to_string()),
        _ => Ok(()),
    }
}

/// The quantity grammar of apimachinery's `ParseQuantity`: an optionally signed decimal number,
/// then a binary suffix (Ki..Ei), a decimal one (m, k, M..E) or an exponent (e3, E-2).
fn is_quantity(s: &str) -> bool {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let digits_end = body
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(body.len());
    let (number, suffix) = body.split_at(digits_end);
    let mut parts = number.split('.');
    let whole = parts.next().unwrap_or("");
    let fraction = parts.next().unwrap_or("");
    if parts.next().is_some() || whole.len() + fraction.len() == 0 {
        return false;
    }
    match suffix {
        "" | "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" | "m" | "k" | "M" | "G" | "T" | "P" | "E" => {
            true
        }
        _ => suffix
            .strip_prefix(['e', 'E'])
            .map(|exp| exp.strip_prefix(['+', '-']).unwrap_or(exp))
            .is_some_and(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())),
    }
}

/// `binaryData` is base64 as Go's encoding/json reads `[]byte`: the standard alphabet with
/// padding, line breaks ignored. k8s-openapi's own check refuses line breaks, which a block
/// scalar has, so this one replaces it.
fn check_binary_data(root: &Node<'_>, cx: &mut Context, issues: &mut Vec<SchemaIssue>) {
    let Some(map) = root.get("binaryData") else {
        return;
    };
    // Anything but a mapping is left to the type check.
    let Some(entries) = map.as_map() else {
        return;
    };
    cx.mask(map);
    for entry in entries {
        let value = &entry.value;
        let path = [
            PathSegment::Field("binaryData".to_string()),
            PathSegment::Key(entry.key.to_string()),
        ];
        let at = path_string(&path);
        let message = match &value.value {
            Value::Null => continue,
            Value::Str(s) if is_go_base64(s) => continue,
            Value::Str(_) => format!(
                "`{at}` must be base64 (standard alphabet, padded with `=`), found {}; \
                 the API server rejects the ConfigMap",
                describe(value)
            ),
            _ => format!(
                "values of `binaryData` must be base64 strings, found {} at `{at}`; \
                 the API server rejects the ConfigMap",
                describe(value)
            ),
        };
        issues.push(SchemaIssue {
            span: value.span,
            message,
        });
    }
}

fn is_go_base64(s: &str) -> bool {
    let mut len = 0usize;
    let mut padding = 0usize;
    for b in s.bytes().filter(|b| !matches!(b, b'\r' | b'\n')) {
        len += 1;
        match b {
            b'=' => padding += 1,
            // Nothing but padding may follow padding.
            _ if padding > 0 => return false,
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'+' | b'/' => {}
            _ => return false,
        }
    }
    len.is_multiple_of(4) && padding <= 2
}

#[cfg(test)]
mod tests;
