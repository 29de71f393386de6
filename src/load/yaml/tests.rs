use super::*;

fn docs(text: &str) -> Vec<Parsed<'_>> {
    parse(text)
}

fn only_doc(text: &str) -> Document<'_> {
    let mut parsed = docs(text);
    assert_eq!(parsed.len(), 1, "{parsed:?}");
    match parsed.remove(0) {
        Parsed::Document(d) => d,
        Parsed::Error(e) | Parsed::Unread(e) => panic!("unexpected error {e:?}"),
    }
}

fn json(node: &Node) -> String {
    match &node.value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => format!("{f:?}"),
        Value::Str(s) => format!("{s:?}"),
        Value::Seq(items) => format!("[{}]", items.iter().map(json).collect::<Vec<_>>().join(",")),
        Value::Map(entries) => format!(
            "{{{}}}",
            entries
                .iter()
                .map(|e| format!("{:?}:{}", e.key, json(&e.value)))
                .collect::<Vec<_>>()
                .join(",")
        ),
    }
}

#[test]
fn decodes_scalars_as_go_yaml_v2() {
    let d = only_doc("a: yes\nb: '0777'\nc: 0777\nd: on\ne: 1_000\nf: ~\ng: \"1\"\nh: 1.5\n");
    assert_eq!(
        json(&d.root),
        r#"{"a":true,"b":"0777","c":511,"d":true,"e":1000,"f":null,"g":"1","h":1.5}"#
    );
}

