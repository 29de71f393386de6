//! The fast reader against granit-parser, event for event and document for document: on every
//! YAML file of the repository, on edge cases, and on random block documents.

use super::{Sink, read_into};
use granit_parser::{Event, Options, Parser};

/// One event with its byte range in the chunk and the parser's indentation hint.
#[derive(Debug, PartialEq)]
struct Spanned<'a> {
    event: Event<'a>,
    start: usize,
    end: usize,
    indent: Option<usize>,
}

/// The tests compare lists of events.
impl<'a> Sink<'a> for Vec<Spanned<'a>> {
    fn event(&mut self, event: Event<'a>, start: usize, end: usize, indent: Option<usize>) -> bool {
        self.push(Spanned {
            event,
            start,
            end,
            indent,
        });
        true
    }
}

/// The events of `chunk` (one document), from its document start to its document end, or
/// `None` where the chunk is not of the subset the reader knows.
fn read(chunk: &str) -> Option<Vec<Spanned<'_>>> {
    let mut events = Vec::new();
    read_into(chunk, &mut events)?;
    Some(events)
}

/// granit-parser's events for `chunk`, read with the loader's options; an error ends them.
fn granit(chunk: &str) -> Result<Vec<Spanned<'_>>, String> {
    let mut options = Options::default();
    options.block_nesting_limit = crate::load::yaml::MAX_NESTING;
    options.flow_nesting_limit = crate::load::yaml::MAX_NESTING;
    options.emit_anchor_events = true;
    let mut parser = Parser::new_from_str_with_options(chunk, options);
    let mut out = Vec::new();
    while let Some(next) = parser.next_event() {
        let (event, span) = next.map_err(|e| e.info())?;
        if matches!(event, Event::StreamStart | Event::StreamEnd) {
            continue;
        }
        let range = span.byte_range().unwrap_or(0..0);
        out.push(Spanned {
            event,
            start: range.start,
            end: range.end,
            indent: span.indent,
        });
    }
    Ok(out)
}

/// Comments apart (their spans, sorted: the tree sorts them), the other events in order.
fn split(events: Vec<Spanned<'_>>) -> (Vec<(usize, usize)>, Vec<Spanned<'_>>) {
    let (comments, others): (Vec<_>, Vec<_>) = events
        .into_iter()
        .partition(|e| matches!(e.event, Event::Comment(..)));
    let mut spans: Vec<_> = comments.iter().map(|c| (c.start, c.end)).collect();
    spans.sort_unstable();
    (spans, others)
}

/// Whether the fast reader took `chunk`; where it did, it must give granit-parser's events.
fn agrees(chunk: &str) -> bool {
    let Some(fast) = read(chunk) else {
        return false;
    };
    let slow = match granit(chunk) {
        Ok(events) => events,
        Err(e) => panic!("the fast reader took {chunk:?}, which granit-parser refuses: {e}"),
    };
    let (fast_comments, fast) = split(fast);
    let (slow_comments, slow) = split(slow);
    for (i, (f, s)) in fast.iter().zip(&slow).enumerate() {
        assert_eq!(f, s, "event {i} differs in {chunk:?}");
    }
    assert_eq!(fast.len(), slow.len(), "event counts differ in {chunk:?}");
    assert_eq!(fast_comments, slow_comments, "comments differ in {chunk:?}");
    true
}

/// The documents of `text`, with and without the fast reader, must be the same.
fn same_documents(text: &str) {
    let fast = format!("{:?}", crate::load::yaml::parse(text));
    let slow = format!("{:?}", crate::load::yaml::parse_without_fast_reader(text));
    assert_eq!(fast, slow, "the documents differ for {text:?}");
}

/// The chunks the loader hands the reader (a part, after the marker line that cut it).
fn chunks(text: &str) -> Vec<&str> {
    crate::load::yaml::split::document_ranges(text)
        .into_iter()
        .map(|mut r| {
            if let Some(from) = crate::load::yaml::split::marker_that_cut(text, &r) {
                r.start = from;
            }
            &text[r]
        })
        .collect()
}

/// Every chunk of `text` compared; returns (chunks taken, chunks).
fn check_text(text: &str) -> (usize, usize) {
    same_documents(text);
    let chunks = chunks(text);
    let taken = chunks.iter().filter(|c| agrees(c)).count();
    (taken, chunks.len())
}

fn json_strings(node: &crate::load::yaml::Node, found: &mut dyn FnMut(&str)) {
    use crate::load::yaml::Value;
    match &node.value {
        Value::Str(s) if s.trim_start().starts_with(['{', '[']) => found(s),
        Value::Seq(items) => items.iter().for_each(|i| json_strings(i, found)),
        Value::Map(entries) => entries.iter().for_each(|e| json_strings(&e.value, found)),
        _ => {}
    }
}

