//! credlint's pragma verdicts against detect-secrets 1.5.0 itself. `tests/oracle/detect_secrets/
//! scan.py` scans files with detect-secrets' default plugins and filters; this test writes the
//! create.py header in many layouts, each in a one-document file (which detect-secrets reads
//! with its YAML reader, where the key line's comment allowlists the whole script) and in a
//! bundle of several documents (read line by line, where a pragma allowlists its own line),
//! and requires:
//!
//! - a header credlint accepts allowlists the script in the one-document file, and hides
//!   nothing else (a secret in another key is reported, in both files);
//! - a header credlint reports as `pragma-missing` allowlists nothing of the script;
//! - every `pragma-misplaced` that says it hides a line does hide a secret written on that
//!   line, in at least one of the files; one that says detect-secrets does not honour it hides
//!   nothing in a bundle (read line by line: its YAML reader skips every comment anyway).
//!
//! The third check runs on every pragma fixture as well. When detect-secrets is not installed
//! the test says so on the terminal and passes; with `CREDLINT_REQUIRE_DETECT_SECRETS=1` (set
//! by `.ci/run`) it fails instead.

mod common;
use common::*;
use serde_json::Value as Json;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::PathBuf;
use std::process::Command;

const DRIVER: &str = "tests/oracle/detect_secrets/scan.py";
/// A made-up AWS access key id: detect-secrets reports it in any file, quoted or not.
const SECRET: &str = "AKIAZ3MSJV4WWNKWW5FG";

fn skip(reason: &str) {
    skip_unless_required("CREDLINT_REQUIRE_DETECT_SECRETS", reason);
}

/// Why detect-secrets 1.5.0 cannot be used here, if it cannot.
fn unavailable() -> Option<String> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import importlib.metadata as m; print(m.version('detect-secrets'))",
        ])
        .output();
    match out {
        Err(e) => Some(format!("python3 cannot be run: {e}")),
        Ok(out) if !out.status.success() => Some("detect-secrets is not installed".into()),
        Ok(out) if stdout(&out).trim() != "1.5.0" => Some(format!(
            "detect-secrets {} is installed, not 1.5.0",
            stdout(&out).trim()
        )),
        Ok(_) => None,
    }
}

/// What detect-secrets reports of each file: the lines (1-based) it reports a secret on, and
/// the secrets.
struct Reported {
    lines: BTreeSet<usize>,
    values: BTreeSet<String>,
}

fn scan(files: &[PathBuf]) -> BTreeMap<PathBuf, Reported> {
    let out = Command::new("python3")
        .arg(root().join(DRIVER))
        .args(files)
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
        .lines()
        .map(|l| {
            let v: Json = serde_json::from_str(l).unwrap();
            let lines = v["lines"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n.as_u64().unwrap() as usize)
                .collect();
            let values = v["values"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_string())
                .collect();
            (
                PathBuf::from(v["file"].as_str().unwrap()),
                Reported { lines, values },
            )
        })
        .collect()
}

#[derive(Debug)]
struct PragmaFinding {
    rule: String,
    line: usize,
    message: String,
}

