//! The text of one input file, and turning byte offsets into 1-based lines and character columns
//! without rescanning the file (a diagnostic near the end of a 40 MB file must stay cheap).

use crate::common::spread::{Serial, Spread};
use crate::load::pieces;
use crate::load::yaml::Span;

/// Line starts of a text, found once, and the number of characters before every
/// [`CHAR_BLOCK`]-byte block, so that a column near the end of a 50 MB line (a minified JSON
/// file) costs one block's scan, not the whole line's.
#[derive(Clone, Debug, Default)]
pub struct LineIndex {
    starts: Vec<u32>,
    /// The starts of the lines that begin with `---`, at the start of the text or after an LF:
    /// where apimachinery may cut a file into documents, found in the same pass.
    dashed: Vec<u32>,
    /// Characters in `text[..i * CHAR_BLOCK]`, for every block start `i * CHAR_BLOCK`.
    chars_before_block: Vec<u32>,
    /// Line starts at or before every block start `i * CHAR_BLOCK`, and all of them last: a
    /// line is looked up among its block's few starts, not among all of an 80 MB render's 2
    /// million, most of them far out of the cache.
    lines_before_block: Vec<u32>,
}

/// Bytes per entry of the character-count table; pieces of a text indexed apart start at
/// multiples of it.
const CHAR_BLOCK: usize = 4096;

impl LineIndex {
    /// The index of `text`, built on this thread.
    pub fn new(text: &str) -> LineIndex {
        Self::spread(text, &Serial)
    }

    /// The index of `text`, built in the pieces `spread` asks for: the same index either way.
    pub fn spread(text: &str, spread: &impl Spread) -> LineIndex {
        if let Some(piece) = spread
            .piece_bytes(text.len())
            .filter(|p| p.is_multiple_of(CHAR_BLOCK))
        {
            let cuts = pieces::ranges(text.len(), piece);
            let pieces: Vec<LineIndex> = spread.map(&cuts, |r| Self::piece(text, r.start, r.end));
            let mut whole = LineIndex {
                starts: Vec::with_capacity(pieces.iter().map(|p| p.starts.len()).sum()),
                dashed: Vec::with_capacity(pieces.iter().map(|p| p.dashed.len()).sum()),
                chars_before_block: Vec::with_capacity(text.len() / CHAR_BLOCK + 1),
                lines_before_block: Vec::with_capacity(text.len() / CHAR_BLOCK + 2),
            };
            let mut chars = 0u32;
            for piece in pieces {
                // Each piece's line table ends with its own count, as its character table does.
                let lines = whole.starts.len() as u32;
                let (_, before) = piece.lines_before_block.split_last().unwrap_or((&0, &[]));
                whole
                    .lines_before_block
                    .extend(before.iter().map(|l| l + lines));
                whole.starts.extend(piece.starts);
                whole.dashed.extend(piece.dashed);
                // Each piece's table ends with its own total, the next piece's first offset.
                let (&total, before) = piece.chars_before_block.split_last().unwrap_or((&0, &[]));
                whole
                    .chars_before_block
                    .extend(before.iter().map(|c| c + chars));
                chars += total;
            }
            whole.lines_before_block.push(whole.starts.len() as u32);
            return whole;
        }
        let mut index = Self::piece(text, 0, text.len());
        index.chars_before_block.pop();
        index
    }

