//! credlint's YAML loader against go-yaml v2 itself. `tests/oracle/goyaml/main.go` reads a file
//! as kubectl, Helm and Argo CD do (cut at `---` lines as apimachinery's YAML reader cuts it,
//! each part converted with sigs.k8s.io/yaml's YAMLToJSON); this test builds it, runs it on
//! every fixture and on a generated set of YAML traps, and requires credlint's loader to read
//! the same JSON value for every document and to refuse exactly the files kubectl refuses (at
//! the same document).
//!
//! The program is built with Debian's `golang-go`, `golang-gopkg-yaml.v2-dev` and
//! `golang-k8s-sigs-yaml-dev` (`GOPATH=/usr/share/gocode GO111MODULE=off`: nothing is
//! downloaded). Where they are missing the test says so on the terminal and passes; with
//! `CREDLINT_REQUIRE_GO_YAML=1` (set by `.ci/run`) it fails instead.

mod common;
use common::*;
use credlint::load::stream;
use credlint::load::yaml::{self, Node, Parsed, Value};
use serde_json::Value as Json;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

const PROGRAM: &str = "tests/oracle/goyaml/main.go";
const GOPATH: &str = "/usr/share/gocode";

fn skip(reason: &str) {
    skip_unless_required("CREDLINT_REQUIRE_GO_YAML", reason);
}

/// Builds the oracle into a temporary folder; `Err` says why it cannot be.
fn build(dir: &Path) -> Result<PathBuf, String> {
    for package in ["gopkg.in/yaml.v2", "sigs.k8s.io/yaml"] {
        if !Path::new(GOPATH).join("src").join(package).is_dir() {
            return Err(format!(
                "{package} is not in {GOPATH} (apt-get install golang-gopkg-yaml.v2-dev \
                 golang-k8s-sigs-yaml-dev)"
            ));
        }
    }
    let binary = dir.join("goyaml");
    let out = Command::new("go")
        .arg("build")
        .arg("-o")
        .arg(&binary)
        .arg(root().join(PROGRAM))
        .env("GOPATH", GOPATH)
        .env("GO111MODULE", "off")
        .env("GOFLAGS", "")
        .env("GOPROXY", "off")
        .env("GOTOOLCHAIN", "local")
        // A cache of its own, kept between runs (the build takes seconds with it), inside
        // target/ (which `cargo clean` removes), not left in the system's temp folder.
        .env(
            "GOCACHE",
            std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("credlint-go-build-cache"),
        )
        .current_dir(dir)
        .output()
        .map_err(|e| format!("go cannot be run ({e}; apt-get install golang-go)"))?;
    if !out.status.success() {
        return Err(format!("go build {PROGRAM} fails: {}", stderr(&out)));
    }
    Ok(binary)
}

/// One document as a reader sees it: its JSON value, or a refusal of the file there.
#[derive(Clone, Debug, PartialEq)]
enum Read {
    Json(Json),
    Refused(String),
    /// A document whose value go-yaml leaves to Go's random map order (two keys of a mapping,
    /// such as `1` and `"1"`, that become one JSON key): any reading of it agrees.
    Ambiguous,
}

impl Read {
    fn same_as(&self, other: &Read) -> bool {
        match (self, other) {
            (Read::Json(a), Read::Json(b)) => a == b,
            (Read::Refused(_), Read::Refused(_)) => true,
            (Read::Ambiguous, Read::Json(_)) | (Read::Json(_), Read::Ambiguous) => true,
            _ => false,
        }
    }
}

/// Numbers as the API server reads them from the JSON text: Go writes a float with no
/// fraction as an integer (`1.0` becomes `1`), and an integer beyond int64 reads as a float.
fn number(n: &serde_json::Number) -> Json {
    if let Some(i) = n.as_i64() {
        return i.into();
    }
    let f = n.as_f64().unwrap_or(f64::NAN);
    if f.fract() == 0.0 && f.abs() < 9.2e18 {
        return (f as i64).into();
    }
    serde_json::Number::from_f64(f).map_or(Json::Null, Json::Number)
}

