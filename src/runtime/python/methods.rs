//! `runtime-forbidden-method`: requests the credentials Role forbids (ADR-072 point 5: no
//! update, list or watch), where the text shows them.

use std::collections::HashMap;

use tree_sitter::Node;

use super::names::{child, kind};

use super::text::{HOLE, Template, callee_name, has_query_param, string_template, text};
use super::walk::{Facts, Site};
use super::{RULE_METHOD, ScriptFinding, finding_at};

/// HTTP methods a method literal may name.
const METHODS: [&str; 7] = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];

/// Collections the credentials program deals with: a path ending in one of these is a
/// collection even when the `/api/...` prefix is added elsewhere.
const KNOWN_COLLECTIONS: [&str; 5] = [
    "secrets",
    "pods",
    "externalsecrets",
    "passwords",
    "configmaps",
];

/// Query parameters only list and watch requests take.
const SELECTORS: [&str; 2] = ["labelSelector", "fieldSelector"];

/// How many assignments and `+` levels a path is followed through.
const MAX_DEPTH: u8 = 16;

pub(super) fn check(facts: &Facts<'_>, src: &str) -> Vec<ScriptFinding> {
    let mut out = Vec::new();
    for string in &facts.strings {
        check_string(*string, src, &mut out);
    }
    for site in &facts.calls {
        check_call(site, facts, src, &mut out);
    }
    out
}

fn forbidden(node: Node<'_>, message: String) -> ScriptFinding {
    finding_at(RULE_METHOD, message, node)
}

fn check_string(node: Node<'_>, src: &str, out: &mut Vec<ScriptFinding>) {
    let Some(template) = string_template(node, src) else {
        return;
    };
    if template
        .plain()
        .is_some_and(|plain| plain.eq_ignore_ascii_case("PUT"))
    {
        out.push(forbidden(
            node,
            format!(
                "`{}` is an update request (PUT), which the credentials Role forbids",
                text(node, src)
            ),
        ));
        return;
    }
    let flat = template.flat();
    let shown = template.shown();
    if has_query_param(&flat, "watch") {
        out.push(forbidden(
            node,
            format!(
                "the `watch` query parameter in `{shown}` makes a watch request, which the credentials Role forbids"
            ),
        ));
    } else if legacy_watch_path(&flat) {
        out.push(forbidden(
            node,
            format!(
                "the `/watch/` segment in `{shown}` makes a watch request, which the credentials Role forbids"
            ),
        ));
    }
    for selector in SELECTORS {
        if has_query_param(&flat, selector) {
            out.push(forbidden(
                node,
                format!(
                    "`{selector}` in `{shown}` is only taken by list and watch requests, which the credentials Role forbids"
                ),
            ));
        }
    }
}

/// `/api/v1/watch/...` or `/apis/<group>/<version>/watch/...`: the watch endpoints Kubernetes
/// kept from before the `watch` parameter.
fn legacy_watch_path(flat: &str) -> bool {
    let path = path_part(flat);
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    if let Some(rest) = after_api_prefix(&segments) {
        return rest.first() == Some(&"watch");
    }
    path.starts_with("/watch/")
}

/// The path of a URL or path template: without scheme and host, query or fragment.
fn path_part(flat: &str) -> &str {
    let end = flat.find(['?', '#']).unwrap_or(flat.len());
    let url = &flat[..end];
    match url.find("://") {
        Some(at) => {
            let after = &url[at + 3..];
            after.find('/').map_or("", |slash| &after[slash..])
        }
        None => url,
    }
}

/// The segments after `/api/<version>` or `/apis/<group>/<version>`, if the path has them.
fn after_api_prefix<'a, 'b>(segments: &'a [&'b str]) -> Option<&'a [&'b str]> {
    let at = segments.iter().position(|s| *s == "api" || *s == "apis")?;
    let skip = if segments[at] == "api" { 2 } else { 3 };
    segments.get(at + skip..)
}

/// A plural resource name written out (not interpolated).
fn is_plural_literal(segment: &str) -> bool {
    !segment.is_empty()
        && segment
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-')
}

/// The plural when the path names a collection rather than one object.
fn collection(flat: &str) -> Option<String> {
    let path = path_part(flat);
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    if let Some(rest) = after_api_prefix(&segments) {
        let plural = match rest {
            ["namespaces"] => "namespaces",
            ["namespaces", _, plural] => plural,
            ["namespaces", ..] | ["watch", ..] => return None,
            [plural] => plural,
            _ => return None,
        };
        return is_plural_literal(plural).then(|| plural.to_string());
    }
    let last = *segments.last()?;
    let namespaced = segments.len() >= 3 && segments[segments.len() - 3] == "namespaces";
    let known = KNOWN_COLLECTIONS.contains(&last);
    ((namespaced && is_plural_literal(last)) || known).then(|| last.to_string())
}

