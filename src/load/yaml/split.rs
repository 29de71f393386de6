//! Cutting a file into documents at `---` lines before parsing, as kubectl, Helm and Argo CD do:
//! a document that does not parse then cannot take the others with it, and large files can be
//! parsed in parallel.

/// Byte ranges of the documents of `text`, in order. Each range after the first starts at its
/// `---` line, so the parser still sees the marker (and anything after it on the line).
pub fn document_ranges(text: &str) -> Vec<std::ops::Range<usize>> {
    let bytes = text.as_bytes();
    let mut ranges = Vec::new();
    let mut chunk_start = 0;
    // Whether the current chunk holds something other than blank lines, comments and
    // directives; a chunk of only directives belongs to the document that follows it.
    let mut has_content = false;
    let mut line_start = 0;
    let marker = memchr::memmem::Finder::new(b"\n---");
    while line_start < bytes.len() {
        if has_content && line_start > 0 {
            // Until the next `---` line, no line can change anything: jump to it.
            match marker.find(&bytes[line_start - 1..]) {
                Some(at) => line_start += at,
                None => break,
            }
        }
        let line_end =
            memchr::memchr(b'\n', &bytes[line_start..]).map_or(bytes.len(), |p| line_start + p);
        let line = &bytes[line_start..line_end];
        if is_separator(line) {
            if line_start > chunk_start && has_content {
                ranges.push(chunk_start..line_start);
                chunk_start = line_start;
            }
            // The marker line itself may carry content (`--- {a: 1}`).
            has_content = line[3..].iter().any(|b| !b" \t\r".contains(b));
        } else if !has_content {
            has_content = line_has_content(line);
        }
        line_start = line_end + 1;
    }
    if chunk_start < bytes.len() || ranges.is_empty() {
        ranges.push(chunk_start..bytes.len());
    }
    ranges
}

fn is_separator(line: &[u8]) -> bool {
    line.starts_with(b"---") && line.get(3).is_none_or(|b| b" \t\r".contains(b))
}

fn line_has_content(line: &[u8]) -> bool {
    match line.iter().find(|b| !b" \t\r".contains(b)) {
        None | Some(b'#') | Some(b'%') => false,
        // A byte-order mark on the first line is not content.
        Some(0xEF) => line.len() > 3 && line_has_content(&line[3..]),
        Some(_) => true,
    }
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
    fn leading_marker_and_directives_stay_with_their_document() {
        assert_eq!(parts("---\na: 1\n"), vec!["---\na: 1\n"]);
        assert_eq!(
            parts("%YAML 1.1\n---\na: 1\n---\nb: 2"),
            vec!["%YAML 1.1\n---\na: 1\n", "---\nb: 2"]
        );
        assert_eq!(parts("# head\n---\na: 1\n"), vec!["# head\n---\na: 1\n"]);
    }

    #[test]
    fn only_a_marker_followed_by_blank_splits() {
        assert_eq!(
            parts("a: |\n  ---x\n---x: 1\n"),
            vec!["a: |\n  ---x\n---x: 1\n"]
        );
        assert_eq!(
            parts("a: 1\r\n---\r\nb: 2\r\n"),
            vec!["a: 1\r\n", "---\r\nb: 2\r\n"]
        );
        assert_eq!(
            parts("--- {a: 1}\n--- {b: 2}\n"),
            vec!["--- {a: 1}\n", "--- {b: 2}\n"]
        );
    }

    /// The cut line by line, without jumping from marker to marker: what the fast cut must
    /// agree with.
    fn cut_line_by_line(text: &str) -> Vec<std::ops::Range<usize>> {
        let bytes = text.as_bytes();
        let (mut ranges, mut chunk_start, mut has_content, mut line_start) =
            (Vec::new(), 0, false, 0);
        while line_start < bytes.len() {
            let line_end = bytes[line_start..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(bytes.len(), |p| line_start + p);
            let line = &bytes[line_start..line_end];
            if is_separator(line) {
                if line_start > chunk_start && has_content {
                    ranges.push(chunk_start..line_start);
                    chunk_start = line_start;
                }
                has_content = line[3..].iter().any(|b| !b" \t\r".contains(b));
            } else if !has_content {
                has_content = line_has_content(line);
            }
            line_start = line_end + 1;
        }
        if chunk_start < bytes.len() || ranges.is_empty() {
            ranges.push(chunk_start..bytes.len());
        }
        ranges
    }

    #[test]
    fn jumping_to_markers_cuts_as_reading_every_line_does() {
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