fn yaml_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(listing) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in listing.flatten() {
        let path = entry.path();
        if path.is_dir() {
            yaml_files(&path, out);
        } else if path
            .extension()
            .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
        {
            out.push(path);
        }
    }
}

#[test]
fn agrees_on_every_yaml_file_of_the_repository() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["fixtures", "rules", "policies", "examples", "docs"] {
        yaml_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 50, "found only {} files", files.len());
    let (mut taken, mut all) = (0, 0);
    let (mut clean_taken, mut clean_all) = (0, 0);
    for file in &files {
        let bytes = std::fs::read(file).unwrap();
        let Ok(text) = std::str::from_utf8(&bytes) else {
            continue;
        };
        let (t, a) = check_text(text);
        taken += t;
        all += a;
        // The JSON held in strings (plan.json is parsed on its own).
        for parsed in crate::load::yaml::parse(text) {
            if let crate::load::yaml::Parsed::Document(d) = parsed {
                json_strings(&d.root, &mut |s| {
                    let (t, a) = check_text(s);
                    taken += t;
                    all += a;
                });
            }
        }
        if file.to_string_lossy().contains("fixtures/clean") {
            clean_taken += t;
            clean_all += a;
        }
    }
    // The reader must be the path the valid renderings take, or it saves nothing (the rest of
    // fixtures/clean is CRLF, anchors and JSON on one line, on purpose).
    assert!(
        clean_taken * 4 >= clean_all * 3,
        "the fast reader took {clean_taken} of {clean_all} chunks of fixtures/clean"
    );
    assert!(taken > 0 && taken < all, "took {taken} of {all} chunks");
}

#[test]
fn agrees_on_edge_cases() {
    let taken = [
        "a: 1\n",
        "a: 1",
        "---\na: 1\n",
        "--- # c\n# d\na: 1",
        "\n\n# c\n\na: 1\n\n# tail\n\n",
        "a:\n  b: 1\n# mid\n  c: 2\nd: 3\n",
        "a:\n  b: 1\n  # mid\nd: 3\n",
        "a: |\n  x\n\n# c\nz: 1\n",
        "a: |\n    x\n  \n \nz: 1\n",
        "a: |+\n  x\n\n\nz: 1\n",
        "a: |-\n  x\n\n\n",
        "a: |\n  x\n\n\n",
        "a: |\n  x",
        "a: |  # c\n  x\n   y\n\n  z\nb: 2\n",
        "- a\n- b: 1\n  c: 2\n-\n  - x\n- []\n",
        "a: b   \nc:    d  # e\n",
        "a:\n- b: 1\n  c: 2\n- x\nd: 1\n",
        "a:\n-\n- x\n",
        "a:\n  -\n  - x\n",
        "a:\n- \n- x\n",
        "\"k 1\": v\n'k2': \"x y\"  # c\nk3: http://a:b/c\nk4: a#b\n",
        "a:   \n  b: 1\n",
        "a: # c\n  b: 1\n",
        "a:\n\n  # c\n\n  b: 1\n",
        "a:\n  - |\n    x\n  - y\n",
        "- - a\n",
        "- - a\n  - b\n- c\n",
        "a: 'it''s'\nb: ''\nc: \"\"\n",
        "a: {}\nb: []  # none\nc:\n  - {}\n",
        "  a: 1\n  b: 2\n",
        "a: -1\nb: -x\nc: x-\n",
        "a: é\nb: \"日本\"\nc: 😀\n",
        "a:\n  b:\n    c:\n    - d\n    e: f\n",
        "a: x # c\n",
        "a: |-\n  x\n  # not a comment\n# a comment\n",
        "a: 1\na: 2\n",
        "a: yes\nb: 0x1F\nc: .inf\nd: ~\ne: null\nf: 1e3\n",
        "x: |\n  a\n\n\n  b\n",
        "a: [1, 2]\n",
        "a: {b: 1}\n",
        "a: [x, \"y\", 'z']\n",
        "a: {b: c, \"d\": [e]}  # c\n",
        "a: [ x , y ]\n",
        "a: [x,]\n",
        "- [a]\n- {}\n",
        "a: [{b: 1}, {c: d}]\n",
        "a: [-1, a-b, \"x:y\", http://a]\n",
        "key:\n- \n      - - x\n",
        "{\n  \"a\": 1,\n  \"b\": [\n    \"x\",\n    {\"c\": null}\n  ],\n  \"d\": {}\n}\n",
        "[1,\n 2]\n# after\n",
        "{\"a\": [true, false]}",
        // The builder refuses these: the fast reader stops and granit-parser gives the error.
        "a: >\n  x\n",
        "a: >-\n  x\n  y\n\n  z\n\n\n  w\nb: 1\n",
        "a: >+\n  x\n  y\n\n",
        "- >\n  a b\n  c\n- x\n",
        "a: .nan\nb: 1\n",
        "18446744073709551616: x\n",
    ];
    for text in taken {
        assert!(agrees(text), "the fast reader gave up on {text:?}");
        same_documents(text);
    }
    // Beyond the subset (or not YAML at all): granit-parser reads these.
    let declined = [
        "",
        "# only\n",
        "a: 1\n...\n",
        "a: 1\n  b: 2\n",
        "a: b\n  c\n",
        "a:\n  b\n",
        "a: \"x\\ty\"\n",
        "a: &x 1\nb: *x\n",
        "a: !!str 1\n",
        "a: >\n  x\n   y\n",
        "a: >\n   x\n  y\n",
        "a: [1, 2\n  ]\n",
        "{\"a\": 1}\nb: 2\n",
        "{\"a\": \"x\\ny\"}\n",
        "{\"a\":1}\n",
        "[a\n b]\n",
        "[\n...\n]\n",
        "a:\n  - # c\nb: 1\n",
        "a: # c\nb: 1\n",
        "a:\n  - # c\n",
        "[\n---\n]\n",
        "    {\n  k: -\n }\n",
        "[-\n]\n",
        "a: {b}\n",
        "a: [b: c]\n",
        "a: {b: }\n",
        "a: [x?]\n",
        "a: [x:, y]\n",
        "a: {\"b\":1}\n",
        "a:\tb\n",
        "a: b\r\n",
        "? a\n: b\n",
        "<<: {a: 1}\n",
        "a: b: c\n",
        "a: - b\n",
        "a: |\n\n  x\n",
        "a: |2\n  x\n",
        "a: |\nb: 1\n",
        "a: 'x\n  y'\n",
        "a: 'x'#c\n",
        "a:#c\n",
        "plain\n",
        "- a\nb: 1\n",
        "a: 1\n- b\n",
        "a:\n - b\n c: 1\n",
        "a : b\n",
        "a: b\u{2028}c\n",
        "\u{feff}a: 1\n",
        "a: |+\n  x",
        "a: |\n    x\n      \n",
    ];
    for text in declined {
        assert!(read(text).is_none(), "the fast reader took {text:?}");
        same_documents(text);
    }
}