fn normalized(value: Json) -> Json {
    match value {
        Json::Number(n) => number(&n),
        Json::Array(items) => items.into_iter().map(normalized).collect(),
        Json::Object(map) => map.into_iter().map(|(k, v)| (k, normalized(v))).collect(),
        other => other,
    }
}

fn node_json(node: &Node) -> Json {
    match &node.value {
        Value::Null => Json::Null,
        Value::Bool(b) => (*b).into(),
        Value::Int(i) => (*i).into(),
        // JSON has no such number: it cannot match what the oracle reads.
        Value::Float(f) => serde_json::Number::from_f64(*f)
            .map_or_else(|| format!("<not JSON: {f}>").into(), |n| number(&n)),
        Value::Str(s) => s.as_ref().into(),
        Value::Seq(items) => items.iter().map(node_json).collect(),
        Value::Map(entries) => entries
            .iter()
            .map(|e| (e.key.to_string(), node_json(&e.value)))
            .collect::<serde_json::Map<_, _>>()
            .into(),
    }
}

/// What credlint's loader reads of a file, in the engine's steps: decoding, the cut into
/// parts, parsing each. Documents that are null are left out and the list ends at the first
/// refusal, as for the oracle. Documents kubectl never reads (`Parsed::Unread`) are not in it.
///
/// Where apimachinery refuses a `---` line, the part it was reading is lost with the file;
/// credlint still reads that part (its objects are linted), so it is left out here.
fn credlint_reads(bytes: &[u8]) -> Vec<Read> {
    let decoded = stream::decode(bytes);
    let text = &decoded.text;
    let mut reads = Vec::new();
    let mut previous_part = 0;
    // Cut where the engine cuts: at the `---` lines the line index finds.
    let lines = credlint::load::source::LineIndex::new(text);
    for range in decoded.ranges(&lines) {
        let this_part = reads.len();
        if let Some((_, byte)) = decoded.invalid_in(&range) {
            reads.push(Read::Refused(format!("not UTF-8 (0x{byte:02X})")));
            return reads;
        }
        let first_line = text[range.clone()]
            .find('\n')
            .map_or(range.end, |i| range.start + i);
        for parsed in yaml::parse_range(text, range.clone()) {
            match parsed {
                Parsed::Document(d) if d.root.is_null() => {}
                Parsed::Document(d) => reads.push(Read::Json(node_json(&d.root))),
                Parsed::Error(e) => {
                    let at_marker = range.start > 0
                        && text[range.clone()].starts_with("---")
                        && e.span.start() <= first_line;
                    if at_marker {
                        reads.truncate(previous_part);
                    }
                    reads.push(Read::Refused(e.message));
                    return reads;
                }
                Parsed::Unread(_) => {}
            }
        }
        previous_part = this_part;
    }
    reads
}

fn oracle_reads(line: &Json) -> Vec<Read> {
    line["docs"]
        .as_array()
        .expect("the oracle lists documents")
        .iter()
        .map(|d| match d.get("json") {
            Some(_) if d.get("ambiguous").is_some_and(|a| a == true) => Read::Ambiguous,
            Some(v) => Read::Json(normalized(v.clone())),
            None => Read::Refused(d["error"].as_str().unwrap_or_default().to_string()),
        })
        .collect()
}

