//! Reports a hostile change cannot spoof: control characters (ESC sequences, BEL, CR, C1,
//! bidirectional controls) from a manifest's values, its raw text and its file name reach no
//! human format and no GitHub annotation as themselves; they are shown as `\u{..}`. JSON and
//! SARIF carry them by JSON's rules, so the values read back exactly.

mod common;
use common::*;
use std::path::Path;

const BAD: &str = "fixtures/role-forbidden-verb/bad-list-watch.yaml";
/// The characters the manifests carry.
const PLANTED: [char; 8] = [
    '\u{1b}', '\u{7}', '\r', '\u{9b}', '\u{202e}', '\u{2066}', '\u{85}', '\u{8}',
];

/// What must never reach a terminal or a log as itself (the project's own definition is not
/// used, so that a change to it is caught here).
fn acts(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{61c}')
}

/// Two files beside each other: `quoted.yaml`, whose Role grants a verb spelled with escapes
/// in a double-quoted scalar (a finding's message quotes it), and a file whose name holds an
/// ESC sequence and whose text holds raw controls in a comment (a YAML error: the source line
/// is shown).
fn tree(dir: &Path) {
    let text = std::fs::read_to_string(root().join(BAD)).unwrap();
    let line = "    verbs: [get, list, patch, watch]\n";
    assert!(text.contains(line));
    let quoted = text.replacen(
        line,
        "    verbs: [get, list, patch, watch, \"wa\\e[2K\\rtch\\u202e\\u2066\\N\\x9b\\a\\b\"]\n",
        1,
    );
    std::fs::write(dir.join("quoted.yaml"), quoted).unwrap();
    let raw = text.replacen(
        line,
        "    verbs: [get]  # \u{1b}]52;c;ZXZpbA==\u{7}\u{1b}[2K\r\u{202e}\u{2066}\u{85}\u{9b}1A\n",
        1,
    );
    std::fs::write(dir.join("raw\u{1b}[31m\u{202e}.yaml"), raw).unwrap();
}

/// `check . ARGS` in `dir`, without the cache.
fn check(dir: &Path, args: &[&str]) -> std::process::Output {
    let mut all = vec!["check", ".", "--no-cache"];
    all.extend(args);
    credlint_in(dir, &all)
}

/// Removes the colour sequences the report itself writes (`ESC [ digits ; ... m`).
fn without_colours(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("\u{1b}[") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let end = after
            .find(|c: char| !(c.is_ascii_digit() || c == ';'))
            .unwrap_or(after.len());
        if after[end..].starts_with('m') {
            rest = &after[end + 1..];
        } else {
            // Not a colour: kept, and caught below.
            out.push_str("\u{1b}[");
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[test]
fn human_formats_and_annotations_show_control_characters_escaped() {
    let dir = temp_dir("hostile-output-controls");
    tree(&dir);
    let json = check(&dir, &["--format", "json"]);
    assert_eq!(json.status.code(), Some(1), "{}", stderr(&json));
    for (name, args) in [
        ("text", &["--format", "text"][..]),
        (
            "text in colour",
            &["--format", "text", "--color", "always"][..],
        ),
        ("concise", &["--format", "concise"][..]),
        ("github", &["--format", "github"][..]),
    ] {
        let out = check(&dir, args);
        assert_eq!(out.status.code(), json.status.code(), "{name}");
        let text = without_colours(&stdout(&out));
        let found: Vec<char> = text.chars().filter(|&c| acts(c)).collect();
        assert!(found.is_empty(), "{name}: {found:?} in\n{text}");
        // Each planted character is there, escaped: in the message (the verb), and in the file
        // name (github and concise name it; text names it in the snippet's header).
        for c in PLANTED {
            let escaped = format!("\\u{{{:x}}}", u32::from(c));
            assert!(
                text.contains(&escaped),
                "{name}: {escaped} missing in\n{text}"
            );
        }
        assert!(
            text.contains("raw\\u{1b}[31m\\u{202e}.yaml"),
            "{name}: {text}"
        );
        // The error in the raw file is still reported at its place.
        assert!(text.contains("yaml-syntax"), "{name}");
    }
    // The source snippet of the text report shows the raw line escaped, the label under it.
    let text = stdout(&check(&dir, &["--format", "text"]));
    assert!(
        text.contains("# \\u{1b}]52;c;ZXZpbA==\\u{7}\\u{1b}[2K\\u{d}\\u{202e}"),
        "{text}"
    );
}

#[test]
fn json_and_sarif_keep_the_characters_as_json_escapes() {
    let dir = temp_dir("hostile-output-json");
    tree(&dir);
    let out = check(&dir, &["--format", "json"]);
    // No raw C0 control in the bytes: JSON escapes them.
    assert!(
        !out.stdout.iter().any(|&b| b < 0x20 && b != b'\n'),
        "{}",
        stdout(&out)
    );
    let report = json(&out);
    let messages: Vec<String> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["message"].as_str().unwrap().to_string())
        .collect();
    assert!(
        messages
            .iter()
            .any(|m| m.contains("wa\u{1b}[2K\rtch\u{202e}\u{2066}\u{85}\u{9b}\u{7}\u{8}")),
        "the value reads back exactly: {messages:?}"
    );
    let files: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["file"].as_str().unwrap())
        .collect();
    assert!(files.contains(&"raw\u{1b}[31m\u{202e}.yaml"), "{files:?}");
    let sarif = check(&dir, &["--format", "sarif"]);
    assert!(!sarif.stdout.iter().any(|&b| b < 0x20 && b != b'\n'));
    let value: serde_json::Value = serde_json::from_slice(&sarif.stdout).unwrap();
    let texts = value.to_string();
    assert!(texts.contains("\\u001b[2K\\rtch"), "{texts}");
}
