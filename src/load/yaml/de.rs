//! serde over the loader's tree: any `Deserialize` type can be read from a [`Node`], and every
//! error names the node it arose at (the innermost one: the value of the wrong type, not the
//! mapping around it) with the path of keys and indices leading to it.
//!
//! `&Node` on its own is a strict deserializer, like serde_json's: `null` is only an absent
//! `Option`, a unit or an ignored value. A [`Context`] can add the API server's reading (Go's
//! encoding/json; see [`Context::go_json`]), remember which struct each mapping was read as
//! (for "did you mean" hints), and mask nodes already reported so that a second pass finds the
//! next error.
//!
//! Recursion follows the tree and nothing else: ignored values are not descended into, so the
//! depth is at most the tree's own (which the loader bounds).

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Visitor};

use super::node::{Entry, Node, Span, Style, Value};
use crate::common::shorten;

/// One step from the root to where an error arose.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathSegment {
    /// A field of a struct.
    Field(String),
    /// A key of a map (or the variant key of an enum written as a one-key mapping).
    Key(String),
    /// An item of a sequence.
    Index(usize),
}

/// Renders a path as a user writes it: `spec.containers[0].name`, `data["create.py"]`.
pub fn path_string<'p>(segments: impl IntoIterator<Item = &'p PathSegment>) -> String {
    let mut out = String::new();
    for segment in segments {
        match segment {
            PathSegment::Field(name) | PathSegment::Key(name) => push_key(&mut out, name),
            PathSegment::Index(i) => {
                out.push('[');
                out.push_str(&i.to_string());
                out.push(']');
            }
        }
    }
    out
}

