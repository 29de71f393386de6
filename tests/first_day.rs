//! The rough edges a new user meets on the first day (issue 35): messages that point at the
//! offending node and name what is wrong, and flags that behave as in other linters.

mod common;

use common::{credlint, json, stderr};

fn findings(path: &str) -> Vec<serde_json::Value> {
    let out = credlint(&[
        "check",
        "--no-config",
        "--no-cache",
        path,
        "--format",
        "json",
    ]);
    json(&out)["findings"].as_array().unwrap().clone()
}

#[test]
fn an_unnamed_rule_is_blamed_on_the_verb_and_advises_a_valid_role() {
    let found = findings("fixtures/role-unnamed-rule/bad-create-and-get.yaml");
    let unnamed: Vec<_> = found
        .iter()
        .filter(|f| f["rule"] == "role-unnamed-rule")
        .collect();
    assert_eq!(unnamed.len(), 1, "{found:?}");
    // `verbs: [create, get]` on line 24: the caret is on `get`, not on the rule's first key.
    assert_eq!(
        (unnamed[0]["line"].as_u64(), unnamed[0]["column"].as_u64()),
        (Some(24), Some(21))
    );
    let message = unnamed[0]["message"].as_str().unwrap();
    assert!(message.contains("`get`"), "{message}");
    assert!(message.contains("split the rule"), "{message}");
    // Advice that, followed, gives role-create-named is gone.
    let explain = common::stdout(&credlint(&["explain", "role-unnamed-rule"]));
    assert!(explain.contains("keep create alone"), "{explain}");
}

#[test]
fn an_empty_resource_name_is_blamed_on_the_name() {
    let found = findings("fixtures/role-unnamed-rule/bad-empty-string-name.yaml");
    let unnamed: Vec<_> = found
        .iter()
        .filter(|f| f["rule"] == "role-unnamed-rule")
        .collect();
    assert_eq!(unnamed.len(), 1, "{found:?}");
    assert!(
        unnamed[0]["message"]
            .as_str()
            .unwrap()
            .contains("empty name"),
        "{unnamed:?}"
    );
}

#[test]
fn a_member_without_a_namespace_is_reported_once_with_the_namespace() {
    let found = findings("fixtures/bundle-incomplete/bad-member-without-namespace.yaml");
    let incomplete: Vec<_> = found
        .iter()
        .filter(|f| f["rule"] == "bundle-incomplete")
        .collect();
    assert_eq!(incomplete.len(), 1, "{found:?}");
    let message = incomplete[0]["message"].as_str().unwrap();
    assert!(message.contains("give it `namespace: shop`"), "{message}");
    assert_eq!(incomplete[0]["object"]["kind"], "ConfigMap");
}

#[test]
fn an_object_in_another_namespace_is_named_where_it_is() {
    let dir = common::temp_dir("first-day-two-namespaces");
    let text =
        std::fs::read_to_string(common::root().join("fixtures/bundle-incomplete/good-bundle.yaml"))
            .unwrap();
    // The ConfigMap in namespace `shopp`: both bundles speak, each naming the other namespace.
    let docs: Vec<String> = text
        .split("\n---\n")
        .map(|d| {
            if d.contains("kind: ConfigMap") {
                d.replacen("namespace: shop\n", "namespace: shopp\n", 1)
            } else {
                d.to_string()
            }
        })
        .collect();
    std::fs::write(dir.join("b.yaml"), docs.join("\n---\n")).unwrap();
    let path = dir.join("b.yaml");
    let found = findings(path.to_str().unwrap());
    let messages: Vec<&str> = found
        .iter()
        .filter(|f| f["rule"] == "bundle-incomplete")
        .map(|f| f["message"].as_str().unwrap())
        .collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(
        messages.iter().any(|m| m.contains("in namespace `shopp`")),
        "{messages:?}"
    );
    assert!(
        messages.iter().any(|m| m.contains("in namespace `shop`")),
        "{messages:?}"
    );
}

#[test]
fn rule_and_folder_lists_take_spaces_after_commas() {
    let spaced = credlint(&[
        "check",
        "--no-config",
        "fixtures/role-unnamed-rule/bad-no-names.yaml",
        "--format",
        "json",
        "--select",
        "role-unnamed-rule, job-ttl",
    ]);
    assert_eq!(spaced.status.code(), Some(1), "{}", stderr(&spaced));
    let report = json(&spaced);
    let rules: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap())
        .collect();
    assert!(
        !rules.is_empty() && rules.iter().all(|r| *r == "role-unnamed-rule"),
        "{rules:?}"
    );
    let ignored = credlint(&[
        "check",
        "--no-config",
        "fixtures/role-unnamed-rule/bad-no-names.yaml",
        "--ignore",
        "job-ttl, role-unnamed-rule",
    ]);
    assert_eq!(ignored.status.code(), Some(0), "{}", stderr(&ignored));
}

