//! Laying objects out in files, in every style users render: block YAML with plain, single- or
//! double-quoted scalars, flow YAML, JSON (one object, or a `List`), YAML `kind: List` with
//! anchors, aliases and merge keys, CRLF line ends, a leading `---`, comments. `create.py`
//! stays a literal block with the allowlist pragma on its header line, unless a fault says
//! otherwise.

use super::Choices;
use super::generate::Draft;
use crate::testkit::render::{Quote, flow};
use serde_json::Value;
use std::collections::HashMap;
use std::fmt::Write;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    Block(Quote),
    Flow(Quote),
    /// JSON on one line (JSON is YAML too).
    Json,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Script {
    /// `|` with the pragma on the header line (`pragma` picks one of the accepted spellings).
    Literal { pragma: usize },
    /// `|` without the pragma.
    LiteralWithoutPragma,
    /// A double-quoted string: the same text, not a literal block.
    DoubleQuoted,
}

/// Header comments detect-secrets and credlint accept on the create.py line.
const PRAGMAS: &[&str] = &[
    "  # pragma: allowlist secret",
    " #pragma:allowlist-secret",
    " # pragma: whitelist secret",
];

#[derive(Clone, Debug)]
pub struct ObjectLayout {
    /// Index into the draft's objects (the bundle's first, then the others).
    pub object: usize,
    pub style: Style,
    /// Write the first key twice (a `yaml-duplicate-key` fault).
    pub duplicate_first_key: bool,
}

#[derive(Clone, Debug)]
pub enum Format {
    /// Documents separated by `---`.
    Yaml { list: bool, anchors: bool },
    /// A JSON file: one object, or a `List` of several.
    Json,
}

#[derive(Clone, Debug)]
pub struct FileLayout {
    pub path: String,
    pub format: Format,
    pub objects: Vec<ObjectLayout>,
    pub crlf: bool,
    pub leading_marker: bool,
    pub comment: bool,
}

#[derive(Clone, Debug)]
pub struct Layout {
    pub files: Vec<FileLayout>,
    pub script: Script,
}

impl Layout {
    /// A random layout of every object of `draft`.
    pub fn random(c: &mut dyn Choices, draft: &Draft) -> Layout {
        let objects = draft.all_objects();
        let count = c.between(1, objects.len().clamp(1, 4));
        let mut assigned: Vec<Vec<usize>> = vec![Vec::new(); count];
        for i in 0..objects.len() {
            assigned[c.below(count)].push(i);
        }
        let mut files = Vec::new();
        for (n, members) in assigned.into_iter().enumerate() {
            if members.is_empty() {
                continue;
            }
            let has_script = members
                .iter()
                .any(|&i| objects[i]["data"].get("create.py").is_some());
            let json = !has_script && c.chance(4);
            let dir = if c.chance(2) { "" } else { "rendered/" };
            let path = if json {
                format!("{dir}f{n}.json")
            } else {
                format!("{dir}f{n}.{}", c.pick(&["yaml", "yml"]))
            };
            let format = if json {
                Format::Json
            } else {
                let list = c.chance(4);
                Format::Yaml {
                    list,
                    anchors: list && c.chance(2),
                }
            };
            let quote = *c.pick(&[Quote::Plain, Quote::Single, Quote::Double]);
            let objects_layout = members
                .iter()
                .map(|&i| {
                    let scripted = objects[i]["data"].get("create.py").is_some();
                    let style = match &format {
                        Format::Json => Style::Json,
                        Format::Yaml { list: true, .. } => Style::Block(quote),
                        Format::Yaml { .. } if scripted => Style::Block(quote),
                        Format::Yaml { .. } => match c.below(4) {
                            0 => Style::Flow(quote),
                            1 => Style::Json,
                            _ => Style::Block(quote),
                        },
                    };
                    ObjectLayout {
                        object: i,
                        style,
                        duplicate_first_key: false,
                    }
                })
                .collect();
            let yaml = matches!(format, Format::Yaml { .. });
            files.push(FileLayout {
                path,
                format,
                objects: objects_layout,
                crlf: yaml && c.chance(6),
                leading_marker: yaml && c.chance(3),
                comment: yaml && c.chance(4),
            });
        }
        Layout {
            files,
            script: Script::Literal {
                pragma: c.below(PRAGMAS.len()),
            },
        }
    }