/// Appends `.key`, or `["key"]` when the key would not read as one step of a dotted path.
pub fn push_key(out: &mut String, key: &str) {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain {
        if !out.is_empty() {
            out.push('.');
        }
        out.push_str(key);
    } else {
        out.push_str(&format!("[{key:?}]"));
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum ErrorKind {
    /// The value has the wrong type: `expected` "a boolean", `found` "a string `'true'`".
    Type { expected: String, found: String },
    /// The type is right, the value is not: an integer out of range, a malformed quantity, an
    /// unknown enum variant, a wrong `kind`.
    Value { expected: String, found: String },
    /// A field the type requires is absent.
    MissingField(String),
    /// A field a `deny_unknown_fields` type refuses.
    UnknownField {
        field: String,
        expected: &'static [&'static str],
    },
    /// What the target type says in its own words (a bad base64 string, an unparsable time).
    Custom(String),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Error {
    /// The node (or key) where the error arose. `None` only for an error a type raised after
    /// reading its input, outside any node; [`from_node`] fills in the root then.
    pub span: Option<Span>,
    pub kind: ErrorKind,
    /// The newtype (e.g. `Quantity`, `Time`) the failing node was being read as, if any.
    pub newtype: Option<&'static str>,
    /// Innermost first: segments are added while the error travels up.
    rev_path: Vec<PathSegment>,
    /// Identity of the failing node (its address), for [`Context::mask_error`]; 0 for keys.
    node: usize,
}

impl Error {
    fn new(kind: ErrorKind) -> Error {
        Error {
            span: None,
            kind,
            newtype: None,
            rev_path: Vec::new(),
            node: 0,
        }
    }

    fn at_node(node: &Node<'_>, kind: ErrorKind) -> Error {
        Error::new(kind).at(node)
    }

    /// Locates an error that has no place yet at `node`. An error raised by a visitor has no
    /// place: it is about the node the visitor was handed, which is the innermost one.
    fn at(mut self, node: &Node<'_>) -> Error {
        if self.span.is_none() {
            self.span = Some(node.span);
            self.node = addr(node);
            // A visitor's `invalid_type` knows only serde's view of the value; the node knows
            // how it was written (`'true'` rather than `true`).
            if let ErrorKind::Type { found, .. } = &mut self.kind {
                *found = describe(node);
            }
        }
        self
    }

    fn at_span(mut self, span: Span) -> Error {
        if self.span.is_none() {
            self.span = Some(span);
        }
        self
    }

    fn under(mut self, segment: PathSegment) -> Error {
        self.rev_path.push(segment);
        self
    }

    /// The path from the root of the deserialization to the failing node.
    pub fn path(&self) -> impl DoubleEndedIterator<Item = &PathSegment> {
        self.rev_path.iter().rev()
    }

    pub fn path_string(&self) -> String {
        path_string(self.path())
    }

    /// A description without the path.
    pub fn description(&self) -> String {
        match &self.kind {
            ErrorKind::Type { expected, found } | ErrorKind::Value { expected, found } => {
                format!("expected {expected}, found {found}")
            }
            ErrorKind::MissingField(field) => format!("missing field `{field}`"),
            ErrorKind::UnknownField { field, expected } => {
                format!(
                    "unknown field `{field}`, expected one of {}",
                    one_of(expected)
                )
            }
            ErrorKind::Custom(message) => message.clone(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path_string();
        if path.is_empty() {
            f.write_str(&self.description())
        } else {
            write!(f, "{path}: {}", self.description())
        }
    }
}

impl std::error::Error for Error {}

impl de::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Error {
        Error::new(ErrorKind::Custom(msg.to_string()))
    }

    fn invalid_type(unexp: de::Unexpected<'_>, exp: &dyn de::Expected) -> Error {
        Error::new(ErrorKind::Type {
            expected: exp.to_string(),
            found: unexpected(&unexp),
        })
    }

    fn invalid_value(unexp: de::Unexpected<'_>, exp: &dyn de::Expected) -> Error {
        Error::new(ErrorKind::Value {
            expected: exp.to_string(),
            found: unexpected(&unexp),
        })
    }

    fn invalid_length(len: usize, exp: &dyn de::Expected) -> Error {
        Error::new(ErrorKind::Value {
            expected: exp.to_string(),
            found: format!("{len} items"),
        })
    }

    fn unknown_variant(variant: &str, expected: &'static [&'static str]) -> Error {
        Error::new(ErrorKind::Value {
            expected: one_of(expected),
            found: format!("`{variant}`"),
        })
    }

    fn unknown_field(field: &str, expected: &'static [&'static str]) -> Error {
        Error::new(ErrorKind::UnknownField {
            field: field.to_string(),
            expected,
        })
    }

    fn missing_field(field: &'static str) -> Error {
        Error::new(ErrorKind::MissingField(field.to_string()))
    }
}

fn one_of(names: &[&str]) -> String {
    if names.is_empty() {
        return "nothing".to_string();
    }
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// serde's view of a value, in the words [`describe`] uses.
fn unexpected(unexp: &de::Unexpected<'_>) -> String {
    use de::Unexpected as U;
    match unexp {
        U::Bool(b) => format!("a boolean `{b}`"),
        U::Signed(i) => format!("an integer `{i}`"),
        U::Unsigned(u) => format!("an integer `{u}`"),
        U::Float(f) => format!("a number `{f}`"),
        U::Str(s) => format!("a string `{}`", shorten(s)),
        U::Unit => "null".to_string(),
        U::Seq => "a sequence".to_string(),
        U::Map => "a mapping".to_string(),
        other => other.to_string(),
    }
}

/// How a node reads in a message: its type and, for a scalar, its value as written.
pub fn describe(node: &Node<'_>) -> String {
    match &node.value {
        Value::Str(s) => {
            let shown = shorten(s);
            match node.style {
                Style::SingleQuoted => format!("a string `'{shown}'`"),
                Style::DoubleQuoted => format!("a string `\"{shown}\"`"),
                _ => format!("a string `{shown}`"),
            }
        }
        Value::Bool(_) | Value::Int(_) | Value::Float(_) => format!(
            "{} `{}`",
            node.type_name(),
            node.display_scalar().unwrap_or_default()
        ),
        _ => node.type_name().to_string(),
    }
}

fn addr(node: &Node<'_>) -> usize {
    std::ptr::from_ref(node).addr()
}

/// Reads any `Deserialize` type from a node; every error has a span.
pub fn from_node<'de, T: de::Deserialize<'de>>(node: &'de Node<'_>) -> Result<T, Error> {
    T::deserialize(node).map_err(|e: Error| e.at(node))
}

/// Checks a newtype's content before it is read (e.g. the grammar of a `Quantity` string).
/// Returns what was expected when the node does not fit.
pub type NewtypeCheck = fn(name: &'static str, node: &Node<'_>) -> Result<(), String>;

/// Options and records for one object's deserialization; see the module comment.
#[derive(Default)]
pub struct Context {
    go_json: bool,
    newtype_check: Option<NewtypeCheck>,
    /// Addresses of nodes to read as if they were `null`, sorted.
    masked: Vec<usize>,
    /// Which struct each mapping was read as: (address, field names).
    structs: Cell<Vec<(usize, &'static [&'static str])>>,
}

impl Context {
    /// Strict reading (as `&Node` alone), with records.
    pub fn new() -> Context {
        Context::default()
    }

    /// The API server's reading: Go's encoding/json accepts `null` for any type (it leaves the
    /// zero value), and kubectl sends a YAML `1.0` as the JSON number `1`, which an integer
    /// field accepts. A `null` of a known struct field is skipped as if absent, so it is never
    /// a type error; an unknown field stays visible whatever its value.
    pub fn go_json() -> Context {
        Context {
            go_json: true,
            ..Context::default()
        }
    }

    pub fn with_newtype_check(mut self, check: NewtypeCheck) -> Context {
        self.newtype_check = Some(check);
        self
    }

    pub fn deserializer<'de, 'a, 'c>(
        &'c self,
        node: &'de Node<'a>,
    ) -> NodeDeserializer<'de, 'a, 'c> {
        NodeDeserializer {
            node,
            cx: Some(self),
        }
    }

    /// Reads `node` as `null` from now on (for a check done outside serde, or an error that
    /// was already reported).
    pub fn mask(&mut self, node: &Node<'_>) {
        self.mask_addr(addr(node));
    }

    /// Masks the node an error arose at, so that the next pass goes past it. False when there
    /// is nothing new to mask (the error is at a key, outside any node, or at a masked node):
    /// a further pass would fail the same way.
    pub fn mask_error(&mut self, error: &Error) -> bool {
        error.node != 0 && self.mask_addr(error.node)
    }

    fn mask_addr(&mut self, a: usize) -> bool {
        match self.masked.binary_search(&a) {
            Ok(_) => false,
            Err(i) => {
                self.masked.insert(i, a);
                true
            }
        }
    }

    fn is_masked(&self, node: &Node<'_>) -> bool {
        !self.masked.is_empty() && self.masked.binary_search(&addr(node)).is_ok()
    }

    /// The fields of the struct `node` was last read as, if it was read as one.
    pub fn struct_fields(&self, node: &Node<'_>) -> Option<&'static [&'static str]> {
        let a = addr(node);
        let structs = self.structs.take();
        let found = structs.iter().find(|(n, _)| *n == a).map(|(_, f)| *f);
        self.structs.set(structs);
        found
    }

    fn record_struct(&self, node: &Node<'_>, fields: &'static [&'static str]) {
        let mut structs = self.structs.take();
        structs.push((addr(node), fields));
        self.structs.set(structs);
    }

    /// Whether `node` reads as `null` here.
    fn reads_null(&self, node: &Node<'_>) -> bool {
        (self.go_json && node.is_null()) || self.is_masked(node)
    }
}

/// The deserializer with a [`Context`]; `&Node` alone is the same without one.
#[derive(Clone, Copy)]
pub struct NodeDeserializer<'de, 'a, 'c> {
    node: &'de Node<'a>,
    cx: Option<&'c Context>,
}

