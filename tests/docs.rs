//! Derived documentation is checked in and kept current: `docs/rules.md` is what
//! `credlint rules --format markdown` prints. `UPDATE_DOCS=1 cargo test --test docs` rewrites it.

mod common;

use std::path::Path;

#[test]
fn the_rule_reference_is_current_and_linked_from_the_readme() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = root.join("docs/rules.md");
    let generated = credlint::cli::docs::markdown(credlint::lint::catalog::Catalog::get());
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::create_dir_all(root.join("docs")).unwrap();
        std::fs::write(&path, &generated).unwrap();
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == generated,
        "docs/rules.md is stale: run `UPDATE_DOCS=1 cargo test --test docs` \
         (or `cargo run -- rules --format markdown > docs/rules.md`)"
    );
    for rule in &credlint::lint::catalog::Catalog::get().rules {
        assert!(
            on_disk.contains(&format!("\n## {}\n", rule.id)),
            "{} has no section",
            rule.id
        );
    }
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(
        readme.contains("](docs/rules.md)"),
        "the README links the rule reference"
    );
}

/// Every rule that cites the bundle contract cites a section docs/bundle.md has, and the
/// remediation texts that name bundle.md name the shipped file.
#[test]
fn rules_cite_sections_of_the_shipped_bundle_contract() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let contract = std::fs::read_to_string(root.join("docs/bundle.md")).unwrap();
    let mut cited = 0;
    for rule in &credlint::lint::catalog::Catalog::get().rules {
        if let Some(number) = &rule.contract {
            let section = credlint::cli::docs::contract_section(rule)
                .unwrap_or_else(|| panic!("{}: docs/bundle.md has no section {number}", rule.id));
            assert!(contract.contains(&format!("\n## {}\n", section.title)));
            assert!(
                contract.contains(&format!("(#{})", section.anchor)),
                "{}: the table of contents links #{}",
                rule.id,
                section.anchor
            );
            cited += 1;
        }
        for text in [&rule.remediation, &rule.rationale] {
            assert!(
                !text.contains("bundle.md") || text.contains("docs/bundle.md section"),
                "{}: cite the shipped file as `docs/bundle.md section N`",
                rule.id
            );
        }
    }
    assert!(
        cited > 30,
        "the contract rules cite their section ({cited})"
    );
}

/// The README and the docs link only files that are in the repository (or web addresses).
#[test]
fn documentation_links_only_files_in_the_repository() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let link = regex::Regex::new(r"\]\(([^)\s]+)\)").unwrap();
    // The README and every Markdown file under docs/, so a new page is covered as it lands.
    let mut docs = vec!["README.md".to_string()];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".md") {
            docs.push(format!("docs/{name}"));
        }
    }
    docs.sort();
    assert!(docs.len() >= 4, "{docs:?}");
    for doc in &docs {
        let text = std::fs::read_to_string(root.join(doc)).unwrap();
        let base = root.join(doc).parent().unwrap().to_path_buf();
        for m in link.captures_iter(&text) {
            let target = &m[1];
            if target.starts_with("http://")
                || target.starts_with("https://")
                || target.starts_with('#')
            {
                continue;
            }
            let file = target.split('#').next().unwrap();
            let path = base.join(file);
            assert!(
                path.exists(),
                "{doc} links {target}, which is not in the repository"
            );
            let inside = path
                .canonicalize()
                .unwrap()
                .starts_with(root.canonicalize().unwrap());
            assert!(inside, "{doc} links {target}, outside the repository");
        }
    }
}

/// `credlint config-schema` prints the checked-in docs/credlint.schema.json (the test against
/// the parser is beside the generator, in src/cli/config_schema.rs).
#[test]
fn the_config_schema_is_current() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = root.join(credlint::cli::config_schema::PATH);
    let generated = credlint::cli::config_schema::text();
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == generated,
        "docs/credlint.schema.json is stale: run `UPDATE_DOCS=1 cargo test --test docs` (or \
         `cargo run -- config-schema > docs/credlint.schema.json`)"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_credlint"))
        .arg("config-schema")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), generated);
}

/// The flags of each command as `--help` shows them (hidden ones aside), with the values an
/// enumerated flag takes.
fn help_flags(command: &clap::Command) -> Vec<(String, Vec<String>)> {
    command
        .get_arguments()
        .filter(|a| !a.is_hide_set())
        .filter_map(|a| {
            let long = a.get_long()?;
            let values = if a.is_hide_possible_values_set() {
                Vec::new()
            } else {
                a.get_possible_values()
                    .iter()
                    .filter(|v| !v.is_hide_set())
                    .map(|v| v.get_name().to_string())
                    .collect()
            };
            Some((format!("--{long}"), values))
        })
        .filter(|(long, _)| long != "--help")
        .collect()
}