fn check_call(site: &Site<'_>, facts: &Facts<'_>, src: &str, out: &mut Vec<ScriptFinding>) {
    let call = site.node;
    let Some(arguments) = child(call, "arguments").filter(|a| kind(a) == "argument_list") else {
        return;
    };
    let mut positional = Vec::new();
    let mut keywords: HashMap<&str, Node<'_>> = HashMap::new();
    let mut cursor = arguments.walk();
    for argument in arguments.named_children(&mut cursor) {
        match kind(argument) {
            "keyword_argument" => {
                let name = child(argument, "name");
                let value = child(argument, "value");
                if let (Some(name), Some(value)) = (name, value) {
                    keywords.insert(text(name, src), value);
                }
            }
            "list_splat" | "dictionary_splat" | "comment" => {}
            _ => positional.push(argument),
        }
    }
    let callee = callee_name(call, src).unwrap_or("");
    let resolver = Resolver { facts, src };
    if callee == "urlencode"
        && let Some(query) = positional.first()
    {
        check_urlencode(*query, site.scope, &resolver, out);
    }

    let url_keyword = || {
        ["url", "path", "fullurl"]
            .iter()
            .find_map(|k| keywords.get(k).copied())
    };
    let method_of = |node: Node<'_>| -> Option<String> {
        let plain = resolver.template(node, site.scope, 0)?.plain()?;
        let upper = plain.trim().to_ascii_uppercase();
        METHODS.contains(&upper.as_str()).then_some(upper)
    };
    let first_is_method = positional.first().and_then(|n| method_of(*n));
    let (method, url) = if let Some(method) = first_is_method {
        (method, positional.get(1).copied().or_else(url_keyword))
    } else if let Some(method_node) = keywords.get("method") {
        // A method that is not a literal (a parameter, say) is not known here.
        let Some(method) = method_of(*method_node) else {
            return;
        };
        (method, positional.first().copied().or_else(url_keyword))
    } else if matches!(callee, "urlopen" | "Request") {
        let data = positional
            .get(1)
            .copied()
            .or_else(|| keywords.get("data").copied());
        let sends_data = data.is_some_and(|d| kind(d) != "none");
        let method = if sends_data { "POST" } else { "GET" };
        (
            method.to_string(),
            positional.first().copied().or_else(url_keyword),
        )
    } else {
        return;
    };
    let Some(url) = url else {
        return;
    };
    let Some(template) = resolver.template(url, site.scope, 0) else {
        return;
    };
    let flat = template.flat();
    // A watch on a collection is reported as the watch it is, by the string check.
    if has_query_param(&flat, "watch") {
        return;
    }
    let Some(plural) = collection(&flat) else {
        return;
    };
    let shown = template.shown();
    let message = match method.as_str() {
        "GET" => format!(
            "GET on the collection `{shown}` lists {plural}, which the credentials Role forbids"
        ),
        "DELETE" => format!(
            "DELETE on the collection `{shown}` deletes every object in {plural} (deletecollection), which the credentials Role forbids"
        ),
        _ => return,
    };
    out.push(forbidden(url, message));
}