impl<'de, 'a, 'c> NodeDeserializer<'de, 'a, 'c> {
    /// Go's zero value applies: the node is `null` in Go mode, or masked.
    fn zero(&self) -> bool {
        self.cx.is_some_and(|cx| cx.reads_null(self.node))
    }

    fn go(&self) -> bool {
        self.cx.is_some_and(|cx| cx.go_json)
    }

    /// The node as an integer: an `Int`, or in Go mode a float with no fraction that Go's
    /// encoder writes without an exponent (below 1e21), as kubectl would send it.
    fn int(&self) -> Option<i64> {
        match self.node.value {
            Value::Int(i) => Some(i),
            Value::Float(f) if self.go() && f.fract() == 0.0 && f.abs() < 1e21 => {
                // `as` saturates; the range check below decides about the rest.
                let i = f as i64;
                (i as f64 == f).then_some(i)
            }
            _ => None,
        }
    }

    fn type_error(&self, expected: &str) -> Error {
        Error::at_node(
            self.node,
            ErrorKind::Type {
                expected: expected.to_string(),
                found: describe(self.node),
            },
        )
    }

    fn integer<V: Visitor<'de>>(self, visitor: V, min: i128, max: i128) -> Result<V::Value, Error> {
        let node = self.node;
        if self.zero() {
            return visitor.visit_i64(0).map_err(|e: Error| e.at(node));
        }
        let Some(i) = self.int() else {
            return Err(self.type_error("an integer"));
        };
        if !(min..=max).contains(&i128::from(i)) {
            let expected = if min == 0 && max >= i128::from(i64::MAX) {
                "a non-negative integer".to_string()
            } else {
                format!("an integer from {min} to {max}")
            };
            return Err(Error::at_node(
                node,
                ErrorKind::Value {
                    expected,
                    found: describe(node),
                },
            ));
        }
        let result = if min == 0 {
            visitor.visit_u64(i.unsigned_abs())
        } else {
            visitor.visit_i64(i)
        };
        result.map_err(|e: Error| e.at(node))
    }

    fn map_access(&self, fields: Option<&'static [&'static str]>) -> MapAccess<'de, 'a, 'c> {
        let entries: &'de [Entry<'a>] = match (&self.node.value, self.zero()) {
            (Value::Map(entries), false) => entries,
            _ => &[],
        };
        MapAccess {
            entries,
            next: 0,
            fields,
            current: None,
            cx: self.cx,
        }
    }

    fn seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let node = self.node;
        let items: &'de [Node<'a>] = match &node.value {
            _ if self.zero() => &[],
            Value::Seq(items) => items,
            _ => return Err(self.type_error("a sequence")),
        };
        let mut access = SeqAccess {
            items,
            next: 0,
            cx: self.cx,
        };
        let value = visitor
            .visit_seq(&mut access)
            .map_err(|e: Error| e.at(node))?;
        if access.next < items.len() {
            // A tuple that wants fewer items than there are (serde_json refuses these too).
            return Err(Error::at_node(
                node,
                ErrorKind::Value {
                    expected: format!("{} items", access.next),
                    found: format!("{} items", items.len()),
                },
            ));
        }
        Ok(value)
    }

    fn map<V: Visitor<'de>>(
        self,
        visitor: V,
        fields: Option<&'static [&'static str]>,
    ) -> Result<V::Value, Error> {
        let node = self.node;
        if !self.zero() && !matches!(node.value, Value::Map(_)) {
            return Err(self.type_error("a mapping"));
        }
        if let (Some(cx), Some(fields)) = (self.cx, fields) {
            cx.record_struct(node, fields);
        }
        visitor
            .visit_map(self.map_access(fields))
            .map_err(|e: Error| e.at(node))
    }
}

