//! Events to trees: one document at a time, without recursion, with aliases expanded under a
//! budget, merge keys applied as go-yaml v2 applies them, and duplicate keys recorded.
//!
//! An anchored node is copied when it is complete, so that its aliases can be expanded later.
//! Only anchors whose name some `*name` in the text may refer to are copied, and each copy is
//! bounded by what its aliases could still expand to: anchors nested 150 deep around a million
//! nodes, none of them aliased, cost nothing, instead of 150 copies of the million.

use super::node::{Entry, Node, Span, Style, Value};
use super::resolve::{self, CoreTag};
use super::yaml11::{self, Quoting};
use super::{
    Document, DuplicateKey, MAX_ALIAS_BYTES, MAX_ALIAS_NODES, MAX_NESTING, Parsed, SyntaxError,
};
use granit_parser::{Event, Options, Parser, ScalarStyle, StructureStyle};
use std::borrow::Cow;
use std::collections::HashMap;

/// Rounds of rewriting the `\'` escapes of one more double-quoted string (each round parses the
/// chunk again) before the parser's refusal stands.
const QUOTE_ROUNDS: usize = 64;

/// Parses `text[range]` (one chunk of a file; usually one document) into documents whose spans
/// are offsets into `text`, with the fast reader (fast.rs) tried first or (`fast` false, for
/// the tests that compare the two) not at all.
pub(super) fn parse_chunk<'a>(
    text: &'a str,
    range: std::ops::Range<usize>,
    out: &mut Vec<Parsed<'a>>,
    fast: bool,
) {
    // What go-yaml v2 reads otherwise than the YAML 1.2 parser (yaml11.rs); `None`, and no
    // copy, for nearly every chunk.
    let mut prepared = yaml11::prepare(text, range.clone());
    for round in 0..=QUOTE_ROUNDS {
        let may_patch = round < QUOTE_ROUNDS;
        let quotes = match &prepared {
            None => {
                let from = out.len();
                let chunk = &text[range.clone()];
                if fast && round == 0 {
                    // The fast reader takes no anchor or alias.
                    let aliases = AliasNames { sorted: Vec::new() };
                    let mut build = FastBuild {
                        text,
                        base: range.start,
                        aliases: &aliases,
                        builder: None,
                        done: None,
                    };
                    if super::fast::read_into(chunk, &mut build).is_some()
                        && let Some(document) = build.done
                    {
                        out.push(document);
                        return;
                    }
                }
                match read_chunk(text, chunk, range.start, None, may_patch, out) {
                    Ok(()) => return,
                    Err(quotes) => {
                        out.truncate(from);
                        quotes
                    }
                }
            }
            Some(p) => {
                let mut local = Vec::new();
                let changes = Some(p.changes.as_slice());
                match read_chunk(text, &p.text, range.start, changes, may_patch, &mut local) {
                    Ok(()) => {
                        for parsed in local {
                            out.push(parsed.into_owned());
                        }
                        return;
                    }
                    Err(quotes) => quotes,
                }
            }
        };
        prepared = Some(yaml11::patch_quotes(
            prepared.take(),
            text,
            range.clone(),
            &quotes,
        ));
    }
}

/// The fast reader's events, built into a document as they come (at `base` in `text`). The
/// chunk holds no tab, so there is no tab to refuse and no span to keep for that. A node the
/// builder refuses stops the reader: granit-parser then reads the chunk, and gives the same
/// refusal with whatever else the chunk holds.
struct FastBuild<'p, 'n> {
    text: &'p str,
    base: usize,
    aliases: &'n AliasNames<'p>,
    builder: Option<Builder<'p, 'n>>,
    done: Option<Parsed<'p>>,
}