    /// Where object `index` is laid out.
    pub fn object_mut(&mut self, index: usize) -> Option<&mut ObjectLayout> {
        self.files
            .iter_mut()
            .flat_map(|f| f.objects.iter_mut())
            .find(|o| o.object == index)
    }
}

/// The files of a layout, as `(path, text)`.
pub fn render_files(layout: &Layout, objects: &[&Value]) -> Vec<(String, String)> {
    layout
        .files
        .iter()
        .map(|f| (f.path.clone(), render_file(f, layout.script, objects)))
        .collect()
}

fn render_file(file: &FileLayout, script: Script, objects: &[&Value]) -> String {
    let mut out = String::new();
    match &file.format {
        Format::Json => {
            if let [only] = file.objects.as_slice() {
                out = json_text(objects[only.object], only.duplicate_first_key, true);
            } else {
                let items: Vec<String> = file
                    .objects
                    .iter()
                    .map(|o| json_text(objects[o.object], o.duplicate_first_key, false))
                    .collect();
                out = format!(
                    "{{\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": [\n{}\n]}}\n",
                    items.join(",\n")
                );
            }
        }
        Format::Yaml { list, anchors } => {
            if file.comment {
                out.push_str("# Rendered for the platform; do not edit.\n");
            }
            if file.leading_marker {
                out.push_str("---\n");
            }
            if *list {
                let items: Vec<(&Value, &ObjectLayout)> = file
                    .objects
                    .iter()
                    .map(|o| (objects[o.object], o))
                    .collect();
                out.push_str(&list_text(&items, script, *anchors));
            } else {
                for (i, o) in file.objects.iter().enumerate() {
                    if i > 0 {
                        out.push_str("---\n");
                    }
                    out.push_str(&object_text(objects[o.object], o, script));
                }
            }
        }
    }
    if file.crlf {
        out = out.replace('\n', "\r\n");
    }
    out
}

fn json_text(value: &Value, duplicate_first_key: bool, pretty: bool) -> String {
    let mut text = if pretty {
        serde_json::to_string_pretty(value).unwrap_or_default()
    } else {
        value.to_string()
    };
    if duplicate_first_key && let Some((k, v)) = value.as_object().and_then(|m| m.iter().next()) {
        let pair = format!("{}: {},", Value::from(k.as_str()), v);
        text.insert_str(1, &pair);
    }
    if pretty {
        text.push('\n');
    }
    text
}

fn object_text(value: &Value, layout: &ObjectLayout, script: Script) -> String {
    match layout.style {
        Style::Json => {
            let mut t = json_text(value, layout.duplicate_first_key, false);
            t.push('\n');
            t
        }
        Style::Flow(quote) => {
            let mut t = flow(value, quote);
            if layout.duplicate_first_key
                && let Some((k, v)) = value.as_object().and_then(|m| m.iter().next())
            {
                let pair = format!(
                    "{}: {}, ",
                    flow(&Value::from(k.as_str()), quote),
                    flow(v, quote)
                );
                t.insert_str(1, &pair);
            }
            t.push('\n');
            t
        }
        Style::Block(quote) => {
            let mut e = Emitter::new(quote, script, false, &[value]);
            e.map(value, 0, false, layout.duplicate_first_key);
            e.out
        }
    }
}

fn list_text(items: &[(&Value, &ObjectLayout)], script: Script, anchors: bool) -> String {
    let quote = match items.first().map(|(_, l)| l.style) {
        Some(Style::Block(q)) => q,
        _ => Quote::Plain,
    };
    let values: Vec<&Value> = items.iter().map(|(v, _)| *v).collect();
    let mut e = Emitter::new(quote, script, anchors, &values);
    e.out.push_str("apiVersion: v1\nkind: List\nitems:\n");
    for (value, layout) in items {
        e.out.push_str("  - ");
        e.map(value, 4, true, layout.duplicate_first_key);
    }
    e.out
}

