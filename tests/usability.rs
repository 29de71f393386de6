//! What a user meets day to day (issue 17): findings attributed to their object, the pragma
//! rule's scope, output flags, colour and width, Helm sources, the config schema, messages.

mod common;

use common::{credlint, credlint_in, json, root, stderr, stdout};

const PRAGMA_IN_PLAN: &str = "fixtures/pragma-misplaced/bad-plan-line.yaml";
const UNRELATED: &str = "fixtures/pragma-misplaced/good-unrelated-file.yaml";

#[test]
fn a_pragma_finding_belongs_to_the_object_and_bundle_it_stands_in() {
    let out = credlint(&["check", "--no-config", PRAGMA_IN_PLAN, "--format", "json"]);
    let report = json(&out);
    let finding = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "pragma-misplaced")
        .expect("the pragma is reported");
    assert_eq!(finding["object"]["kind"], "ConfigMap", "{finding}");
    assert_eq!(finding["object"]["name"], "shop-sessions-credentials");
    assert_eq!(finding["bundle"], "shop/shop-sessions");
}

#[test]
fn an_ignore_on_the_configmap_accepts_its_pragma_finding() {
    let dir = common::temp_dir("usability-pragma-ignore");
    let text = std::fs::read_to_string(root().join(PRAGMA_IN_PLAN)).unwrap();
    let annotated = text.replacen(
        "  name: shop-sessions-credentials\n  namespace: shop\n  annotations:\n    argocd.argoproj.io/hook: PreSync\n    argocd.argoproj.io/sync-wave: \"0\"\n    argocd.argoproj.io/hook-delete-policy: BeforeHookCreation\ndata:",
        "  name: shop-sessions-credentials\n  namespace: shop\n  annotations:\n    credlint.io/ignore: \"pragma-misplaced: the note is reviewed (SEC-1)\"\n    argocd.argoproj.io/hook: PreSync\n    argocd.argoproj.io/sync-wave: \"0\"\n    argocd.argoproj.io/hook-delete-policy: BeforeHookCreation\ndata:",
        1,
    );
    assert_ne!(annotated, text, "the ConfigMap was annotated");
    std::fs::write(dir.join("bundle.yaml"), annotated).unwrap();
    let out = credlint_in(
        &dir,
        &["check", "--no-config", "bundle.yaml", "--format", "json"],
    );
    let report = json(&out);
    let findings = report["findings"].as_array().unwrap();
    assert!(
        findings.iter().all(|f| f["rule"] != "ignore-unused"),
        "the annotation is used: {report}"
    );
    let pragma = findings
        .iter()
        .find(|f| f["rule"] == "pragma-misplaced")
        .unwrap();
    assert_eq!(
        pragma["suppressed"]["reason"],
        "the note is reviewed (SEC-1)"
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn pragmas_are_judged_in_bundle_files_unless_the_scope_is_all() {
    let out = credlint(&["check", "--no-config", UNRELATED, "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert_eq!(json(&out)["findings"], serde_json::json!([]));

    let dir = common::temp_dir("usability-pragma-scope");
    std::fs::copy(root().join(UNRELATED), dir.join("values.yaml")).unwrap();
    std::fs::write(
        dir.join("credlint.toml"),
        "[rules.pragma-misplaced]\nscope = \"all\"\n",
    )
    .unwrap();
    let out = credlint_in(&dir, &["check", "values.yaml", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report = json(&out);
    assert_eq!(report["findings"][0]["rule"], "pragma-misplaced");
    assert_eq!(report["findings"][0]["line"], 9);
    assert_eq!(report["findings"][0]["object"]["kind"], "ConfigMap");
    assert_eq!(report["findings"][0]["bundle"], serde_json::Value::Null);

    std::fs::write(
        dir.join("credlint.toml"),
        "[rules.pragma-misplaced]\nscope = \"everywhere\"\n",
    )
    .unwrap();
    let out = credlint_in(&dir, &["check", "values.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("credlint.toml:2: `scope` must be \"bundles\" or \"all\""),
        "{}",
        stderr(&out)
    );
    std::fs::write(
        dir.join("credlint.toml"),
        "[rules.job-ttl]\nscope = \"all\"\n",
    )
    .unwrap();
    let out = credlint_in(&dir, &["check", "values.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("takes no settings"),
        "{}",
        stderr(&out)
    );
}

const IMAGE: &str = "registry.example/platform/credentials:1.5.0@sha256:1111111111111111111111111111111111111111111111111111111111111111";

#[test]
fn policies_read_credlint_toml_as_check_does() {
    let dir = common::temp_dir("usability-policies-config");
    std::fs::write(
        dir.join("credlint.toml"),
        format!(
            "credentials-image = \"{IMAGE}\"\n[rules]\nignore = [\"job-ttl\"]\n\
             [rules.severity]\nrole-wildcard = \"warning\"\n"
        ),
    )
    .unwrap();
    let out = credlint_in(&dir, &["policies"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        !text.contains("name: job-ttl\n"),
        "an ignored rule has no policy"
    );
    assert!(text.contains("name: job-seccomp\n"));
    assert!(
        text.contains(&format!("'{IMAGE}'")),
        "the file's image is baked in"
    );
    let wildcard = text
        .split("\n---\n")
        .find(|d| d.contains("\n  name: role-wildcard\n"))
        .unwrap();
    assert!(
        wildcard.contains("validationActions: [Warn, Audit]\n"),
        "{wildcard}"
    );
    let without = stdout(&credlint_in(&dir, &["policies", "--no-config"]));
    assert!(without.contains("name: job-ttl\n"));
}

#[test]
fn policies_check_prints_the_command_that_regenerates_what_it_compared() {
    let dir = common::temp_dir("usability-policies-check");
    let check = [
        "policies",
        "--check",
        "--out",
        "my policies",
        "--flavor",
        "vap",
        "--audit",
    ];
    let out = credlint_in(&dir, &check);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    let command = err
        .lines()
        .find_map(|l| l.split("run `").nth(1))
        .and_then(|rest| rest.strip_suffix('`'))
        .unwrap_or_else(|| panic!("{err}"));
    assert_eq!(
        command,
        "credlint policies --out 'my policies' --flavor vap --audit"
    );
    // Following the advice makes the check pass.
    let out = credlint_in(
        &dir,
        &[
            "policies",
            "--out",
            "my policies",
            "--flavor",
            "vap",
            "--audit",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = credlint_in(&dir, &check);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

const DEMO: &str = "fixtures/demo/broken.yaml";

fn run_env(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut command = common::command();
    command.args(args);
    command.envs(env.iter().copied());
    command.output().unwrap()
}

#[test]
fn colour_follows_the_flag_and_the_environment() {
    let coloured = |args: &[&str], env: &[(&str, &str)]| {
        let out = run_env(&[&["check", "--no-config", DEMO][..], args].concat(), env);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        stdout(&out).contains("\u{1b}[")
    };
    assert!(!coloured(&[], &[]), "a pipe gets no colour");
    assert!(coloured(&[], &[("FORCE_COLOR", "1")]));
    assert!(coloured(&[], &[("CLICOLOR_FORCE", "1")]));
    assert!(!coloured(&[], &[("CLICOLOR_FORCE", "0")]));
    assert!(!coloured(&[], &[("FORCE_COLOR", "1"), ("NO_COLOR", "1")]));
    assert!(
        coloured(&[], &[("FORCE_COLOR", "1"), ("NO_COLOR", "")]),
        "an empty NO_COLOR is unset"
    );
    assert!(coloured(&["--color", "always"], &[]));
    assert!(coloured(&["--color", "always"], &[("NO_COLOR", "1")]));
    assert!(!coloured(&["--color", "never"], &[("FORCE_COLOR", "1")]));
}

/// A rule's header in the text report: its id and the address of its entry.
fn is_rule_header(line: &str) -> bool {
    let id = line.split(' ').next().unwrap_or_default();
    line == format!(
        "{id} ({}/blob/main/docs/rules.md#{id})",
        env!("CARGO_PKG_REPOSITORY")
    )
}

#[test]
fn the_text_report_wraps_at_columns_and_shows_the_real_column() {
    let out = run_env(&["check", "--no-config", DEMO], &[("COLUMNS", "60")]);
    let text = stdout(&out);
    assert!(text.contains("[fixtures/demo/broken.yaml:29:18]"), "{text}");
    for line in text.lines() {
        // Source lines and the labels under them are quoted whole at their columns, and a
        // rule's address after its id is not broken; the messages and help around them are
        // wrapped.
        let quoted = line.trim_start().starts_with(|c: char| c.is_ascii_digit())
            || line.contains('·')
            || line.contains("╭─[")
            || is_rule_header(line);
        if !quoted {
            assert!(line.chars().count() <= 60, "wider than 60: {line:?}");
        }
    }
    let wide = run_env(&["check", "--no-config", DEMO], &[]);
    assert!(
        stdout(&wide).contains(
            "  × Role grants `list`. The credentials Role may only create, get, patch and delete (ADR-072 point 5).\n"
        ),
        "into a pipe a message stays on one line: {}",
        stdout(&wide)
    );
}

#[test]
fn several_reports_in_one_run_and_the_output_flags() {
    let dir = common::temp_dir("usability-outputs");
    let sarif = dir.join("credlint.sarif");
    let sarif_arg = sarif.to_string_lossy().into_owned();
    let out = credlint(&[
        "check",
        "--no-config",
        DEMO,
        "--format",
        "sarif",
        "--output-file",
        &sarif_arg,
        "--format",
        "concise",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let concise = stdout(&out);
    assert!(
        concise.starts_with(
            "fixtures/demo/broken.yaml:29:18: error role-forbidden-verb: Role grants `list`"
        ),
        "{concise}"
    );
    assert_eq!(
        concise.lines().count(),
        7,
        "six findings and the summary: {concise}"
    );
    let log: serde_json::Value = serde_json::from_slice(&std::fs::read(&sarif).unwrap()).unwrap();
    assert_eq!(log["runs"][0]["results"].as_array().unwrap().len(), 6);

    let quiet = credlint(&[
        "check",
        "--no-config",
        DEMO,
        "--format",
        "concise",
        "--quiet",
    ]);
    assert_eq!(stdout(&quiet).lines().count(), 6, "no summary line");
    let exit_zero = credlint(&["check", "--no-config", DEMO, "--exit-zero", "-q"]);
    assert_eq!(exit_zero.status.code(), Some(0));
    let missing = credlint(&["check", "--no-config", DEMO, "nope.yaml", "--exit-zero"]);
    assert_eq!(
        missing.status.code(),
        Some(2),
        "--exit-zero does not hide a failed run"
    );

    let stats = credlint(&[
        "check",
        "--no-config",
        "fixtures/role-forbidden-verb",
        "--statistics",
    ]);
    let table = stdout(&stats);
    let counts: Vec<usize> = table
        .lines()
        .filter(|l| !l.contains(" errors, "))
        .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
        .collect();
    assert!(
        counts.windows(2).all(|w| w[0] >= w[1]),
        "most first: {table}"
    );
    assert!(table.contains("  role-forbidden-verb  error  "), "{table}");
    let stats = credlint(&[
        "check",
        "--no-config",
        "fixtures/role-forbidden-verb",
        "--statistics",
        "--format",
        "json",
    ]);
    let rows = json(&stats);
    let full = json(&credlint(&[
        "check",
        "--no-config",
        "fixtures/role-forbidden-verb",
        "--format",
        "json",
    ]));
    let counted: u64 = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["count"].as_u64().unwrap())
        .sum();
    let unsuppressed = full["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f.get("suppressed").is_none())
        .count() as u64;
    assert_eq!(counted, unsuppressed);

    let clash = credlint(&[
        "check",
        "--no-config",
        DEMO,
        "--format",
        "json",
        "--format",
        "sarif",
    ]);
    assert_eq!(clash.status.code(), Some(2));
    assert!(
        stderr(&clash).contains("standard output"),
        "{}",
        stderr(&clash)
    );
}

/// fixtures/demo/broken.yaml as `helm template` writes it: each document after `---` and a
/// `# Source: CHART/templates/FILE` line, one template per kind.
fn helm_rendered() -> String {
    let text = std::fs::read_to_string(root().join(DEMO)).unwrap();
    let mut out = String::new();
    for document in text.split("\n---\n") {
        let kind = document
            .lines()
            .find_map(|l| l.strip_prefix("kind: "))
            .unwrap()
            .to_lowercase();
        let body = document.trim_start_matches("---\n");
        out.push_str(&format!(
            "---\n# Source: shop/templates/{kind}.yaml\n{body}\n"
        ));
    }
    out
}

#[test]
fn findings_name_the_helm_template_of_their_document() {
    let dir = common::temp_dir("usability-helm");
    std::fs::write(dir.join("rendered.yaml"), helm_rendered()).unwrap();
    let json_out = credlint_in(
        &dir,
        &["check", "--no-config", "rendered.yaml", "--format", "json"],
    );
    let report = json(&json_out);
    let findings = report["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 6, "{report}");
    for f in findings {
        let kind = f["object"]["kind"].as_str().unwrap().to_lowercase();
        assert_eq!(f["source"], format!("shop/templates/{kind}.yaml"), "{f}");
    }
    let sarif = json(&credlint_in(
        &dir,
        &["check", "--no-config", "rendered.yaml", "--format", "sarif"],
    ));
    let result = &sarif["runs"][0]["results"][0];
    assert!(
        result["message"]["text"]
            .as_str()
            .unwrap()
            .ends_with("(from the Helm template shop/templates/role.yaml)"),
        "{result}"
    );
    assert_eq!(result["properties"]["source"], "shop/templates/role.yaml");
    let text = stdout(&credlint_in(
        &dir,
        &["check", "--no-config", "rendered.yaml"],
    ));
    assert!(
        text.contains("  from the Helm template shop/templates/job.yaml\n"),
        "{text}"
    );
    let concise = stdout(&credlint_in(
        &dir,
        &[
            "check",
            "--no-config",
            "rendered.yaml",
            "--format",
            "concise",
        ],
    ));
    assert!(
        concise
            .lines()
            .next()
            .unwrap()
            .ends_with("(from shop/templates/role.yaml)"),
        "{concise}"
    );
    // Without the comments nothing is claimed.
    let plain = json(&credlint(&[
        "check",
        "--no-config",
        DEMO,
        "--format",
        "json",
    ]));
    assert!(
        plain["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f.get("source").is_none())
    );
}

#[test]
fn per_path_entries_accept_findings_by_glob_with_their_reason() {
    let dir = common::temp_dir("usability-per-path");
    std::fs::create_dir_all(dir.join("charts/legacy/templates")).unwrap();
    std::fs::create_dir_all(dir.join("rendered")).unwrap();
    std::fs::copy(
        root().join(DEMO),
        dir.join("charts/legacy/templates/bundle.yaml"),
    )
    .unwrap();
    std::fs::copy(root().join(DEMO), dir.join("rendered/bundle.yaml")).unwrap();
    std::fs::write(
        dir.join("credlint.toml"),
        "[rules]\nignore = [\"schema\"]\n\n[[per-path]]\npaths = [\"charts/legacy/**\"]\n\
         ignore = [\"job-image-pinned\", \"job-name-hash\"]\nreason = \"retired in Q3 (PLAT-9)\"\n",
    )
    .unwrap();
    let out = credlint_in(&dir, &["check", ".", "--format", "json"]);
    let report = json(&out);
    let findings = report["findings"].as_array().unwrap();
    let accepted: Vec<&serde_json::Value> = findings
        .iter()
        .filter(|f| f.get("suppressed").is_some())
        .collect();
    assert_eq!(accepted.len(), 2, "{report}");
    for f in &accepted {
        assert!(
            f["file"].as_str().unwrap().contains("charts/legacy/"),
            "{f}"
        );
        assert_eq!(f["suppressed"]["reason"], "retired in Q3 (PLAT-9)");
        assert_eq!(f["suppressed"]["file"], "credlint.toml");
        assert_eq!(f["suppressed"]["line"], 4);
    }
    assert!(
        findings
            .iter()
            .any(|f| f["rule"] == "job-image-pinned" && f.get("suppressed").is_none()),
        "rendered/ is not matched"
    );
    let text = stdout(&credlint_in(&dir, &["check", ".", "--show-suppressed"]));
    assert!(
        text.contains("2 findings suppressed by [[per-path]]:"),
        "{text}"
    );
    assert!(
        text.contains("\"retired in Q3 (PLAT-9)\" ([[per-path]] at credlint.toml:4)"),
        "{text}"
    );

    std::fs::write(
        dir.join("credlint.toml"),
        "[[per-path]]\npaths = [\"charts/[\"]\nignore = [\"job-ttl\"]\n",
    )
    .unwrap();
    let out = credlint_in(&dir, &["check", "."]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("credlint.toml:2: `charts/[` is not a glob"),
        "{err}"
    );
    assert!(err.contains("a [[per-path]] entry needs reason"), "{err}");
}

#[test]
fn an_unpinned_or_malformed_credentials_image_is_refused_up_front() {
    for image in [
        "registry.example/credentials:1.5",
        "x@sha256:abc",
        "@sha256:0000",
    ] {
        let out = credlint(&["check", "--no-config", DEMO, "--credentials-image", image]);
        assert_eq!(out.status.code(), Some(2), "{image}");
        assert!(stdout(&out).is_empty());
        assert!(
            stderr(&out).contains("--credentials-image must be"),
            "{}",
            stderr(&out)
        );
        let out = credlint(&["policies", "--no-config", "--credentials-image", image]);
        assert_eq!(out.status.code(), Some(2), "{image}");
    }
}

#[test]
fn a_generate_name_job_is_told_to_take_its_name() {
    let dir = common::temp_dir("usability-generate-name");
    let text = std::fs::read_to_string(root().join("fixtures/clean/cache.yaml")).unwrap();
    let renamed = text.replacen(
        "  name: shop-sessions-credentials-dab36b97\n",
        "  generateName: shop-sessions-credentials-\n",
        1,
    );
    assert_ne!(renamed, text);
    std::fs::write(dir.join("cache.yaml"), renamed).unwrap();
    let report = json(&credlint_in(
        &dir,
        &["check", "--no-config", "cache.yaml", "--format", "json"],
    ));
    let hash = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "job-name-hash")
        .unwrap_or_else(|| panic!("{report}"));
    let message = hash["message"].as_str().unwrap();
    assert!(!message.contains("``"), "{message}");
    assert!(
        message.contains("no `metadata.name`")
            && message.contains("shop-sessions-credentials-dab36b97"),
        "{message}"
    );
    let text = stdout(&credlint_in(&dir, &["check", "--no-config", "cache.yaml"]));
    assert!(text.contains("Job without metadata.name"), "{text}");
}

#[test]
fn usage_messages_say_one_thing_once() {
    let out = credlint(&["check", "--no-config", "no/such/path"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("no/such/path"));

    let out = credlint(&[
        "simulate",
        "--no-config",
        "--timeout",
        "0",
        "fixtures/clean/cache.yaml",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--timeout must be at least 1"),
        "{}",
        stderr(&out)
    );

    let rules = stdout(&credlint(&["rules"]));
    let starts = |column: usize| -> std::collections::BTreeSet<usize> {
        rules
            .lines()
            .map(|l| {
                let mut at = 0;
                let mut seen = 0;
                let mut blank = true;
                for (i, c) in l.char_indices() {
                    if c == ' ' {
                        blank = true;
                    } else if blank {
                        blank = false;
                        if seen == column {
                            at = i;
                            break;
                        }
                        seen += 1;
                    }
                }
                at
            })
            .collect()
    };
    assert_eq!(starts(1).len(), 1, "the severity column lines up:\n{rules}");
    assert_eq!(starts(2).len(), 1, "the scope column lines up:\n{rules}");
}

#[test]
fn shell_completions_offer_the_rule_ids() {
    for shell in ["bash", "zsh", "fish"] {
        let script = stdout(&credlint(&["completions", shell]));
        for rule in ["role-forbidden-verb", "pragma-misplaced", "job-ttl"] {
            assert!(script.contains(rule), "{shell} completes {rule}");
        }
    }
    // Offering ids does not restrict them: a policy id still passes to credlint's own check.
    let out = credlint(&[
        "check",
        "--no-config",
        DEMO,
        "--ignore",
        "policy:*",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
}

#[test]
fn simulate_reports_a_missing_role_name_once_at_the_role_rule() {
    let dir = common::temp_dir("usability-simulate-group");
    let text = std::fs::read_to_string(root().join("fixtures/clean/cache.yaml")).unwrap();
    let broken = text.replacen(
        "    resourceNames: [shop-sessions-0]",
        "    resourceNames: [shop-sessions-1]",
        1,
    );
    assert_ne!(broken, text);
    std::fs::write(dir.join("cache.yaml"), &broken).unwrap();
    let out = credlint_in(
        &dir,
        &[
            "simulate",
            "--no-config",
            "cache.yaml",
            "--format",
            "json",
            "--timeout",
            "5",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report = json(&out);
    let findings = report["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "one cause, one finding: {report}");
    let f = &findings[0];
    assert_eq!(f["rule"], "runtime-unauthorized-request");
    let line = broken
        .lines()
        .position(|l| l == "    resourceNames: [shop-sessions-1]")
        .unwrap()
        + 1;
    assert_eq!(f["line"], line, "at the Role rule that lacks the name: {f}");
    assert_eq!(f["object"]["kind"], "Role");
    let message = f["message"].as_str().unwrap();
    assert!(
        message.contains("`shop-sessions-0` is planned but not among this rule's resourceNames"),
        "{message}"
    );
    assert!(
        message.contains("a-empty-namespace (runs 1, 2)"),
        "{message}"
    );
    assert!(message.contains("runtime-failed"), "{message}");
    assert_eq!(
        f["related"][0]["message"],
        "the program sends the request here"
    );
}

#[test]
fn an_output_file_that_is_one_of_the_inputs_is_refused() {
    let dir = common::temp_dir("usability-output-input");
    let manifest = common::copy_in(DEMO, &dir);
    let before = std::fs::read(&manifest).unwrap();
    std::fs::write(dir.join("credlint.toml"), "fail-on = \"error\"\n").unwrap();
    std::os::unix::fs::symlink("broken.yaml", dir.join("link.sarif")).unwrap();
    std::fs::hard_link(&manifest, dir.join("hard.json")).unwrap();
    for (args, named) in [
        (
            &[
                "check",
                "broken.yaml",
                "--format",
                "json",
                "--output-file",
                "broken.yaml",
            ][..],
            "--output-file broken.yaml is one of the inputs",
        ),
        (
            &[
                "check",
                ".",
                "--format",
                "sarif",
                "--output-file",
                "link.sarif",
            ][..],
            "--output-file link.sarif (the same file as ",
        ),
        (
            &["check", "broken.yaml", "--output-file", "hard.json"][..],
            "--output-file hard.json (the same file as broken.yaml)",
        ),
        (
            &[
                "check",
                "broken.yaml",
                "--format",
                "json",
                "--output-file",
                "credlint.toml",
            ][..],
            "--output-file credlint.toml",
        ),
    ] {
        let out = credlint_in(&dir, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(named), "{args:?}: {}", stderr(&out));
        assert_eq!(std::fs::read(&manifest).unwrap(), before, "{args:?}");
    }
    assert_eq!(
        std::fs::read_to_string(dir.join("credlint.toml")).unwrap(),
        "fail-on = \"error\"\n"
    );
    let out = credlint_in(
        &dir,
        &[
            "check",
            "broken.yaml",
            "--format",
            "json",
            "--output-file",
            "report.json",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        std::fs::read_to_string(dir.join("report.json"))
            .unwrap()
            .contains("role-forbidden-verb")
    );
}

#[test]
fn a_report_file_is_never_wrapped_whatever_columns_says() {
    let dir = common::temp_dir("usability-file-width");
    let file = dir.join("report.txt");
    let file_arg = file.to_string_lossy().into_owned();
    let out = run_env(
        &[
            "check",
            "--no-config",
            DEMO,
            "--format",
            "text",
            "--output-file",
            &file_arg,
            "--format",
            "concise",
        ],
        &[("COLUMNS", "60")],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(
        written.contains(
            "  × Role grants `list`. The credentials Role may only create, get, patch and delete (ADR-072 point 5).\n"
        ),
        "{written}"
    );
    assert!(
        !written.contains('\u{1b}'),
        "a file gets no colour unless forced"
    );
}

#[test]
fn the_text_report_quotes_a_utf16_file_as_it_was_read() {
    let dir = common::temp_dir("usability-utf16");
    // One document: kubectl reads a UTF-16 file as one document (the demo's Role).
    let demo = std::fs::read_to_string(root().join(DEMO)).unwrap();
    let role = demo
        .split("\n---\n")
        .find(|d| d.contains("\nkind: Role\n"))
        .unwrap()
        .to_string()
        + "\n";
    let utf16: Vec<u8> = [0xFF, 0xFE]
        .into_iter()
        .chain(role.encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    std::fs::create_dir_all(dir.join("utf8")).unwrap();
    std::fs::create_dir_all(dir.join("utf16")).unwrap();
    std::fs::write(dir.join("utf8/role.yaml"), &role).unwrap();
    std::fs::write(dir.join("utf16/role.yaml"), &utf16).unwrap();
    let report = |sub: &str| {
        let out = credlint_in(&dir.join(sub), &["check", "--no-config", "role.yaml"]);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        stdout(&out)
    };
    let utf8 = report("utf8");
    assert!(utf8.contains("verbs: [get, list, patch]"), "{utf8}");
    assert_eq!(
        report("utf16"),
        utf8,
        "the UTF-16 file is quoted as its UTF-8 twin"
    );
    // Standard input is decoded the same way.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_credlint"))
        .args(["check", "--no-config", "-"])
        .current_dir(dir.join("utf8"))
        .env_remove("COLUMNS")
        .env_remove("FORCE_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(&utf16).unwrap();
    let piped = stdout(&child.wait_with_output().unwrap());
    assert_eq!(piped, utf8.replace("[role.yaml:", "[-:"), "{piped}");
}

/// A component bundle whose create.py is the reference program with `prefix` run first, and
/// `credlint simulate` on it writing JSON, SARIF and GitHub reports; returns the rendered
/// file's text and the three reports.
fn simulate_prefixed(
    name: &str,
    prefix: &str,
) -> (String, serde_json::Value, serde_json::Value, String) {
    let dir = common::temp_dir(name);
    let script = format!(
        "{prefix}\n{}",
        std::fs::read_to_string(root().join("fixtures/runtime/create.py")).unwrap()
    );
    let spec = credlint::testkit::render::Spec::example("shop", "shop-db", "component", &script);
    let text = spec.render();
    std::fs::write(dir.join("bundle.yaml"), &text).unwrap();
    let out = credlint_in(
        &dir,
        &[
            "simulate",
            "--no-config",
            "bundle.yaml",
            "--timeout",
            "60",
            "--format",
            "json",
            "--output-file",
            "report.json",
            "--format",
            "sarif",
            "--output-file",
            "report.sarif",
            "--format",
            "github",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let read = |file: &str| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(dir.join(file)).unwrap()).unwrap()
    };
    (
        text,
        read("report.json"),
        read("report.sarif"),
        stdout(&out),
    )
}

/// The prefix's foreign write: a POST of a Secret the plan does not name, sent through urllib
/// from a line of its own; `before` runs first (a forgery of the origin, say).
fn foreign_write(before: &str) -> String {
    format!(
        "import json as _j, os as _o, ssl as _s, urllib.request as _u, http.client as _h\n\
         _sa = '/var/run/secrets/kubernetes.io/serviceaccount/'\n\
         _c = _s.create_default_context(cafile=_sa + 'ca.crt')\n\
         _t = open(_sa + 'token').read()\n\
         _b = _j.dumps({{'apiVersion': 'v1', 'kind': 'Secret', 'metadata': {{'name': 'not-planned'}}}}).encode()\n\
         _e = _o.environ\n\
         _r = _u.Request('https://%s:%s/api/v1/namespaces/shop/secrets' % (_e['KUBERNETES_SERVICE_HOST'], _e['KUBERNETES_SERVICE_PORT']),\n\
         \x20   data=_b, method='POST', headers={{'Authorization': 'Bearer ' + _t, 'Content-Type': 'application/json'}})\n\
         {before}\
         try:\n\
         \x20   _u.urlopen(_r, context=_c).read()  # FOREIGN\n\
         except Exception:\n\
         \x20   pass\n"
    )
}

/// (line, column) of `needle` in `text`, 1-based.
fn place_of(text: &str, needle: &str) -> (usize, usize) {
    let (i, line) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains(needle))
        .unwrap_or_else(|| panic!("{needle:?} not in the render"));
    (i + 1, line.find(needle).unwrap() + 1)
}

#[test]
fn simulate_places_a_finding_at_the_program_line_that_sent_the_request() {
    let (text, report, sarif, github) =
        simulate_prefixed("usability-simulate-origin", &foreign_write(""));
    let (line, column) = place_of(&text, "_u.urlopen(_r, context=_c).read()  # FOREIGN");
    let findings = report["findings"].as_array().unwrap();
    let f = findings
        .iter()
        .find(|f| f["rule"] == "runtime-foreign-write")
        .unwrap_or_else(|| panic!("{report}"));
    assert_eq!(
        (f["line"].clone(), f["column"].clone()),
        (line.into(), column.into()),
        "{f}"
    );
    assert_eq!(f["object"]["kind"], "ConfigMap");
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    let r = results
        .iter()
        .find(|r| r["ruleId"] == "runtime-foreign-write")
        .unwrap_or_else(|| panic!("{sarif}"));
    let region = &r["locations"][0]["physicalLocation"]["region"];
    assert_eq!(
        (region["startLine"].clone(), region["startColumn"].clone()),
        (line.into(), column.into()),
        "{r}"
    );
    let annotation = github
        .lines()
        .find(|l| l.contains("runtime-foreign-write"))
        .unwrap_or_else(|| panic!("{github}"));
    assert!(
        annotation.contains(&format!("line={line},")),
        "{annotation}"
    );
    // Nothing else: the reference program after the prefix passes.
    assert_eq!(findings.len(), 1, "{report}");
}

#[test]
fn a_forged_origin_never_moves_a_finding_out_of_the_program() {
    // The program drops the hook's header and sends its own: a line past the program's end,
    // then line 0. Either way the finding is on the `create.py:` key.
    for forged in ["99999", "0"] {
        let before = format!(
            "_h.HTTPConnection.endheaders = _h.HTTPConnection.endheaders.__wrapped__\n\
             _r.add_header('X-credlint-origin', '{forged}')\n"
        );
        let (text, report, _, _) =
            simulate_prefixed("usability-simulate-forged", &foreign_write(&before));
        let (key_line, key_column) = place_of(&text, "create.py:");
        let findings = report["findings"].as_array().unwrap();
        let f = findings
            .iter()
            .find(|f| f["rule"] == "runtime-foreign-write")
            .unwrap_or_else(|| panic!("{report}"));
        assert_eq!(
            (f["line"].clone(), f["column"].clone()),
            (key_line.into(), key_column.into()),
            "{forged}: {f}"
        );
    }
}

/// A runtime finding about a planned Secret names the plan entry as its related place, beside
/// the program line it sits at: here a program that overwrites the planned value.
#[test]
fn a_runtime_finding_names_the_plan_entry_of_its_secret() {
    let fixture = "fixtures/runtime-value-rewritten/bad-overwrite-value.yaml";
    let text = std::fs::read_to_string(root().join(fixture)).unwrap();
    let out = credlint_in(
        &root(),
        &[
            "simulate",
            "--no-config",
            "--no-cache",
            "--format",
            "json",
            fixture,
        ],
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let finding = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "runtime-value-rewritten")
        .unwrap_or_else(|| panic!("{report}"));
    let plan_line = text
        .lines()
        .position(|l| l.trim() == "\"name\": \"shop-sessions-app\"")
        .expect("the plan entry")
        + 1;
    let related = finding["related"]
        .as_array()
        .unwrap_or_else(|| panic!("{finding}"));
    assert!(
        related.iter().any(|r| r["line"] == plan_line
            && r["message"]
                .as_str()
                .unwrap()
                .contains("plan.json `secrets[0]`")),
        "{finding}"
    );
    // The finding itself stays at the program line that sent the request.
    assert!(
        text.lines()
            .nth(finding["line"].as_u64().unwrap() as usize - 1)
            .unwrap()
            .contains("urlopen"),
        "{finding}"
    );
}