impl<'p> super::fast::Sink<'p> for FastBuild<'p, '_> {
    fn event(&mut self, event: Event<'p>, start: usize, end: usize, indent: Option<usize>) -> bool {
        let span = Span::new(self.base + start, self.base + end);
        match event {
            Event::DocumentStart(..) => {
                let mut b = Builder::new(span.start(), self.aliases, self.text, None);
                b.keep_covered = false;
                self.builder = Some(b);
                true
            }
            Event::DocumentEnd => {
                if let Some(b) = self.builder.take() {
                    self.done = Some(b.finish(span.end()));
                }
                true
            }
            event => match self.builder.as_mut() {
                Some(b) => b.event(event, span, indent).is_ok(),
                None => true,
            },
        }
    }
}

/// Parses `chunk` (at `base` in `text`, or a rewritten copy of that part of it whose `changes`
/// are given). `Err` holds the `\'` escapes (the offsets of their `'`) of a double-quoted
/// string the parser refused, to be rewritten before parsing again.
fn read_chunk<'p>(
    text: &'p str,
    chunk: &'p str,
    base: usize,
    changes: Option<&[usize]>,
    may_patch: bool,
    out: &mut Vec<Parsed<'p>>,
) -> Result<(), Vec<usize>> {
    let recook = changes.map(|changes| Recook {
        changes,
        limit: base + chunk.len(),
    });
    // A rewritten line break is one character of the file and several of the copy: a span
    // that ends inside it is taken back to its start.
    let boundary = |mut at: usize| {
        while recook.is_some() && at > 0 && !text.is_char_boundary(at) {
            at -= 1;
        }
        at
    };
    let mut options = Options::default();
    options.block_nesting_limit = MAX_NESTING;
    options.flow_nesting_limit = MAX_NESTING;
    // Anchor names, to copy only the anchored nodes that an alias may refer to.
    options.emit_anchor_events = true;
    let aliases = AliasNames::scan(chunk);
    let mut parser = Parser::new_from_str_with_options(chunk, options);
    let mut builder: Option<Builder<'p, '_>> = None;
    let mut document_from = base;
    while let Some(next) = parser.next_event() {
        let (event, span) = match next {
            Ok(pair) => pair,
            Err(err) => {
                let mut at = boundary(base + err.marker().byte_offset().unwrap_or(0));
                if may_patch
                    && matches!(
                        err.kind(),
                        granit_parser::ErrorKind::UnknownQuotedScalarEscape
                    )
                {
                    let mut quotes = yaml11::quote_escapes(text, at, base + chunk.len());
                    quotes.retain(|q| changes.is_none_or(|c| c.binary_search(q).is_err()));
                    if !quotes.is_empty() {
                        return Err(quotes);
                    }
                }
                if is_tab_error(err.kind()) {
                    at = tab_near(text, at, base + chunk.len()).unwrap_or(at);
                }
                let message = match err.kind() {
                    granit_parser::ErrorKind::UnknownQuotedScalarEscape
                        if !may_patch
                            && !yaml11::quote_escapes(text, at, base + chunk.len()).is_empty() =>
                    {
                        format!(
                            "go-yaml v2 reads `\\'` as `'`, but credlint rewrites it in no more \
                             than {QUOTE_ROUNDS} strings of a document: write `'`"
                        )
                    }
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
        let indent = span.indent;
        let span = Span::new(boundary(base + range.start), boundary(base + range.end));
        match event {
            Event::StreamStart | Event::StreamEnd => {}
            Event::DocumentStart(..) => {
                builder = Some(Builder::new(span.start(), &aliases, text, recook));
            }
            Event::DocumentEnd => {
                if let Some(b) = builder.take() {
                    let end = span.end();
                    // From where the previous document ended: an implicit start is at the
                    // first token, after the tab that matters.
                    let from = std::mem::replace(&mut document_from, end.max(b.start));
                    match misplaced_tab(text, from..end.max(b.start), &b.covered, &b.comments) {
                        Some(at) => out.push(Parsed::Error(SyntaxError {
                            span: Span::new(at, at + 1),
                            message: TAB_MESSAGE.to_string(),
                        })),
                        None => out.push(b.finish(end)),
                    }
                }
            }
            event => {
                let Some(b) = builder.as_mut() else { continue };
                if let Err(error) = b.event(event, span, indent) {
                    // The document is broken; skip its remaining events.
                    out.push(Parsed::Error(error));
                    builder = None;
                    skip_document(&mut parser);
                }
            }
        }
    }
    Ok(())
}

/// Where the double-quoted scalar at `span` writes `\/`, an escape of YAML 1.2 only.
fn slash_escape(source: &str, span: Span) -> Option<usize> {
    let bytes = source.as_bytes().get(span.range())?;
    let mut i = 0;
    while i + 1 < bytes.len() {
        if bytes[i] == b'\\' {
            if bytes[i + 1] == b'/' {
                return Some(span.start() + i);
            }
            i += 2;
        } else {
            i += 1;
        }
    }
    None
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

/// The names written after a `*` anywhere in a chunk, sorted: a superset of the names its
/// aliases use (a `*` in a quoted string counts too, which only costs a copy).
struct AliasNames<'t> {
    sorted: Vec<&'t str>,
}

impl<'t> AliasNames<'t> {
    fn scan(text: &'t str) -> Self {
        let mut sorted: Vec<&str> = Vec::new();
        let bytes = text.as_bytes();
        let mut from = 0;
        while let Some(i) = bytes[from..].iter().position(|&b| b == b'*') {
            let start = from + i + 1;
            let len = bytes[start..]
                .iter()
                .position(|b| b" \t\r\n,[]{}".contains(b))
                .unwrap_or(bytes.len() - start);
            // The parser ends a name at one of these bytes at the latest, so the name it reads
            // is a prefix of this one (the bytes are ASCII: the slice stays on characters).
            if len > 0 {
                sorted.push(&text[start..start + len]);
            }
            from = start + len;
        }
        sorted.sort_unstable();
        sorted.dedup();
        AliasNames { sorted }
    }

    /// Whether an alias may refer to the anchor `name`: some scanned name starts with it.
    fn may_refer_to(&self, name: &str) -> bool {
        let i = self.sorted.partition_point(|t| *t < name);
        self.sorted.get(i).is_some_and(|t| t.starts_with(name))
    }
}

/// Nodes and bytes of text (keys and string values) of a subtree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Cost {
    nodes: usize,
    bytes: usize,
}

impl Cost {
    const ALIASES: Cost = Cost {
        nodes: MAX_ALIAS_NODES,
        bytes: MAX_ALIAS_BYTES,
    };

    fn add(self, other: Cost) -> Cost {
        Cost {
            nodes: self.nodes + other.nodes,
            bytes: self.bytes + other.bytes,
        }
    }

    fn exceeds(self, limit: Cost) -> bool {
        self.nodes > limit.nodes || self.bytes > limit.bytes
    }

    fn left_of(limit: Cost, used: Cost) -> Cost {
        Cost {
            nodes: limit.nodes.saturating_sub(used.nodes),
            bytes: limit.bytes.saturating_sub(used.bytes),
        }
    }

    /// The cost of `node`, or `None` as soon as it is known to exceed `limit`: the walk stops
    /// there, so a bounded caller pays at most `limit` for a huge subtree.
    fn of(node: &Node, limit: Cost) -> Option<Cost> {
        let mut total = Cost::default();
        let mut pending = vec![node];
        while let Some(n) = pending.pop() {
            total.nodes += 1;
            match &n.value {
                Value::Str(s) => total.bytes += s.len(),
                Value::Seq(items) => {
                    if total.nodes + pending.len() + items.len() > limit.nodes {
                        return None;
                    }
                    pending.extend(items);
                }
                Value::Map(entries) => {
                    if total.nodes + pending.len() + 2 * entries.len() > limit.nodes {
                        return None;
                    }
                    for e in entries {
                        total.nodes += 1;
                        total.bytes += e.key.len();
                        pending.push(&e.value);
                    }
                }
                _ => {}
            }
            if total.exceeds(limit) {
                return None;
            }
        }
        Some(total)
    }
}

/// What an anchor left for its aliases.
enum Anchored<'a> {
    Copy(Node<'a>, Cost),
    /// Larger than its aliases could still expand to: an alias of it is an alias bomb.
    TooLarge,
}

/// How a node being completed was anchored.
#[derive(Clone, Copy, Default)]
struct AnchorMark {
    id: usize,
    /// Some alias may refer to it.
    referenced: bool,
    /// It holds an anchored node that was too large to copy, so it is too.
    too_large: bool,
}

enum Frame<'a> {
    Seq {
        start: usize,
        style: Style,
        anchor: AnchorMark,
        items: Vec<Node<'a>>,
    },
    Map {
        start: usize,
        style: Style,
        anchor: AnchorMark,
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

struct Builder<'a, 'n> {
    start: usize,
    /// The whole text the spans are offsets into.
    source: &'a str,
    stack: Vec<Frame<'a>>,
    root: Option<Node<'a>>,
    aliases: &'n AliasNames<'a>,
    anchors: HashMap<usize, Anchored<'a>>,
    /// An anchored scalar, until its name (the next event) says whether to keep a copy.
    pending_scalar: Option<(usize, Node<'a>)>,
    /// What the aliases expanded so far added to the document.
    expanded: Cost,
    /// What the copies of anchored nodes hold.
    copied: Cost,
    comments: Vec<Span>,
    duplicates: Vec<DuplicateKey>,
    /// Where a tab is content or separation that go-yaml v2 accepts: scalars, aliases and flow
    /// collections.
    covered: Vec<Span>,
    /// Whether to keep `covered` (not for a chunk known to hold no tab).
    keep_covered: bool,
    /// Where the last plain scalar glued to its colon starts (see `flow_colon`).
    glued: Option<usize>,
    /// Set when the parser reads a rewritten copy of the chunk (yaml11.rs).
    recook: Option<Recook<'n>>,
    /// Where the last node event ended: a block scalar's header follows it.
    last_end: usize,
}

/// What a scalar must be read again from the file's text for, and how far it may reach.
#[derive(Clone, Copy)]
struct Recook<'n> {
    changes: &'n [usize],
    limit: usize,
}

const TAB_MESSAGE: &str = "a tab stands where go-yaml v2, and so kubectl, Helm and Argo CD, \
                           accept only spaces: to indent, or after `-`, `?` or the `:` of a \
                           `?` key";

/// The first tab of `range` that go-yaml v2 refuses, though the YAML 1.2 parser accepts it.
/// go-yaml's scanner skips a tab only inside a flow collection or where no simple key may
/// start; in block context a key may start at the beginning of a line and after `-`, `?` and
/// `:`, so a tab there "cannot start any token". Tabs inside scalars, comments and flow
/// collections (the `covered` spans) are content or separation.
fn misplaced_tab(
    text: &str,
    range: std::ops::Range<usize>,
    covered: &[Span],
    comments: &[Span],
) -> Option<usize> {
    let bytes = text.as_bytes();
    let range = range.start.min(bytes.len())..range.end.min(bytes.len());
    if !bytes[range.clone()].contains(&b'\t') {
        return None;
    }
    let mut spans: Vec<Span> = covered.iter().chain(comments).copied().collect();
    spans.sort_unstable();
    // The furthest end among the spans that start at or before each one.
    let mut reach = Vec::with_capacity(spans.len());
    let mut furthest = 0;
    for s in &spans {
        furthest = furthest.max(s.end());
        reach.push(furthest);
    }
    let inside = |at: usize| {
        let i = spans.partition_point(|s| s.start() <= at);
        i > 0 && reach[i - 1] > at
    };
    for at in range.clone().filter(|&i| bytes[i] == b'\t') {
        if inside(at) {
            continue;
        }
        let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        let before = text[line_start..at].trim_end_matches([' ', '\t']);
        let Some(last) = before.chars().next_back() else {
            return Some(at);
        };
        let last_at = line_start + before.len() - last.len_utf8();
        let marker =
            (before.starts_with("---") || before.starts_with("...")) && last_at < line_start + 3;
        // After the `:` of a simple key go-yaml allows no key to start, so it skips the tab;
        // only the `:` of an explicit (`?`) key, first on its line, is followed by none.
        let simple_value = last == ':'
            && !before[..before.len() - 1]
                .chars()
                .all(|c| matches!(c, ' ' | '\t' | '-' | '?'));
        if matches!(last, '-' | '?' | ':') && !inside(last_at) && !marker && !simple_value {
            return Some(at);
        }
    }
    None
}

/// A mapping switches from a linear scan to a hash index at this size.
const INDEX_FROM: usize = 16;

/// What the copies of anchored nodes may hold in one document. Each copied anchor is expanded
/// at least once, so a document whose copies exceed this expands past [`Cost::ALIASES`] too;
/// the margin covers names a `*` in a quoted string matches.
const COPIES: Cost = Cost {
    nodes: 4 * MAX_ALIAS_NODES,
    bytes: 4 * MAX_ALIAS_BYTES,
};

impl Frame<'_> {
    fn anchor_mut(&mut self) -> &mut AnchorMark {
        match self {
            Frame::Seq { anchor, .. } | Frame::Map { anchor, .. } => anchor,
        }
    }
}

fn alias_bomb(span: Span) -> SyntaxError {
    SyntaxError {
        span,
        message: format!(
            "aliases expand to more than {MAX_ALIAS_NODES} nodes or {} MiB of text in this \
             document (an alias bomb?)",
            MAX_ALIAS_BYTES >> 20
        ),
    }
}

impl<'a, 'n> Builder<'a, 'n> {
    fn new(
        start: usize,
        aliases: &'n AliasNames<'a>,
        source: &'a str,
        recook: Option<Recook<'n>>,
    ) -> Self {
        Builder {
            start,
            source,
            stack: Vec::new(),
            root: None,
            aliases,
            anchors: HashMap::new(),
            pending_scalar: None,
            expanded: Cost::default(),
            copied: Cost::default(),
            comments: Vec::new(),
            duplicates: Vec::new(),
            covered: Vec::new(),
            keep_covered: true,
            glued: None,
            recook,
            last_end: start,
        }
    }

    fn finish(mut self, end: usize) -> Parsed<'a> {
        let span = Span::new(self.start, end.max(self.start));
        // In the order of the text (the parser gives a block scalar's header comment after it).
        self.comments.sort_unstable();
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

    fn event(
        &mut self,
        event: Event<'a>,
        span: Span,
        indent: Option<usize>,
    ) -> Result<(), SyntaxError> {
        if !matches!(event, Event::Anchor(..)) {
            // The name of an anchored scalar follows it at once, or never.
            self.pending_scalar = None;
        }
        let node_before = self.last_end;
        if !matches!(event, Event::Anchor(..) | Event::Comment(..)) {
            self.last_end = span.end();
        }
        match event {
            Event::Scalar(text, style, anchor, tag) => {
                let text = match self.recook {
                    Some(recook) => self
                        .read_again(recook, style, span, indent, node_before)?
                        .map_or(text, Cow::Owned),
                    None => text,
                };
                // `core_suffix` knows the seven YAML 1.2 names only; go-yaml also resolves
                // `!!binary`, `!!timestamp` and `!!merge`.
                let core = tag.as_ref().map(|t| {
                    CoreTag::from_suffix(t.suffix_in_namespace("tag:yaml.org,2002:").as_deref())
                });
                let plain = style == ScalarStyle::Plain;
                let (text, span) = match self.flow_colon(plain, &text, span)? {
                    Some(glued) => (Cow::Owned(glued), Span::new(span.start(), span.end() + 1)),
                    None => (text, span),
                };
                // go-yaml merges at `<<` written plain and untagged, or tagged `!!merge`;
                // `!!merge` on any other text is just that text.
                let merge_marker =
                    text == "<<" && ((plain && tag.is_none()) || core == Some(CoreTag::Merge));
                if self.at_key() && resolve::is_uint64(&text, plain, core) {
                    return Err(SyntaxError {
                        span,
                        message: format!(
                            "the key `{text}` is an integer beyond int64: sigs.k8s.io/yaml \
                             cannot turn it into a JSON key, so kubectl, Helm and Argo CD \
                             refuse the file (quote it)"
                        ),
                    });
                }
                if style == ScalarStyle::DoubleQuoted
                    && let Some(at) = slash_escape(self.source, span)
                {
                    return Err(SyntaxError {
                        span: Span::new(at, at + 2),
                        message: "go-yaml v2 (YAML 1.1) has no `\\/` escape, so kubectl, Helm \
                                  and Argo CD refuse the file: write `/`"
                            .into(),
                    });
                }
                let value = resolve::resolve(text, plain, core)
                    .map_err(|message| SyntaxError { span, message })?;
                let node = Node {
                    span,
                    style: scalar_style(style),
                    value,
                };
                if self.keep_covered {
                    self.covered.push(span);
                }
                let pending = (anchor != 0).then(|| (anchor, node.clone()));
                self.complete(node, AnchorMark::default(), merge_marker)?;
                self.pending_scalar = pending;
                Ok(())
            }
            Event::Anchor(id, name) => {
                if let Some(bad) = name
                    .chars()
                    .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
                {
                    return Err(SyntaxError {
                        span,
                        message: format!(
                            "go-yaml v2 allows only letters, digits, `_` and `-` in an anchor \
                             name, so kubectl, Helm and Argo CD refuse `{bad}` in `&{name}`"
                        ),
                    });
                }
                let referenced = self.aliases.may_refer_to(&name);
                if let Some((pending, node)) = self.pending_scalar.take()
                    && pending == id
                {
                    if referenced {
                        let too_large = self.keep_copy(id, &node);
                        if too_large && let Some(parent) = self.stack.last_mut() {
                            parent.anchor_mut().too_large = true;
                        }
                    }
                } else if let Some(frame) = self.stack.last_mut()
                    && frame.anchor_mut().id == id
                {
                    frame.anchor_mut().referenced = referenced;
                }
                Ok(())
            }
            Event::SequenceStart(style, anchor, _) => {
                self.stack.push(Frame::Seq {
                    start: span.start(),
                    style: structure_style(style),
                    anchor: AnchorMark {
                        id: anchor,
                        ..AnchorMark::default()
                    },
                    items: Vec::new(),
                });
                Ok(())
            }
            Event::MappingStart(style, anchor, _) => {
                self.stack.push(Frame::Map {
                    start: span.start(),
                    style: structure_style(style),
                    anchor: AnchorMark {
                        id: anchor,
                        ..AnchorMark::default()
                    },
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
                    }) => match self.glued_pair(start, style, entries) {
                        // `[a:, b]`: go-yaml reads the item `a:`, not a pair.
                        Ok(scalar) => {
                            self.glued = None;
                            return self.complete(scalar, anchor, false);
                        }
                        Err(entries) => (start, style, anchor, Value::Map(entries)),
                    },
                    None => return Ok(()),
                };
                let node = Node {
                    span: Span::new(start, span.end()),
                    style,
                    value,
                };
                if style == Style::Flow {
                    self.covered.push(node.span);
                }
                self.complete(node, anchor, false)
            }
            Event::Alias(id) => {
                self.covered.push(span);
                let node = match self.anchors.get(&id) {
                    None => {
                        return Err(SyntaxError {
                            span,
                            message: "alias refers to a node that contains it".into(),
                        });
                    }
                    Some(Anchored::TooLarge) => return Err(alias_bomb(span)),
                    Some(Anchored::Copy(node, cost)) => {
                        self.expanded = self.expanded.add(*cost);
                        if self.expanded.exceeds(Cost::ALIASES) {
                            return Err(alias_bomb(span));
                        }
                        node.clone()
                    }
                };
                self.complete(node, AnchorMark::default(), false)
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

    /// The value of a scalar that holds what the parser's copy of the chunk rewrote (LS, PS, a
    /// BOM, `\'`), read from the file's text as go-yaml v2 reads it; `None` for any other.
    fn read_again(
        &self,
        recook: Recook,
        style: ScalarStyle,
        span: Span,
        indent: Option<usize>,
        node_before: usize,
    ) -> Result<Option<String>, SyntaxError> {
        let text = self.source;
        let touched = |from, to| yaml11::touches(recook.changes, from, to);
        let flow = |region: std::ops::Range<usize>, quoting| {
            let whole = text.is_char_boundary(region.start) && text.is_char_boundary(region.end);
            if !whole || !touched(region.start, region.end) {
                return Ok(None);
            }
            yaml11::flow_value(text, region, quoting)
                .map(Some)
                .map_err(|message| SyntaxError { span, message })
        };
        let inner = (span.start() + 1)..span.end().saturating_sub(1).max(span.start() + 1);
        match style {
            ScalarStyle::Plain => flow(span.range(), Quoting::Plain),
            ScalarStyle::SingleQuoted => flow(inner, Quoting::Single),
            ScalarStyle::DoubleQuoted => flow(inner, Quoting::Double),
            ScalarStyle::Literal | ScalarStyle::Folded => {
                // The header is the first `|` or `>` after the node before, outside comments.
                let bytes = text.as_bytes();
                let last = span.start().min(bytes.len().saturating_sub(1));
                let in_comment = |i: usize| {
                    self.comments
                        .iter()
                        .rev()
                        .take_while(|c| c.end() > node_before)
                        .any(|c| c.range().contains(&i))
                };
                let Some(indicator) = (node_before..=last)
                    .find(|&i| matches!(bytes.get(i), Some(b'|' | b'>')) && !in_comment(i))
                else {
                    return Ok(None);
                };
                let Some((literal, chomping, from)) = yaml11::block_header(text, indicator) else {
                    return Ok(None);
                };
                let indent = indent.unwrap_or(usize::MAX);
                let (value, end) =
                    yaml11::block_value(text, from, recook.limit, indent, literal, chomping);
                Ok(touched(indicator, end.max(span.end())).then_some(value))
            }
        }
    }

    /// A plain scalar in a flow collection written right before `:` and a flow indicator
    /// (`[a:, b]`, `{a:}`): go-yaml v2 ends a plain scalar at `:` only before a blank, so the
    /// colon is part of it (`Some` with the text it reads). Before `[` or `{` go-yaml finds
    /// no separator and refuses the file, as it does for a `?` within the scalar.
    fn flow_colon(
        &mut self,
        plain: bool,
        text: &str,
        span: Span,
    ) -> Result<Option<String>, SyntaxError> {
        let in_flow = match self.stack.last() {
            Some(Frame::Seq { style, .. } | Frame::Map { style, .. }) => *style == Style::Flow,
            None => false,
        };
        if plain && in_flow && text.char_indices().any(|(i, c)| c == '?' && i > 0) {
            return Err(SyntaxError {
                span,
                message: "go-yaml v2 ends a plain scalar at `?` inside a flow collection and \
                          reads a key there, so kubectl refuses the file: quote the string"
                    .into(),
            });
        }
        let bytes = self.source.as_bytes();
        // The empty value of `a:` stands on the colon too; it is no scalar of the text.
        if !plain || !in_flow || span.is_empty() || bytes.get(span.end()) != Some(&b':') {
            return Ok(None);
        }
        match bytes.get(span.end() + 1) {
            Some(b',' | b']' | b'}') => {
                self.glued = Some(span.start());
                Ok(Some(format!("{text}:")))
            }
            Some(b'[' | b'{') => Err(SyntaxError {
                span: Span::new(span.end(), span.end() + 1),
                message: "go-yaml v2 reads this `:` as part of the string before it (a colon \
                          ends a plain scalar only before a blank), and then finds no `,` \
                          before the bracket: kubectl refuses the file (write `: `)"
                    .into(),
            }),
            _ => Ok(None),
        }
    }

    /// The implicit pair of a flow sequence whose key [`Self::flow_colon`] glued to its colon
    /// and that has no value: go-yaml reads it as that one scalar. Anything else is handed
    /// back.
    fn glued_pair(
        &self,
        start: usize,
        style: Style,
        mut entries: Vec<Entry<'a>>,
    ) -> Result<Node<'a>, Vec<Entry<'a>>> {
        let implicit = style == Style::Flow && self.source.as_bytes().get(start) != Some(&b'{');
        let single = entries.len() == 1
            && self.glued == Some(entries[0].key_span.start())
            && entries[0].value.is_null()
            && entries[0].value.span.is_empty();
        if !(implicit && single) {
            return Err(entries);
        }
        let entry = entries.remove(0);
        Ok(Node {
            span: entry.key_span,
            style: Style::Plain,
            value: Value::Str(entry.key),
        })
    }

    /// Keeps a copy of an anchored node for its aliases, within what they could still expand
    /// to and what copies may hold. Returns whether the node was too large.
    fn keep_copy(&mut self, id: usize, node: &Node<'a>) -> bool {
        let limit = Cost {
            nodes: Cost::left_of(Cost::ALIASES, self.expanded)
                .nodes
                .min(Cost::left_of(COPIES, self.copied).nodes),
            bytes: Cost::left_of(Cost::ALIASES, self.expanded)
                .bytes
                .min(Cost::left_of(COPIES, self.copied).bytes),
        };
        match Cost::of(node, limit) {
            Some(cost) => {
                self.copied = self.copied.add(cost);
                self.anchors.insert(id, Anchored::Copy(node.clone(), cost));
                false
            }
            None => {
                self.anchors.insert(id, Anchored::TooLarge);
                true
            }
        }
    }

    /// Whether the next node completed is a mapping's key.
    fn at_key(&self) -> bool {
        matches!(self.stack.last(), Some(Frame::Map { key: None, .. }))
    }

    /// A node is finished: remember it under its anchor and hand it to its parent.
    fn complete(
        &mut self,
        node: Node<'a>,
        anchor: AnchorMark,
        merge_marker: bool,
    ) -> Result<(), SyntaxError> {
        let is_key = self.at_key();
        if let Value::Float(f) = node.value
            && !f.is_finite()
            && !is_key
        {
            // A key becomes the string `.inf`; a value reaches encoding/json, which has no
            // such number.
            return Err(SyntaxError {
                span: node.span,
                message: format!(
                    "JSON has no number {}: kubectl, Helm and Argo CD refuse the whole file \
                     (json: unsupported value); quote it if a string is meant",
                    if f.is_nan() {
                        "NaN"
                    } else if f > 0.0 {
                        "+Inf"
                    } else {
                        "-Inf"
                    }
                ),
            });
        }
        let mut too_large = anchor.too_large;
        if anchor.id != 0 && anchor.referenced {
            if too_large {
                self.anchors.insert(anchor.id, Anchored::TooLarge);
            } else {
                too_large = self.keep_copy(anchor.id, &node);
            }
        }
        if too_large && let Some(parent) = self.stack.last_mut() {
            parent.anchor_mut().too_large = true;
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