/// Random documents of the block subset and of its near misses: the fast reader must either
/// decline each or read it as granit-parser does.
#[test]
fn agrees_on_random_block_documents() {
    const PIECES: &[&str] = &[
        "key: value",
        "key:",
        "key: ",
        "k2: 'q''s'",
        "k3: \"dq\"",
        "k4: []",
        "k5: {}",
        "k6: 12",
        "k7: a:b",
        "k8: a #c",
        "k9: |",
        "k10: |-",
        "k11: |+",
        "k12: |  # h",
        "k13: >",
        "k14: >-",
        "k15: >+",
        "- item",
        "-",
        "- ",
        "- k: v",
        "- k:",
        "- - x",
        "- |",
        "# comment",
        "",
        "  ",
        "text line",
        "  text: line",
        "x: y: z",
        "'qk': v",
        "\"qk\": v",
        "k: 'open",
        "k: -",
        "k:: v",
        "k: v#",
        "k: v  ",
        "- # c",
        "k: # c",
        "f: [a, b]",
        "f: [a, [b, {c: d}]]",
        "f: {a: 1, b: [x]}",
        "f: [a b, 'c', \"d\"]  # c",
        "- [x, y]",
        "- {a: b}",
        "f: [a:b, c]",
        "f: [a,",
        "f: {a: 1",
        "f: [a: b]",
        "{",
        "}",
        "[",
        "],",
        "\"j\": [",
        "\"j\": {",
        "\"j\": 1,",
        "\"j\": \"s\"",
        "1, 2",
        "...",
        "]",
    ];
    // CREDLINT_FAST_SEED explores other documents (the default keeps the test repeatable).
    let mut state = std::env::var("CREDLINT_FAST_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(0x9e37_79b9_7f4a_7c15)
        | 1;
    let mut next = |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    let (mut taken, runs) = (0, 20_000);
    for _ in 0..runs {
        let lines = 1 + next(9);
        let mut text = String::new();
        for _ in 0..lines {
            text.push_str(&" ".repeat(next(4) * if next(3) == 0 { 1 } else { 2 }));
            text.push_str(PIECES[next(PIECES.len())]);
            text.push('\n');
        }
        if next(5) == 0 {
            text.pop();
        }
        if agrees(&text) {
            taken += 1;
        }
        same_documents(&text);
    }
    // Enough of them are read by the fast reader for the comparison to mean something.
    assert!(taken > runs / 20, "the fast reader took {taken} of {runs}");
}