/// A block-style YAML writer with anchors for repeated mappings and merge keys for mappings
/// that extend an earlier one.
struct Emitter {
    out: String,
    quote: Quote,
    script: Script,
    /// Text of a mapping -> its anchor, for mappings that are repeated or merged.
    anchors: HashMap<String, usize>,
    /// Mappings already written with their anchor.
    written: HashMap<String, usize>,
    /// Text of a mapping -> the mapping it merges (by text) and the keys it adds or overrides.
    merges: HashMap<String, String>,
}

impl Emitter {
    fn new(quote: Quote, script: Script, anchors: bool, values: &[&Value]) -> Emitter {
        let mut e = Emitter {
            out: String::new(),
            quote,
            script,
            anchors: HashMap::new(),
            written: HashMap::new(),
            merges: HashMap::new(),
        };
        if anchors {
            e.plan_anchors(values);
        }
        e
    }

    /// Finds the mappings (of two or more keys) that repeat or that a later mapping extends.
    fn plan_anchors(&mut self, values: &[&Value]) {
        let mut maps: Vec<&serde_json::Map<String, Value>> = Vec::new();
        fn collect<'v>(v: &'v Value, out: &mut Vec<&'v serde_json::Map<String, Value>>) {
            match v {
                Value::Object(m) => {
                    if m.len() >= 2 && !m.contains_key("create.py") {
                        out.push(m);
                    }
                    m.values().for_each(|v| collect(v, out));
                }
                Value::Array(items) => items.iter().for_each(|v| collect(v, out)),
                _ => {}
            }
        }
        for v in values {
            if let Value::Object(m) = v {
                // Objects themselves are not anchored: their members are.
                m.values().for_each(|v| collect(v, &mut maps));
            }
        }
        let mut next = 0;
        let key = |m: &serde_json::Map<String, Value>| Value::Object(m.clone()).to_string();
        for (i, m) in maps.iter().enumerate() {
            let text = key(m);
            if self.anchors.contains_key(&text) || self.merges.contains_key(&text) {
                continue;
            }
            if maps[..i].iter().any(|earlier| key(earlier) == text) {
                let first = key(m);
                self.anchors.entry(first).or_insert_with(|| {
                    next += 1;
                    next
                });
                continue;
            }
            // A mapping that has every key of an earlier one, two of them with equal values.
            let base = maps[..i].iter().find(|b| {
                b.keys().all(|k| m.contains_key(k))
                    && b.iter().filter(|(k, v)| m.get(*k) == Some(v)).count() >= 2
                    && b.len() < m.len() + 1
                    && key(b) != text
            });
            if let Some(base) = base {
                let base = key(base);
                self.anchors.entry(base.clone()).or_insert_with(|| {
                    next += 1;
                    next
                });
                self.merges.insert(text, base);
            }
        }
    }

    fn scalar(&self, v: &Value) -> String {
        flow(v, self.quote)
    }

    /// Writes a mapping's entries at `indent`; the first goes on the current line when
    /// `inline` (after `- ` or an anchor).
    fn map(&mut self, v: &Value, indent: usize, inline: bool, duplicate_first_key: bool) {
        let Value::Object(m) = v else {
            let _ = writeln!(self.out, "{}", self.scalar(v));
            return;
        };
        let pad = " ".repeat(indent);
        let mut first = inline;
        let mut line = |e: &mut Emitter| {
            if first {
                first = false;
            } else {
                e.out.push_str(&pad);
            }
        };
        let text = v.to_string();
        let merged = self.merges.get(&text).cloned();
        let mut skip: Vec<&str> = Vec::new();
        if let Some(base) = &merged
            && let Some(&anchor) = self.written.get(base)
            && let Ok(Value::Object(b)) = serde_json::from_str::<Value>(base)
        {
            line(self);
            let _ = writeln!(self.out, "<<: *a{anchor}");
            for (k, bv) in m {
                if b.get(k) == Some(bv) {
                    skip.push(k);
                }
            }
        }
        let entries: Vec<(&String, &Value)> = m.iter().collect();
        let mut order = entries.clone();
        if duplicate_first_key && let Some(&first_entry) = entries.first() {
            order.insert(0, first_entry);
        }
        for (k, val) in order {
            if skip.contains(&k.as_str()) {
                continue;
            }
            line(self);
            let key = self.scalar(&Value::from(k.as_str()));
            self.entry(&key, k, val, indent);
        }
        if m.is_empty() {
            line(self);
            self.out.push_str("{}\n");
        }
    }

    fn entry(&mut self, key: &str, raw_key: &str, val: &Value, indent: usize) {
        match val {
            Value::String(s) if raw_key == "create.py" => self.script_value(key, s, indent),
            Value::String(s) if s.contains('\n') => {
                let _ = writeln!(self.out, "{key}: {}", block_header(s));
                block_lines(&mut self.out, s, indent + 2);
            }
            Value::Object(m) if !m.is_empty() => {
                let text = val.to_string();
                if let Some(&anchor) = self.written.get(&text) {
                    let _ = writeln!(self.out, "{key}: *a{anchor}");
                    return;
                }
                if let Some(&anchor) = self.anchors.get(&text) {
                    let _ = writeln!(self.out, "{key}: &a{anchor}");
                    self.written.insert(text, anchor);
                } else {
                    let _ = writeln!(self.out, "{key}:");
                }
                self.map(val, indent + 2, false, false);
            }
            Value::Array(items) if !items.is_empty() => {
                let _ = writeln!(self.out, "{key}:");
                self.seq(items, indent + 2);
            }
            _ => {
                let _ = writeln!(self.out, "{key}: {}", self.scalar(val));
            }
        }
    }

    fn seq(&mut self, items: &[Value], indent: usize) {
        let pad = " ".repeat(indent);
        for item in items {
            self.out.push_str(&pad);
            self.out.push_str("- ");
            match item {
                Value::Object(m) if !m.is_empty() => {
                    let text = item.to_string();
                    if let Some(&anchor) = self.written.get(&text) {
                        let _ = writeln!(self.out, "*a{anchor}");
                        continue;
                    }
                    if let Some(&anchor) = self.anchors.get(&text) {
                        let _ = writeln!(self.out, "&a{anchor}");
                        self.written.insert(text, anchor);
                        self.map(item, indent + 2, false, false);
                    } else {
                        self.map(item, indent + 2, true, false);
                    }
                }
                _ => {
                    let _ = writeln!(self.out, "{}", self.scalar(item));
                }
            }
        }
    }

    fn script_value(&mut self, key: &str, s: &str, indent: usize) {
        match self.script {
            Script::DoubleQuoted => {
                let _ = writeln!(self.out, "{key}: {}", Value::from(s));
            }
            Script::Literal { pragma } => {
                let _ = writeln!(self.out, "{key}: {}{}", block_header(s), PRAGMAS[pragma]);
                block_lines(&mut self.out, s, indent + 2);
            }
            Script::LiteralWithoutPragma => {
                let _ = writeln!(self.out, "{key}: {}", block_header(s));
                block_lines(&mut self.out, s, indent + 2);
            }
        }
    }
}

/// `|`, `|-` or `|+`, so that the block keeps exactly the string's final line breaks.
fn block_header(s: &str) -> &'static str {
    if s.ends_with("\n\n") {
        "|+"
    } else if s.ends_with('\n') {
        "|"
    } else {
        "|-"
    }
}

fn block_lines(out: &mut String, s: &str, indent: usize) {
    let pad = " ".repeat(indent);
    let body = s.strip_suffix('\n').unwrap_or(s);
    for line in body.split('\n') {
        if !line.is_empty() {
            out.push_str(&pad);
            out.push_str(line);
        }
        out.push('\n');
    }
}
