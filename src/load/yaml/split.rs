//! Cutting a file into documents at `---` lines before parsing, as kubectl, Helm and Argo CD do
//! (apimachinery's YAML reader): a document that does not parse then cannot take the others with
//! it, and large files can be parsed in parallel.
//!
//! apimachinery reads line by line and ends a part at every line that starts with `---`, once
//! the part has any line at all; that marker line belongs to no part. A marker line met while
//! the part is still empty (the first line of the file, or one right after a cut) is kept in
//! the part, where go-yaml reads it as a document start. Every line that starts with `---` must
//! hold nothing more than blanks and a comment after the marker (`--- {a: 1}`, `--- !!map` and
//! `----` are refused). A directive (`%YAML 1.1`) is a line like any other: the part before
//! the next `---` line holds a directive and no document, which go-yaml refuses.

use super::SyntaxError;
use super::node::Span;
use crate::common::shorten;

/// Byte ranges of the parts of `text`, in order. Each range after the first starts at the
/// marker line that ended the part before it (which [`marker_that_cut`] skips), so that every
/// byte of the text is in some range.
pub fn document_ranges(text: &str) -> Vec<std::ops::Range<usize>> {
    let bytes = text.as_bytes();
    let starts = bytes
        .starts_with(b"---")
        .then_some(0)
        .into_iter()
        .chain(memchr::memmem::find_iter(bytes, b"\n---").map(|i| i + 1));
    document_ranges_at(text, starts)
}

/// [`document_ranges`], given where the lines that start with `---` start, in order: the start
/// of the text if it is one, and every line after an LF (a lone CR ends no line here).
pub fn document_ranges_at(
    text: &str,
    dashed: impl IntoIterator<Item = usize>,
) -> Vec<std::ops::Range<usize>> {
    let bytes = text.as_bytes();
    let mut ranges = Vec::new();
    let mut chunk_start = 0;
    // Where the lines of the current part begin (after the marker line that cut).
    let mut part_from = 0;
    for line_start in dashed {
        if line_start > part_from {
            ranges.push(chunk_start..line_start);
            chunk_start = line_start;
            part_from = memchr::memchr(b'\n', &bytes[line_start..])
                .map_or(bytes.len(), |p| line_start + p + 1);
        }
    }
    if chunk_start < bytes.len() || ranges.is_empty() {
        ranges.push(chunk_start..bytes.len());
    }
    ranges
}

/// The end of the first line of `text[from..]`, its line break included.
fn line_end(text: &str, from: usize) -> usize {
    text[from..].find('\n').map_or(text.len(), |i| from + i + 1)
}

/// Where the part read from `range` (a range of [`document_ranges`]) begins: after the marker
/// line that cut it, for every range but the first.
pub fn marker_that_cut(text: &str, range: &std::ops::Range<usize>) -> Option<usize> {
    (range.start > 0 && text[range.clone()].starts_with("---"))
        .then(|| line_end(text, range.start).min(range.end))
}

/// The refusal of a line at `at` that starts with `---` and holds more than blanks and a
/// comment after the marker.
pub fn bad_marker(text: &str, at: usize) -> Option<SyntaxError> {
    let line = &text[at..line_end(text, at)];
    let line = line.strip_suffix('\n').unwrap_or(line);
    let after = line.strip_prefix("---")?;
    // Go's strings.TrimSpace: Unicode white space, CR included.
    let rest = after.trim();
    if rest.is_empty() || rest.starts_with('#') {
        return None;
    }
    let from = at + 3 + (after.len() - after.trim_start().len());
    Some(SyntaxError {
        span: Span::new(from, from + rest.len()),
        message: format!(
            "kubectl, Helm and Argo CD refuse the file here: only blanks and a comment may \
             follow `---` on its line, and here `{}` does (put it on the next line)",
            shorten(rest)
        ),
    })
}

