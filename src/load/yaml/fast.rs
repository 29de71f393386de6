//! The fast path of the loader: the block YAML that renderers write (block mappings and
//! sequences, one-line plain and quoted scalars, literal block scalars, `[]`, `{}`, comments)
//! read in one pass over the lines, giving the very events and spans granit-parser gives.
//!
//! It accepts a document only when every line is of that subset and well formed; anything else
//! (flow collections, anchors, tags, folded or multi-line scalars, escapes, tabs, CR, odd
//! indentation, errors of any kind) makes it give up, and the document is read by granit-parser
//! as before. So it decides nothing granit-parser would read otherwise: the tests compare the
//! two event for event on every fixture, the generated bundles and random documents.

use granit_parser::{Event, Placement, ScalarStyle, StructureStyle};
use std::borrow::Cow;

/// Deeper nesting goes to granit-parser, which applies the loader's limit.
const MAX_DEPTH: usize = 64;
/// granit-parser (as go-yaml) refuses longer simple keys; those go to it.
const MAX_KEY: usize = 1024;

/// Where the reader's events go, one at a time; `false` stops the reader, which then gives up.
pub(super) trait Sink<'a> {
    fn event(&mut self, event: Event<'a>, start: usize, end: usize, indent: Option<usize>) -> bool;
}

/// Hands the events of `chunk` to `sink` as they are read; `None` where the chunk is not of
/// the subset (or the sink stopped): what the sink was given then is to be thrown away.
pub(super) fn read_into<'a>(chunk: &'a str, sink: &mut dyn Sink<'a>) -> Option<()> {
    if !plain_bytes(chunk) {
        return None;
    }
    let mut r = Reader {
        text: chunk,
        b: chunk.as_bytes(),
        sink,
        stopped: false,
        stack: Vec::new(),
        pending: None,
        started: false,
        rooted: false,
        multi: false,
        flow_root_end: None,
    };
    r.document()?;
    (!r.stopped).then_some(())
}

/// Whether every character is one this reader takes as it is: printable, no tab, CR, BOM or
/// YAML 1.1 line break (those go to granit-parser and yaml11.rs).
fn plain_bytes(text: &str) -> bool {
    // Branch-free over blocks of bytes, so that the compiler vectorizes it: a file is mostly
    // printable ASCII, and this pass reads every byte of it.
    let bytes = text.as_bytes();
    let mut odd = false;
    let mut wide = false;
    for block in bytes.chunks(64) {
        let (mut control, mut high) = (false, false);
        for &b in block {
            control |= (b < 0x20 && b != b'\n') | (b == 0x7f);
            high |= b >= 0x80;
        }
        odd |= control;
        wide |= high;
        if odd {
            return false;
        }
    }
    !wide
        || text.chars().all(|c| {
            matches!(c as u32, 0x0a | 0x20..=0x7e | 0xa0..=0x2027 | 0x202a..=0xd7ff | 0xe000..=0xfefe | 0xff00..=0xfffd | 0x10000..)
        })
}

#[derive(Clone, Copy)]
enum Block {
    Map { col: usize },
    Seq { col: usize, indentless: bool },
}

impl Block {
    fn col(self) -> usize {
        match self {
            Block::Map { col } | Block::Seq { col, .. } => col,
        }
    }
}

/// A `key:` or `-` with nothing after it on its line: its value is on the lines below, or null.
#[derive(Clone, Copy)]
struct Pending {
    /// Where the null value stands (the colon, or just after the dash).
    null_at: usize,
    /// The column of the key or dash.
    col: usize,
    key: bool,
    /// A comment follows on the line: granit-parser then places a null elsewhere.
    comment: bool,
}

struct Reader<'a, 's> {
    text: &'a str,
    b: &'a [u8],
    sink: &'s mut dyn Sink<'a>,
    /// The sink refused an event.
    stopped: bool,
    stack: Vec<Block>,
    pending: Option<Pending>,
    started: bool,
    /// The root collection was opened.
    rooted: bool,
    /// The root is a flow collection (a JSON document): its lines break anywhere.
    multi: bool,
    flow_root_end: Option<usize>,
}