#[test]
fn keys_are_strings_as_in_json() {
    let d = only_doc("1: a\nyes: b\n~x: c\n");
    assert_eq!(json(&d.root), r#"{"1":"a","true":"b","~x":"c"}"#);
}

#[test]
fn spans_point_at_keys_and_values() {
    let text = "metadata:\n  name: shop\n";
    let d = only_doc(text);
    let name = d.root.at(&["metadata", "name"]).unwrap();
    assert_eq!(&text[name.span.range()], "shop");
    let entry = d.root.get("metadata").unwrap().entry("name").unwrap();
    assert_eq!(&text[entry.key_span.range()], "name");
}

#[test]
fn aliases_expand_and_merge_keys_merge() {
    let d = only_doc(
        "base: &b {p: 1, q: 2}\ncopy: *b\nm:\n  <<: *b\n  q: 3\nk:\n  q: 4\n  <<: *b\nl:\n  <<: [{p: 5}, {p: 6, r: 7}]\n",
    );
    assert_eq!(json(d.root.get("copy").unwrap()), r#"{"p":1,"q":2}"#);
    assert_eq!(json(d.root.get("m").unwrap()), r#"{"p":1,"q":3}"#);
    // go-yaml v2 applies a merge where it stands: it overrides keys written before it.
    assert_eq!(json(d.root.get("k").unwrap()), r#"{"q":2,"p":1}"#);
    // In a list of merged mappings the earlier one wins.
    assert_eq!(json(d.root.get("l").unwrap()), r#"{"p":5,"r":7}"#);
    assert!(d.duplicate_keys.is_empty());
}

#[test]
fn the_key_y_is_true_in_yaml_1_1() {
    let d = only_doc("x: 1\ny: 2\n");
    assert_eq!(json(&d.root), r#"{"x":1,"true":2}"#);
}

#[test]
fn duplicate_keys_are_reported_with_both_places() {
    let text = "a: 1\nb: 2\na: 3\n";
    let d = only_doc(text);
    assert_eq!(d.duplicate_keys.len(), 1);
    let dup = &d.duplicate_keys[0];
    assert_eq!(dup.key, "a");
    assert_eq!(dup.first.start(), 0);
    assert_eq!(dup.second.start(), 10);
    // Keys that collide only once turned into JSON collide in the cluster too.
    let d = only_doc("1: a\n\"1\": b\n");
    assert_eq!(d.duplicate_keys.len(), 1);
}

#[test]
fn a_large_mapping_still_finds_duplicates() {
    let mut text: String = (0..100).map(|i| format!("k{i}: {i}\n")).collect();
    text.push_str("k42: again\n");
    let d = only_doc(&text);
    assert_eq!(d.duplicate_keys.len(), 1);
    assert_eq!(d.duplicate_keys[0].key, "k42");
    assert_eq!(json(d.root.get("k42").unwrap()), "\"again\"");
}

#[test]
fn a_broken_document_does_not_hide_the_others() {
    let parsed = docs("a: 1\n---\nb: [1, 2\n---\nc: 3\n");
    assert_eq!(parsed.len(), 3);
    assert!(matches!(parsed[0], Parsed::Document(_)));
    let Parsed::Error(e) = &parsed[1] else {
        panic!("{parsed:?}")
    };
    assert!(e.span.start() >= 9, "{e:?}");
    assert!(matches!(parsed[2], Parsed::Document(_)));
}

#[test]
fn a_forbidden_tab_is_shown_at_the_tab() {
    for text in [
        "a:\n\tb: 1\n",
        "a:\n  b: 1\n  \tc: 2\n",
        "a:\n  b: 1\n\t\tc: 2\n",
    ] {
        let parsed = docs(text);
        let Parsed::Error(e) = &parsed[0] else {
            panic!("{text:?} parsed: {parsed:?}")
        };
        assert_eq!(&text[e.span.range()], "\t", "{text:?}: {e:?}");
    }
    // Tabs are fine in flow collections and quoted scalars.
    assert!(matches!(
        docs("a: [1,\n\t2]\nb: 'x\ty'\n")[0],
        Parsed::Document(_)
    ));
}

#[test]
fn alias_bombs_are_stopped() {
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..10 {
        let refs = vec![format!("*a{}", i - 1); 10].join(", ");
        text.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
    }
    let parsed = docs(&text);
    let Parsed::Error(e) = &parsed[0] else {
        panic!("bomb was expanded")
    };
    assert!(e.message.contains("aliases expand"), "{e:?}");
}

#[test]
fn a_long_string_aliased_many_times_is_a_bomb_too() {
    // 100 KiB of text, aliased 1,000 times: 100 MiB from a 103 KiB file.
    let text = format!(
        "a: &s \"{}\\n\"\nb: [{}]\n",
        "y".repeat(100 << 10),
        vec!["*s"; 1000].join(", ")
    );
    let Parsed::Error(e) = &docs(&text)[0] else {
        panic!("the string was copied 1,000 times")
    };
    assert!(e.message.contains("MiB of text"), "{e:?}");
    // A few copies are fine.
    let text = format!("a: &s {}\nb: [*s, *s]\n", "y".repeat(100 << 10));
    let d = only_doc(&text);
    assert_eq!(d.root.get("b").unwrap().as_seq().unwrap().len(), 2);
}

#[test]
fn anchors_that_no_alias_names_are_not_copied_however_deep() {
    // 150 nested anchors around 200,000 items: copying each would be 30 million nodes.
    let depth = 150;
    let mut text = String::from("big: ");
    for i in 0..depth {
        text.push_str(&format!("&n{i} ["));
    }
    text.push_str(&vec!["1"; 200_000].join(","));
    text.push_str(&"]".repeat(depth));
    text.push_str("\nmeta: &m {name: x}\ncopy: *m\n");
    let started = std::time::Instant::now();
    let d = only_doc(&text);
    assert_eq!(json(d.root.get("copy").unwrap()), r#"{"name":"x"}"#);
    // A hang guard, not a benchmark: copying every level takes tens of seconds.
    assert!(started.elapsed().as_secs() < 20, "{:?}", started.elapsed());
    // Aliasing the big one is refused: it is larger than aliases may add.
    let aliased = format!("{text}again: *n3\n");
    let Parsed::Error(e) = &docs(&aliased)[0] else {
        panic!("200,000 nodes were aliased")
    };
    assert!(e.message.contains("aliases expand"), "{e:?}");
}

#[test]
fn alias_names_are_found_wherever_the_alias_stands() {
    let d = only_doc(
        "k: &k key\nv: &v {a: 1}\ns: &s [1]\nm: {*k : 1, x: *v}\nl: [*s,*v]\nb:\n  - *s\n",
    );
    assert_eq!(
        json(&d.root),
        r#"{"k":"key","v":{"a":1},"s":[1],"m":{"key":1,"x":{"a":1}},"l":[[1],{"a":1}],"b":[[1]]}"#
    );
    // An alias of a node that is not complete yet is still an error, with its own message.
    let Parsed::Error(e) = &docs("a: &a [1, *a]\n")[0] else {
        panic!("a recursive alias was accepted")
    };
    assert!(e.message.contains("contains it"), "{e:?}");
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let text = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(matches!(docs(&text)[0], Parsed::Error(_)));
    let mut block = String::new();
    for depth in 0..5_000 {
        block.push_str(&" ".repeat(depth));
        block.push_str("-\n");
    }
    assert!(matches!(docs(&block)[0], Parsed::Error(_)));
}

#[test]
fn bom_crlf_and_comments() {
    let text = "\u{feff}a: |\r\n  x\r\n  y\r\nb: 2 # note\r\n";
    let d = only_doc(text);
    assert_eq!(json(&d.root), r#"{"a":"x\ny\n","b":2}"#);
    assert_eq!(d.comments.len(), 1);
    assert_eq!(&text[d.comments[0].range()], "# note");
}

#[test]
fn tags_decide_types() {
    let d = only_doc("a: !!str 1\nb: !!int \"2\"\nc: !custom 3\n");
    assert_eq!(json(&d.root), r#"{"a":"1","b":2,"c":"3"}"#);
    assert!(matches!(docs("a: !!int abc\n")[0], Parsed::Error(_)));
}

#[test]
fn null_and_collection_keys_are_errors() {
    assert!(matches!(docs("~: a\n")[0], Parsed::Error(_)));
    assert!(matches!(docs("? [a]\n: b\n")[0], Parsed::Error(_)));
    assert!(matches!(docs("a:\n  <<: 1\n")[0], Parsed::Error(_)));
}

#[test]
fn empty_documents_are_null() {
    let parsed = docs("---\n---\na: 1\n");
    let nonnull = parsed
        .iter()
        .filter(|p| matches!(p, Parsed::Document(d) if !d.root.is_null()))
        .count();
    assert_eq!(nonnull, 1);
}

#[test]
fn json_is_read_too() {
    let d =
        only_doc("{\"kind\": \"List\", \"items\": [{\"a\": 1.0, \"b\": null, \"c\": \"yes\"}]}");
    assert_eq!(
        json(&d.root),
        r#"{"kind":"List","items":[{"a":1.0,"b":null,"c":"yes"}]}"#
    );
}

#[test]
fn tabs_go_yaml_refuses_are_errors_where_they_stand() {
    // go-yaml v2 (kubectl, Helm, Argo CD) skips a tab only in a flow collection or where no
    // key may start; the YAML 1.2 parser accepted these, so a file kubectl refuses passed.
    for text in [
        "\tkey: 1\n",
        "a: 1\n\tb: 2\n",
        "? a\n:\tb\n",
        "- \tx\n",
        "a:\n  -\tx\n",
        "a: 1\n\t# note\n",
        "a:\n  b: 1\n\t\n  c: 2\n",
    ] {
        let parsed = docs(text);
        let Some(Parsed::Error(e)) = parsed.first() else {
            panic!("{text:?} parsed: {parsed:?}")
        };
        assert_eq!(&text[e.span.range()], "\t", "{text:?}: {e:?}");
    }
    // Where go-yaml skips or keeps them: after the `:` of a simple key no key may start.
    for text in [
        "key:\tvalue\n",
        "\"a\":\tb\n",
        "a:\n  b:\t{c: 1}\n",
        "a: [1,\n\t2]\n",
        "a: {b: 1,\tc: 2}\n",
        "a: 'x\ty'\n",
        "a: x\ty\n",
        "a: |\n  x\ty\n",
        "a: 1\t# note\n",
        "a: 1\t\n",
        "---\t\na: 1\n",
        "a: &x\tv\nb: *x\t\n",
        "a: !!str\tv\n",
        "a: |\t# header\n  x\n",
        "# a\tcomment\na: 1\n",
    ] {
        let parsed = docs(text);
        assert!(
            matches!(parsed.first(), Some(Parsed::Document(_))),
            "{text:?}: {parsed:?}"
        );
    }
}

fn value_of<'t>(d: &'t Document, key: &str) -> &'t str {
    d.root.get(key).and_then(Node::as_str).unwrap_or("<none>")
}

#[test]
fn u2028_u2029_and_u0085_break_lines_as_in_yaml_1_1() {
    // What go-yaml v2 reads, value by value.
    let d = only_doc("a:\n  x\u{2028}  y\nb: 'x \u{2028}  y'\nc: \"x\u{85}y\"\n");
    assert_eq!(value_of(&d, "a"), "x\u{2028}y");
    assert_eq!(value_of(&d, "b"), "x\u{2028}y");
    assert_eq!(value_of(&d, "c"), "x y");
    let d = only_doc("a: |\n  x\u{2028}  y\n  z\nb: >\n  x\u{2028}  y\n  z\nc: |\n  x\u{85}  y\n");
    assert_eq!(value_of(&d, "a"), "x\u{2028}y\nz\n");
    assert_eq!(value_of(&d, "b"), "x\u{2028}y z\n");
    assert_eq!(value_of(&d, "c"), "x\ny\n");
    // A comment ends at them, and what follows is read.
    let d = only_doc("a: 1 # c\u{2028}b: 2\u{85}c: 3\n");
    assert_eq!(json(&d.root), r#"{"a":1,"b":2,"c":3}"#);
    // A line of its own at column 0 that a mapping cannot take: refused, as go-yaml does.
    assert!(matches!(docs("a: x\u{2028}y\n")[0], Parsed::Error(_)));
    assert!(matches!(
        docs("a: |\n  x\u{2028}y\n  z\n")[0],
        Parsed::Error(_)
    ));
}

#[test]
fn spans_stay_on_the_file_s_characters_across_rewritten_breaks() {
    let text = "a: 1 # c\u{2028}b: |\n  x\u{2028}  y\nc: z\n";
    let d = only_doc(text);
    assert_eq!(&text[d.comments[0].range()], "# c");
    let b = d.root.get("b").unwrap();
    assert!(text[b.span.range()].starts_with("x\u{2028}  y"));
    let c = d.root.get("c").unwrap();
    assert_eq!(&text[c.span.range()], "z");
    // An error inside a rewritten character is shown on the whole character.
    let text = "a: x\u{2028}y\n";
    let Parsed::Error(e) = &docs(text)[0] else {
        panic!()
    };
    assert!(text.is_char_boundary(e.span.start()) && text.is_char_boundary(e.span.end()));
}

#[test]
fn a_document_after_a_marker_on_a_u2028_line_is_unread() {
    let parsed = docs("a: 1\u{2028}---\u{2028}b: 2\n");
    assert!(matches!(&parsed[0], Parsed::Document(d) if json(&d.root) == r#"{"a":1}"#));
    let Parsed::Unread(e) = &parsed[1] else {
        panic!("{parsed:?}")
    };
    assert!(e.message.contains("U+2028"), "{}", e.message);
}

#[test]
fn a_bom_past_the_start_of_a_part_is_a_character() {
    let d = only_doc("a: x\u{feff}y\n\u{feff}b: 2\n");
    assert_eq!(value_of(&d, "a"), "x\u{feff}y");
    assert_eq!(json(d.root.get("\u{feff}b").unwrap()), "2");
    let d = only_doc("---\n\u{feff}a: |\n  \u{feff}x\n");
    assert_eq!(value_of(&d, "\u{feff}a"), "\u{feff}x\n");
    // After a comment it is no longer the mark, so the line is a key without a value.
    assert!(matches!(
        docs("# c\n\u{feff}---\na: 1\n")[0],
        Parsed::Error(_)
    ));
    // At the start of the part it is dropped.
    assert_eq!(json(&only_doc("\u{feff}a: 1\n").root), r#"{"a":1}"#);
}

#[test]
fn an_escaped_single_quote_is_a_quote() {
    let d = only_doc("a: \"it\\'s\"\n\"k\\'\": [\"\\'\", 'x\\', \"y\"]\nb: \"\\'\\n\"\n");
    assert_eq!(value_of(&d, "a"), "it's");
    assert_eq!(json(d.root.get("k'").unwrap()), r#"["'","x\\","y"]"#);
    assert_eq!(value_of(&d, "b"), "'\n");
    // Another unknown escape beside it is still refused.
    let parsed = docs("a: \"\\'\\q\"\n");
    assert!(matches!(&parsed[0], Parsed::Error(e) if e.message.contains("escape")));
    // More strings than the rewriting takes: a refusal that says why.
    let many: String = (0..70).map(|i| format!("k{i}: \"\\'\"\n")).collect();
    let parsed = docs(&many);
    assert!(matches!(&parsed[0], Parsed::Error(e) if e.message.contains("no more than")));
}