/// A part whose first line of content (after blank and comment lines) is `...`: go-yaml finds
/// the end of a document before any of it, and refuses it.
pub fn leading_end_marker(text: &str, range: &std::ops::Range<usize>) -> Option<SyntaxError> {
    let mut at = range.start;
    for line in text[range.clone()].split_inclusive('\n') {
        let body = line.trim_start_matches('\u{feff}');
        let start = at + (line.len() - body.len());
        at += line.len();
        let trimmed = body.trim_start_matches([' ', '\t']);
        if trimmed.trim_end().is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let ends =
            body.starts_with("...") && body[3..].chars().next().is_none_or(|c| c.is_whitespace());
        return ends.then(|| SyntaxError {
            span: Span::new(start, start + 3),
            message: "kubectl, Helm and Argo CD refuse the file here: `...` ends a document \
                      that has not begun (go-yaml finds no content before it)"
                .into(),
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(text: &str) -> Vec<&str> {
        document_ranges(text)
            .into_iter()
            .map(|r| &text[r])
            .collect()
    }

    #[test]
    fn splits_at_marker_lines_keeping_the_marker() {
        assert_eq!(
            parts("a: 1\n---\nb: 2\n--- # c\nc: 3\n"),
            vec!["a: 1\n", "---\nb: 2\n", "--- # c\nc: 3\n"]
        );
    }

    #[test]
    fn a_marker_that_meets_an_empty_part_stays_in_it() {
        assert_eq!(parts("---\na: 1\n"), vec!["---\na: 1\n"]);
        // The second marker cuts (the part holds the first), the third meets an empty part.
        assert_eq!(
            parts("---\n---\n---\na: 1\n"),
            vec!["---\n", "---\n---\na: 1\n"]
        );
        assert_eq!(parts("\n---\na: 1\n"), vec!["\n", "---\na: 1\n"]);
    }

    #[test]
    fn a_directive_and_a_comment_are_lines_of_their_own_part() {
        assert_eq!(
            parts("%YAML 1.1\n---\na: 1\n---\nb: 2"),
            vec!["%YAML 1.1\n", "---\na: 1\n", "---\nb: 2"]
        );
        assert_eq!(
            parts("# head\n---\na: 1\n"),
            vec!["# head\n", "---\na: 1\n"]
        );
    }

    #[test]
    fn every_line_that_starts_with_the_marker_cuts() {
        assert_eq!(
            parts("a: |\n  ---x\n---x: 1\n"),
            vec!["a: |\n  ---x\n", "---x: 1\n"]
        );
        assert_eq!(
            parts("a: 1\r\n---\r\nb: 2\r\n"),
            vec!["a: 1\r\n", "---\r\nb: 2\r\n"]
        );
        assert_eq!(
            parts("--- {a: 1}\n--- {b: 2}\n"),
            vec!["--- {a: 1}\n", "--- {b: 2}\n"]
        );
        // A lone CR is no line break to apimachinery.
        assert_eq!(parts("a: 1\r---\rb: 2\r"), vec!["a: 1\r---\rb: 2\r"]);
    }

    #[test]
    fn only_blanks_and_a_comment_may_follow_the_marker() {
        for fine in ["---", "--- ", "---\t# c", "--- #c\r", "---\u{a0}"] {
            assert_eq!(bad_marker(&format!("{fine}\nx"), 0), None, "{fine:?}");
        }
        for (bad, shown) in [
            ("--- {a: 1}", "{a: 1}"),
            ("--- !!map", "!!map"),
            ("----", "-"),
            ("---x: 1", "x: 1"),
            ("---\ra: 1\r", "a: 1"),
        ] {
            let text = format!("a\n{bad}\n");
            let e = bad_marker(&text, 2).unwrap_or_else(|| panic!("{bad:?}"));
            assert_eq!(&text[e.span.range()], shown, "{bad:?}");
        }
    }

    #[test]
    fn the_marker_that_cut_is_skipped_and_an_end_before_content_refused() {
        let text = "a: 1\n---\n# c\n...\nb: 2\n";
        let ranges = document_ranges(text);
        assert_eq!(marker_that_cut(text, &ranges[0]), None);
        let from = marker_that_cut(text, &ranges[1]).unwrap();
        assert_eq!(&text[from..ranges[1].end], "# c\n...\nb: 2\n");
        let e = leading_end_marker(text, &(from..ranges[1].end)).unwrap();
        assert_eq!(e.span.start(), 13);
        assert!(leading_end_marker("---\n...\n", &(0..8)).is_none());
        assert!(leading_end_marker("a\n...\n", &(0..6)).is_none());
        assert!(leading_end_marker("....\n", &(0..5)).is_none());
    }

    /// The cut line by line, as apimachinery reads: what the cut by marker search must agree
    /// with.
    fn cut_line_by_line(text: &str) -> Vec<std::ops::Range<usize>> {
        let mut ranges = Vec::new();
        let (mut chunk_start, mut buffered) = (0, false);
        let mut line_start = 0;
        for line in text.split_inclusive('\n') {
            if line.starts_with("---") && buffered {
                ranges.push(chunk_start..line_start);
                chunk_start = line_start;
                buffered = false;
            } else {
                buffered = true;
            }
            line_start += line.len();
        }
        if chunk_start < text.len() || ranges.is_empty() {
            ranges.push(chunk_start..text.len());
        }
        ranges
    }

    #[test]
    fn searching_for_markers_cuts_as_reading_every_line_does() {
        let lines = [
            "---",
            "--- # c",
            "--- {a: 1}",
            "----",
            " ---",
            "---x",
            "",
            "# c",
            "%YAML 1.1",
            "a: 1",
            "  b",
            "\r",
            "---\r",
            "\u{feff}---",
        ];
        // Every text of up to four of these lines, with and without a final line break.
        let mut texts = vec![String::new()];
        let mut last = vec![String::new()];
        for _ in 0..4 {
            last = last
                .iter()
                .flat_map(|t| lines.iter().map(move |l| format!("{t}{l}\n")))
                .collect();
            texts.extend(last.iter().map(|t| t[..t.len() - 1].to_string()));
            texts.extend(last.iter().cloned());
        }
        assert!(texts.len() > 50_000, "{}", texts.len());
        for text in &texts {
            assert_eq!(document_ranges(text), cut_line_by_line(text), "{text:?}");
        }
    }

    #[test]
    fn empty_text_is_one_empty_range() {
        assert_eq!(document_ranges(""), vec![0..0]);
    }
}