    /// The index of `text[from..to]` (`from` a multiple of [`CHAR_BLOCK`]) in offsets of the
    /// whole text: the line starts after its line breaks (and 0 for the first piece), and the
    /// character counts before each block counted from `from`, with the piece's total last.
    fn piece(text: &str, from: usize, to: usize) -> LineIndex {
        let bytes = text.as_bytes();
        let mut starts = Vec::with_capacity((to - from) / 32 + 1);
        let mut dashed = Vec::new();
        if from == 0 {
            starts.push(0);
            if bytes.starts_with(b"---") {
                dashed.push(0);
            }
        }
        let mut chars_before_block = Vec::with_capacity((to - from) / CHAR_BLOCK + 2);
        let mut lines_before_block = Vec::with_capacity((to - from) / CHAR_BLOCK + 2);
        let mut chars = 0u32;
        // One pass over the bytes, 64 at a time, finds both the line breaks and the
        // characters: a search for line breaks stops at every one of a manifest's short lines,
        // and a count of characters would be a second pass.
        for (k, block) in bytes[from..to].chunks(CHAR_BLOCK).enumerate() {
            chars_before_block.push(chars);
            // A start this block's first byte gave (a break just before it) is at or before it.
            lines_before_block.push(starts.len() as u32);
            let mut continuations = 0u32;
            for (j, run) in block.chunks(64).enumerate() {
                let at = from + k * CHAR_BLOCK + j * 64;
                // A shorter last run is padded with NULs, which are none of the bytes sought.
                let found = match <&[u8; 64]>::try_from(run) {
                    Ok(full) => Found::of(full),
                    Err(_) => {
                        let mut padded = [0u8; 64];
                        padded[..run.len()].copy_from_slice(run);
                        Found::of(&padded)
                    }
                };
                continuations += found.continuation.count_ones();
                let mut breaks = found.lf | found.cr;
                // A lone CR ends a line too, as it does for YAML and for detect-secrets
                // (Python's universal newlines); CR LF is one line end, at the LF.
                let mut cr = found.cr;
                while cr != 0 {
                    let i = cr.trailing_zeros() as usize;
                    if bytes.get(at + i + 1) == Some(&b'\n') {
                        breaks &= !(1 << i);
                    }
                    cr &= cr - 1;
                }
                while breaks != 0 {
                    let i = breaks.trailing_zeros() as usize;
                    let start = at + i + 1;
                    starts.push(start as u32);
                    // A line after an LF (not a lone CR: apimachinery reads lines up to LFs)
                    // that starts with `---`.
                    if found.lf & (1 << i) != 0 && bytes[start..].starts_with(b"---") {
                        dashed.push(start as u32);
                    }
                    breaks &= breaks - 1;
                }
            }
            chars += block.len() as u32 - continuations;
        }
        chars_before_block.push(chars);
        lines_before_block.push(starts.len() as u32);
        LineIndex {
            starts,
            dashed,
            chars_before_block,
            lines_before_block,
        }
    }

    /// Characters in `text[..offset]`; `offset` is a character boundary.
    fn chars_before(&self, text: &str, offset: usize) -> usize {
        let block = offset / CHAR_BLOCK;
        match self.chars_before_block.get(block) {
            Some(&before) => {
                before as usize + char_starts(&text.as_bytes()[block * CHAR_BLOCK..offset])
            }
            // Not the text this index was built from: count the slow way.
            None => text[..offset].chars().count(),
        }
    }

    /// 0-based line holding byte `offset`.
    pub fn line_of(&self, offset: usize) -> usize {
        // The starts at or before `offset` are those before its block and some of the block's.
        let block = offset / CHAR_BLOCK;
        let (from, to) = match (
            self.lines_before_block.get(block),
            self.lines_before_block.get(block + 1),
        ) {
            (Some(&from), Some(&to)) => (from as usize, to as usize),
            // At the very end, or not the text this index was built from.
            _ => (0, self.starts.len()),
        };
        let within = self.starts[from..to].partition_point(|&s| s as usize <= offset);
        (from + within).saturating_sub(1)
    }

    /// Byte offset where 0-based `line` starts.
    pub fn line_start(&self, line: usize) -> Option<usize> {
        self.starts.get(line).map(|&s| s as usize)
    }

    pub fn line_count(&self) -> usize {
        self.starts.len()
    }

    /// Where the lines that start with `---` start, in order: the start of the text if it is
    /// one, and the lines after an LF.
    pub fn dashed(&self) -> impl Iterator<Item = usize> + '_ {
        self.dashed.iter().map(|&s| s as usize)
    }

    /// 1-based line and 1-based column counted in characters.
    pub fn position(&self, text: &str, offset: usize) -> (usize, usize) {
        let offset = floor_char_boundary(text, offset.min(text.len()));
        let line = self.line_of(offset);
        let start = self.starts[line] as usize;
        (line + 1, self.column_of(text, start, offset) + 1)
    }

    /// Characters in `text[from..to]`, both character boundaries: for long lines, without
    /// scanning from the start of the line.
    pub fn chars_between(&self, text: &str, from: usize, to: usize) -> usize {
        self.column_of(text, from, to)
    }

    fn column_of(&self, text: &str, from: usize, to: usize) -> usize {
        if to - from <= CHAR_BLOCK {
            text[from..to].chars().count()
        } else {
            self.chars_before(text, to) - self.chars_before(text, from)
        }
    }
}