impl<'de, 'a, 'c> de::Deserializer<'de> for NodeDeserializer<'de, 'a, 'c> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let node = self.node;
        if self.zero() {
            return visitor.visit_unit().map_err(|e: Error| e.at(node));
        }
        let result = match &node.value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Int(i) => visitor.visit_i64(*i),
            Value::Float(f) => match self.int() {
                Some(i) => visitor.visit_i64(i),
                None => visitor.visit_f64(*f),
            },
            Value::Str(s) => visitor.visit_borrowed_str(s),
            Value::Seq(_) => return self.seq(visitor),
            Value::Map(_) => return self.map(visitor, None),
        };
        result.map_err(|e: Error| e.at(node))
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let node = self.node;
        let result = match node.value {
            _ if self.zero() => visitor.visit_bool(false),
            Value::Bool(b) => visitor.visit_bool(b),
            _ => return Err(self.type_error("a boolean")),
        };
        result.map_err(|e: Error| e.at(node))
    }

    fn deserialize_i8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.integer(visitor, i8::MIN.into(), i8::MAX.into())
    }
    fn deserialize_i16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.integer(visitor, i16::MIN.into(), i16::MAX.into())
    }
    fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.integer(visitor, i32::MIN.into(), i32::MAX.into())
    }
    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.integer(visitor, i64::MIN.into(), i64::MAX.into())
    }
    fn deserialize_i128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.integer(visitor, i64::MIN.into(), i64::MAX.into())
    }
    fn deserialize_u8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.integer(visitor, 0, u8::MAX.into())
    }
    fn deserialize_u16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.integer(visitor, 0, u16::MAX.into())
    }
    fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.integer(visitor, 0, u32::MAX.into())
    }
    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.integer(visitor, 0, u64::MAX.into())
    }
    fn deserialize_u128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.integer(visitor, 0, u64::MAX.into())
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_f64(visitor)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let node = self.node;
        let result = match node.value {
            _ if self.zero() => visitor.visit_f64(0.0),
            // JSON has one kind of number.
            Value::Int(i) => visitor.visit_f64(i as f64),
            Value::Float(f) => visitor.visit_f64(f),
            _ => return Err(self.type_error("a number")),
        };
        result.map_err(|e: Error| e.at(node))
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let node = self.node;
        let mut chars = node.as_str().unwrap_or("").chars();
        match (chars.next(), chars.next()) {
            (Some(c), None) => visitor.visit_char(c).map_err(|e: Error| e.at(node)),
            _ => Err(self.type_error("a single character")),
        }
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let node = self.node;
        let result = match &node.value {
            _ if self.zero() => visitor.visit_borrowed_str(""),
            Value::Str(s) => visitor.visit_borrowed_str(s),
            _ => return Err(self.type_error("a string")),
        };
        result.map_err(|e: Error| e.at(node))
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let node = self.node;
        let result = match &node.value {
            _ if self.zero() => visitor.visit_borrowed_bytes(&[]),
            Value::Str(s) => visitor.visit_borrowed_bytes(s.as_bytes()),
            Value::Seq(_) => return self.seq(visitor),
            _ => return Err(self.type_error("a string")),
        };
        result.map_err(|e: Error| e.at(node))
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let node = self.node;
        let result = if node.is_null() || self.zero() {
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        };
        result.map_err(|e: Error| e.at(node))
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let node = self.node;
        if node.is_null() || self.zero() {
            visitor.visit_unit().map_err(|e: Error| e.at(node))
        } else {
            Err(self.type_error("null"))
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        let node = self.node;
        if let Some(check) = self.cx.and_then(|cx| cx.newtype_check)
            && !self.zero()
            && let Err(expected) = check(name, node)
        {
            let mut e = Error::at_node(
                node,
                ErrorKind::Value {
                    expected,
                    found: describe(node),
                },
            );
            e.newtype = Some(name);
            return Err(e);
        }
        visitor.visit_newtype_struct(self).map_err(|e: Error| {
            let mut e = e.at(node);
            // The newtype wraps this very node: say what it was read as.
            if e.node == addr(node) && e.rev_path.is_empty() && e.newtype.is_none() {
                e.newtype = Some(name);
            }
            e
        })
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.seq(visitor)
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.map(visitor, None)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.map(visitor, Some(fields))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        let node = self.node;
        let access = match &node.value {
            Value::Str(s) => EnumAccess {
                variant: s,
                variant_span: node.span,
                value: None,
                node,
                cx: self.cx,
            },
            Value::Map(entries) if !self.zero() => match entries.as_slice() {
                [entry] => EnumAccess {
                    variant: &entry.key,
                    variant_span: entry.key_span,
                    value: Some(&entry.value),
                    node,
                    cx: self.cx,
                },
                _ => return Err(self.type_error("a string or a mapping with one key")),
            },
            _ => return Err(self.type_error("a string or a mapping with one key")),
        };
        visitor.visit_enum(access).map_err(|e: Error| e.at(node))
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        // Not descended into: nothing is checked there, and the depth stays the typed one.
        visitor.visit_unit().map_err(|e: Error| e.at(self.node))
    }
}

fn strict<'de, 'a>(node: &'de Node<'a>) -> NodeDeserializer<'de, 'a, 'static> {
    NodeDeserializer { node, cx: None }
}

macro_rules! forward_strict {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            strict(self).$method(visitor)
        }
    )*};
}

