//! The tree a document decodes to: JSON-like values (what the API server receives) that keep the
//! byte span of every key and value, and the source style of every scalar.

use std::borrow::Cow;

/// A byte range in the file the node was read from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        // Files are capped well below 4 GiB by the loader, so offsets fit.
        Span {
            start: start as u32,
            end: end.max(start) as u32,
        }
    }
    pub fn start(self) -> usize {
        self.start as usize
    }
    pub fn end(self) -> usize {
        self.end as usize
    }
    pub fn len(self) -> usize {
        (self.end - self.start) as usize
    }
    pub fn is_empty(self) -> bool {
        self.end == self.start
    }
    pub fn range(self) -> std::ops::Range<usize> {
        self.start()..self.end()
    }
}

/// How a node was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    /// `|`, `|-`, `|+`: the span starts at the first content character.
    Literal,
    /// `>`, `>-`, `>+`
    Folded,
    Block,
    Flow,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Value<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Cow<'a, str>),
    Seq(Vec<Node<'a>>),
    Map(Vec<Entry<'a>>),
}

/// One key of a mapping. Keys are strings, as after sigs.k8s.io/yaml's conversion to JSON
/// (`1: x` has the key `"1"`, `yes: x` the key `"true"`).
#[derive(Clone, Debug, PartialEq)]
pub struct Entry<'a> {
    pub key: Cow<'a, str>,
    pub key_span: Span,
    pub value: Node<'a>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Node<'a> {
    pub span: Span,
    pub style: Style,
    pub value: Value<'a>,
}

impl<'a> Node<'a> {
    pub fn get(&self, key: &str) -> Option<&Node<'a>> {
        self.entry(key).map(|e| &e.value)
    }

    pub fn entry(&self, key: &str) -> Option<&Entry<'a>> {
        match &self.value {
            Value::Map(entries) => entries.iter().find(|e| e.key == key),
            _ => None,
        }
    }

    /// Follows a path of keys.
    pub fn at(&self, path: &[&str]) -> Option<&Node<'a>> {
        path.iter().try_fold(self, |node, key| node.get(key))
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_seq(&self) -> Option<&[Node<'a>]> {
        match &self.value {
            Value::Seq(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_map(&self) -> Option<&[Entry<'a>]> {
        match &self.value {
            Value::Map(entries) => Some(entries),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self.value, Value::Null)
    }

    /// Number of nodes in this subtree, keys counted with their values.
    pub fn size(&self) -> usize {
        match &self.value {
            Value::Seq(items) => 1 + items.iter().map(Node::size).sum::<usize>(),
            Value::Map(entries) => 1 + entries.iter().map(|e| 1 + e.value.size()).sum::<usize>(),
            _ => 1,
        }
    }

    /// A copy that owns its strings, for values kept after the source text is gone.
    pub fn into_owned(self) -> Node<'static> {
        Node {
            span: self.span,
            style: self.style,
            value: match self.value {
                Value::Null => Value::Null,
                Value::Bool(b) => Value::Bool(b),
                Value::Int(i) => Value::Int(i),
                Value::Float(f) => Value::Float(f),
                Value::Str(s) => Value::Str(Cow::Owned(s.into_owned())),
                Value::Seq(items) => Value::Seq(items.into_iter().map(Node::into_owned).collect()),
                Value::Map(entries) => Value::Map(
                    entries
                        .into_iter()
                        .map(|e| Entry {
                            key: Cow::Owned(e.key.into_owned()),
                            key_span: e.key_span,
                            value: e.value.into_owned(),
                        })
                        .collect(),
                ),
            },
        }
    }

    /// The type name used in messages ("a string", "a mapping", ...).
    pub fn type_name(&self) -> &'static str {
        match &self.value {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a sequence",
            Value::Map(_) => "a mapping",
        }
    }

    /// A scalar as a message shows it: a string that would read as another type unquoted
    /// (`'true'`, `'1'`) keeps its quotes, so the message says what the cluster sees.
    pub fn display_for_message(&self) -> Option<String> {
        match &self.value {
            Value::Str(s) => {
                let plain =
                    super::resolve::resolve(std::borrow::Cow::Borrowed(s.as_ref()), true, None);
                Some(match plain {
                    Ok(Value::Str(_)) => s.to_string(),
                    _ => format!("'{s}'"),
                })
            }
            _ => self.display_scalar(),
        }
    }

    /// A mapping's keys with their scalar values as text (labels, annotations, a ConfigMap's
    /// data); a value that is not a scalar is empty, and a node that is not a mapping has
    /// none.
    pub fn scalar_pairs(&self) -> Vec<(String, String)> {
        self.as_map()
            .unwrap_or_default()
            .iter()
            .map(|e| {
                (
                    e.key.to_string(),
                    e.value.display_scalar().unwrap_or_default(),
                )
            })
            .collect()
    }

    /// A short rendering of a scalar for messages.
    pub fn display_scalar(&self) -> Option<String> {
        Some(match &self.value {
            Value::Null => "null".to_string(),
            Value::Bool(b) => b.to_string(),
            Value::Int(i) => i.to_string(),
            Value::Float(f) => f.to_string(),
            Value::Str(s) => s.to_string(),
            _ => return None,
        })
    }
}