#[test]
fn an_exclude_that_matches_nothing_warns_and_one_that_matches_does_not() {
    let out = credlint(&[
        "check",
        "--no-config",
        "fixtures/bundle-incomplete",
        "--exclude",
        "nothere, bad-split",
    ]);
    let err = stderr(&out);
    assert!(
        err.contains("warning: --exclude nothere:") && err.contains("excludes nothing"),
        "{err}"
    );
    assert!(!err.contains("--exclude bad-split"), "{err}");
    // What was excluded was not read.
    let json_out = credlint(&[
        "check",
        "--no-config",
        "fixtures/bundle-incomplete",
        "--exclude",
        "nothere, bad-split",
        "--format",
        "json",
    ]);
    assert!(!common::stdout(&json_out).contains("bad-split/"));
}

fn check_stdin(dir: &std::path::Path, args: &[&str], input: &[u8]) -> std::process::Output {
    use std::io::Write;
    let mut child = common::command()
        .current_dir(dir)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn standard_input_is_reported_and_configured_under_stdin_filename() {
    let dir = common::temp_dir("first-day-stdin-filename");
    let input =
        std::fs::read(common::root().join("fixtures/role-unnamed-rule/bad-no-names.yaml")).unwrap();
    // Without a name: `-`, and no per-path entry applies.
    std::fs::write(
        dir.join("credlint.toml"),
        "[[per-path]]\npaths = [\"rendered/**\"]\nignore = [\"role-unnamed-rule\"]\nreason = \"migrating (PLAT-1)\"\n",
    )
    .unwrap();
    let plain = check_stdin(&dir, &["check", "--format", "json", "-"], &input);
    assert_eq!(plain.status.code(), Some(1), "{}", stderr(&plain));
    assert_eq!(json(&plain)["findings"][0]["file"], "-");
    let named = check_stdin(
        &dir,
        &[
            "check",
            "--format",
            "json",
            "--stdin-filename",
            "rendered/shop.yaml",
        ],
        &input,
    );
    let report = json(&named);
    let unnamed: Vec<_> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "role-unnamed-rule")
        .collect();
    assert!(!unnamed.is_empty(), "{report}");
    for f in &unnamed {
        assert_eq!(f["file"], "rendered/shop.yaml");
        assert_eq!(f["suppressed"]["reason"], "migrating (PLAT-1)", "{f}");
    }
    assert_eq!(named.status.code(), Some(0), "{}", stderr(&named));
    // The text report quotes the lines read from standard input under that name.
    let text = check_stdin(
        &dir,
        &[
            "check",
            "--no-config",
            "--stdin-filename",
            "rendered/shop.yaml",
            "-",
        ],
        &input,
    );
    let shown = common::stdout(&text);
    assert!(
        shown.contains("rendered/shop.yaml:27:13") && shown.contains("verbs: [get, patch]"),
        "{shown}"
    );
    // A name for standard input that is not read is a usage error.
    let wrong = check_stdin(
        &dir,
        &["check", "--stdin-filename", "x.yaml", "fixtures"],
        b"",
    );
    assert_eq!(wrong.status.code(), Some(2));
    assert!(
        stderr(&wrong).contains("`-` is not among the paths"),
        "{}",
        stderr(&wrong)
    );
}

#[test]
fn concise_says_what_was_suppressed_as_text_does() {
    let dir = common::temp_dir("first-day-concise-suppressed");
    std::fs::write(
        dir.join("credlint.toml"),
        "[[per-path]]\npaths = [\"*.yaml\"]\nignore = [\"role-unnamed-rule\"]\nreason = \"migrating (PLAT-1)\"\n",
    )
    .unwrap();
    std::fs::copy(
        common::root().join("fixtures/role-unnamed-rule/bad-no-names.yaml"),
        dir.join("b.yaml"),
    )
    .unwrap();
    let counted = common::credlint_in(&dir, &["check", "--format", "concise", "b.yaml"]);
    let text = common::stdout(&counted);
    assert!(
        text.contains("2 findings suppressed by [[per-path]] (--show-suppressed lists them)"),
        "{text}"
    );
    assert!(!text.contains("migrating"), "{text}");
    let listed = common::credlint_in(
        &dir,
        &[
            "check",
            "--format",
            "concise",
            "--show-suppressed",
            "b.yaml",
        ],
    );
    let text = common::stdout(&listed);
    assert!(
        text.contains("2 findings suppressed by [[per-path]]:"),
        "{text}"
    );
    assert!(
        text.contains("b.yaml:27:13 role-unnamed-rule") && text.contains("\"migrating (PLAT-1)\""),
        "{text}"
    );
    assert_eq!(listed.status.code(), Some(0));
}

#[test]
fn version_names_the_commit_of_a_git_checkout() {
    let out = credlint(&["--version"]);
    let shown = common::stdout(&out);
    let version = concat!("credlint ", env!("CARGO_PKG_VERSION"));
    assert!(shown.starts_with(version), "{shown}");
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(common::root())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let checkout = git(&["rev-parse", "--show-toplevel"]).is_some_and(|top| {
        std::path::Path::new(&top).canonicalize().ok() == common::root().canonicalize().ok()
    });
    match git(&["rev-parse", "--short=12", "HEAD"]).filter(|_| checkout) {
        Some(commit) => assert_eq!(shown.trim(), format!("{version} ({commit})")),
        // No git, or not a checkout of this repository: the version alone.
        None => assert_eq!(shown.trim(), version),
    }
}

