//! The loader on arbitrary bytes: cut into documents, parse each. No panic; ranges cover the
//! text in order; every span lies inside the text on character boundaries; parsing the same
//! range twice gives the same tree; the fast reader changes nothing (the documents are those
//! granit-parser alone gives); the line index finds the `---` lines the search does.
#![no_main]

use credlint::load::yaml::{self, Node, Parsed, Value};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // As the engine reads a file: invalid bytes become '?', one for one.
    let text: String = data
        .utf8_chunks()
        .flat_map(|c| {
            c.valid()
                .chars()
                .chain(std::iter::repeat_n('?', c.invalid().len()))
        })
        .collect();
    assert_eq!(
        format!("{:?}", yaml::parse(&text)),
        format!("{:?}", yaml::parse_without_fast_reader(&text)),
        "the fast reader reads otherwise than granit-parser"
    );
    let ranges = yaml::document_ranges(&text);
    // The engine cuts where its line index found the `---` lines: the same places.
    let lines = credlint::load::source::LineIndex::new(&text);
    assert_eq!(
        yaml::document_ranges_at(&text, lines.dashed()),
        ranges,
        "the line index finds other `---` lines than the search"
    );
    let mut next = 0;
    for range in ranges {
        assert_eq!(range.start, next, "ranges leave a gap or overlap");
        assert!(range.end <= text.len() && text.is_char_boundary(range.start));
        next = range.end;
        let first = yaml::parse_range(&text, range.clone());
        let second = yaml::parse_range(&text, range.clone());
        assert_eq!(
            format!("{first:?}"),
            format!("{second:?}"),
            "not deterministic"
        );
        for parsed in &first {
            match parsed {
                Parsed::Error(e) | Parsed::Unread(e) => inside(&text, e.span.start(), e.span.end()),
                Parsed::Document(d) => {
                    inside(&text, d.span.start(), d.span.end());
                    d.comments
                        .iter()
                        .for_each(|c| inside(&text, c.start(), c.end()));
                    walk(&text, &d.root);
                }
            }
        }
    }
    assert_eq!(next, text.len(), "ranges do not reach the end");
});

fn inside(text: &str, start: usize, end: usize) {
    assert!(
        start <= end && end <= text.len(),
        "{start}..{end} of {}",
        text.len()
    );
    assert!(text.is_char_boundary(start) && text.is_char_boundary(end));
}

fn walk(text: &str, node: &Node) {
    let mut pending = vec![node];
    while let Some(n) = pending.pop() {
        inside(text, n.span.start(), n.span.end());
        match &n.value {
            Value::Seq(items) => pending.extend(items),
            Value::Map(entries) => {
                for e in entries {
                    inside(text, e.key_span.start(), e.key_span.end());
                    pending.push(&e.value);
                }
            }
            _ => {}
        }
    }
}
