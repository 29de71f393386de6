//! The CI formats read back and compared with the JSON findings of the same run: SARIF through
//! an independent SARIF model (serde-sarif), GitHub workflow commands and JUnit XML parsed
//! here. Every finding must land on the same file, line and column in every format.

mod common;
use common::*;

/// A run with a bit of everything: errors, a warning, a related location (duplicate key), a
/// suppressed finding, and a file whose name and finding text hold the characters each format
/// must escape (`,` `:` `%` `<` `&` and a line break).
/// Each test has its own folder (`test`): the tests run in parallel.
/// The folder is removed when the returned guard is dropped, at the end of the test.
fn inputs(test: &str) -> (common::TempDir, Vec<String>) {
    let dir = temp_dir(test);
    let odd = dir.join("odd, name:100%.yaml");
    std::fs::write(
        &odd,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  labels:\n    \"a,b:c%<&>\\nd\": x\n    \"a,b:c%<&>\\nd\": y\n",
    )
    .unwrap();
    let store = dir.join("store.yaml");
    std::fs::write(
        &store,
        "apiVersion: external-secrets.io/v1\nkind: ClusterSecretStore\nmetadata:\n  name: open\nspec:\n  provider: {}\n",
    )
    .unwrap();
    let paths = vec![
        "fixtures/role-forbidden-verb/bad-list-watch.yaml".to_string(),
        "fixtures/yaml-duplicate-key/bad-annotation.yaml".to_string(),
        "fixtures/ignore-invalid/good-with-reason.yaml".to_string(),
        "fixtures/clean/split".to_string(),
        odd.to_string_lossy().into_owned(),
        store.to_string_lossy().into_owned(),
    ];
    (dir, paths)
}

fn run(paths: &[String], format: &str) -> (Option<i32>, Vec<u8>) {
    let mut args = vec!["check", "--format", format];
    args.extend(paths.iter().map(String::as_str));
    let out = credlint(&args);
    (out.status.code(), out.stdout)
}

fn json_findings(paths: &[String]) -> Vec<serde_json::Value> {
    let (code, stdout) = run(paths, "json");
    assert_eq!(code, Some(1));
    let report: serde_json::Value = serde_json::from_slice(&stdout).unwrap();
    let findings = report["findings"].as_array().unwrap().clone();
    assert!(findings.iter().any(|f| f["severity"] == "warning"));
    assert!(findings.iter().any(|f| f.get("related").is_some()));
    assert!(findings.iter().any(|f| f.get("suppressed").is_some()));
    assert!(
        findings
            .iter()
            .any(|f| f["message"].as_str().unwrap().contains('\n'))
    );
    findings
}

fn position(f: &serde_json::Value) -> (String, u64, u64, u64, u64) {
    (
        f["file"].as_str().unwrap().to_string(),
        f["line"].as_u64().unwrap(),
        f["column"].as_u64().unwrap(),
        f["end_line"].as_u64().unwrap(),
        f["end_column"].as_u64().unwrap(),
    )
}