impl<'a> Reader<'a, '_> {
    fn push(&mut self, event: Event<'a>, start: usize, end: usize, indent: Option<usize>) {
        if !self.stopped && !self.sink.event(event, start, end, indent) {
            self.stopped = true;
        }
    }

    fn comment(&mut self, from: usize, to: usize) {
        self.push(
            Event::Comment(Cow::Borrowed(&self.text[from + 1..to]), Placement::Right),
            from,
            to,
            None,
        );
    }

    fn line_end(&self, from: usize) -> usize {
        memchr::memchr(b'\n', &self.b[from..]).map_or(self.b.len(), |i| from + i)
    }

    fn spaces(&self, from: usize, to: usize) -> usize {
        self.b[from..to].iter().take_while(|&&c| c == b' ').count()
    }

    fn is_dash(&self, at: usize, le: usize) -> bool {
        self.b[at] == b'-' && (at + 1 == le || self.b[at + 1] == b' ')
    }

    fn document(&mut self) -> Option<()> {
        let len = self.b.len();
        let mut pos = 0;
        if self.b.starts_with(b"---") && matches!(self.b.get(3), None | Some(b' ' | b'\n')) {
            let le = self.line_end(0);
            let at = 3 + self.spaces(3, le);
            self.push(Event::DocumentStart(true, None), 0, 3, None);
            if at < le {
                if self.b[at] != b'#' || at == 3 {
                    return None;
                }
                self.comment(at, le);
            }
            self.started = true;
            pos = (le + 1).min(len);
        }
        while pos < len {
            if self.stopped {
                return None;
            }
            let le = self.line_end(pos);
            let col = self.spaces(pos, le);
            let p = pos + col;
            let next = (le + 1).min(len);
            if p == le {
                pos = next;
                continue;
            }
            if self.b[p] == b'#' {
                self.comment(p, le);
                pos = next;
                continue;
            }
            if col == 0 && (self.b[p..].starts_with(b"...") || self.b[p..].starts_with(b"---")) {
                return None;
            }
            if !self.started {
                // granit-parser gives an implicit start the span of the first token.
                let end = if matches!(self.b[p], b'[' | b'{') {
                    p + 1
                } else {
                    p
                };
                self.push(Event::DocumentStart(false, None), p, end, None);
                self.started = true;
            }
            pos = self.line(p, col, le)?;
        }
        if !self.rooted {
            return None;
        }
        if let Some(pd) = self.pending.take() {
            if pd.comment {
                return None;
            }
            self.null(pd.null_at);
        }
        while let Some(top) = self.stack.pop() {
            self.close(top, len);
        }
        // A flow root's document ends with it; a block root's at the end of the chunk.
        let end = self.flow_root_end.unwrap_or(len);
        self.push(Event::DocumentEnd, end, end, None);
        Some(())
    }

    fn null(&mut self, at: usize) {
        self.push(
            Event::Scalar(Cow::Borrowed("~"), ScalarStyle::Plain, 0, None),
            at,
            at,
            None,
        );
    }

    fn close(&mut self, block: Block, at: usize) {
        let event = match block {
            Block::Map { .. } => Event::MappingEnd,
            Block::Seq { .. } => Event::SequenceEnd,
        };
        self.push(event, at, at, None);
    }

    /// One content line whose first token is at `p` (column `col`); returns where the next
    /// line to read starts.
    fn line(&mut self, p: usize, col: usize, le: usize) -> Option<usize> {
        let dash = self.is_dash(p, le);
        if !self.rooted {
            self.rooted = true;
            if matches!(self.b[p], b'[' | b'{') {
                // A flow root may span lines (JSON); nothing but comments may follow it.
                self.multi = true;
                let end = self.flow(p, le, 0)?;
                self.multi = false;
                self.flow_root_end = Some(end);
                let le = self.line_end(end);
                self.rest(end, le)?;
                return Some((le + 1).min(self.b.len()));
            }
            return self.open(p, col, le, false);
        }
        match self.pending.take() {
            Some(pd) if col > pd.col => return self.open(p, col, le, false),
            Some(pd) if col == pd.col && pd.key && dash => {
                if self.stack.len() >= MAX_DEPTH {
                    return None;
                }
                self.stack.push(Block::Seq {
                    col,
                    indentless: true,
                });
                // An indentless sequence starts where its first entry's content does.
                let q = p + 1 + self.spaces(p + 1, le);
                self.push(
                    Event::SequenceStart(StructureStyle::Block, 0, None),
                    q,
                    q,
                    None,
                );
                return self.entry(p, col, le);
            }
            Some(pd) if pd.comment => return None,
            Some(pd) => self.null(pd.null_at),
            None => {}
        }
        // A line deeper than the block it follows continues a scalar (or is an error).
        if col > self.stack.last()?.col() {
            return None;
        }
        while let Some(&top) = self.stack.last() {
            let closes = match top {
                Block::Map { col: c } => c > col,
                Block::Seq { col: c, indentless } => c > col || (indentless && c == col && !dash),
            };
            if !closes {
                break;
            }
            self.stack.pop();
            self.close(top, p);
        }
        match *self.stack.last()? {
            Block::Map { col: c } if c == col && !dash => self.pair(p, col, le),
            Block::Seq { col: c, .. } if c == col && dash => self.entry(p, col, le),
            _ => None,
        }
    }

    /// A collection that starts at `p`: a sequence at a dash, else a mapping at a key; after
    /// a dash on the same line (`inline`), a scalar too.
    fn open(&mut self, p: usize, col: usize, le: usize, inline: bool) -> Option<usize> {
        if self.stack.len() >= MAX_DEPTH {
            return None;
        }
        if self.is_dash(p, le) {
            self.stack.push(Block::Seq {
                col,
                indentless: false,
            });
            self.push(
                Event::SequenceStart(StructureStyle::Block, 0, None),
                p,
                p,
                None,
            );
            return self.entry(p, col, le);
        }
        if self.key_colon(p, le).is_some() {
            self.stack.push(Block::Map { col });
            self.push(
                Event::MappingStart(StructureStyle::Block, 0, None),
                p,
                p,
                None,
            );
            return self.pair(p, col, le);
        }
        if inline {
            return self.value(p, le);
        }
        None
    }

    /// After a dash or a key's colon (`at` just past it, `q` past the blanks there): where the
    /// line holds nothing more but a comment, the value waits on the lines below (or is a null
    /// at `null_at`), and this gives `Some(Some(next line))`; `Some(None)` where a node follows
    /// at `q`; `None` where the reader gives up (a comment with no blank before it).
    fn nothing_after(
        &mut self,
        at: usize,
        q: usize,
        le: usize,
        null_at: usize,
        col: usize,
        key: bool,
    ) -> Option<Option<usize>> {
        if q < le && self.b[q] != b'#' {
            return Some(None);
        }
        if q < le {
            if q == at {
                return None;
            }
            self.comment(q, le);
        }
        self.pending = Some(Pending {
            null_at,
            col,
            key,
            comment: q < le,
        });
        Some(Some((le + 1).min(self.b.len())))
    }

    /// A sequence entry: the dash at `p`.
    fn entry(&mut self, p: usize, col: usize, le: usize) -> Option<usize> {
        let at = p + 1;
        let q = at + self.spaces(at, le);
        if let Some(next) = self.nothing_after(at, q, le, q, col, false)? {
            return Some(next);
        }
        let line_start = p - col;
        self.open(q, q - line_start, le, true)
    }

    /// Where the `:` of a simple key starting at `p` stands, if the line holds one this reader
    /// takes: a plain key (no blank before its colon) or a one-line quoted one.
    fn key_colon(&self, p: usize, le: usize) -> Option<usize> {
        let b = self.b;
        let colon = match b[p] {
            b'"' | b'\'' => self.quoted_end(p, le)?,
            c if starts_plain(c) && c != b'<' && c != b'-' => {
                let mut i = p;
                loop {
                    if i >= le {
                        return None;
                    }
                    match b[i] {
                        b':' if i + 1 == le || b[i + 1] == b' ' => break i,
                        b'#' if b[i - 1] == b' ' => return None,
                        _ => i += 1,
                    }
                }
            }
            _ => return None,
        };
        let ok = b.get(colon) == Some(&b':')
            && (colon + 1 == le || b[colon + 1] == b' ')
            && b[colon - 1] != b' '
            && colon - p <= MAX_KEY;
        ok.then_some(colon)
    }

    /// The end (just past the closing quote) of the one-line quoted scalar at `p`.
    fn quoted_end(&self, p: usize, le: usize) -> Option<usize> {
        let b = self.b;
        let quote = b[p];
        let mut i = p + 1;
        while i < le {
            match b[i] {
                b'\\' if quote == b'"' => return None,
                c if c == quote => {
                    if quote == b'\'' && b.get(i + 1) == Some(&b'\'') {
                        i += 2;
                        continue;
                    }
                    return Some(i + 1);
                }
                _ => i += 1,
            }
        }
        None
    }

    /// The quoted scalar `[p, end)` as an event.
    fn quoted(&self, p: usize, end: usize) -> Event<'a> {
        let inner = &self.text[p + 1..end - 1];
        if self.b[p] == b'"' {
            Event::Scalar(Cow::Borrowed(inner), ScalarStyle::DoubleQuoted, 0, None)
        } else {
            let value = if inner.contains("''") {
                Cow::Owned(inner.replace("''", "'"))
            } else {
                Cow::Borrowed(inner)
            };
            Event::Scalar(value, ScalarStyle::SingleQuoted, 0, None)
        }
    }

    /// A key and its value, the key at `p`.
    fn pair(&mut self, p: usize, col: usize, le: usize) -> Option<usize> {
        let colon = self.key_colon(p, le)?;
        let key = match self.b[p] {
            b'"' | b'\'' => self.quoted(p, colon),
            _ => Event::Scalar(
                Cow::Borrowed(&self.text[p..colon]),
                ScalarStyle::Plain,
                0,
                None,
            ),
        };
        self.push(key, p, colon, Some(col));
        let at = colon + 1;
        let q = at + self.spaces(at, le);
        if let Some(next) = self.nothing_after(at, q, le, colon, col, true)? {
            return Some(next);
        }
        if q == at || self.is_dash(q, le) {
            return None;
        }
        self.value(q, le)
    }

    /// A scalar (or `[]`, `{}`) value at `q`, the last node of its line.
    fn value(&mut self, q: usize, le: usize) -> Option<usize> {
        let b = self.b;
        let next = (le + 1).min(b.len());
        match b[q] {
            b'"' | b'\'' => {
                let end = self.quoted_end(q, le)?;
                let event = self.quoted(q, end);
                self.push(event, q, end, None);
                self.rest(end, le)?;
                Some(next)
            }
            b'[' | b'{' => {
                let end = self.flow(q, le, 0)?;
                self.rest(end, le)?;
                Some(next)
            }
            b'|' | b'>' => self.block_scalar(q, le),
            c if starts_plain(c) => {
                let mut i = q;
                let mut end = le;
                while i < le {
                    match b[i] {
                        b':' if i + 1 == le || b[i + 1] == b' ' => return None,
                        b'#' if b[i - 1] == b' ' => {
                            end = i;
                            self.comment(i, le);
                            break;
                        }
                        _ => i += 1,
                    }
                }
                while b[end - 1] == b' ' {
                    end -= 1;
                }
                let text = &self.text[q..end];
                self.push(
                    Event::Scalar(Cow::Borrowed(text), ScalarStyle::Plain, 0, None),
                    q,
                    end,
                    None,
                );
                Some(next)
            }
            _ => None,
        }
    }

    /// A flow collection at `q` that ends on its line (`[a, "b"]`, `{k: v, l: [m]}`); returns
    /// the end of it. Pairs in sequences, keys without a value, `?`, glued colons and anything
    /// granit-parser reads with special care go to granit-parser.
    fn flow(&mut self, q: usize, le: usize, depth: usize) -> Option<usize> {
        let b = self.b;
        if depth + self.stack.len() >= MAX_DEPTH {
            return None;
        }
        let map = b[q] == b'{';
        let (open, close, end_event) = if map {
            (
                Event::MappingStart(StructureStyle::Flow, 0, None),
                b'}',
                Event::MappingEnd,
            )
        } else {
            (
                Event::SequenceStart(StructureStyle::Flow, 0, None),
                b']',
                Event::SequenceEnd,
            )
        };
        self.push(open, q, q + 1, None);
        let mut i = q + 1;
        loop {
            i = self.gap(i);
            if matches!(b.get(i), None | Some(b'\n')) {
                return None;
            }
            let le = self.limit(i, le);
            if b[i] == close {
                self.push(end_event, i, i + 1, None);
                return Some(i + 1);
            }
            if map {
                let (key_end, event) = self.flow_scalar(i, le, true)?;
                self.push(event, i, key_end, None);
                // `key: value`, the colon right after the key.
                if b.get(key_end) != Some(&b':') || b.get(key_end + 1) != Some(&b' ') {
                    return None;
                }
                i = self.gap(key_end + 1);
                if matches!(b.get(i), None | Some(b'\n' | b',' | b'}' | b']')) {
                    return None;
                }
            }
            let le = self.limit(i, le);
            i = self.flow_node(i, le, depth)?;
            i = self.gap(i);
            match b.get(i) {
                Some(b',') => i += 1,
                Some(&c) if c == close => {}
                _ => return None,
            }
        }
    }

    /// Past the blanks at `i` (and the line breaks, in a flow root).
    fn gap(&mut self, mut i: usize) -> usize {
        let b = self.b;
        loop {
            while b.get(i) == Some(&b' ') {
                i += 1;
            }
            if self.multi && b.get(i) == Some(&b'\n') {
                i += 1;
                // A document marker inside the collection: granit-parser's to judge.
                if b[i..].starts_with(b"...") || b[i..].starts_with(b"---") {
                    self.stopped = true;
                }
                continue;
            }
            return i;
        }
    }

    /// The end of the line a token at `i` stands on.
    fn limit(&self, i: usize, le: usize) -> usize {
        if self.multi { self.line_end(i) } else { le }
    }

    /// A node inside a flow collection at `i`; returns its end.
    fn flow_node(&mut self, i: usize, le: usize, depth: usize) -> Option<usize> {
        if matches!(self.b[i], b'[' | b'{') {
            return self.flow(i, le, depth + 1);
        }
        let (end, event) = self.flow_scalar(i, le, false)?;
        self.push(event, i, end, None);
        Some(end)
    }

    /// A scalar inside a flow collection at `i`: quoted on one line, or plain up to a flow
    /// indicator (a key's up to its `: `). Returns its end and its event.
    fn flow_scalar(&self, i: usize, le: usize, key: bool) -> Option<(usize, Event<'a>)> {
        let b = self.b;
        if matches!(b[i], b'"' | b'\'') {
            let end = self.quoted_end(i, le)?;
            return Some((end, self.quoted(i, end)));
        }
        if !starts_plain(b[i])
            || (b[i] == b'-'
                && matches!(b.get(i + 1), None | Some(b' ' | b'\n' | b',' | b']' | b'}')))
        {
            return None;
        }
        let mut j = i;
        while j < le {
            match b[j] {
                b',' | b'[' | b']' | b'{' | b'}' => break,
                b'?' => return None,
                b':' => match b.get(j + 1) {
                    Some(b' ') if key => break,
                    Some(b' ' | b',' | b'[' | b']' | b'{' | b'}' | b'\n') | None => return None,
                    _ => j += 1,
                },
                b'#' if b[j - 1] == b' ' => return None,
                _ => j += 1,
            }
        }
        let mut end = j;
        while b[end - 1] == b' ' {
            end -= 1;
        }
        let text = &self.text[i..end];
        Some((
            end,
            Event::Scalar(Cow::Borrowed(text), ScalarStyle::Plain, 0, None),
        ))
    }

    /// After a node: blanks, and a comment after at least one blank, to the end of the line.
    fn rest(&mut self, from: usize, le: usize) -> Option<()> {
        let at = from + self.spaces(from, le);
        if at == le {
            return Some(());
        }
        if self.b[at] == b'#' && at > from {
            self.comment(at, le);
            return Some(());
        }
        None
    }

    /// A block scalar whose `|` or `>` is at `q`; returns where the line that ends it starts.
    /// A folded one is taken only where no line is more indented than the first (whose line
    /// breaks folding keeps, as it does around them).
    fn block_scalar(&mut self, q: usize, le: usize) -> Option<usize> {
        let b = self.b;
        let folded = b[q] == b'>';
        let len = b.len();
        let parent = self.stack.last()?.col();
        let (chomp, header_end) = match b.get(q + 1) {
            Some(b'-') => (Chomp::Strip, q + 2),
            Some(b'+') => (Chomp::Keep, q + 2),
            _ => (Chomp::Clip, q + 1),
        };
        // The comment of the header line comes after the scalar's own event, as granit-parser
        // gives it (the order is no business of the tree's: comments are sorted).
        let header_comment = {
            let at = header_end + self.spaces(header_end, le);
            if at == le {
                None
            } else if b[at] == b'#' && at > header_end {
                Some(at)
            } else {
                return None;
            }
        };
        let mut pos = le + 1;
        let mut indent = None;
        let mut first = 0;
        let mut value = String::new();
        let mut any = false;
        let mut blanks = 0;
        // Where the line that ends the scalar starts, and its first token.
        let mut stop = (len, len);
        let mut last_break = true;
        while pos < len {
            let line_end = self.line_end(pos);
            let s = self.spaces(pos, line_end);
            if pos + s == line_end {
                // A blank line: leading ones, and ones with more blanks than the indentation,
                // go to granit-parser.
                match indent {
                    // A last line without a break adds none to a kept scalar: granit-parser's.
                    Some(n) if s <= n && (line_end < len || !matches!(chomp, Chomp::Keep)) => {
                        blanks += 1
                    }
                    _ => return None,
                }
                pos = line_end + 1;
                continue;
            }
            let n = match indent {
                None => {
                    if s <= parent {
                        return None;
                    }
                    indent = Some(s);
                    first = pos + s;
                    s
                }
                Some(n) if s < n => {
                    stop = (pos, pos + s);
                    break;
                }
                Some(n) => n,
            };
            if folded && b[pos + n] == b' ' {
                return None;
            }
            if folded {
                // A line break between two lines becomes a space; each empty line between
                // them, a line break.
                if any && blanks == 0 {
                    value.push(' ');
                }
            } else if any {
                value.push('\n');
            }
            any = true;
            for _ in 0..blanks {
                value.push('\n');
            }
            blanks = 0;
            value.push_str(&self.text[pos + n..line_end]);
            last_break = line_end < len;
            pos = line_end + 1;
        }
        let n = indent?;
        match chomp {
            Chomp::Strip => {}
            Chomp::Clip => value.push('\n'),
            Chomp::Keep => {
                if !last_break {
                    return None;
                }
                value.push('\n');
                for _ in 0..blanks {
                    value.push('\n');
                }
            }
        }
        self.push(
            Event::Scalar(
                Cow::Owned(value),
                if folded {
                    ScalarStyle::Folded
                } else {
                    ScalarStyle::Literal
                },
                0,
                None,
            ),
            first,
            stop.1,
            Some(n),
        );
        if let Some(at) = header_comment {
            self.comment(at, le);
        }
        Some(stop.0)
    }
}

#[derive(Clone, Copy)]
enum Chomp {
    Strip,
    Clip,
    Keep,
}

/// Whether a plain scalar may start with `c` here: not an indicator, and `-` only before a
/// non-blank (which the callers check by taking a dash entry first).
fn starts_plain(c: u8) -> bool {
    !matches!(
        c,
        b'?' | b':'
            | b','
            | b'['
            | b']'
            | b'{'
            | b'}'
            | b'#'
            | b'&'
            | b'*'
            | b'!'
            | b'|'
            | b'>'
            | b'\''
            | b'"'
            | b'%'
            | b'@'
            | b'`'
            | b' '
    )
}

#[cfg(test)]
mod tests;
