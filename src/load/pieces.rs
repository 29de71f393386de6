//! A large file cut into pieces that are read and scanned in parallel on the engine's pool: the
//! work that comes before any of a file's documents can be linted (reading it, the UTF-8 check,
//! the line index, which also finds the `---` lines) would otherwise hold up every other thread
//! while one of them goes through an 80 MB render.

use std::ops::Range;

/// A text at least this large, met on a worker of the engine's pool, is scanned in pieces.
/// Elsewhere (a report, a small file, a test) scans stay on the calling thread and never start
/// a pool.
pub const PARALLEL_FROM: usize = 4 << 20;
/// Bytes per piece: a multiple of the line index's character blocks.
pub const PIECE: usize = 1 << 20;

/// Whether a text of `len` bytes is scanned in pieces here.
pub fn parallel(len: usize) -> bool {
    len >= PARALLEL_FROM && rayon::current_thread_index().is_some()
}

/// `len` bytes in pieces of [`PIECE`] bytes, the last one shorter.
pub fn ranges(len: usize) -> impl rayon::iter::IndexedParallelIterator<Item = Range<usize>> {
    use rayon::prelude::*;
    (0..len.div_ceil(PIECE))
        .into_par_iter()
        .map(move |i| i * PIECE..((i + 1) * PIECE).min(len))
}

/// `bytes` as text if they are UTF-8, checked in parallel where [`parallel`] says so.
pub fn utf8(bytes: &[u8]) -> Result<&str, std::str::Utf8Error> {
    use rayon::prelude::*;
    if !parallel(bytes.len()) {
        return std::str::from_utf8(bytes);
    }
    // Each piece is moved to start on a byte that begins a character (at most three
    // continuation bytes can follow one): bytes cut there are UTF-8 exactly when every piece
    // is. Where a piece is not, the whole is checked again for the error's place.
    let start = |at: usize| {
        (at..bytes.len().min(at + 4))
            .find(|&i| !is_continuation(bytes[i]))
            .unwrap_or(at)
    };
    let valid = ranges(bytes.len()).all(|r| {
        let (from, to) = (start(r.start), start(r.end));
        from <= to && std::str::from_utf8(&bytes[from..to]).is_ok()
    });
    if !valid {
        return std::str::from_utf8(bytes);
    }
    // SAFETY: every byte of `bytes` lies in one of the pieces, all of which were found to be
    // UTF-8, and the pieces meet at the starts of characters.
    Ok(unsafe { std::str::from_utf8_unchecked(bytes) })
}

/// A byte that continues a UTF-8 character (`10xxxxxx`).
pub fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on_a_pool<T: Send>(f: impl FnOnce() -> T + Send) -> T {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        pool.install(f)
    }

    /// A text over the parallel threshold: `head` ends two bytes before the first cut, and
    /// multi-byte characters and `---` lines fall on every offset from the later cuts.
    fn large(head: &str) -> String {
        let unit = "kind: €\n---\n";
        let mut text = "x".repeat(PIECE - 2);
        text.push_str(head);
        text.push_str(&unit.repeat(PARALLEL_FROM / unit.len() + 2));
        text
    }

    #[test]
    fn a_large_text_checked_in_pieces_is_utf8_exactly_when_it_is_whole() {
        let text = large("€");
        assert!(text.len() >= PARALLEL_FROM);
        assert!(!text.is_char_boundary(PIECE), "a character straddles a cut");
        // Compared by length and error: a failure must not print 5 MB of text.
        let checked = |bytes: &[u8]| on_a_pool(|| utf8(bytes).map(str::len));
        assert_eq!(checked(text.as_bytes()), Ok(text.len()));
        // A byte broken at a cut, just after one, and at the end; a stray continuation byte
        // right at a cut, after an ASCII one.
        for (at, byte) in [
            (PIECE, 0xFF),
            (PIECE + 1, 0xFF),
            (text.len() - 1, 0xFF),
            (3 * PIECE, 0x80),
        ] {
            let mut bytes = text.clone().into_bytes();
            bytes[at - 1] = if byte == 0x80 { b'x' } else { bytes[at - 1] };
            bytes[at] = byte;
            let whole = std::str::from_utf8(&bytes).map(str::len);
            assert!(whole.is_err());
            assert_eq!(checked(&bytes), whole, "broken at {at}");
        }
    }
}
