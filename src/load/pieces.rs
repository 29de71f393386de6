//! A large text cut into pieces that are scanned apart, where the caller's [`Spread`] says so:
//! the UTF-8 check (here) and the line index (`source.rs`) come before any of a file's
//! documents can be linted, so on one thread they would hold up every other.

use crate::common::spread::Spread;

/// `bytes` as text if they are UTF-8, checked in the pieces `spread` asks for.
pub fn utf8<'b>(bytes: &'b [u8], spread: &impl Spread) -> Result<&'b str, std::str::Utf8Error> {
    let Some(piece) = spread.piece_bytes(bytes.len()) else {
        return std::str::from_utf8(bytes);
    };
    // Each piece is moved to start on a byte that begins a character (at most three
    // continuation bytes can follow one): bytes cut there are UTF-8 exactly when every piece
    // is. Where a piece is not, the whole is checked again for the error's place.
    let start = |at: usize| {
        (at..bytes.len().min(at + 4))
            .find(|&i| !is_continuation(bytes[i]))
            .unwrap_or(at)
    };
    let cuts = ranges(bytes.len(), piece);
    let valid = spread
        .map(&cuts, |r| {
            let (from, to) = (start(r.start), start(r.end));
            from <= to && std::str::from_utf8(&bytes[from..to]).is_ok()
        })
        .into_iter()
        .all(|ok| ok);
    if !valid {
        return std::str::from_utf8(bytes);
    }
    // SAFETY: every byte of `bytes` lies in one of the pieces, all of which were found to be
    // UTF-8, and the pieces meet at the starts of characters.
    Ok(unsafe { std::str::from_utf8_unchecked(bytes) })
}

/// `len` bytes in pieces of `piece` bytes, the last one shorter.
pub fn ranges(len: usize, piece: usize) -> Vec<std::ops::Range<usize>> {
    let piece = piece.max(1);
    (0..len.div_ceil(piece))
        .map(|i| i * piece..((i + 1) * piece).min(len))
        .collect()
}

/// A byte that continues a UTF-8 character (`10xxxxxx`).
pub fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

#[cfg(test)]
mod tests {
    use super::*;

    const PIECE: usize = crate::testkit::spread::PIECE;

    /// A text over the parallel threshold: `head` ends two bytes before the first cut, and
    /// multi-byte characters and `---` lines fall on every offset from the later cuts.
    fn large(head: &str) -> String {
        let unit = "kind: €\n---\n";
        let mut text = "x".repeat(PIECE - 2);
        text.push_str(head);
        text.push_str(&unit.repeat(4 * PIECE / unit.len() + 2));
        text
    }

    #[test]
    fn a_large_text_checked_in_pieces_is_utf8_exactly_when_it_is_whole() {
        let text = large("€");
        assert!(text.len() > 4 * PIECE);
        assert!(!text.is_char_boundary(PIECE), "a character straddles a cut");
        // Compared by length and error: a failure must not print 5 MB of text.
        let checked = |bytes: &[u8]| utf8(bytes, &crate::testkit::spread::Pieces).map(str::len);
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