/// Characters that start in `bytes` (any byte that is not a UTF-8 continuation byte).
fn char_starts(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .filter(|&&b| !pieces::is_continuation(b))
        .count()
}

/// Where a run of 64 bytes holds an LF, a CR and a UTF-8 continuation byte: bit `i` of each
/// mask stands for byte `i`.
#[derive(Debug, PartialEq, Eq)]
struct Found {
    lf: u64,
    cr: u64,
    continuation: u64,
}

impl Found {
    /// With SSE2, which every x86-64 processor has: 16 bytes per comparison.
    #[cfg(target_arch = "x86_64")]
    fn of(chunk: &[u8; 64]) -> Found {
        // SAFETY: the target has SSE2 (it is part of x86-64).
        unsafe { Self::sse2(chunk) }
    }

    #[cfg(not(target_arch = "x86_64"))]
    fn of(chunk: &[u8; 64]) -> Found {
        Self::bytewise(chunk)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "sse2")]
    fn sse2(chunk: &[u8; 64]) -> Found {
        use std::arch::x86_64::*;
        let lf = _mm_set1_epi8(b'\n' as i8);
        let cr = _mm_set1_epi8(b'\r' as i8);
        let top_two = _mm_set1_epi8(0xC0u8 as i8);
        let top_one = _mm_set1_epi8(0x80u8 as i8);
        let mut found = Found {
            lf: 0,
            cr: 0,
            continuation: 0,
        };
        for k in 0..4 {
            // SAFETY: bytes 16k..16k+16 lie inside the 64-byte array; the load is unaligned.
            let v = unsafe { _mm_loadu_si128(chunk.as_ptr().add(16 * k).cast::<__m128i>()) };
            let bits = |m: __m128i| u64::from(_mm_movemask_epi8(m) as u16) << (16 * k);
            found.lf |= bits(_mm_cmpeq_epi8(v, lf));
            found.cr |= bits(_mm_cmpeq_epi8(v, cr));
            found.continuation |= bits(_mm_cmpeq_epi8(_mm_and_si128(v, top_two), top_one));
        }
        found
    }

    /// Byte by byte: the reference the SSE2 version is tested against, and the version used
    /// elsewhere.
    #[cfg_attr(target_arch = "x86_64", allow(dead_code))]
    fn bytewise(chunk: &[u8; 64]) -> Found {
        let mut found = Found {
            lf: 0,
            cr: 0,
            continuation: 0,
        };
        for (i, &b) in chunk.iter().enumerate() {
            found.lf |= u64::from(b == b'\n') << i;
            found.cr |= u64::from(b == b'\r') << i;
            found.continuation |= u64::from(pieces::is_continuation(b)) << i;
        }
        found
    }
}

fn floor_char_boundary(text: &str, mut offset: usize) -> usize {
    while offset > 0 && !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// Where a finding points: a file, a byte range in it, and the same range as lines and columns.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Loc {
    pub file: usize,
    pub line: usize,
    pub column: usize,
    pub end_line: usize,
    pub end_column: usize,
    pub span: Span,
}

/// A [`Loc`] in 28 bytes instead of 56, for the facts kept for every bundle member of a large
/// render; findings take the full `Loc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct At {
    file: u32,
    line: u32,
    column: u32,
    end_line: u32,
    end_column: u32,
    span: Span,
}

impl From<At> for Loc {
    fn from(at: At) -> Loc {
        Loc {
            file: at.file as usize,
            line: at.line as usize,
            column: at.column as usize,
            end_line: at.end_line as usize,
            end_column: at.end_column as usize,
            span: at.span,
        }
    }
}