/// Every fixture the linter is tested on that is a manifest.
fn fixture_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![root().join("fixtures")];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path
                .extension()
                .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
            {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Small texts where YAML readers part ways: each class the loader once read otherwise than
/// go-yaml v2, and neighbours of them.
fn snippets() -> Vec<(&'static str, String)> {
    let mut s: Vec<(&'static str, String)> = vec![
        // Tags go-yaml resolves.
        ("binary", "a: !!binary aGVsbG8=\n".into()),
        ("binary-lines", "a: !!binary |\n  aGVs\n  bG8=\n".into()),
        ("binary-spaces", "a: !!binary 'aGVs bG8='\n".into()),
        ("binary-no-padding", "a: !!binary aGVsbG8\n".into()),
        ("binary-bad", "a: !!binary 'not base64!'\n".into()),
        ("binary-not-utf8", "a: !!binary /w==\n".into()),
        ("binary-cut-sequence", "a: !!binary 4oI=\n".into()),
        ("binary-key", "!!binary aGk=: 1\n".into()),
        ("timestamp-date", "a: !!timestamp 2001-12-14\n".into()),
        ("timestamp-short", "a: !!timestamp 2001-1-2\n".into()),
        (
            "timestamp-full",
            "a: !!timestamp 2001-12-14t21:59:43.10-05:00\n".into(),
        ),
        (
            "timestamp-utc",
            "a: !!timestamp 2001-12-14T21:59:43Z\n".into(),
        ),
        (
            "timestamp-space",
            "a: !!timestamp 2001-12-14 21:59:43.10\n".into(),
        ),
        (
            "timestamp-spaced-zone",
            "a: !!timestamp 2001-12-14 21:59:43.10 -5\n".into(),
        ),
        ("timestamp-bad-day", "a: !!timestamp 2001-02-30\n".into()),
        ("timestamp-bad-month", "a: !!timestamp 2001-13-01\n".into()),
        ("timestamp-word", "a: !!timestamp hello\n".into()),
        ("timestamp-number", "a: !!timestamp 12\n".into()),
        ("timestamp-quoted", "a: !!timestamp '2001-12-14'\n".into()),
        ("timestamp-plain", "a: 2001-12-14\n".into()),
        (
            "merge-tag",
            "b: &b {x: 1}\nc:\n  !!merge <<: *b\n  z: 2\n".into(),
        ),
        ("merge-tag-other-key", "c:\n  !!merge x: 1\n".into()),
        ("merge-tag-value", "c: !!merge x\n".into()),
        ("merge-quoted", "b: &b {x: 1}\nc:\n  '<<': *b\n".into()),
        (
            "merge-tag-quoted",
            "b: &b {x: 1}\nc:\n  !!merge '<<': *b\n".into(),
        ),
        (
            "merge-list",
            "a: &a {x: 1}\nb: &b {x: 2, y: 3}\nc:\n  <<: [*a, *b]\n".into(),
        ),
        ("merge-scalar", "c:\n  <<: 1\n".into()),
        ("str-tag", "a: !!str 1\nb: !!int '2'\nc: !!float 3\n".into()),
        ("custom-tag", "a: !custom x\nb: !!set {x: 1}\n".into()),
        // Values JSON cannot hold.
        ("inf", "a: .inf\n".into()),
        ("inf-signed", "a: [+.Inf, -.INF]\n".into()),
        ("nan", "a: .NaN\n".into()),
        ("inf-key", ".inf: 1\n".into()),
        ("inf-str", "a: !!str .inf\nb: '.nan'\n".into()),
        ("inf-float-tag", "a: !!float .inf\n".into()),
        ("inf-alias", "x: &x .inf\n".into()),
        ("inf-deep", "a:\n  b:\n  - c: -.inf\n".into()),
        ("null-key", "~: 1\n".into()),
        // Markers, directives and the cut into documents.
        ("after-end", "a: 1\n...\nb: 2\n".into()),
        ("after-end-marker", "a: 1\n...\n---\nb: 2\n".into()),
        ("end-only", "...\nb: 2\n".into()),
        ("comment-then-end", "# c\n...\nb: 2\n".into()),
        ("end-then-error", "a: 1\n...\n[b\n".into()),
        ("directive", "%YAML 1.1\n---\na: 1\n".into()),
        (
            "directive-later",
            "a: 0\n---\n%YAML 1.1\n---\na: 1\n".into(),
        ),
        (
            "tag-directive",
            "%TAG !e! tag:example.com,2000:\n---\na: !e!x 1\n".into(),
        ),
        (
            "directive-after-end",
            "a: 1\n...\n%YAML 1.1\n---\nb: 2\n".into(),
        ),
        ("marker-tag", "--- !!map\na: 1\n".into()),
        ("marker-flow", "--- {a: 1}\n".into()),
        ("marker-flow-later", "a: 0\n--- {a: 1}\n".into()),
        ("marker-scalar", "--- text\n".into()),
        (
            "marker-comment",
            "--- # first\na: 1\n---   # second\nb: 2\n".into(),
        ),
        ("marker-tab", "---\t\na: 1\n".into()),
        ("four-dashes", "a: 0\n----\nb: 1\n".into()),
        ("dashes-word", "a: 0\n---x\nb: 1\n".into()),
        ("marker-indented", "a: |\n  x\n ---\nb: 1\n".into()),
        ("marker-in-block", "a: |\n  ---\n  x\n".into()),
        ("markers-empty", "---\n---\na: 1\n---\n".into()),
        ("comments-only", "# a\n---\n# b\n".into()),
        ("null-documents", "---\n~\n---\nnull\n---\na: 1\n".into()),
        ("scalar-document", "---\nhello\n---\n- 1\n".into()),
        ("bom", "\u{feff}a: 1\n".into()),
        ("bom-marker", "\u{feff}---\na: 1\n".into()),
        // Line ends.
        ("cr-only", "a: 1\r---\rb: 2\r".into()),
        ("cr-only-one", "a: 1\rb: 2\r".into()),
        ("cr-only-marker-first", "---\ra: 1\r".into()),
        ("crlf", "a: 1\r\n---\r\nb: |\r\n  x\r\n  y\r\n".into()),
        ("cr-in-line", "a: x\ry\n".into()),
        // Tabs.
        ("tab-after-colon", "a:\t1\nb:\t\tx\n".into()),
        ("tab-after-colon-flow", "a:\t{b: 1}\n".into()),
        ("tab-after-colon-nested", "a:\n  b:\tc\n".into()),
        ("tab-after-dash", "-\t1\n".into()),
        ("tab-after-question", "?\ta\n: 1\n".into()),
        ("tab-after-complex-colon", "? a\n:\t1\n".into()),
        ("tab-indent", "a:\n\tb: 1\n".into()),
        ("tab-before-comment", "a: 1\t# c\n".into()),
        ("tab-in-flow", "a: [1,\t2]\n".into()),
        ("tab-in-value", "a: x\ty\n".into()),
        ("tab-after-anchor", "a: &x\t1\nb: *x\n".into()),
        // Anchor and alias names.
        ("anchor-colon", "a: &a:b 1\nb: *a:b\n".into()),
        ("anchor-dot", "a: &a.b 1\nb: *a.b\n".into()),
        ("anchor-slash", "a: &a/b 1\nb: *a/b\n".into()),
        ("anchor-unicode", "a: &\u{e9} 1\nb: *\u{e9}\n".into()),
        ("anchor-dash-underscore", "a: &a-b_c 1\nb: *a-b_c\n".into()),
        ("anchor-in-flow", "a: [&x 1, *x]\n".into()),
        ("anchor-bracket", "a: [&x]y 1]\n".into()),
        ("alias-prefix", "a: &a 1\nb: *a.b\n".into()),
        ("alias-comma", "a: &a 1\nb: [*a, 2]\n".into()),
        // Escapes.
        ("escape-quote", "a: \"it\\'s\"\n".into()),
        ("escape-slash", "a: \"a\\/b\"\n".into()),
        ("escape-backslash-slash", "a: \"a\\\\/b\"\n".into()),
        (
            "escape-common",
            "a: \"\\t\\n\\r\\\\\\\"\\0\\a\\b\\v\\f\\e\"\n".into(),
        ),
        ("escape-unicode", "a: \"\\x41\\u00e9\\U0001F600\"\n".into()),
        ("escape-yaml", "a: \"\\N\\_\\L\\P\\ \"\n".into()),
        ("escape-surrogate", "a: \"\\ud800\"\n".into()),
        ("escape-single-quoted", "a: 'it''s \\/ \\''\n".into()),
        ("escape-plain", "a: it\\'s \\/ x\n".into()),
        // YAML 1.1 line breaks.
        ("ls-plain", "a: x\u{2028}y\n".into()),
        ("ls-literal", "a: |\n  x\u{2028}y\n  z\n".into()),
        ("ls-literal-indented", "a: |\n  x\u{2028}  y\n  z\n".into()),
        ("nel-literal", "a: |\n  x\u{85}y\n  z\n".into()),
        ("nel-literal-indented", "a: |\n  x\u{85}  y\n".into()),
        ("ps-literal", "a: |\n  x\u{2029}y\n".into()),
        ("ls-double", "a: \"x\u{2028}y\"\n".into()),
        ("nel-double", "a: \"x\u{85}y\"\n".into()),
        ("ls-single", "a: 'x\u{2028}y'\n".into()),
        ("ls-comment", "a: 1 # c\u{2028}b: 2\n".into()),
        ("nel-comment", "a: 1 # c\u{85}b: 2\n".into()),
        ("ls-escaped", "a: \"x\\Ly\"\n".into()),
        ("ls-plain-continued", "a: x\u{2028} y\n".into()),
        ("ls-plain-indented", "a:\n  x\u{2028}  y\n".into()),
        ("ls-plain-twice", "a:\n  x\u{2028}\u{2028}  y\n".into()),
        ("ls-plain-then-lf", "a:\n  x\u{2028}\n  y\n".into()),
        ("ls-plain-after-lf", "a:\n  x\n\u{2028}  y\n".into()),
        ("ps-plain-after-lf", "a: x\n  y\u{2029}  z\n".into()),
        ("nel-plain", "a: x\u{85}y\n".into()),
        ("nel-plain-indented", "a:\n  x\u{85}  y\n".into()),
        ("ls-key", "a\u{2028}b: 1\n".into()),
        ("ls-before-colon", "a\u{2028}: 1\n".into()),
        ("ls-between-keys", "a: 1\u{2028}b: 2\n".into()),
        ("nel-between-keys", "a: 1\u{85}b: 2\n".into()),
        ("ls-block-indent", "a:\u{2028}  b: 2\n".into()),
        ("nel-block-indent", "a:\u{85}  b: 2\n".into()),
        ("ls-seq", "- a\u{2028}- b\n".into()),
        ("nel-seq", "- a\u{85}- b\n".into()),
        ("ls-flow", "a: [x,\u{2028} y]\n".into()),
        ("ls-marker", "a: 1\u{2028}---\u{2028}b: 2\n".into()),
        ("nel-marker", "a: 1\u{85}---\u{85}b: 2\n".into()),
        ("ls-double-folded", "a: \"x \u{2028}  y\"\n".into()),
        ("ls-double-escaped-break", "a: \"x\\\u{2028}  y\"\n".into()),
        ("ls-double-key", "\"a\u{2028}b\": 1\n".into()),
        ("ls-single-folded", "a: 'x \u{2028}  y'\n".into()),
        ("ls-single-then-lf", "a: 'x\u{2028}\n  y'\n".into()),
        ("nel-single", "a: 'x\u{85}  y'\n".into()),
        ("ls-literal-header", "a: |\u{2028}  x\n".into()),
        ("ls-literal-leading", "a: |\n\u{2028}  x\n".into()),
        (
            "ls-literal-keep",
            "a: |+\n  x\u{2028}\u{2028}\nb: 1\n".into(),
        ),
        ("ls-literal-strip", "a: |-\n  x\u{2028}\n".into()),
        ("ls-literal-explicit", "a: |2\n    x\u{2028}  y\n".into()),
        ("ls-literal-empty-keep", "a: |+\n\u{2028}\nb: 1\n".into()),
        ("ls-literal-seq", "- |\n  x\u{2028}  y\n- z\n".into()),
        ("ls-folded", "a: >\n  x\u{2028}  y\n  z\n".into()),
        ("ls-folded-after", "a: >\n  x\n  y\u{2028}  z\n".into()),
        (
            "ls-folded-more-indented",
            "a: >\n  x\u{2028}    y\n  z\n".into(),
        ),
        ("nel-folded", "a: >\n  x\u{85}  y\n  z\n".into()),
        (
            "nel-literal-program",
            "a: |\n  # c\u{85}  import os\n".into(),
        ),
        ("nel-literal-crlf", "a: |\r\n  x\u{85}  y\r\n".into()),
        ("ps-comment", "a: 1 # c\u{2029}b: 2\n".into()),
        ("ls-comment-line", "# c\u{2028}a: 1\n".into()),
        ("ls-header-comment", "a: | # c\u{2028}  x\n".into()),
        ("ls-alias", "a: &x 1\u{2028}b: *x\n".into()),
        // Byte-order marks past the start of a part.
        ("bom-mid-line", "a: x\u{feff}y\n".into()),
        ("bom-value", "a: \u{feff}x\n".into()),
        ("bom-next-key", "a: 1\n\u{feff}b: 2\n".into()),
        ("bom-indented-key", "a:\n  \u{feff}b: 1\n".into()),
        ("bom-after-marker", "---\n\u{feff}a: 1\n".into()),
        ("bom-after-comment", "# c\n\u{feff}b: 2\n".into()),
        ("bom-after-blank", "\n\u{feff}b: 2\n".into()),
        ("bom-dashes", "# c\n\u{feff}---\na: 1\n".into()),
        ("bom-seq", "- 1\n\u{feff}- 2\n".into()),
        ("bom-alone", "- \u{feff}\n".into()),
        ("bom-before-comment", "a: 1\n\u{feff}# c\n".into()),
        ("bom-comment", "a: 1 # \u{feff}\n".into()),
        ("bom-double", "a: \"x\u{feff}y\"\n".into()),
        ("bom-single", "a: '\u{feff}'\n".into()),
        ("bom-flow", "a: [\u{feff}x]\n".into()),
        ("bom-literal", "a: |\n  x\n  \u{feff}y\n".into()),
        ("bom-literal-column-0", "a: |\n  x\n\u{feff}  y\n".into()),
        ("bom-escape", "a: \"\\ufeffx\"\n".into()),
        // `\'` and its neighbours.
        ("escape-quote-twice", "a: \"\\'\\'\"\nb: \"x\\'\"\n".into()),
        ("escape-quote-key", "\"it\\'s\": 1\n".into()),
        ("escape-quote-multiline", "a: \"it\\'s\n  x\"\n".into()),
        ("escape-quote-flow", "a: [\"\\'\", 'x', \"y\\'\"]\n".into()),
        ("escape-quote-then-bad", "a: \"\\'\\q\"\n".into()),
        ("escape-quote-then-slash", "a: \"\\'\\/\"\n".into()),
        ("escape-quote-in-single", "a: 'it\\'\n".into()),
        ("escape-quote-with-ls", "a: \"it\\'s\u{2028}  x\"\n".into()),
        (
            "escape-quote-many",
            (0..40).map(|i| format!("k{i}: \"\\'\"\n")).collect(),
        ),
        // Numbers and keys.
        ("uint64-key", "18446744073709551615: x\n".into()),
        ("uint64-value", "a: 18446744073709551615\n".into()),
        (
            "int64-key",
            "9223372036854775807: x\n-9223372036854775808: y\n".into(),
        ),
        ("int64-plus-one-key", "9223372036854775808: x\n".into()),
        ("uint64-hex-key", "0xFFFFFFFFFFFFFFFF: x\n".into()),
        ("uint64-binary-key", format!("0b{}: x\n", "1".repeat(64))),
        (
            "uint64-int-tag-key",
            "!!int 18446744073709551615: x\n".into(),
        ),
        ("big-key", "99999999999999999999: x\n".into()),
        ("octal-key", "0777: x\n0o17: y\n".into()),
        ("float-keys", "1.5: a\n1e7: b\n0.0001: c\n.5: d\n".into()),
        ("bool-keys", "yes: 1\noff: 2\nTrue: 3\n".into()),
        (
            "numbers",
            "a: [0x1F, -0x10, 0b101, -0b11, 1_000, +7, 08, 1e3, .5, 1., 0o17]\n".into(),
        ),
        (
            "number-like",
            "a: [1:20, 0x, 1.2.3, '-', 1e, v1, .5_0, 12abc, 0b2]\n".into(),
        ),
        (
            "big-values",
            "a: [99999999999999999999999, -9223372036854775809, 1e400]\n".into(),
        ),
        // Flow collections.
        ("flow-colon-comma", "a: [a:, b]\n".into()),
        ("flow-colon-end", "a: [a:]\n".into()),
        ("flow-colon-space", "a: [a: 1, b]\n".into()),
        ("flow-map-colon-comma", "a: {a:, b}\n".into()),
        ("flow-colon-inside", "a: [a:b, c]\n".into()),
        ("flow-colon-bracket", "a: [a:[b]]\n".into()),
        ("flow-map-colon-brace", "a: {a:{b: 1}}\n".into()),
        (
            "flow-colon-mixed",
            "a: [k: v, z:]\nc: {x:, y: 1}\nd: [\"q\":, r]\n".into(),
        ),
        ("flow-colon-nested", "a: [[a:], {b:}]\n".into()),
        ("flow-quoted-key", "a: [\"a\":b]\n".into()),
        (
            "flow-json",
            "{\"a\": [1, 2, {\"b\": null}], \"c\": \"d\"}\n".into(),
        ),
        ("flow-question", "a: [a?b]\n".into()),
        ("flow-question-map", "a: {k: a?b}\n".into()),
        ("block-question", "a: a?b\nb: [x, 'a?b']\n".into()),
        ("flow-trailing-comma", "a: [1, 2, ]\nb: {x: 1, }\n".into()),
        ("flow-multiline", "a: [1,\n  2]\n".into()),
        // Block scalars.
        ("literal-keep", "a: |+\n  x\n\nb: 1\n".into()),
        ("literal-strip", "a: |-\n  x\n\n".into()),
        ("literal-indent", "a: |2\n    x\n  y\n".into()),
        ("folded", "a: >\n  x\n  y\n\n  z\n".into()),
        ("literal-leading-blank", "a: |\n\n  x\n".into()),
        ("literal-more-indented-first", "a: |\n    x\n  y\n".into()),
        // Keys and mappings.
        ("duplicate", "a: 1\na: 2\n".into()),
        ("complex-key", "? [a]\n: 1\n".into()),
        ("explicit-key", "? a\n: 1\n".into()),
        ("empty-value", "a:\nb: ~\n".into()),
        ("nested-seq", "a:\n- 1\n- - 2\n  - 3\n".into()),
        ("long-key", format!("{}: 1\n", "k".repeat(1100))),
        ("quoted-multiline", "a: \"x\n  y\n\n  z\"\n".into()),
        ("plain-multiline", "a: x\n  y\n\n  z\n".into()),
        ("nul", "a: \"\\0\"\nb: x\u{0}\n".into()),
        ("control", "a: x\u{7}y\n".into()),
    ];
    s.sort_by_key(|(name, _)| *name);
    s
}

/// Each snippet alone, after a first document, and as the data of a ConfigMap of a bundle
/// (where it reaches the object rules): the cut into parts and the document around it change
/// what a reader must get right.
fn traps(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut write = |name: String, bytes: Vec<u8>| {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        files.push(path);
    };
    let config_map = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shop-credentials\n";
    for (name, text) in snippets() {
        write(format!("{name}.yaml"), text.clone().into_bytes());
        write(
            format!("{name}.second.yaml"),
            format!("{config_map}---\n{text}").into_bytes(),
        );
        let indented: String = text
            .split_inclusive('\n')
            .map(|line| format!("  {line}"))
            .collect();
        write(
            format!("{name}.data.yaml"),
            format!("{config_map}data:\n{indented}---\n{config_map}").into_bytes(),
        );
    }
    // Encodings go-yaml detects by their byte-order mark.
    let two_docs = "\u{feff}a: 1\n---\nb: 2\n";
    let le: Vec<u8> = two_docs.encode_utf16().flat_map(u16::to_le_bytes).collect();
    let be: Vec<u8> = two_docs.encode_utf16().flat_map(u16::to_be_bytes).collect();
    write("utf16le.yaml".into(), le);
    write("utf16be.yaml".into(), be);
    let no_bom: Vec<u8> = "a: 1\n".encode_utf16().flat_map(u16::to_le_bytes).collect();
    write("utf16-no-bom.yaml".into(), no_bom);
    write("latin1.yaml".into(), b"a: caf\xe9\n".to_vec());
    write(
        "invalid-second.yaml".into(),
        b"a: 1\n---\nb: \xff\n---\nc: 3\n".to_vec(),
    );
    files
}

/// Traps credlint still reads otherwise than go-yaml, by snippet name: the test requires them
/// to disagree still (so that this list stays true), and every other file to agree.
const KNOWN: &[(&str, &str)] = &[];

/// The known disagreement a trap file belongs to, if any: by its snippet, or by its whole
/// name for one form of a snippet.
fn known(path: &Path) -> Option<&'static str> {
    let stem = path.file_name()?.to_str()?.strip_suffix(".yaml")?;
    let snippet = stem.split('.').next()?;
    KNOWN
        .iter()
        .find(|(name, _)| *name == snippet || *name == stem)
        .map(|(_, why)| *why)
}