/// Every `docs/...` page any `--help` cites is one the repository ships.
#[test]
fn help_cites_only_pages_that_ship() {
    use clap::CommandFactory;
    let mut cli = credlint::cli::Cli::command();
    let mut helps = vec![cli.render_long_help().to_string()];
    for sub in cli.get_subcommands_mut() {
        helps.push(sub.render_long_help().to_string());
    }
    let mut cited = 0;
    for help in &helps {
        for (at, _) in help.match_indices("docs/") {
            let page: String = help[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || "/._-".contains(*c))
                .collect();
            let page = page.trim_end_matches('.');
            assert!(
                common::root().join(page).is_file(),
                "--help cites {page}, which does not ship"
            );
            cited += 1;
        }
        assert!(!help.contains(" cli.md"), "a bare cli.md: {help}");
    }
    assert!(
        cited >= 3,
        "check, simulate and the JSON format cite their pages"
    );
    let check = common::stdout(&credlint(&["check", "--help"]));
    assert!(check.contains("docs/cli.md"), "{check}");
}

/// `credlint completions --help` is the one place that says where completion scripts go:
/// every `credlint completions SHELL > PATH` the README and docs/ show is one it gives.
#[test]
fn completion_instructions_are_those_of_the_help() {
    let help = common::stdout(&credlint(&["completions", "--help"]));
    let mut pages = vec![common::root().join("README.md")];
    for entry in std::fs::read_dir(common::root().join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            pages.push(path);
        }
    }
    let mut shown = 0;
    for page in pages {
        let text = std::fs::read_to_string(&page).unwrap();
        for (at, _) in text.match_indices("credlint completions ") {
            let line: String = text[at..]
                .chars()
                .take_while(|c| *c != '`' && *c != '\n')
                .collect();
            if !line.contains('>') {
                continue;
            }
            shown += 1;
            assert!(
                help.contains(line.trim()),
                "{} shows `{line}`, which `credlint completions --help` does not give:\n{help}",
                page.display()
            );
        }
    }
    assert!(
        shown > 0,
        "the docs show how to install a completion script"
    );
}

#[test]
fn pragma_missing_says_why_with_its_adr_point() {
    let found = findings("fixtures/pragma-missing/bad-no-pragma.yaml");
    let missing = found
        .iter()
        .find(|f| f["rule"] == "pragma-missing")
        .expect("the missing pragma is reported");
    let message = missing["message"].as_str().unwrap();
    assert!(message.contains("detect-secrets"), "{message}");
    assert!(message.contains("(ADR-072 point 7)"), "{message}");
}

#[test]
fn a_length_out_of_bounds_is_echoed_with_the_bounds_the_docs_give() {
    let found = findings("fixtures/plan-invalid/bad-key-specs.yaml");
    let length = found
        .iter()
        .map(|f| f["message"].as_str().unwrap())
        .find(|m| m.starts_with("`length`"))
        .expect("the short length is reported");
    // The fixture asks for 8 characters.
    assert!(
        length.contains("is `8`, not an integer from 16 to 4096"),
        "{length}"
    );
    let bundle = std::fs::read_to_string(common::root().join("docs/bundle.md")).unwrap();
    assert!(
        bundle.contains("| integer, 16 to 4096 |"),
        "docs/bundle.md gives what credlint enforces"
    );
}

/// The default cache lives at the project's root, not in whatever subfolder credlint runs from:
/// beside the credlint.toml in use, else at the top of the git work tree.
#[test]
fn the_default_cache_sits_at_the_repository_or_configuration_root() {
    let dir = common::temp_dir("cache-root");
    let repo = dir.join("repo");
    let sub = repo.join("rendered/prod");
    std::fs::create_dir_all(&sub).unwrap();
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&repo)
        .status();
    if !git.is_ok_and(|s| s.success()) {
        std::fs::create_dir_all(repo.join(".git")).unwrap();
    }
    std::fs::copy(
        common::root().join("fixtures/clean/cache.yaml"),
        sub.join("cache.yaml"),
    )
    .unwrap();
    let run = |at: &std::path::Path| {
        let out = common::command()
            .env_remove("CREDLINT_CACHE_DIR")
            .env("XDG_STATE_HOME", dir.join("state"))
            .args(["check", "."])
            .current_dir(at)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    };
    run(&sub);
    assert!(
        repo.join(".credlint_cache").is_dir(),
        "at the work tree's top"
    );
    assert!(
        !sub.join(".credlint_cache").exists(),
        "not in the subfolder"
    );
    std::fs::write(repo.join("rendered/credlint.toml"), "fail-on = \"error\"\n").unwrap();
    run(&sub);
    assert!(
        repo.join("rendered/.credlint_cache").is_dir(),
        "beside the credlint.toml in use"
    );
}