/// A command of the README's synopsis with the flags it names and, for `--flag a|b|c`, the
/// values listed.
type Synopsis = (String, Vec<(String, Vec<String>)>);

/// The README's synopsis: the text block under `## Usage`, one `credlint COMMAND` entry each.
fn readme_synopsis(readme: &str) -> Vec<Synopsis> {
    let usage = readme
        .split("\n## Usage\n")
        .nth(1)
        .expect("a Usage section");
    let block = usage
        .split("```text\n")
        .nth(1)
        .and_then(|b| b.split("\n```").next())
        .expect("a synopsis block");
    let flag =
        regex::Regex::new(r"(--[a-z][a-z0-9-]*)(?: ([a-z][a-z0-9-]*(?:\|[a-z][a-z0-9-]*)+))?")
            .unwrap();
    let mut commands: Vec<Synopsis> = Vec::new();
    for line in block.lines() {
        if let Some(rest) = line.strip_prefix("credlint ") {
            let name = rest.split_whitespace().next().unwrap().to_string();
            commands.push((name, Vec::new()));
        }
        let (_, flags) = commands
            .last_mut()
            .expect("the block starts with a command");
        for m in flag.captures_iter(line) {
            let values: Vec<String> = m
                .get(2)
                .map(|v| v.as_str().split('|').map(str::to_string).collect())
                .unwrap_or_default();
            match flags.iter_mut().find(|(f, _)| *f == m[1]) {
                Some((_, known)) if known.is_empty() => *known = values,
                Some(_) => {}
                None => flags.push((m[1].to_string(), values)),
            }
        }
    }
    commands
}

/// `--help` and the usage page agree: docs/usage.md's synopsis names, for each command, exactly
/// the flags its `--help` lists (and the values of the enumerated ones), and every `--flag` the
/// README and the user's pages name anywhere is one the binary has.
#[test]
fn the_usage_page_documents_every_flag_of_the_help_and_no_other() {
    use clap::CommandFactory;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let usage = std::fs::read_to_string(root.join("docs/usage.md")).unwrap();
    let cli = credlint::cli::Cli::command();
    let synopsis = readme_synopsis(&usage);
    let commands: Vec<&clap::Command> = cli.get_subcommands().collect();
    let mut names: Vec<&str> = commands.iter().map(|c| c.get_name()).collect();
    let mut documented: Vec<&str> = synopsis.iter().map(|(n, _)| n.as_str()).collect();
    names.sort_unstable();
    documented.sort_unstable();
    assert_eq!(
        documented, names,
        "docs/usage.md's synopsis lists every command once"
    );
    let mut all = vec!["--help".to_string(), "--version".to_string()];
    for command in &commands {
        let name = command.get_name();
        let (_, documented) = synopsis.iter().find(|(n, _)| n == name).unwrap();
        let help = help_flags(command);
        for (flag, values) in &help {
            let (_, listed) = documented
                .iter()
                .find(|(f, _)| f == flag)
                .unwrap_or_else(|| panic!("docs/usage.md's synopsis of `{name}` lacks {flag}"));
            if !listed.is_empty() {
                assert_eq!(
                    listed, values,
                    "`credlint {name} {flag}`: docs/usage.md's values"
                );
            }
        }
        for (flag, _) in documented {
            assert!(
                help.iter().any(|(f, _)| f == flag),
                "docs/usage.md's synopsis gives `{name}` {flag}, which its --help does not list"
            );
        }
        all.extend(help.into_iter().map(|(f, _)| f));
    }
    // Flags of the other tools the README shows: cargo, the test harness, bench/run.py and
    // bench/compare.py.
    let others = [
        "--release",
        "--test",
        "--example",
        "--nocapture",
        "--test-threads",
        "--path",
        "--locked",
        "--runs",
        "--sizes",
        "--dir",
        "--rounds",
        "--git",
        "--rev",
        "--all-files",
    ];
    let token = regex::Regex::new(r"(^|[^A-Za-z0-9_-])(--[a-z][a-z0-9-]*)").unwrap();
    for page in [
        "README.md",
        "docs/usage.md",
        "docs/ci.md",
        "docs/policies.md",
    ] {
        let text = std::fs::read_to_string(root.join(page)).unwrap();
        for (number, line) in text.lines().enumerate() {
            for m in token.captures_iter(line) {
                let flag = &m[2];
                assert!(
                    all.iter().any(|f| f == flag) || others.contains(&flag),
                    "{page}:{}: {flag} is no flag of credlint's",
                    number + 1
                );
            }
        }
    }
}

