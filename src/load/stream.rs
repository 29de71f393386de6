//! A file's bytes to the text the YAML reader works on, and the parts it is cut into, as
//! kubectl reads a manifest: apimachinery cuts the bytes at `---` lines and hands each part to
//! go-yaml v2, which decodes UTF-8, or UTF-16 when a byte-order mark says so.
//!
//! A UTF-16 file has no `---` line apimachinery can see (its line breaks are two bytes), so it
//! is one part, of which go-yaml reads the first document only. Bytes that are not UTF-8 are
//! kept as `?`, one for one, so that offsets stay those of the file.

use std::borrow::Cow;
use std::ops::Range;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Utf16,
}

#[derive(Debug)]
pub struct Decoded<'b> {
    pub text: Cow<'b, str>,
    /// Offsets (into `text`) and values of the bytes that were not UTF-8.
    pub invalid: Vec<(usize, u8)>,
    pub encoding: Encoding,
}

/// Decodes a file's bytes.
pub fn decode(bytes: &[u8]) -> Decoded<'_> {
    decode_spread(bytes, &crate::common::spread::Serial)
}

/// [`decode`], its UTF-8 check done in the pieces `spread` asks for.
pub fn decode_spread<'b>(
    bytes: &'b [u8],
    spread: &impl crate::common::spread::Spread,
) -> Decoded<'b> {
    if let Some(text) = utf16(bytes) {
        return Decoded {
            text: Cow::Owned(text),
            invalid: Vec::new(),
            encoding: Encoding::Utf16,
        };
    }
    match crate::load::pieces::utf8(bytes, spread) {
        Ok(text) => Decoded {
            text: Cow::Borrowed(text),
            invalid: Vec::new(),
            encoding: Encoding::Utf8,
        },
        Err(_) => {
            let mut invalid = Vec::new();
            let mut clean = Vec::with_capacity(bytes.len());
            for chunk in bytes.utf8_chunks() {
                clean.extend_from_slice(chunk.valid().as_bytes());
                for &b in chunk.invalid() {
                    invalid.push((clean.len(), b));
                    clean.push(b'?');
                }
            }
            Decoded {
                text: Cow::Owned(String::from_utf8(clean).unwrap_or_default()),
                invalid,
                encoding: Encoding::Utf8,
            }
        }
    }
}

/// UTF-16 text behind a byte-order mark, as go-yaml decodes it (an unpaired surrogate becomes
/// U+FFFD); `None` without the mark.
fn utf16(bytes: &[u8]) -> Option<String> {
    let little = match bytes {
        [0xFF, 0xFE, ..] => true,
        [0xFE, 0xFF, ..] => false,
        _ => return None,
    };
    let units = bytes[2..].chunks(2).map(|pair| match pair {
        [a, b] if little => u16::from_le_bytes([*a, *b]),
        [a, b] => u16::from_be_bytes([*a, *b]),
        // An odd last byte: go-yaml reports an incomplete character; U+FFFD stands for it.
        _ => 0xFFFD,
    });
    Some(
        char::decode_utf16(units)
            .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
            .collect(),
    )
}

impl Decoded<'_> {
    /// The parts the text is read in, each parsed on its own with
    /// [`crate::load::yaml::parse_range`]: for UTF-8, cut at the lines starting with `---` that
    /// `lines`, the text's index, found.
    pub fn ranges(&self, lines: &crate::load::source::LineIndex) -> Vec<Range<usize>> {
        match self.encoding {
            Encoding::Utf8 => crate::load::yaml::document_ranges_at(&self.text, lines.dashed()),
            Encoding::Utf16 => std::iter::once(0..self.text.len()).collect(),
        }
    }

    /// The first byte that was not UTF-8 in `range`, if any.
    pub fn invalid_in(&self, range: &Range<usize>) -> Option<(usize, u8)> {
        let i = self.invalid.partition_point(|(at, _)| *at < range.start);
        self.invalid
            .get(i)
            .copied()
            .filter(|(at, _)| range.contains(at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_with_a_mark_is_one_part() {
        let text = "\u{feff}a: 1\n---\nb: 2\n";
        for bytes in [
            text.encode_utf16()
                .flat_map(u16::to_le_bytes)
                .collect::<Vec<u8>>(),
            text.encode_utf16().flat_map(u16::to_be_bytes).collect(),
        ] {
            let decoded = decode(&bytes);
            assert_eq!(decoded.encoding, Encoding::Utf16);
            assert_eq!(decoded.text, "a: 1\n---\nb: 2\n");
            assert_eq!(
                decoded.ranges(&crate::load::source::LineIndex::new(&decoded.text)),
                vec![0..decoded.text.len()]
            );
        }
    }

    #[test]
    fn invalid_bytes_are_kept_in_place() {
        let decoded = decode(b"a: 1\n---\nb: \xff\n");
        assert_eq!(decoded.encoding, Encoding::Utf8);
        assert_eq!(decoded.text, "a: 1\n---\nb: ?\n");
        let ranges = decoded.ranges(&crate::load::source::LineIndex::new(&decoded.text));
        assert_eq!(decoded.invalid_in(&ranges[0]), None);
        assert_eq!(decoded.invalid_in(&ranges[1]), Some((12, 0xff)));
    }

    #[test]
    fn utf8_text_is_borrowed() {
        let decoded = decode(b"a: 1\n");
        assert!(matches!(decoded.text, Cow::Borrowed(_)));
    }
}