/// `&Node` alone: the strict deserializer.
impl<'de, 'a> de::Deserializer<'de> for &'de Node<'a> {
    type Error = Error;

    forward_strict! {
        deserialize_any deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32
        deserialize_i64 deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32
        deserialize_u64 deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char
        deserialize_str deserialize_string deserialize_bytes deserialize_byte_buf
        deserialize_option deserialize_unit deserialize_seq deserialize_map
        deserialize_identifier deserialize_ignored_any
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        strict(self).deserialize_unit_struct(name, visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        strict(self).deserialize_newtype_struct(name, visitor)
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, Error> {
        strict(self).deserialize_tuple(len, visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        strict(self).deserialize_tuple_struct(name, len, visitor)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        strict(self).deserialize_struct(name, fields, visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        strict(self).deserialize_enum(name, variants, visitor)
    }
}

struct SeqAccess<'de, 'a, 'c> {
    items: &'de [Node<'a>],
    next: usize,
    cx: Option<&'c Context>,
}

impl<'de> de::SeqAccess<'de> for SeqAccess<'de, '_, '_> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        let Some(node) = self.items.get(self.next) else {
            return Ok(None);
        };
        let index = self.next;
        self.next += 1;
        let de = NodeDeserializer { node, cx: self.cx };
        seed.deserialize(de)
            .map(Some)
            .map_err(|e: Error| e.at(node).under(PathSegment::Index(index)))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len().saturating_sub(self.next))
    }
}

struct MapAccess<'de, 'a, 'c> {
    entries: &'de [Entry<'a>],
    next: usize,
    /// The struct's fields when the mapping is read as a struct.
    fields: Option<&'static [&'static str]>,
    current: Option<&'de Entry<'a>>,
    cx: Option<&'c Context>,
}

impl MapAccess<'_, '_, '_> {
    /// A `null` (or masked) value is absent to Go, except under a key the struct does not know:
    /// that one must still be seen to be reported.
    fn skips(&self, entry: &Entry<'_>) -> bool {
        self.cx.is_some_and(|cx| cx.reads_null(&entry.value))
            && self
                .fields
                .is_none_or(|fields| fields.contains(&entry.key.as_ref()))
    }
}

impl<'de> de::MapAccess<'de> for MapAccess<'de, '_, '_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        while let Some(entry) = self.entries.get(self.next) {
            self.next += 1;
            if self.skips(entry) {
                continue;
            }
            self.current = Some(entry);
            let key = KeyDeserializer {
                key: &entry.key,
                span: entry.key_span,
            };
            return seed.deserialize(key).map(Some).map_err(|e: Error| {
                e.at_span(entry.key_span)
                    .under(PathSegment::Key(entry.key.to_string()))
            });
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let Some(entry) = self.current.take() else {
            return Err(de::Error::custom(
                "a map value was asked for before its key",
            ));
        };
        let de = NodeDeserializer {
            node: &entry.value,
            cx: self.cx,
        };
        seed.deserialize(de).map_err(|e: Error| {
            let name = entry.key.to_string();
            let segment = match self.fields {
                Some(_) => PathSegment::Field(name),
                None => PathSegment::Key(name),
            };
            e.at(&entry.value).under(segment)
        })
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len().saturating_sub(self.next))
    }
}

/// A mapping key (always a string in the tree, as in JSON) or an enum variant name.
struct KeyDeserializer<'de> {
    key: &'de str,
    span: Span,
}

impl KeyDeserializer<'_> {
    fn type_error(&self, expected: &str) -> Error {
        Error::new(ErrorKind::Type {
            expected: expected.to_string(),
            found: format!("the key `{}`", shorten(self.key)),
        })
        .at_span(self.span)
    }
}

impl<'de> de::Deserializer<'de> for KeyDeserializer<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let span = self.span;
        visitor
            .visit_borrowed_str(self.key)
            .map_err(|e: Error| e.at_span(span))
    }

    // Integer and boolean keys arrive as strings, as in JSON; read them back as serde_json does.
    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let span = self.span;
        match self.key.parse::<i64>() {
            Ok(i) => visitor.visit_i64(i).map_err(|e: Error| e.at_span(span)),
            Err(_) => Err(self.type_error("an integer")),
        }
    }

    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let span = self.span;
        match self.key.parse::<u64>() {
            Ok(u) => visitor.visit_u64(u).map_err(|e: Error| e.at_span(span)),
            Err(_) => Err(self.type_error("a non-negative integer")),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let span = self.span;
        match self.key {
            "true" => visitor.visit_bool(true),
            "false" => visitor.visit_bool(false),
            _ => return Err(self.type_error("a boolean")),
        }
        .map_err(|e: Error| e.at_span(span))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let span = self.span;
        visitor.visit_some(self).map_err(|e: Error| e.at_span(span))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        let span = self.span;
        visitor
            .visit_newtype_struct(self)
            .map_err(|e: Error| e.at_span(span))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        let span = self.span;
        visitor.visit_enum(self).map_err(|e: Error| e.at_span(span))
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor
            .visit_unit()
            .map_err(|e: Error| e.at_span(self.span))
    }

    fn deserialize_i8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_i64(visitor)
    }
    fn deserialize_i16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_i64(visitor)
    }
    fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_i64(visitor)
    }
    fn deserialize_u8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_u64(visitor)
    }
    fn deserialize_u16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_u64(visitor)
    }
    fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_u64(visitor)
    }

    serde::forward_to_deserialize_any! {
        i128 u128 f32 f64 char str string bytes byte_buf unit unit_struct seq tuple
        tuple_struct map struct identifier
    }
}

/// A key as a unit variant (`enum` keys of a map).
impl<'de> de::EnumAccess<'de> for KeyDeserializer<'de> {
    type Error = Error;
    type Variant = UnitOnly;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, UnitOnly), Error> {
        let span = self.span;
        let value = seed.deserialize(self).map_err(|e: Error| e.at_span(span))?;
        Ok((value, UnitOnly { span }))
    }
}

struct UnitOnly {
    span: Span,
}