/// credlint's pragma findings, per file.
fn pragma_findings(files: &[PathBuf]) -> BTreeMap<PathBuf, Vec<PragmaFinding>> {
    let mut args = vec!["check".to_string(), "--format".into(), "json".into()];
    args.extend(files.iter().map(|f| f.to_string_lossy().into_owned()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = credlint(&args);
    let mut found: BTreeMap<PathBuf, Vec<PragmaFinding>> =
        files.iter().map(|f| (f.clone(), Vec::new())).collect();
    for f in json(&out)["findings"].as_array().unwrap() {
        let rule = f["rule"].as_str().unwrap();
        if !rule.starts_with("pragma-") {
            continue;
        }
        let file = root().join(f["file"].as_str().unwrap());
        let file = files
            .iter()
            .find(|p| **p == file || p.ends_with(f["file"].as_str().unwrap()))
            .cloned()
            .unwrap_or(file);
        found.entry(file).or_default().push(PragmaFinding {
            rule: rule.to_string(),
            line: f["line"].as_u64().unwrap() as usize,
            message: f["message"].as_str().unwrap().to_string(),
        });
    }
    found
}

/// Header layouts: name, the lines that replace `  create.py: |  # pragma: allowlist secret`,
/// and whether credlint must accept it.
const LAYOUTS: &[(&str, &str, bool)] = &[
    (
        "standard",
        "  create.py: |  # pragma: allowlist secret",
        true,
    ),
    ("strip", "  create.py: |- # pragma: allowlist secret", true),
    (
        "keep-indent",
        "  create.py: |+2  # pragma: allowlist secret",
        true,
    ),
    (
        "indent-strip",
        "  create.py: |2-  # pragma: allowlist secret",
        true,
    ),
    ("terse", "  create.py: |  #pragma:allowlist secret", true),
    (
        "whitelist",
        "  create.py: |  # pragma: whitelist secret",
        true,
    ),
    ("dash", "  create.py: |  # pragma: allowlist-secret", true),
    (
        "quoted-key",
        "  \"create.py\": |  # pragma: allowlist secret",
        true,
    ),
    (
        "trailing-blank",
        "  create.py: |  # pragma: allowlist secret  ",
        true,
    ),
    (
        "key-line",
        "  create.py:  # pragma: allowlist secret\n    |",
        true,
    ),
    ("none", "  create.py: |", false),
    (
        "indicator-line",
        "  create.py:\n    |  # pragma: allowlist secret",
        false,
    ),
    (
        "tab-before-hash",
        "  create.py: |\t# pragma: allowlist secret",
        false,
    ),
    (
        "tab-after-hash",
        "  create.py: |  #\tpragma: allowlist secret",
        false,
    ),
    (
        "note-tab",
        "  create.py: |  # note\t# pragma: allowlist secret",
        false,
    ),
    (
        "note",
        "  create.py: |  # note # pragma: allowlist secret",
        false,
    ),
    (
        "words-after",
        "  create.py: |  # pragma: allowlist secret (ADR-072)",
        false,
    ),
    (
        "secret-after",
        "  create.py: |  # pragma: allowlist secret AKIAZ3MSJV4WWNKWW5FH",
        false,
    ),
    (
        "secret-before",
        "  create.py: |  # AKIAZ3MSJV4WWNKWW5FH pragma: allowlist secret",
        false,
    ),
    (
        "anchor",
        "  create.py: &s |  # pragma: allowlist secret",
        false,
    ),
    (
        "tab-after-colon",
        "  create.py:\t|  # pragma: allowlist secret",
        false,
    ),
    (
        "nextline",
        "  create.py: |  # pragma: allowlist nextline secret",
        false,
    ),
];

const HEADER: &str = "  create.py: |  # pragma: allowlist secret\n";

/// One file form: the text with `layout` as the header, a secret in the script's first line
/// and one in a key of its own; returns the text and the lines of the two secrets.
fn form(base: &str, layout: &str, cr_only: bool) -> (String, usize, usize) {
    let at = base.find(HEADER).expect("the base has the standard header");
    let line_of = |offset: usize| base[..offset].matches('\n').count() + 1;
    let other_line = line_of(at);
    let script_line = other_line + 1 + layout.matches('\n').count() + 1;
    let text = format!(
        "{}  token: {SECRET}\n{layout}\n    # {SECRET}\n{}",
        &base[..at],
        &base[at + HEADER.len()..]
    );
    let text = if cr_only {
        text.replace('\n', "\r")
    } else {
        text
    };
    (text, script_line, other_line)
}

/// The secret a probe writes on the line whose pragma it tests.
const PROBE: &str = "AKIAZ3MSJV4WWNKWW5FK";

/// `text` with [`PROBE`] written at the end of 1-based `line`.
fn with_secret_on(text: &str, line: usize) -> String {
    let mut out = String::new();
    for (i, l) in text.split_inclusive(['\n', '\r']).enumerate() {
        if i + 1 == line {
            let body = l.trim_end_matches(['\n', '\r']);
            out.push_str(body);
            out.push(' ');
            out.push_str(PROBE);
            out.push_str(&l[body.len()..]);
        } else {
            out.push_str(l);
        }
    }
    out
}

fn hides(f: &PragmaFinding) -> Option<bool> {
    if f.rule != "pragma-misplaced" {
        return None;
    }
    if f.message.contains("not honoured") {
        Some(false)
    } else {
        assert!(f.message.contains(" hides "), "{f:?}");
        Some(true)
    }
}

#[test]
fn pragma_verdicts_match_what_detect_secrets_allowlists() {
    if let Some(why) = unavailable() {
        skip(&format!(
            "{why} (`python3 -m pip install detect-secrets==1.5.0` to run {DRIVER})"
        ));
        return;
    }
    let dir = temp_dir("pragma-oracle");
    let single =
        std::fs::read_to_string(root().join("fixtures/clean/split/4-configmap.yaml")).unwrap();
    let bundle = std::fs::read_to_string(root().join("fixtures/clean/cache.yaml")).unwrap();
    // (file, layout name, accepted, script line, other line, one document)
    let mut cases = Vec::new();
    for (name, layout, accepted) in LAYOUTS {
        for (form_name, base, cr_only) in [
            ("single", &single, false),
            ("bundle", &bundle, false),
            ("single-cr", &single, true),
        ] {
            if cr_only && !accepted {
                continue;
            }
            let (text, script_line, other_line) = form(base, layout, cr_only);
            let path = dir.join(format!("{name}.{form_name}.yaml"));
            std::fs::write(&path, text).unwrap();
            cases.push((
                path,
                *name,
                *accepted,
                script_line,
                other_line,
                form_name != "bundle",
            ));
        }
    }
    let files: Vec<PathBuf> = cases.iter().map(|c| c.0.clone()).collect();
    let verdicts = pragma_findings(&files);
    let reported = scan(&files);
    let mut disagreements = Vec::new();
    let mut checked = 0;
    for (path, name, accepted, script_line, other_line, one_document) in &cases {
        let findings = &verdicts[path];
        let lines = &reported[path].lines;
        let shown = path.file_name().unwrap().to_string_lossy();
        let credlint_accepts = findings.is_empty();
        if credlint_accepts != *accepted {
            disagreements.push(format!(
                "{shown}: credlint accepts it: {credlint_accepts}, {findings:?}"
            ));
            continue;
        }
        if !lines.contains(other_line) {
            disagreements.push(format!(
                "{shown}: the secret in another key (line {other_line}) is hidden"
            ));
        }
        if *one_document {
            checked += 1;
            // Its YAML reader reports a secret of a block at the block's first line (the
            // key's, or the indicator's), its line reader at the secret's own line.
            let allowlisted = !lines.range(other_line + 1..=*script_line).any(|_| true);
            let missing = findings.iter().any(|f| f.rule == "pragma-missing");
            if credlint_accepts && !allowlisted {
                disagreements.push(format!(
                    "{shown} ({name}): credlint accepts the header, detect-secrets reports the script (line {script_line})"
                ));
            }
            if missing && allowlisted {
                disagreements.push(format!(
                    "{shown} ({name}): pragma-missing, yet detect-secrets allowlists the script"
                ));
            }
        }
    }

    // Every pragma-misplaced says truly whether detect-secrets hides its line: checked with a
    // secret written on that line, in the layouts above and in the pragma fixtures.
    let mut fixtures = Vec::new();
    for folder in ["pragma-misplaced", "pragma-missing"] {
        for entry in std::fs::read_dir(root().join("fixtures").join(folder)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                fixtures.push(path);
            }
        }
    }
    fixtures.sort();
    let fixture_verdicts = pragma_findings(&fixtures);
    let mut probes = Vec::new();
    // (probe file, source file, line, credlint says it hides)
    for (path, findings) in verdicts.iter().chain(&fixture_verdicts) {
        let text = std::fs::read_to_string(path).unwrap();
        for (i, f) in findings.iter().enumerate() {
            let Some(hidden) = hides(f) else { continue };
            let line = if f.message.contains("the next line") {
                f.line + 1
            } else {
                f.line
            };
            let ext = path.extension().unwrap().to_string_lossy().into_owned();
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            let probe = dir.join(format!("probe-{stem}-{i}.{ext}"));
            std::fs::write(&probe, with_secret_on(&text, line)).unwrap();
            probes.push((probe, path.clone(), line, hidden));
        }
    }
    let probe_files: Vec<PathBuf> = probes.iter().map(|p| p.0.clone()).collect();
    let probed = scan(&probe_files);
    // A layout's claim holds if it holds in one of its files (hiding) or in all (not hiding).
    let mut claims: BTreeMap<(String, usize, bool), Vec<bool>> = BTreeMap::new();
    for (probe, source, line, hidden) in &probes {
        let stem = source.file_name().unwrap().to_string_lossy();
        let layout = stem.split('.').next().unwrap().to_string();
        let is_hidden = !probed[probe].values.contains(PROBE);
        // detect-secrets' YAML reader (one-document files) never scans a comment, pragma or
        // not: a pragma that is not honoured is shown by the line reader only.
        if !*hidden && stem.contains(".single") {
            continue;
        }
        claims
            .entry((layout, *line, *hidden))
            .or_default()
            .push(is_hidden);
    }
    for ((layout, line, hidden), seen) in &claims {
        let holds = if *hidden {
            seen.iter().any(|h| *h)
        } else {
            seen.iter().all(|h| !*h)
        };
        if !holds {
            disagreements.push(format!(
                "{layout}: pragma-misplaced says detect-secrets {} line {line}, and it does not",
                if *hidden { "hides" } else { "does not hide" }
            ));
        }
    }
    let _ = writeln!(
        std::io::stderr(),
        "detect-secrets oracle: {} layouts in {} files ({checked} one-document), {} fixture \
         files, {} pragma-misplaced claims probed, {} disagreements",
        LAYOUTS.len(),
        cases.len(),
        fixtures.len(),
        claims.len(),
        disagreements.len()
    );
    assert!(
        disagreements.is_empty(),
        "credlint and detect-secrets 1.5.0 disagree:\n{}",
        disagreements.join("\n")
    );
    assert!(claims.len() > 10, "{} claims", claims.len());
    let _ = std::fs::remove_dir_all(&dir);
}