impl From<&At> for Loc {
    fn from(at: &At) -> Loc {
        Loc::from(*at)
    }
}

/// A [`Loc`] made compact again (read back from the cache); `Err` when a number exceeds 32 bits.
impl TryFrom<&Loc> for At {
    type Error = std::num::TryFromIntError;

    fn try_from(loc: &Loc) -> Result<At, Self::Error> {
        Ok(At {
            file: u32::try_from(loc.file)?,
            line: u32::try_from(loc.line)?,
            column: u32::try_from(loc.column)?,
            end_line: u32::try_from(loc.end_line)?,
            end_column: u32::try_from(loc.end_column)?,
            span: loc.span,
        })
    }
}

impl From<&Loc> for Loc {
    fn from(loc: &Loc) -> Loc {
        loc.clone()
    }
}

/// Whether detect-secrets reads a file shown as `name` as YAML (`#` comments only): the one fact
/// of a file's name that linting depends on.
pub fn yaml_name(name: &str) -> bool {
    name.ends_with(".yaml")
}

/// A file being read: its display path, its text and its line index.
pub struct Source<'t> {
    pub file: usize,
    pub text: &'t str,
    pub lines: LineIndex,
    /// Whether the file's name ends in `.yaml`, for which detect-secrets reads `#` comments
    /// only (for `.yml`, `.json` and the rest, the comment markers of many languages).
    pub yaml_name: bool,
}

impl<'t> Source<'t> {
    pub fn new(file: usize, text: &'t str) -> Self {
        Self::spread(file, text, &Serial)
    }

    /// [`Source::new`], its line index built in the pieces `spread` asks for.
    pub fn spread(file: usize, text: &'t str, spread: &impl Spread) -> Self {
        Source {
            file,
            text,
            lines: LineIndex::spread(text, spread),
            yaml_name: true,
        }
    }

    /// The same source, for a file shown as `name`.
    pub fn named(mut self, name: &str) -> Self {
        self.yaml_name = yaml_name(name);
        self
    }

    pub fn loc(&self, span: Span) -> Loc {
        let (line, column) = self.lines.position(self.text, span.start());
        let (end_line, end_column) = self.lines.position(self.text, span.end());
        Loc {
            file: self.file,
            line,
            column,
            end_line,
            end_column,
            span,
        }
    }

    pub fn at(&self, span: Span) -> At {
        let loc = self.loc(span);
        // Files are capped well below 4 GiB and 4 billion lines, so this holds; were it not
        // to, the place would be the last line rather than a wrapped-around one.
        At::try_from(&loc).unwrap_or(At {
            file: u32::try_from(loc.file).unwrap_or(u32::MAX),
            line: u32::MAX,
            column: 1,
            end_line: u32::MAX,
            end_column: 1,
            span,
        })
    }

    /// The character at byte `at` (the one it falls inside), or an empty span at the end of
    /// the text: a place computed from another text's columns always lies in this one.
    pub fn char_at(&self, at: usize) -> Span {
        let start = floor_char_boundary(self.text, at.min(self.text.len()));
        let len = self.text[start..].chars().next().map_or(0, char::len_utf8);
        Span::new(start, start + len)
    }

    /// `span` moved onto character boundaries inside the text.
    pub fn snap(&self, span: Span) -> Span {
        let start = self.char_at(span.start()).start();
        let end = self.char_at(span.end()).start().max(start);
        Span::new(start, end)
    }