/// `urlencode({"watch": ...})`, `urlencode([("watch", ...)])`, `urlencode(dict(watch=...))`.
fn check_urlencode(
    query: Node<'_>,
    scope: usize,
    resolver: &Resolver<'_, '_>,
    out: &mut Vec<ScriptFinding>,
) {
    let query = match kind(query) {
        "identifier" => match resolver.facts.resolve(scope, text(query, resolver.src)) {
            Some((value, _)) => value,
            None => return,
        },
        _ => query,
    };
    let src = resolver.src;
    let mut keys: Vec<(Node<'_>, String)> = Vec::new();
    let mut cursor = query.walk();
    match kind(query) {
        "dictionary" => {
            for pair in query.named_children(&mut cursor) {
                if let Some(key) = child(pair, "key")
                    && let Some(name) = string_template(key, src).and_then(|t| t.plain())
                {
                    keys.push((key, name));
                }
            }
        }
        "list" | "tuple" => {
            for item in query.named_children(&mut cursor) {
                if matches!(kind(item), "tuple" | "list")
                    && let Some(key) = item.named_child(0)
                    && let Some(name) = string_template(key, src).and_then(|t| t.plain())
                {
                    keys.push((key, name));
                }
            }
        }
        "call" if callee_name(query, src) == Some("dict") => {
            if let Some(arguments) = child(query, "arguments") {
                let mut inner = arguments.walk();
                for argument in arguments.named_children(&mut inner) {
                    if kind(argument) == "keyword_argument"
                        && let Some(name) = child(argument, "name")
                    {
                        keys.push((name, text(name, src).to_string()));
                    }
                }
            }
        }
        _ => {}
    }
    for (key, name) in keys {
        if name == "watch" {
            out.push(forbidden(
                key,
                "the `watch` query parameter passed to `urlencode` makes a watch request, which the credentials Role forbids".to_string(),
            ));
        } else if SELECTORS.contains(&name.as_str()) {
            out.push(forbidden(
                key,
                format!(
                    "the `{name}` query parameter passed to `urlencode` is only taken by list and watch requests, which the credentials Role forbids"
                ),
            ));
        }
    }
}

/// Turns expressions into string templates, following single assignments.
struct Resolver<'f, 't> {
    facts: &'f Facts<'t>,
    src: &'f str,
}

impl Resolver<'_, '_> {
    /// The template of an expression that builds a string: a literal or f-string, `+`,
    /// `"...".format(...)`, `"..." % ...`, parentheses, or a name assigned once. `None` when
    /// the expression is not built from a string this can see.
    fn template(&self, node: Node<'_>, scope: usize, depth: u8) -> Option<Template> {
        if depth > MAX_DEPTH {
            return None;
        }
        let src = self.src;
        match kind(node) {
            "string" | "concatenated_string" => string_template(node, src),
            "parenthesized_expression" => self.template(node.named_child(0)?, scope, depth + 1),
            "identifier" => {
                let (value, value_scope) = self.facts.resolve(scope, text(node, src))?;
                self.template(value, value_scope, depth + 1)
            }
            "binary_operator" => {
                let operator = child(node, "operator").map(|o| text(o, src));
                let left = child(node, "left")?;
                let right = child(node, "right")?;
                match operator {
                    Some("+") => {
                        let l = self.template(left, scope, depth + 1);
                        let r = self.template(right, scope, depth + 1);
                        if l.is_none() && r.is_none() {
                            return None;
                        }
                        let mut out = l.unwrap_or_else(|| hole_of(left, src));
                        out.append(r.unwrap_or_else(|| hole_of(right, src)));
                        Some(out)
                    }
                    Some("%") => {
                        let format = self.template(left, scope, depth + 1)?;
                        Some(printf_holes(&format.flat()))
                    }
                    _ => None,
                }
            }
            "call" => {
                let function = child(node, "function")?;
                if kind(function) != "attribute" || callee_name(node, src) != Some("format") {
                    return None;
                }
                let object = child(function, "object")?;
                let format = self.template(object, scope, depth + 1)?;
                Some(format_holes(&format.flat()))
            }
            _ => None,
        }
    }
}

fn hole_of(node: Node<'_>, src: &str) -> Template {
    let mut t = Template::default();
    t.hole(text(node, src));
    t
}

/// `"a/{}/b".format(x)`: each replacement field becomes a hole, `{{` and `}}` a brace.
fn format_holes(flat: &str) -> Template {
    let mut out = Template::default();
    let mut chars = flat.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                out.lit("{");
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                out.lit("}");
            }
            '{' => {
                let mut field = String::new();
                for f in chars.by_ref() {
                    if f == '}' {
                        break;
                    }
                    field.push(f);
                }
                out.hole(&field);
            }
            HOLE => out.hole("…"),
            c => out.lit(c.encode_utf8(&mut [0; 4])),
        }
    }
    out
}

/// `"a/%s/b" % x`: each conversion becomes a hole, `%%` a percent sign.
fn printf_holes(flat: &str) -> Template {
    let mut out = Template::default();
    let mut chars = flat.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '%' if chars.peek() == Some(&'%') => {
                chars.next();
                out.lit("%");
            }
            '%' => {
                let mut spec = String::from("%");
                if chars.peek() == Some(&'(') {
                    for f in chars.by_ref() {
                        spec.push(f);
                        if f == ')' {
                            break;
                        }
                    }
                }
                while let Some(&f) = chars.peek() {
                    chars.next();
                    spec.push(f);
                    if f.is_ascii_alphabetic() {
                        break;
                    }
                }
                out.raw_hole(&spec);
            }
            HOLE => out.hole("…"),
            c => out.lit(c.encode_utf8(&mut [0; 4])),
        }
    }
    out
}
