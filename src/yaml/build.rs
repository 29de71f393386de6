//! Events to trees: one document at a time, without recursion, with aliases expanded under a
//! budget, merge keys applied as go-yaml v2 applies them, and duplicate keys recorded.

use super::node::{Entry, Node, Span, Style, Value};
use super::resolve::{self, CoreTag};
use super::{Document, DuplicateKey, MAX_ALIAS_NODES, MAX_NESTING, Parsed, SyntaxError};
use granit_parser::{Event, Options, Parser, ScalarStyle, StructureStyle};
use std::borrow::Cow;
use std::collections::HashMap;

/// Parses `text[range]` (one chunk of a file; usually one document) into documents whose spans
/// are offsets into `text`.
pub fn parse_chunk<'a>(text: &'a str, range: std::ops::Range<usize>, out: &mut Vec<Parsed<'a>>) {
    let base = range.start;
    let chunk = &text[range];
    let mut options = Options::default();
    options.block_nesting_limit = MAX_NESTING;
    options.flow_nesting_limit = MAX_NESTING;
    let mut parser = Parser::new_from_str_with_options(chunk, options);
    let mut builder: Option<Builder<'a>> = None;
    while let Some(next) = parser.next_event() {
        let (event, span) = match next {
            Ok(pair) => pair,
            Err(err) => {
                let mut at = base + err.marker().byte_offset().unwrap_or(0);
                if is_tab_error(err.kind()) {
                    at = tab_near(text, at, base + chunk.len()).unwrap_or(at);
                }
                let message = match err.kind() {
                    granit_parser::ErrorKind::RecursionLimitExceeded => format!(
                        "collections are nested more than {MAX_NESTING} levels deep; no manifest \
                         needs that, and credlint reads no further"
                    ),
                    _ => err.info(),
                };
                out.push(Parsed::Error(SyntaxError {
                    span: Span::new(at, at + char_len_at(text, at)),
                    message,
                }));
                builder = None;
                match parser.proceed_next_document() {
                    Ok(true) => continue,
                    _ => break,
                }
            }
        };
        let range = span.byte_range().unwrap_or(0..0);
        let span = Span::new(base + range.start, base + range.end);
        match event {
            Event::StreamStart | Event::StreamEnd => {}
            Event::DocumentStart(..) => builder = Some(Builder::new(span.start())),
            Event::DocumentEnd => {
                if let Some(b) = builder.take() {
                    out.push(b.finish(span.end()));
                }
            }
            event => {
                let Some(b) = builder.as_mut() else { continue };
                if let Err(error) = b.event(event, span) {
                    // The document is broken; skip its remaining events.
                    out.push(Parsed::Error(error));
                    builder = None;
                    skip_document(&mut parser);
                }
            }
        }
    }
}

fn is_tab_error(kind: &granit_parser::ErrorKind) -> bool {
    use granit_parser::ErrorKind as K;
    matches!(
        kind,
        K::TabNotAllowed | K::TabInBlockIndentation | K::TabInPlainScalar
    )
}

/// The scanner reports a forbidden tab where it stopped: just after the tab, or at the plain
/// scalar before the line whose indentation holds it. The tab itself is the first one in the
/// indentation of the reported line or of the next one.
fn tab_near(text: &str, at: usize, end: usize) -> Option<usize> {
    let mut line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    for _ in 0..2 {
        let line = &text[line_start..end];
        let indent = line.len() - line.trim_start_matches([' ', '\t']).len();
        if let Some(i) = line[..indent].find('\t') {
            return Some(line_start + i);
        }
        line_start += line.find('\n')? + 1;
    }
    None
}

fn skip_document<'a>(parser: &mut Parser<'a, granit_parser::StrInput<'a>>) {
    while let Some(Ok((event, _))) = parser.next_event() {
        if matches!(event, Event::DocumentEnd) {
            break;
        }
    }
}

fn char_len_at(text: &str, at: usize) -> usize {
    text.get(at..)
        .and_then(|rest| rest.chars().next())
        .map_or(0, char::len_utf8)
}

enum Frame<'a> {
    Seq {
        start: usize,
        style: Style,
        anchor: usize,
        items: Vec<Node<'a>>,
    },
    Map {
        start: usize,
        style: Style,
        anchor: usize,
        entries: Vec<Entry<'a>>,
        /// Whether each entry was written in this mapping (true) or merged in (false).
        explicit: Vec<bool>,
        /// Key -> entry index, built once the mapping is large.
        index: Option<HashMap<Cow<'a, str>, usize>>,
        key: Option<PendingKey<'a>>,
    },
}