/// The example of docs/output.md is what the command it names prints (compared as JSON: the
/// page lays short objects out on one line).
#[test]
fn the_json_example_of_the_output_page_is_real_output() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = std::fs::read_to_string(root.join("docs/output.md")).unwrap();
    let args = [
        "check",
        "--no-config",
        "--format",
        "json",
        "--select",
        "role-forbidden-verb",
        "fixtures/demo/broken.yaml",
    ];
    assert!(
        page.replace('\n', " ")
            .contains(&format!("`credlint {}`", args.join(" "))),
        "docs/output.md names the command of its example"
    );
    let block = page
        .split("```json\n")
        .nth(1)
        .and_then(|b| b.split("\n```").next())
        .expect("a JSON example");
    let shown: serde_json::Value = serde_json::from_str(block).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_credlint"))
        .args(args)
        .current_dir(root)
        .env("CREDLINT_CACHE_DIR", common::cache_dir())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let real: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(shown, real, "docs/output.md's example is stale");
}

/// Each rule's address is `<repository>/blob/main/docs/rules.md#<id>`, with the repository
/// Cargo.toml names, and the anchor is one docs/rules.md has (GitHub makes it from the
/// heading); SARIF's `helpUri` and `credlint explain` give that address.
#[test]
fn rule_urls_point_at_their_entry_in_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let repository = env!("CARGO_PKG_REPOSITORY");
    let host = regex::Regex::new(r"^https://[a-z0-9.-]+/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$").unwrap();
    assert!(host.is_match(repository), "{repository}");
    let reference = std::fs::read_to_string(root.join("docs/rules.md")).unwrap();
    let anchors: Vec<String> = reference
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .map(credlint::cli::docs::anchor)
        .collect();
    let catalog = credlint::lint::catalog::Catalog::get();
    for rule in &catalog.rules {
        let url = rule.doc_url();
        assert_eq!(
            url,
            format!("{repository}/blob/main/docs/rules.md#{}", rule.id)
        );
        let anchor = url.rsplit_once('#').unwrap().1;
        assert!(
            anchors.iter().any(|a| a == anchor),
            "docs/rules.md has no #{anchor}"
        );
    }
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_credlint"))
            .args(args)
            .current_dir(root)
            .env("CREDLINT_CACHE_DIR", common::cache_dir())
            .output()
            .unwrap()
    };
    let sarif: serde_json::Value = serde_json::from_slice(
        &run(&["check", "--no-config", "--format", "sarif", "fixtures/demo"]).stdout,
    )
    .unwrap();
    let driver = &sarif["runs"][0]["tool"]["driver"];
    assert_eq!(driver["informationUri"], repository);
    let rules = driver["rules"].as_array().unwrap();
    assert_eq!(rules.len(), catalog.rules.len());
    for rule in rules {
        let id = rule["id"].as_str().unwrap();
        assert_eq!(
            rule["helpUri"],
            format!("{repository}/blob/main/docs/rules.md#{id}")
        );
    }
    let explained = String::from_utf8(run(&["explain", "role-forbidden-verb"]).stdout).unwrap();
    assert!(
        explained.contains(&format!(
            "docs:     {repository}/blob/main/docs/rules.md#role-forbidden-verb\n"
        )),
        "{explained}"
    );
}

/// Every `$ credlint ...` command shown in a ```console block of the README prints exactly the
/// output shown under it (run from the repository's root, into a pipe: no colour, no wrapping).
#[test]
fn the_readme_shows_real_output() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let mut shown = 0;
    for block in readme.split("```console\n").skip(1) {
        let block = block.split("\n```").next().unwrap();
        let mut lines = block.lines().peekable();
        while let Some(line) = lines.next() {
            let command = line
                .strip_prefix("$ credlint ")
                .unwrap_or_else(|| panic!("a console block opens with `$ credlint`: {line}"));
            let mut expected = String::new();
            while let Some(next) = lines.peek() {
                if next.starts_with("$ ") {
                    break;
                }
                expected.push_str(lines.next().unwrap());
                expected.push('\n');
            }
            let args: Vec<&str> = command.split_whitespace().collect();
            let mut run = common::command();
            run.args(&args).current_dir(root).env("NO_COLOR", "1");
            let out = run.output().unwrap();
            assert_eq!(
                common::stdout(&out),
                expected,
                "README: `credlint {command}` prints otherwise than shown"
            );
            shown += 1;
        }
    }
    assert!(
        shown >= 2,
        "the README shows the demo and the clean run ({shown})"
    );
}
