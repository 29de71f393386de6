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

/// Every file under `dir`, links listed with their targets, not followed.
fn listing(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        for e in std::fs::read_dir(&folder).unwrap().flatten() {
            let path = e.path();
            let kind = e.file_type().unwrap();
            let name = path.strip_prefix(dir).unwrap().display().to_string();
            if kind.is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                out.push((name, format!("-> {}", target.display()).into_bytes()));
            } else if kind.is_dir() {
                pending.push(path);
            } else {
                out.push((name, std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// `policies --out` with a link in the folder (a policy's folder linked elsewhere, a policy
/// file linked elsewhere, the folder itself a link): exit 2 naming the link, nothing written
/// anywhere, the link's target untouched.
#[test]
fn policies_out_never_writes_through_a_link() {
    let base = temp_dir("hostile-out-links");
    let elsewhere = base.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("job-ttl.yaml"), "someone else's\n").unwrap();
    std::fs::write(elsewhere.join("target.yaml"), "someone else's too\n").unwrap();
    let linked_folder = base.join("a");
    std::fs::create_dir_all(&linked_folder).unwrap();
    std::os::unix::fs::symlink("../elsewhere", linked_folder.join("job-ttl")).unwrap();
    let linked_file = base.join("b");
    std::fs::create_dir_all(linked_file.join("hook-wave")).unwrap();
    std::os::unix::fs::symlink(
        "../../elsewhere/target.yaml",
        linked_file.join("hook-wave").join("hook-wave.yaml"),
    )
    .unwrap();
    let linked_out = base.join("c");
    std::os::unix::fs::symlink("elsewhere", &linked_out).unwrap();
    for (out, link) in [
        (&linked_folder, "job-ttl"),
        (&linked_file, "hook-wave.yaml"),
        (&linked_out, "c"),
    ] {
        let before = listing(&base);
        let run = credlint(&["policies", "--out", &out.to_string_lossy()]);
        assert_eq!(run.status.code(), Some(2), "{link}: {}", stderr(&run));
        let said = stderr(&run);
        assert!(
            said.contains(link) && said.contains("symbolic link"),
            "{link}: {said}"
        );
        assert_eq!(listing(&base), before, "{link}: something was written");
    }
}

/// Links planted under the temporary names the policies used to be written to (the process id
/// was the only unknown): the next process ids a run can get, in every policy folder. The run
/// writes its policies and no link is followed.
#[test]
fn policies_out_follows_no_link_planted_under_a_temporary_name() {
    let base = temp_dir("hostile-out-temp");
    let out = base.join("policies");
    let elsewhere = base.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let victim = elsewhere.join("victim");
    std::fs::write(&victim, "keep me\n").unwrap();
    let first = credlint(&["policies", "--out", &out.to_string_lossy()]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let last_pid: u32 = std::fs::read_to_string("/proc/sys/kernel/ns_last_pid")
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(std::process::id());
    let mut planted = 0;
    for entry in std::fs::read_dir(&out).unwrap().flatten() {
        if !entry.file_type().unwrap().is_dir() {
            continue;
        }
        let folder = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        // Rewritten on the next run: its text changes with the settings below.
        for pid in last_pid + 1..last_pid + 40 {
            let link = folder.join(format!(".{name}.yaml.{pid}.tmp"));
            std::os::unix::fs::symlink(&victim, link).unwrap();
            planted += 1;
        }
    }
    assert!(planted > 100);
    let run = credlint(&[
        "policies",
        "--out",
        &out.to_string_lossy(),
        "--credentials-image",
        &format!("registry.example/other@sha256:{}", "ab".repeat(32)),
    ]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let said = stderr(&run);
    assert!(
        said.contains("written") && !said.contains(" 0 written"),
        "{said}"
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me\n");
}

/// `--output-file` that is a link: exit 2 naming it, the target untouched.
#[test]
fn an_output_file_that_is_a_link_is_refused() {
    let dir = temp_dir("hostile-output-file");
    tree(&dir);
    let victim = dir.join("victim");
    std::fs::write(&victim, "keep me\n").unwrap();
    std::os::unix::fs::symlink(&victim, dir.join("report.sarif")).unwrap();
    let run = check(
        &dir,
        &["--format", "sarif", "--output-file", "report.sarif"],
    );
    assert_eq!(run.status.code(), Some(2));
    assert!(
        stderr(&run).contains("report.sarif") && stderr(&run).contains("symbolic link"),
        "{}",
        stderr(&run)
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me\n");
}

/// Every command that writes to standard output is quiet on a closed pipe, as `check` is: the
/// exit code it has with an open one, nothing on standard error.
#[test]
fn every_command_is_quiet_on_a_closed_pipe() {
    let bad = root().join(BAD);
    let bad = bad.to_string_lossy();
    for args in [
        &["rules"][..],
        &["rules", "--format", "json"],
        &["rules", "--format", "markdown"],
        &["explain", "role-forbidden-verb"],
        &["policies"],
        &["config-schema"],
        &["completions", "bash"],
        &["check", &bad, "--no-cache", "--format", "json"],
        &["check", &bad, "--no-cache", "--format", "text"],
    ] {
        let open = command().args(args).output().unwrap();
        let mut fds = [0; 2];
        // SAFETY: pipe() fills the two descriptors of a valid two-element array.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: fds[0] is the read end this test owns and closes once.
        unsafe { libc::close(fds[0]) };
        // SAFETY: fds[1] is the write end this test owns; the Stdio takes it over.
        let write_end =
            unsafe { <std::process::Stdio as std::os::fd::FromRawFd>::from_raw_fd(fds[1]) };
        let closed = command()
            .args(args)
            .stdout(write_end)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        assert_eq!(closed.status.code(), open.status.code(), "{args:?}");
        assert_eq!(stderr(&closed), "", "{args:?}");
    }
}

/// Standard input that cannot be read (a folder given as stdin) is exit 2 with its reason,
/// and the findings of the file named beside it are still reported.
#[test]
fn unreadable_standard_input_is_reported_beside_the_other_findings() {
    let dir = temp_dir("hostile-stdin-folder");
    let bad = root().join(BAD);
    let run = command()
        .args(["check", "--no-cache", "--format", "json", "-"])
        .arg(&bad)
        .stdin(std::fs::File::open(&*dir).unwrap())
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2), "{}", stderr(&run));
    assert!(
        stderr(&run).contains("-: cannot read standard input"),
        "{}",
        stderr(&run)
    );
    let report = json(&run);
    let rules: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap())
        .collect();
    assert_eq!(
        rules,
        ["role-forbidden-verb", "role-forbidden-verb"],
        "{report}"
    );
}

/// What `simulate` says of a bundle's container variables on standard error (those it cannot
/// give the program, a container that would not start) names objects and keys from the
/// change: their control characters are shown escaped.
#[test]
fn simulate_notes_on_a_containers_variables_show_control_characters_escaped() {
    let command = "          command: [python3, /credentials/create.py, /credentials/plan.json]\n";
    for (name, entry, said) in [
        (
            "missing",
            "{name: \"ADMIN\\a\", valueFrom: {secretKeyRef: {name: \"db\\e[2J\", key: password}}}",
            "the program runs without ADMIN\\u{7} (key password of Secret db\\u{1b}[2J)",
        ),
        (
            "unstarted",
            "{name: MODE, valueFrom: {configMapKeyRef: {name: shop-db-credentials, key: \"mode\\e]0;x\\a\"}}}",
            "takes key mode\\u{1b}]0;x\\u{7} of ConfigMap shop-db-credentials",
        ),
    ] {
        let dir = temp_dir(&format!("hostile-output-env-{name}"));
        let rendered =
            credlint::testkit::render::Spec::example("shop", "shop-db", "component", "print(1)\n")
                .render()
                .replacen(
                    command,
                    &format!("{command}          env:\n            - {entry}\n"),
                    1,
                );
        std::fs::write(dir.join("bundle.yaml"), rendered).unwrap();
        let run = credlint_in(&dir, &["simulate", "--no-cache", "--timeout", "5", "."]);
        let text = stderr(&run);
        assert!(text.contains(said), "{name}: {text}");
        assert!(!text.chars().any(acts), "{name}: {text:?}");
    }
}