enum PendingKey<'a> {
    Merge,
    Key(Cow<'a, str>, Span),
}

struct Builder<'a> {
    start: usize,
    stack: Vec<Frame<'a>>,
    root: Option<Node<'a>>,
    anchors: HashMap<usize, (Node<'a>, usize)>,
    cloned: usize,
    comments: Vec<Span>,
    duplicates: Vec<DuplicateKey>,
}

/// A mapping switches from a linear scan to a hash index at this size.
const INDEX_FROM: usize = 16;

impl<'a> Builder<'a> {
    fn new(start: usize) -> Self {
        Builder {
            start,
            stack: Vec::new(),
            root: None,
            anchors: HashMap::new(),
            cloned: 0,
            comments: Vec::new(),
            duplicates: Vec::new(),
        }
    }

    fn finish(self, end: usize) -> Parsed<'a> {
        let span = Span::new(self.start, end.max(self.start));
        Parsed::Document(Document {
            span,
            root: self.root.unwrap_or(Node {
                span,
                style: Style::Plain,
                value: Value::Null,
            }),
            comments: self.comments,
            duplicate_keys: self.duplicates,
        })
    }

    fn event(&mut self, event: Event<'a>, span: Span) -> Result<(), SyntaxError> {
        match event {
            Event::Scalar(text, style, anchor, tag) => {
                let core = tag.as_ref().map(|t| CoreTag::from_suffix(t.core_suffix()));
                let plain = style == ScalarStyle::Plain;
                let merge_marker =
                    (plain && tag.is_none() && text == "<<") || core == Some(CoreTag::Merge);
                let value = resolve::resolve(text, plain, core)
                    .map_err(|message| SyntaxError { span, message })?;
                let node = Node {
                    span,
                    style: scalar_style(style),
                    value,
                };
                self.complete(node, anchor, merge_marker)
            }
            Event::SequenceStart(style, anchor, _) => {
                self.stack.push(Frame::Seq {
                    start: span.start(),
                    style: structure_style(style),
                    anchor,
                    items: Vec::new(),
                });
                Ok(())
            }
            Event::MappingStart(style, anchor, _) => {
                self.stack.push(Frame::Map {
                    start: span.start(),
                    style: structure_style(style),
                    anchor,
                    entries: Vec::new(),
                    explicit: Vec::new(),
                    index: None,
                    key: None,
                });
                Ok(())
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let (start, style, anchor, value) = match self.stack.pop() {
                    Some(Frame::Seq {
                        start,
                        style,
                        anchor,
                        items,
                    }) => (start, style, anchor, Value::Seq(items)),
                    Some(Frame::Map {
                        start,
                        style,
                        anchor,
                        entries,
                        ..
                    }) => (start, style, anchor, Value::Map(entries)),
                    None => return Ok(()),
                };
                let node = Node {
                    span: Span::new(start, span.end()),
                    style,
                    value,
                };
                self.complete(node, anchor, false)
            }
            Event::Alias(id) => {
                let Some((node, size)) = self.anchors.get(&id) else {
                    return Err(SyntaxError {
                        span,
                        message: "alias refers to a node that contains it".into(),
                    });
                };
                self.cloned += size;
                if self.cloned > MAX_ALIAS_NODES {
                    return Err(SyntaxError {
                        span,
                        message: format!(
                            "aliases expand to more than {MAX_ALIAS_NODES} nodes in this document \
                             (an alias bomb?)"
                        ),
                    });
                }
                let node = node.clone();
                self.complete(node, 0, false)
            }
            Event::UnresolvedAlias(name) => Err(SyntaxError {
                span,
                message: format!("unknown anchor `{name}`"),
            }),
            Event::Comment(..) => {
                self.comments.push(span);
                Ok(())
            }
            // Anchor metadata, stream and document markers carry nothing for the tree.
            _ => Ok(()),
        }
    }

    /// A node is finished: remember it under its anchor and hand it to its parent.
    fn complete(
        &mut self,
        node: Node<'a>,
        anchor: usize,
        merge_marker: bool,
    ) -> Result<(), SyntaxError> {
        if anchor != 0 {
            let size = node.size();
            self.anchors.insert(anchor, (node.clone(), size));
        }
        match self.stack.last_mut() {
            None => {
                self.root = Some(node);
                Ok(())
            }
            Some(Frame::Seq { items, .. }) => {
                items.push(node);
                Ok(())
            }
            Some(Frame::Map {
                entries,
                explicit,
                index,
                key,
                ..
            }) => match key.take() {
                None => {
                    *key = Some(if merge_marker {
                        PendingKey::Merge
                    } else {
                        let name = resolve::key_string(&node.value).ok_or_else(|| SyntaxError {
                            span: node.span,
                            message: format!(
                                "a mapping key must be a string, number or boolean, not {}: \
                                 Kubernetes cannot turn it into JSON",
                                node.type_name()
                            ),
                        })?;
                        PendingKey::Key(name, node.span)
                    });
                    Ok(())
                }
                Some(PendingKey::Key(name, key_span)) => {
                    let mut map = MapRef {
                        entries,
                        explicit,
                        index,
                    };
                    if let Some(first) = map.set(name.clone(), key_span, node, true) {
                        self.duplicates.push(DuplicateKey {
                            key: name.into_owned(),
                            first,
                            second: key_span,
                        });
                    }
                    Ok(())
                }
                Some(PendingKey::Merge) => {
                    let mut map = MapRef {
                        entries,
                        explicit,
                        index,
                    };
                    merge(&mut map, node)
                }
            },
        }
    }
}