/// The inverse of the SARIF writer's percent-encoding of paths.
fn uri_to_path(uri: &str) -> String {
    let path = uri.strip_prefix("file://").unwrap_or(uri);
    let bytes = path.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            out.push(u8::from_str_radix(&path[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

#[test]
fn sarif_results_match_the_json_findings() {
    use serde_sarif::sarif::Sarif;
    let (_dir, paths) = inputs("sarif");
    let findings = json_findings(&paths);
    let (code, stdout) = run(&paths, "sarif");
    assert_eq!(code, Some(1));
    let raw: serde_json::Value = serde_json::from_slice(&stdout).unwrap();
    assert_eq!(raw["version"], "2.1.0");
    let sarif: Sarif = serde_json::from_slice(&stdout).expect("valid SARIF 2.1.0");
    assert_eq!(sarif.runs.len(), 1);
    let run = &sarif.runs[0];
    assert_eq!(
        run.column_kind,
        Some(serde_json::json!("unicodeCodePoints"))
    );
    let driver = &run.tool.driver;
    assert_eq!(driver.name, "credlint");
    assert_eq!(driver.version.as_deref(), Some(env!("CARGO_PKG_VERSION")));
    if let Some(uri) = &driver.information_uri {
        assert!(uri.starts_with("https://"), "{uri}");
    }
    let rules = driver.rules.as_ref().unwrap();
    let catalog = credlint::lint::catalog::Catalog::get();
    assert_eq!(rules.len(), catalog.rules.len());
    for (rule, entry) in catalog.rules.iter().zip(rules) {
        assert_eq!(entry.id, rule.id);
        assert_eq!(entry.short_description.as_ref().unwrap().text, rule.title);
        assert_eq!(
            entry.full_description.as_ref().unwrap().text,
            rule.rationale
        );
        assert_eq!(entry.help.as_ref().unwrap().text, rule.remediation);
        let level = raw["runs"][0]["tool"]["driver"]["rules"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == rule.id.as_str())
            .unwrap()["defaultConfiguration"]["level"]
            .clone();
        assert_eq!(level, rule.severity.as_str());
    }

    let results = run.results.as_ref().unwrap();
    assert_eq!(results.len(), findings.len());
    for (f, r) in findings.iter().zip(results) {
        let id = r.rule_id.as_deref().unwrap();
        assert_eq!(id, f["rule"]);
        let index = r.rule_index.unwrap() as usize;
        assert_eq!(rules[index].id, id, "ruleIndex points at the rule");
        assert_eq!(r.message.text.as_deref(), f["message"].as_str());
        let raw_level = serde_json::to_value(r.level.as_ref().unwrap()).unwrap();
        assert_eq!(raw_level, f["severity"]);
        let location = &r.locations.as_ref().unwrap()[0];
        let physical = location.physical_location.as_ref().unwrap();
        let uri = physical
            .artifact_location
            .as_ref()
            .unwrap()
            .uri
            .as_deref()
            .unwrap();
        let region = physical.region.as_ref().unwrap();
        assert_eq!(
            (
                uri_to_path(uri),
                region.start_line.unwrap() as u64,
                region.start_column.unwrap() as u64,
                region.end_line.unwrap() as u64,
                region.end_column.unwrap() as u64
            ),
            position(f)
        );
        let related = r.related_locations.as_deref().unwrap_or_default();
        let expected = f
            .get("related")
            .and_then(|r| r.as_array())
            .cloned()
            .unwrap_or_default();
        assert_eq!(related.len(), expected.len());
        for (l, e) in related.iter().zip(&expected) {
            let region = l
                .physical_location
                .as_ref()
                .unwrap()
                .region
                .as_ref()
                .unwrap();
            assert_eq!(
                region.start_line.unwrap() as u64,
                e["line"].as_u64().unwrap()
            );
            assert_eq!(
                l.message.as_ref().unwrap().text.as_deref(),
                e["message"].as_str()
            );
        }
        match f.get("suppressed") {
            Some(s) => {
                let suppressions = r.suppressions.as_ref().unwrap();
                assert_eq!(suppressions[0].kind, serde_json::json!("inSource"));
                assert_eq!(
                    suppressions[0].justification.as_deref(),
                    s["reason"].as_str()
                );
                let at = suppressions[0].location.as_ref().unwrap();
                let region = at
                    .physical_location
                    .as_ref()
                    .unwrap()
                    .region
                    .as_ref()
                    .unwrap();
                assert_eq!(
                    region.start_line.unwrap() as u64,
                    s["line"].as_u64().unwrap()
                );
            }
            None => assert!(r.suppressions.is_none()),
        }
    }
}

/// One `::error`/`::warning` command, decoded as the runner decodes it.
#[derive(Debug, PartialEq)]
struct Annotation {
    level: String,
    properties: Vec<(String, String)>,
    message: String,
}

fn unescape(text: &str) -> String {
    text.replace("%0D", "\r")
        .replace("%0A", "\n")
        .replace("%3A", ":")
        .replace("%2C", ",")
        .replace("%25", "%")
}

fn annotations(stdout: &str) -> Vec<Annotation> {
    stdout
        .lines()
        .filter_map(|line| line.strip_prefix("::"))
        .map(|line| {
            let (head, message) = line.split_once("::").unwrap();
            let (level, props) = head.split_once(' ').unwrap();
            let properties = props
                .split(',')
                .map(|p| {
                    let (k, v) = p.split_once('=').unwrap();
                    (k.to_string(), unescape(v))
                })
                .collect();
            Annotation {
                level: level.to_string(),
                properties,
                message: unescape(message),
            }
        })
        .collect()
}

#[test]
fn github_annotations_land_on_the_json_findings_lines() {
    let (_dir, paths) = inputs("github");
    let findings: Vec<serde_json::Value> = json_findings(&paths)
        .into_iter()
        .filter(|f| f.get("suppressed").is_none())
        .collect();
    let (code, stdout) = run(&paths, "github");
    assert_eq!(code, Some(1));
    let stdout = String::from_utf8(stdout).unwrap();
    for line in stdout.lines().filter(|l| l.starts_with("::")) {
        assert!(!line.contains('\r'), "one command per line");
    }
    let got = annotations(&stdout);
    assert_eq!(got.len(), findings.len(), "{stdout}");
    for (f, a) in findings.iter().zip(&got) {
        let (file, line, col, end_line, end_col) = position(f);
        assert_eq!(a.level, f["severity"].as_str().unwrap());
        assert_eq!(
            a.properties,
            [
                ("file".to_string(), file),
                ("line".to_string(), line.to_string()),
                ("col".to_string(), col.to_string()),
                ("endLine".to_string(), end_line.to_string()),
                ("endColumn".to_string(), end_col.to_string()),
                ("title".to_string(), f["rule"].as_str().unwrap().to_string()),
            ]
        );
        assert_eq!(a.message, f["message"].as_str().unwrap());
    }
    // The annotation on the duplicate key of the odd file: escaped, and on line 7.
    let odd = got
        .iter()
        .find(|a| a.properties[0].1.ends_with("odd, name:100%.yaml"))
        .expect("the odd file is annotated");
    assert_eq!(odd.properties[1].1, "7");
    assert!(odd.message.contains("a,b:c%<&>\nd"), "{}", odd.message);
    assert!(stdout.contains("odd%2C name%3A100%25.yaml"), "{stdout}");
    assert!(stdout.lines().last().unwrap().starts_with("credlint: "));
}

#[test]
fn junit_cases_carry_the_json_findings() {
    let (_dir, paths) = inputs("junit");
    let findings = json_findings(&paths);
    let (code, stdout) = run(&paths, "junit");
    assert_eq!(code, Some(1));
    let xml = String::from_utf8(stdout).unwrap();
    let doc = roxmltree::Document::parse(&xml).expect("well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    let suites: Vec<_> = root
        .children()
        .filter(|n| n.has_tag_name("testsuite"))
        .collect();
    let names: Vec<&str> = suites
        .iter()
        .map(|s| s.attribute("name").unwrap())
        .collect();
    assert!(names.contains(&"shop/shop-sessions"), "{names:?}");
    assert!(names.contains(&"(outside bundles)"), "{names:?}");
    // The clean split bundle is a suite of passing cases, one per rule.
    let clean = suites
        .iter()
        .find(|s| {
            s.attribute("failures") == Some("0") && s.attribute("name") != Some("(outside bundles)")
        })
        .expect("a clean bundle");
    let cases: Vec<_> = clean
        .children()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    assert!(cases.iter().any(|c| c.attribute("name") == Some("job-ttl")));
    assert!(cases.iter().all(|c| c.children().all(|n| !n.is_element())));

    let mut failures = 0;
    for suite in &suites {
        let mut counted = 0;
        for case in suite.children().filter(|n| n.has_tag_name("testcase")) {
            assert_eq!(case.attribute("classname"), suite.attribute("name"));
            if case.children().any(|n| n.has_tag_name("failure")) {
                counted += 1;
            }
        }
        assert_eq!(
            suite.attribute("failures"),
            Some(counted.to_string().as_str())
        );
        failures += counted;
    }
    assert_eq!(
        root.attribute("failures"),
        Some(failures.to_string().as_str())
    );

    for f in &findings {
        let suite = f["bundle"].as_str().unwrap_or("(outside bundles)");
        let suite = suites
            .iter()
            .find(|s| s.attribute("name") == Some(suite))
            .unwrap_or_else(|| panic!("no suite {suite}"));
        let case = suite
            .children()
            .find(|c| c.has_tag_name("testcase") && c.attribute("name") == f["rule"].as_str())
            .unwrap_or_else(|| panic!("no case {} in {suite:?}", f["rule"]));
        let (file, line, col, _, _) = position(f);
        let expected = format!(
            "{} {file}:{line}:{col}: {}",
            f["severity"].as_str().unwrap(),
            f["message"].as_str().unwrap()
        );
        let element = if f.get("suppressed").is_some() {
            assert!(case.children().any(|n| n.has_tag_name("skipped")));
            "system-out"
        } else if f["severity"] == "error" {
            "failure"
        } else {
            "system-out"
        };
        let body = case
            .children()
            .find(|n| n.has_tag_name(element))
            .unwrap_or_else(|| panic!("{case:?} has no {element}"))
            .text()
            .unwrap_or_default();
        assert!(body.contains(&expected), "{expected:?} not in {body:?}");
    }
}