    /// The byte range of 0-based `line` without its line break.
    pub fn line_span(&self, line: usize) -> Option<Span> {
        let start = self.lines.line_start(line)?;
        let end = self
            .lines
            .line_start(line + 1)
            .map_or(self.text.len(), |next| next - 1);
        let end = if self.text[start..end].ends_with('\r') {
            end - 1
        } else {
            end
        };
        Some(Span::new(start, end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::spread::{PIECE, Pieces};

    #[test]
    fn places_computed_elsewhere_land_on_characters_inside_the_text() {
        let source = Source::new(0, "a: é\nb");
        assert_eq!(source.char_at(0), Span::new(0, 1));
        assert_eq!(source.char_at(3), Span::new(3, 5));
        assert_eq!(source.char_at(4), Span::new(3, 5));
        assert_eq!(source.char_at(7), Span::new(7, 7));
        assert_eq!(source.char_at(99), Span::new(7, 7));
        assert_eq!(source.snap(Span::new(4, 99)), Span::new(3, 7));
    }

    #[test]
    fn positions_are_one_based_and_count_characters() {
        let text = "a: 1\nnäme: x\n\nlast";
        let index = LineIndex::new(text);
        assert_eq!(index.position(text, 0), (1, 1));
        assert_eq!(index.position(text, 5), (2, 1));
        let x = text.find('x').unwrap();
        assert_eq!(index.position(text, x), (2, 7), "ä is one column");
        assert_eq!(index.position(text, text.len()), (4, 5));
        assert_eq!(index.line_count(), 4);
    }

    #[test]
    fn columns_on_a_long_line_count_characters_across_blocks() {
        // One line of mixed one-, two- and three-byte characters, far longer than a block.
        let unit = "aä€";
        let text = format!("x\n{}", unit.repeat(10_000));
        let index = LineIndex::new(&text);
        for k in [0, 1, 1365, 1366, 5000, 9_999, 10_000] {
            let offset = 2 + k * unit.len();
            assert_eq!(
                index.position(&text, offset),
                (2, 3 * k + 1),
                "after {k} units"
            );
            // Inside the unit: after `a` and after `aä`.
            if k < 10_000 {
                assert_eq!(index.position(&text, offset + 1), (2, 3 * k + 2));
                assert_eq!(index.position(&text, offset + 3), (2, 3 * k + 3));
            }
        }
        assert_eq!(index.chars_between(&text, 2, text.len()), 30_000);
    }

    #[test]
    fn a_large_text_indexed_in_pieces_gets_the_same_index() {
        // Line breaks of every kind, CR LF split across a piece's end, and characters of
        // several bytes straddling blocks and pieces.
        let unit = "ab: é€\r\nx\ry\n\n";
        let text = format!(
            "{}\r\n{}",
            "a".repeat(PIECE - 1),
            unit.repeat(7 * PIECE / unit.len())
        );
        let serial = LineIndex::new(&text);
        let parallel = LineIndex::spread(&text, &Pieces);
        assert!(text.len() > 4 * PIECE);
        assert_eq!(parallel.starts, serial.starts);
        assert_eq!(parallel.chars_before_block, serial.chars_before_block);
        assert_eq!(parallel.lines_before_block, serial.lines_before_block);
        // A line is found within its block as it is among all the starts, at every offset
        // near a block's edges and throughout.
        let edges = (0..=text.len() / CHAR_BLOCK)
            .flat_map(|b| (b * CHAR_BLOCK).saturating_sub(2)..b * CHAR_BLOCK + 2);
        for offset in edges.chain((0..text.len()).step_by(101)) {
            let every = serial.starts.partition_point(|&s| s as usize <= offset) - 1;
            assert_eq!(serial.line_of(offset), every, "offset {offset}");
            assert_eq!(parallel.line_of(offset), every, "offset {offset}");
        }
        assert_eq!(
            serial.chars_before_block.len(),
            text.len().div_ceil(CHAR_BLOCK)
        );
        assert_eq!(
            serial.chars_before(&text, text.len() - 1),
            text[..text.len() - 1].chars().count()
        );
    }

    #[test]
    fn the_wide_scan_finds_what_the_bytewise_one_does() {
        // Pseudo-random runs of LFs, CRs, continuation bytes and other bytes, in 1,024 mixes.
        let mut chunk = [0u8; 64];
        for seed in 0..1024u32 {
            for (i, b) in chunk.iter_mut().enumerate() {
                let x = (seed.wrapping_mul(2_654_435_761) ^ (i as u32 * 40_503)) >> 7;
                *b = match x % 5 {
                    0 => b'\n',
                    1 => b'\r',
                    2 => 0x80 | (x >> 3) as u8 & 0x3F,
                    _ => (x >> 3) as u8,
                };
            }
            assert_eq!(Found::of(&chunk), Found::bytewise(&chunk), "seed {seed}");
        }
        let lf = [b'\n'; 64];
        assert_eq!(Found::of(&lf).lf, u64::MAX);
    }

    #[test]
    fn breaks_and_characters_at_the_edges_of_a_wide_scan() {
        // CR LF and lone CRs at bytes 63/64 and in the tail after the last 64-byte run, and a
        // two-byte character split across two runs.
        let mut text = "a".repeat(63);
        text.push_str("\r\nb\r");
        text.push_str(&"c".repeat(58));
        text.push_str("\ré\rx\r\n\r");
        let index = LineIndex::new(&text);
        let expected: Vec<u32> = std::iter::once(0)
            .chain(text.char_indices().filter_map(|(i, c)| {
                let lone_cr = c == '\r' && text.as_bytes().get(i + 1) != Some(&b'\n');
                (c == '\n' || lone_cr).then_some(i as u32 + 1)
            }))
            .collect();
        assert_eq!(index.starts, expected);
        // Over several blocks: the table counts the characters that start before each one.
        let long = text.repeat(3 * CHAR_BLOCK / text.len() + 1);
        let index = LineIndex::new(&long);
        assert_eq!(
            index.chars_before_block.len(),
            long.len().div_ceil(CHAR_BLOCK)
        );
        for (k, &before) in index.chars_before_block.iter().enumerate() {
            assert_eq!(
                before as usize,
                char_starts(&long.as_bytes()[..k * CHAR_BLOCK])
            );
        }
    }

    /// The lines the index finds starting with `---` are where a search of the text for them
    /// finds them: after LFs only, at the start, across the 64-byte runs and the pieces.
    #[test]
    fn lines_starting_with_dashes_are_those_a_search_finds() {
        let fragments = [
            "---", "--", "-", "\n", "\r", "\r\n", "a: 1", " ", "é", "--- x",
        ];
        let mut seed = 0x9e37_79b9_u64;
        let mut next = || {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 33) as usize
        };
        let searched = |text: &str| -> Vec<usize> {
            let bytes = text.as_bytes();
            let mut found: Vec<usize> =
                bytes.starts_with(b"---").then_some(0).into_iter().collect();
            found.extend(memchr::memmem::find_iter(bytes, b"\n---").map(|i| i + 1));
            found
        };
        for _ in 0..300 {
            let text: String = (0..next() % 200)
                .map(|_| fragments[next() % fragments.len()])
                .collect();
            let index = LineIndex::new(&text);
            assert_eq!(
                index.dashed().collect::<Vec<_>>(),
                searched(&text),
                "{text:?}"
            );
        }
        // A large text indexed in pieces, with marker lines across every cut.
        let unit = "a: 1\r---\n---\r\n--- x\n";
        let text = unit.repeat(6 * PIECE / unit.len());
        let index = LineIndex::spread(&text, &Pieces);
        assert!(index.dashed().eq(searched(&text)));
        // A marker line that starts right at a cut, and one whose LF is the byte before it.
        let piece = PIECE;
        for before in [piece - 1, piece - 2] {
            let text = format!("{}\n---\n{}", "a".repeat(before), "b: 1\n".repeat(piece));
            let index = LineIndex::spread(&text, &Pieces);
            assert_eq!(index.dashed().collect::<Vec<_>>(), [before + 1]);
            assert!(index.dashed().eq(searched(&text)));
        }
    }

    #[test]
    fn line_spans_drop_crlf() {
        let text = "a\r\nbc\r\n";
        let source = Source::new(0, text);
        assert_eq!(&text[source.line_span(1).unwrap().range()], "bc");
    }

    #[test]
    fn a_lone_cr_ends_a_line() {
        let text = "a\rbc\r\nd\re";
        let source = Source::new(0, text);
        let lines: Vec<&str> = (0..source.lines.line_count())
            .map(|l| &text[source.line_span(l).unwrap().range()])
            .collect();
        assert_eq!(lines, ["a", "bc", "d", "e"]);
        assert_eq!(source.loc(Span::new(9, 10)).line, 4);
    }
}