#[test]
fn the_loader_reads_every_fixture_and_trap_as_go_yaml_v2_does() {
    let dir = temp_dir("go-yaml-oracle");
    let oracle = match build(&dir) {
        Ok(binary) => binary,
        Err(why) => {
            skip(&format!("the go-yaml oracle cannot be built: {why}"));
            return;
        }
    };
    let traps_dir = dir.join("traps");
    std::fs::create_dir_all(&traps_dir).unwrap();
    let fixtures = fixture_files();
    let traps = traps(&traps_dir);
    let files: Vec<&PathBuf> = fixtures.iter().chain(&traps).collect();
    let out = Command::new(&oracle)
        .args(&files)
        .output()
        .expect("the oracle runs");
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<Json> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), files.len());

    let (mut documents, mut refused) = (0, 0);
    let mut disagreements = Vec::new();
    let mut known_seen = 0;
    for (path, line) in files.iter().zip(&lines) {
        let bytes = std::fs::read(path).unwrap();
        let theirs = oracle_reads(line);
        let ours = credlint_reads(&bytes);
        documents += theirs.iter().filter(|r| matches!(r, Read::Json(_))).count();
        refused += usize::from(matches!(theirs.last(), Some(Read::Refused(_))));
        let agree =
            theirs.len() == ours.len() && theirs.iter().zip(&ours).all(|(a, b)| a.same_as(b));
        let expected = known(path).filter(|_| path.starts_with(&traps_dir));
        if let Some(why) = expected {
            known_seen += 1;
            let shown = path.file_name().unwrap().to_string_lossy();
            if agree {
                disagreements.push(format!(
                    "{shown} agrees now: take it off KNOWN (it was: {why})"
                ));
            }
            continue;
        }
        if !agree {
            let shown = path.strip_prefix(root()).unwrap_or(path).display();
            disagreements.push(format!(
                "{shown}:\n  go-yaml:  {theirs:?}\n  credlint: {ours:?}"
            ));
        }
    }
    let _ = writeln!(
        std::io::stderr(),
        "go-yaml oracle: {} fixture files, {} trap files, {documents} documents read, \
         {refused} files refused, {} disagreements, {known_seen} known ones ({} classes)",
        fixtures.len(),
        traps.len(),
        disagreements.len(),
        KNOWN.len()
    );
    assert!(
        disagreements.is_empty(),
        "{} of {} files read otherwise than go-yaml v2 reads them:\n{}",
        disagreements.len(),
        files.len(),
        disagreements.join("\n")
    );
    // The traps must exercise both verdicts, or the comparison proves little.
    assert!(
        refused > 50 && documents > 500,
        "{refused} refused, {documents} documents"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