impl UnitOnly {
    fn refuse(&self) -> Error {
        Error::new(ErrorKind::Type {
            expected: "a variant with a value".to_string(),
            found: "a key".to_string(),
        })
        .at_span(self.span)
    }
}

impl<'de> de::VariantAccess<'de> for UnitOnly {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        Ok(())
    }
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, _seed: T) -> Result<T::Value, Error> {
        Err(self.refuse())
    }
    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, _visitor: V) -> Result<V::Value, Error> {
        Err(self.refuse())
    }
    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Error> {
        Err(self.refuse())
    }
}

/// An enum written as `Variant` or as `{Variant: value}`.
struct EnumAccess<'de, 'a, 'c> {
    variant: &'de str,
    variant_span: Span,
    value: Option<&'de Node<'a>>,
    /// The whole enum node, for errors about its shape.
    node: &'de Node<'a>,
    cx: Option<&'c Context>,
}

impl<'de, 'a, 'c> de::EnumAccess<'de> for EnumAccess<'de, 'a, 'c> {
    type Error = Error;
    type Variant = VariantAccess<'de, 'a, 'c>;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, VariantAccess<'de, 'a, 'c>), Error> {
        let key = KeyDeserializer {
            key: self.variant,
            span: self.variant_span,
        };
        let variant = seed
            .deserialize(key)
            .map_err(|e: Error| e.at_span(self.variant_span))?;
        Ok((
            variant,
            VariantAccess {
                name: self.variant,
                value: self.value,
                node: self.node,
                cx: self.cx,
            },
        ))
    }
}

struct VariantAccess<'de, 'a, 'c> {
    name: &'de str,
    value: Option<&'de Node<'a>>,
    node: &'de Node<'a>,
    cx: Option<&'c Context>,
}

impl<'de, 'a, 'c> VariantAccess<'de, 'a, 'c> {
    fn value(&self) -> Result<NodeDeserializer<'de, 'a, 'c>, Error> {
        match self.value {
            Some(node) => Ok(NodeDeserializer { node, cx: self.cx }),
            None => Err(Error::at_node(
                self.node,
                ErrorKind::Type {
                    expected: format!("a mapping `{}: ...`", self.name),
                    found: describe(self.node),
                },
            )),
        }
    }

    fn locate(&self, e: Error) -> Error {
        match self.value {
            Some(node) => e.at(node).under(PathSegment::Key(self.name.to_string())),
            None => e.at(self.node),
        }
    }
}