struct MapRef<'m, 'a> {
    entries: &'m mut Vec<Entry<'a>>,
    explicit: &'m mut Vec<bool>,
    index: &'m mut Option<HashMap<Cow<'a, str>, usize>>,
}

impl<'a> MapRef<'_, 'a> {
    /// Sets a key as go-yaml v2 does (a later write replaces the value). Returns the span of an
    /// earlier explicit key of the same name when this one is explicit too.
    fn set(
        &mut self,
        key: Cow<'a, str>,
        key_span: Span,
        value: Node<'a>,
        explicit: bool,
    ) -> Option<Span> {
        let found = match self.index {
            Some(index) => index.get(&key).copied(),
            None => self.entries.iter().position(|e| e.key == key),
        };
        match found {
            Some(i) => {
                let duplicate = (explicit && self.explicit[i]).then_some(self.entries[i].key_span);
                self.entries[i].value = value;
                self.entries[i].key_span = key_span;
                self.explicit[i] |= explicit;
                duplicate
            }
            None => {
                if let Some(index) = self.index {
                    index.insert(key.clone(), self.entries.len());
                }
                self.entries.push(Entry {
                    key,
                    key_span,
                    value,
                });
                self.explicit.push(explicit);
                if self.index.is_none() && self.entries.len() >= INDEX_FROM {
                    *self.index = Some(
                        self.entries
                            .iter()
                            .enumerate()
                            .map(|(i, e)| (e.key.clone(), i))
                            .collect(),
                    );
                }
                None
            }
        }
    }
}

/// `<<: *base` or `<<: [*a, *b]`: the merged mappings' keys are set at this point of the
/// mapping, earlier mappings of a list taking precedence over later ones.
fn merge<'a>(map: &mut MapRef<'_, 'a>, value: Node<'a>) -> Result<(), SyntaxError> {
    let not_a_map = |span| SyntaxError {
        span,
        message: "map merge requires a mapping or a sequence of mappings as the value".into(),
    };
    match value.value {
        Value::Map(entries) => {
            for e in entries {
                map.set(e.key, e.key_span, e.value, false);
            }
            Ok(())
        }
        Value::Seq(items) => {
            if let Some(bad) = items.iter().find(|i| !matches!(i.value, Value::Map(_))) {
                return Err(not_a_map(bad.span));
            }
            for item in items.into_iter().rev() {
                if let Value::Map(entries) = item.value {
                    for e in entries {
                        map.set(e.key, e.key_span, e.value, false);
                    }
                }
            }
            Ok(())
        }
        _ => Err(not_a_map(value.span)),
    }
}

fn scalar_style(style: ScalarStyle) -> Style {
    match style {
        ScalarStyle::Plain => Style::Plain,
        ScalarStyle::SingleQuoted => Style::SingleQuoted,
        ScalarStyle::DoubleQuoted => Style::DoubleQuoted,
        ScalarStyle::Literal => Style::Literal,
        ScalarStyle::Folded => Style::Folded,
    }
}

fn structure_style(style: StructureStyle) -> Style {
    match style {
        StructureStyle::Block => Style::Block,
        StructureStyle::Flow => Style::Flow,
    }
}