impl<'de> de::VariantAccess<'de> for VariantAccess<'de, '_, '_> {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        match self.value {
            None => Ok(()),
            Some(node) if node.is_null() => Ok(()),
            Some(node) => Err(Error::at_node(
                node,
                ErrorKind::Type {
                    expected: "null".to_string(),
                    found: describe(node),
                },
            )
            .under(PathSegment::Key(self.name.to_string()))),
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Error> {
        let de = self.value()?;
        seed.deserialize(de).map_err(|e| self.locate(e))
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, Error> {
        let de = self.value()?;
        de.seq(visitor).map_err(|e| self.locate(e))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        let de = self.value()?;
        de.map(visitor, Some(fields)).map_err(|e| self.locate(e))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Deserialize;

    use super::*;
    use crate::load::yaml::{Parsed, parse};

    fn root(text: &str) -> Node<'_> {
        match parse(text).into_iter().next() {
            Some(Parsed::Document(d)) => d.root,
            other => panic!("{other:?}"),
        }
    }

    fn read<'de, T: Deserialize<'de>>(node: &'de Node<'_>) -> Result<T, Error> {
        from_node(node)
    }

    /// The text an error points at.
    fn at<'t>(text: &'t str, e: &Error) -> &'t str {
        &text[e.span.expect("located").range()]
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase")]
    struct Pod<'s> {
        name: String,
        #[serde(borrow)]
        image: &'s str,
        read_only: bool,
        replicas: i32,
        port: u16,
        ratio: f64,
        grade: char,
        args: Vec<String>,
        labels: BTreeMap<String, String>,
        pair: (u8, i64),
        mode: Mode,
        owner: Option<Owner>,
        missing: Option<u32>,
        nothing: Option<String>,
        unit: (),
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Owner {
        uid: u64,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    enum Mode {
        Plain,
        Weighted(u8),
        Named { name: String },
    }

    const POD: &str = "\
name: job
image: python:3
readOnly: yes
replicas: -3
port: 8080
ratio: 2
grade: A
args: [a, 'b']
labels: {app: x, tier: 'y'}
pair: [1, -2]
mode: Plain
owner: {uid: 7, ignored: {deep: [1, 2]}}
nothing: ~
unit: null
";

    #[test]
    fn reads_every_kind_of_value() {
        let node = root(POD);
        let pod: Pod = read(&node).unwrap();
        assert_eq!(pod.name, "job");
        assert_eq!(pod.image, "python:3");
        assert!(pod.read_only, "yes is true in YAML 1.1");
        assert_eq!((pod.replicas, pod.port, pod.ratio), (-3, 8080, 2.0));
        assert_eq!(pod.grade, 'A');
        assert_eq!(pod.args, ["a", "b"]);
        assert_eq!(pod.labels["tier"], "y");
        assert_eq!(pod.pair, (1, -2));
        assert_eq!(pod.mode, Mode::Plain);
        assert_eq!(pod.owner, Some(Owner { uid: 7 }));
        assert_eq!((pod.missing, pod.nothing), (None, None));
    }

    #[test]
    fn enums_come_from_a_string_or_a_one_key_mapping() {
        let node = root("- Plain\n- {Weighted: 3}\n- Named: {name: x}\n");
        let modes: Vec<Mode> = read(&node).unwrap();
        assert_eq!(
            modes,
            [
                Mode::Plain,
                Mode::Weighted(3),
                Mode::Named { name: "x".into() }
            ]
        );
        let text = "- Plain\n- Heavy\n";
        let e = read::<Vec<Mode>>(&root(text)).unwrap_err();
        assert_eq!(at(text, &e), "Heavy");
        assert_eq!(e.path_string(), "[1]");
        let text = "- {Plain: 1, Weighted: 2}\n";
        let e = read::<Vec<Mode>>(&root(text)).unwrap_err();
        assert!(at(text, &e).starts_with("{Plain"), "{e}");
        // A newtype variant's value is checked where it stands.
        let text = "- Weighted: 300\n";
        let e = read::<Vec<Mode>>(&root(text)).unwrap_err();
        assert_eq!(at(text, &e), "300");
        assert_eq!(e.path_string(), "[0].Weighted");
    }

    #[test]
    fn options_are_none_for_null_and_absent() {
        #[derive(Deserialize)]
        struct S {
            a: Option<i32>,
            b: Option<i32>,
            c: Option<i32>,
        }
        let node = root("a: null\nc: 4\n");
        let s: S = read(&node).unwrap();
        assert_eq!((s.a, s.b, s.c), (None, None, Some(4)));
        // Strict reading: null is not a string.
        let text = "name: ~\n";
        let e = read::<Owner>(&root("uid: ~\n")).unwrap_err();
        assert!(matches!(e.kind, ErrorKind::Type { .. }), "{e}");
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Named {
            name: String,
        }
        let e = read::<Named>(&root(text)).unwrap_err();
        assert_eq!(at(text, &e), "~");
    }

    #[test]
    fn nested_errors_point_at_the_innermost_value() {
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Outer {
            a: Inner,
        }
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Inner {
            b: Vec<Leaf>,
        }
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Leaf {
            c: bool,
        }
        let text = "a:\n  b:\n  - c: true\n  - c: 'x'\n";
        let e = read::<Outer>(&root(text)).unwrap_err();
        assert_eq!(at(text, &e), "'x'");
        assert_eq!(e.span.unwrap().start(), text.find("'x'").unwrap());
        assert_eq!(e.path_string(), "a.b[1].c");
        assert_eq!(
            e.kind,
            ErrorKind::Type {
                expected: "a boolean".into(),
                found: "a string `'x'`".into()
            }
        );
        assert_eq!(
            e.to_string(),
            "a.b[1].c: expected a boolean, found a string `'x'`"
        );
        // The wrong container is reported at the container, not at its parent.
        let text = "a:\n  b: {c: true}\n";
        let e = read::<Outer>(&root(text)).unwrap_err();
        assert_eq!(at(text, &e), "{c: true}");
        assert_eq!(e.path_string(), "a.b");
    }

    #[test]
    fn a_string_where_a_boolean_is_expected() {
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct S {
            flag: bool,
        }
        for (text, found) in [
            ("flag: 'true'\n", "a string `'true'`"),
            ("flag: \"no\"\n", "a string `\"no\"`"),
            ("flag: 1\n", "an integer `1`"),
        ] {
            let e = read::<S>(&root(text)).unwrap_err();
            assert_eq!(e.span.unwrap().start(), 6, "{text}");
            let ErrorKind::Type { expected, found: f } = &e.kind else {
                panic!("{e:?}")
            };
            assert_eq!((expected.as_str(), f.as_str()), ("a boolean", found));
        }
    }

    #[test]
    fn integers_out_of_range_are_refused_where_they_stand() {
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct S {
            small: Option<u8>,
            count: Option<u32>,
            delta: Option<i32>,
            big: Option<i64>,
            uid: Option<u64>,
        }
        let cases = [
            ("count: -1\n", "-1", "an integer from 0 to 4294967295"),
            ("uid: -1\n", "-1", "a non-negative integer"),
            (
                "count: 4294967296\n",
                "4294967296",
                "an integer from 0 to 4294967295",
            ),
            (
                "delta: 2147483648\n",
                "2147483648",
                "an integer from -2147483648 to 2147483647",
            ),
            (
                "delta: -2147483649\n",
                "-2147483649",
                "an integer from -2147483648 to 2147483647",
            ),
            ("small: 256\n", "256", "an integer from 0 to 255"),
        ];
        for (text, value, expected) in cases {
            let e = read::<S>(&root(text)).unwrap_err();
            assert_eq!(at(text, &e), value, "{text}");
            let ErrorKind::Value { expected: x, .. } = &e.kind else {
                panic!("{e:?}")
            };
            assert_eq!(x, expected);
        }
        let node = root("count: 4294967295\ndelta: -2147483648\nbig: 9223372036854775807\n");
        let s: S = read(&node).unwrap();
        assert_eq!((s.count, s.delta), (Some(u32::MAX), Some(i32::MIN)));
        // Strictly, 1.0 and 1.5 are numbers, not integers.
        for text in ["delta: 1.0\n", "delta: 1.5\n", "delta: '1'\n"] {
            let e = read::<S>(&root(text)).unwrap_err();
            assert!(
                matches!(&e.kind, ErrorKind::Type { expected, .. } if expected == "an integer")
            );
        }
    }

    #[test]
    fn missing_and_refused_fields() {
        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct S {
            name: String,
        }
        let text = "nmae: x\n";
        let e = read::<S>(&root(text)).unwrap_err();
        assert_eq!(at(text, &e), "nmae");
        assert!(matches!(e.kind, ErrorKind::UnknownField { ref field, .. } if field == "nmae"));
        let text = "x: {}\n";
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct T {
            x: Owner,
        }
        let e = read::<T>(&root(text)).unwrap_err();
        assert_eq!(at(text, &e), "{}");
        assert_eq!(e.kind, ErrorKind::MissingField("uid".into()));
    }

    #[test]
    fn tuples_refuse_extra_items_and_keys_read_as_numbers() {
        let text = "[1, 2, 3]\n";
        assert!(read::<(u8, u8)>(&root(text)).is_err());
        let node = root("1: a\n-2: b\n");
        let m: BTreeMap<i32, String> = read(&node).unwrap();
        assert_eq!(m[&-2], "b");
        let text = "x: a\n";
        let e = read::<BTreeMap<i32, String>>(&root(text)).unwrap_err();
        assert_eq!(at(text, &e), "x");
    }

    #[test]
    fn go_reading_accepts_null_and_whole_floats() {
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct S {
            name: Option<String>,
            count: Option<i32>,
            args: Option<Vec<String>>,
            env: Option<BTreeMap<String, String>>,
        }
        let node = root("name: ~\ncount: 3.0\nargs: [a, ~]\nenv: {A: ~}\n");
        let cx = Context::go_json();
        let s = S::deserialize(cx.deserializer(&node)).unwrap();
        assert_eq!(s.count, Some(3));
        assert_eq!(s.args.unwrap(), ["a", ""]);
        assert!(s.env.unwrap().is_empty());
        let text = "count: 3.5\n";
        let node = root(text);
        let e = S::deserialize(cx.deserializer(&node)).unwrap_err();
        assert_eq!(at(text, &e), "3.5");
        let text = "count: 1e30\n";
        let node = root(text);
        assert!(S::deserialize(cx.deserializer(&node)).is_err());
    }

    #[test]
    fn masking_lets_a_second_pass_find_the_next_error() {
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct S {
            a: Option<bool>,
            b: Option<Vec<bool>>,
        }
        let text = "a: 'x'\nb: [true, 1, 2]\n";
        let node = root(text);
        let mut cx = Context::go_json();
        let mut seen = Vec::new();
        loop {
            match S::deserialize(cx.deserializer(&node)) {
                Ok(_) => break,
                Err(e) => {
                    seen.push(at(text, &e).to_string());
                    assert!(cx.mask_error(&e));
                }
            }
        }
        assert_eq!(seen, ["'x'", "1", "2"]);
    }

    #[test]
    fn records_the_fields_of_each_struct() {
        let node = root("uid: 1\n");
        let cx = Context::new();
        Owner::deserialize(cx.deserializer(&node)).unwrap();
        assert_eq!(cx.struct_fields(&node), Some(&["uid"][..]));
        assert_eq!(cx.struct_fields(node.get("uid").unwrap()), None);
    }

    #[test]
    fn depth_is_the_trees_own() {
        let depth = crate::load::yaml::MAX_NESTING - 1;
        let text = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let node = root(&text);
        let value: serde_json::Value = read(&node).unwrap();
        assert!(value.is_array());
        // Ignored values are not descended into at all.
        let text = format!(
            "uid: 1\nx: {}{}\n",
            "[".repeat(depth - 1),
            "]".repeat(depth - 1)
        );
        let node = root(&text);
        assert_eq!(read::<Owner>(&node).unwrap(), Owner { uid: 1 });
    }

    #[test]
    fn hostile_input_gives_errors_not_panics() {
        let texts = [
            "",
            "~",
            "[]",
            "{}",
            "x",
            "1",
            "-1",
            "1.5",
            ".nan",
            ".inf",
            "-.inf",
            "true",
            "'a'",
            "[1, [2, [3]]]",
            "{a: {b: {c: d}}}",
            "Weighted: [1]",
            "Named: x",
            "{Plain: ~}",
            "- Named: {name: [1]}",
            "a: &a [1]\nb: *a\n",
            "\"\\u0000\"",
            "uid: 18446744073709551616",
            "name: job\nimage: [x]\n",
            "9223372036854775808",
            "-9223372036854775809",
        ];
        for text in texts {
            let Some(Parsed::Document(d)) = parse(text).into_iter().next() else {
                continue;
            };
            let node = &d.root;
            let _ = read::<serde_json::Value>(node);
            let _ = read::<Pod>(node);
            let _ = read::<Vec<Mode>>(node);
            let _ = read::<Mode>(node);
            let _ = read::<Option<Owner>>(node);
            let _ = read::<(u8, char, f32)>(node);
            let _ = read::<BTreeMap<u8, bool>>(node);
            let _ = read::<()>(node);
            let _ = read::<i128>(node);
            let _ = read::<serde::de::IgnoredAny>(node);
            let cx = Context::go_json();
            let _ = Pod::deserialize(cx.deserializer(node));
            let _ = serde_json::Value::deserialize(cx.deserializer(node));
        }
    }
}
