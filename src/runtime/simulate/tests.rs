//! Simulation tests. Most run the real `python3` against the fake cluster; the server tests
//! call the request handler directly.

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::cluster::{Cluster, PodTemplate, Replacement};
use super::server::{ApiContext, HttpRequest, handle_api, lock};
use super::*;

const NS: &str = "shop";

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn rule(groups: &[&str], resources: &[&str], names: Option<&[&str]>, verbs: &[&str]) -> RoleRule {
    RoleRule {
        api_groups: strings(groups),
        resources: strings(resources),
        resource_names: names.map(strings),
        verbs: strings(verbs),
        non_resource_urls: Vec::new(),
    }
}

/// A plan of `kind` and the Role ADR-072 point 5 derives from it.
struct Case {
    owner: &'static str,
    kind: &'static str,
    secrets: Vec<(&'static str, Vec<(&'static str, u32)>)>,
    retired: Vec<&'static str>,
    pods: Vec<&'static str>,
}

impl Case {
    fn of(kind: &str) -> Case {
        match kind {
            "cache" => Case {
                owner: "shop-sessions",
                kind: "cache",
                secrets: vec![("shop-sessions-app", vec![("password", 32)])],
                retired: vec!["shop-sessions-password"],
                pods: vec!["shop-sessions-0"],
            },
            "broker" => Case {
                owner: "shop-events",
                kind: "broker",
                secrets: vec![
                    ("shop-events-orders", vec![("password", 24)]),
                    ("shop-events-billing", vec![("password", 24)]),
                ],
                retired: vec![
                    "shop-events-orders-password",
                    "shop-events-billing-password",
                ],
                pods: vec!["shop-events-0", "shop-events-1"],
            },
            "bucket" => Case {
                owner: "shop-media",
                kind: "bucket",
                secrets: vec![("shop-media-s3", vec![("accessKey", 20), ("secretKey", 40)])],
                retired: vec!["shop-media-keys"],
                pods: vec![],
            },
            _ => Case {
                owner: "shop-api",
                kind: "component",
                secrets: vec![("shop-api-session", vec![("password", 32), ("username", 16)])],
                retired: vec![],
                pods: vec![],
            },
        }
    }

    fn plan_json(&self) -> String {
        let secrets: Vec<Value> = self
            .secrets
            .iter()
            .map(|(name, keys)| {
                let keys: serde_json::Map<String, Value> = keys
                    .iter()
                    .map(|(k, n)| (k.to_string(), json!({"length": n})))
                    .collect();
                json!({"name": name, "keys": keys})
            })
            .collect();
        let mut plan = json!({"owner": self.owner, "kind": self.kind, "secrets": secrets,
                              "retiredGenerators": self.retired});
        if !self.pods.is_empty() {
            plan["serverPods"] = json!(self.pods);
        }
        serde_json::to_string_pretty(&plan).unwrap()
    }

    fn role(&self) -> Vec<RoleRule> {
        let names: Vec<&str> = self.secrets.iter().map(|(n, _)| *n).collect();
        let mut rules = vec![
            rule(&[""], &["secrets"], None, &["create"]),
            rule(&[""], &["secrets"], Some(&names), &["get", "patch"]),
            rule(
                &["external-secrets.io"],
                &["externalsecrets"],
                Some(&names),
                &["get", "delete"],
            ),
        ];
        if !self.retired.is_empty() {
            rules.push(rule(
                &["generators.external-secrets.io"],
                &["passwords"],
                Some(&self.retired),
                &["delete"],
            ));
        }
        if !self.pods.is_empty() {
            rules.push(rule(&[""], &["pods"], Some(&self.pods), &["get", "delete"]));
        }
        rules
    }

    fn bundle(&self, script: &str) -> SimBundle {
        SimBundle {
            namespace: NS.into(),
            owner: self.owner.into(),
            kind: self.kind.into(),
            plan_json: self.plan_json(),
            script: script.into(),
            role_rules: self.role(),
            run_as: (65532, 65532),
            env: Vec::new(),
            unset: Vec::new(),
        }
    }
}

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/runtime")
        .join(name);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Short enough for the suite, long enough for a loaded 2-core machine.
fn opts() -> SimOptions {
    SimOptions {
        python: PathBuf::from("python3"),
        timeout: Duration::from_secs(15),
        confine: true,
        require_sandbox: false,
    }
}

fn describe(findings: &[SimFinding]) -> String {
    findings
        .iter()
        .map(|f| {
            format!(
                "  {} {} run {} {:?}: {}",
                f.rule, f.scenario, f.run, f.request, f.message
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn assert_clean(kind: &str) {
    let case = Case::of(kind);
    let findings = simulate(&case.bundle(&fixture("create.py")), &opts()).expect("simulate runs");
    assert!(
        findings.is_empty(),
        "the reference program has findings for a {kind}:\n{}",
        describe(&findings)
    );
}

#[test]
fn reference_passes_every_scenario_for_a_cache() {
    assert_clean("cache");
}

#[test]
fn reference_passes_every_scenario_for_a_broker() {
    assert_clean("broker");
}

#[test]
fn reference_passes_every_scenario_for_a_bucket() {
    assert_clean("bucket");
}

#[test]
fn reference_passes_every_scenario_for_a_component() {
    assert_clean("component");
}

fn assert_alt_clean(kind: &str) {
    let case = Case::of(kind);
    let script = fixture("create-alt.py");
    let findings = simulate(&case.bundle(&script), &opts()).expect("simulate runs");
    assert!(
        findings.is_empty(),
        "the second program has findings for a {kind}:\n{}",
        describe(&findings)
    );
}

#[test]
fn a_second_program_written_from_the_adr_passes_every_scenario_for_each_kind() {
    // Written independently from ADR-072 points 2-4, without reading create.py, in its own
    // style (stringData, the delete policy in the query, rejection sampling, other probes):
    // the scenarios judge behaviour, not one implementation.
    for kind in ["cache", "broker", "bucket", "component"] {
        assert_alt_clean(kind);
    }
    assert_eq!(
        crate::runtime::python::check_script(&fixture("create-alt.py")),
        vec![]
    );
}

/// The plan of `case` with an alphabet on every key.
fn with_alphabet(bundle: &mut SimBundle, alphabet: &str) {
    let mut plan: Value = serde_json::from_str(&bundle.plan_json).unwrap();
    for secret in plan["secrets"].as_array_mut().unwrap() {
        for spec in secret["keys"].as_object_mut().unwrap().values_mut() {
            spec["alphabet"] = json!(alphabet);
        }
    }
    bundle.plan_json = serde_json::to_string_pretty(&plan).unwrap();
}

#[test]
fn a_planned_alphabet_is_honoured_or_reported() {
    let case = Case::of("component");
    let mut bundle = case.bundle(&fixture("create-alt.py"));
    with_alphabet(&mut bundle, "0123456789abcdef");
    let findings = simulate(&bundle, &opts()).unwrap();
    assert!(findings.is_empty(), "{}", describe(&findings));
    // The reference draws from letters and digits whatever the plan says.
    bundle.script = fixture("create.py");
    let findings = simulate(&bundle, &opts()).unwrap();
    let rules: BTreeSet<&str> = findings.iter().map(|f| f.rule).collect();
    assert_eq!(
        rules,
        BTreeSet::from(["runtime-incomplete"]),
        "{}",
        describe(&findings)
    );
    assert!(
        findings
            .iter()
            .all(|f| f.message.contains("outside the plan's alphabet")),
        "{}",
        describe(&findings)
    );
}

#[test]
fn values_sent_outside_secret_data_or_in_the_exit_message_are_leaks() {
    let reference = fixture("create.py");
    let in_label = reference.replace(
        r#""metadata": {"name": name, "labels": dict(LABELS)},"#,
        r#""metadata": {"name": name, "labels": dict(LABELS), "annotations": {"hint": base64.b64decode(next(iter(data.values()))).decode()[:12]}},"#,
    ).replace(
        r#"        body = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque","#,
        "        data = {k: b64(generate(spec[\"length\"])) for k, spec in planned[\"keys\"].items()}\n        body = {\"apiVersion\": \"v1\", \"kind\": \"Secret\", \"type\": \"Opaque\",",
    ).replace(
        r#"                "data": {k: b64(generate(spec["length"])) for k, spec in planned["keys"].items()}}"#,
        r#"                "data": data}"#,
    );
    assert_ne!(in_label, reference);
    let findings = simulate(&Case::of("bucket").bundle(&in_label), &opts()).unwrap();
    assert!(
        findings.iter().any(|f| f.rule == "runtime-value-leaked"
            && f.scenario == "a-empty-namespace"
            && f.request.as_deref() == Some("POST /api/v1/namespaces/shop/secrets")),
        "{}",
        describe(&findings)
    );
    let in_exit = reference.replace(
        r#"            log("created Secret %s" % name)"#,
        r#"            open("/dev/termination-log", "w").write(str(body["data"]))"#,
    );
    assert_ne!(in_exit, reference);
    let findings = simulate(&Case::of("bucket").bundle(&in_exit), &opts()).unwrap();
    let rules: BTreeSet<&str> = findings.iter().map(|f| f.rule).collect();
    assert_eq!(
        rules,
        BTreeSet::from(["runtime-value-leaked"]),
        "{}",
        describe(&findings)
    );
    assert!(
        findings
            .iter()
            .all(|f| f.message.contains("termination message") && f.request.is_none()),
        "{}",
        describe(&findings)
    );
}

/// `# expect: <rule> in <scenario>` on the variant's first line.
fn expectation(script: &str) -> (String, String) {
    let first = script.lines().next().unwrap_or_default();
    let rest = first
        .strip_prefix("# expect: ")
        .expect("a broken variant names its finding on line 1");
    let (rule, scenario) = rest.split_once(" in ").expect("`<rule> in <scenario>`");
    (rule.trim().to_string(), scenario.trim().to_string())
}

/// `# also: <rule>, ...` on line 2: further rules the variant's fault yields.
fn also(script: &str) -> Vec<String> {
    script
        .lines()
        .nth(1)
        .and_then(|l| l.strip_prefix("# also: "))
        .map(|l| l.split(',').map(|r| r.trim().to_string()).collect())
        .unwrap_or_default()
}

/// Runs a broken variant (for a cache, which exercises every scenario) and checks that it
/// yields exactly its expected rules, the first in its expected scenario among others.
fn assert_caught(file: &str) -> Vec<SimFinding> {
    assert_caught_for(file, "cache")
}

fn assert_caught_for(file: &str, kind: &str) -> Vec<SimFinding> {
    let script = fixture(&format!("broken/{file}"));
    let (rule, scenario) = expectation(&script);
    let findings = simulate(&Case::of(kind).bundle(&script), &opts()).expect("simulate runs");
    let rules: BTreeSet<&str> = findings.iter().map(|f| f.rule).collect();
    let mut expected = BTreeSet::from([rule.clone()]);
    expected.extend(also(&script));
    assert_eq!(
        rules,
        expected.iter().map(String::as_str).collect(),
        "{file}:\n{}",
        describe(&findings)
    );
    assert!(
        findings.iter().any(|f| f.scenario == scenario),
        "{file} not caught in {scenario}:\n{}",
        describe(&findings)
    );
    findings
}

#[test]
fn broken_overwrite_value() {
    let findings = assert_caught("overwrite-value.py");
    assert!(
        findings.iter().any(|f| f.request.as_deref()
            == Some("PATCH /api/v1/namespaces/shop/secrets/shop-sessions-app"))
    );
}

#[test]
fn broken_delete_recreate() {
    let findings = assert_caught("delete-recreate.py");
    assert!(findings.iter().all(|f| f.request.as_deref()
        == Some("DELETE /api/v1/namespaces/shop/secrets/shop-sessions-app")));
    // With a Role that (wrongly) allows delete, the same program destroys the value.
    let case = Case::of("cache");
    let mut bundle = case.bundle(&fixture("broken/delete-recreate.py"));
    bundle.role_rules.push(rule(
        &[""],
        &["secrets"],
        Some(&["shop-sessions-app"]),
        &["delete"],
    ));
    let findings = simulate(&bundle, &opts()).unwrap();
    let rules: BTreeSet<&str> = findings.iter().map(|f| f.rule).collect();
    assert_eq!(
        rules,
        BTreeSet::from(["runtime-value-rewritten"]),
        "{}",
        describe(&findings)
    );
    let requests: BTreeSet<&str> = findings
        .iter()
        .filter_map(|f| f.request.as_deref())
        .collect();
    assert!(
        requests.contains("DELETE /api/v1/namespaces/shop/secrets/shop-sessions-app"),
        "{requests:?}"
    );
    assert!(
        requests.contains("POST /api/v1/namespaces/shop/secrets"),
        "{requests:?}"
    );
}

#[test]
fn broken_delete_externalsecret_background() {
    let findings = assert_caught("delete-externalsecret-background.py");
    assert!(findings.iter().any(|f| f.request.as_deref()
        == Some(
            "DELETE /apis/external-secrets.io/v1/namespaces/shop/externalsecrets/shop-sessions-app"
        )));
}

#[test]
fn broken_list_secrets() {
    let findings = assert_caught("list-secrets.py");
    assert!(
        findings
            .iter()
            .all(|f| f.request.as_deref() == Some("GET /api/v1/namespaces/shop/secrets"))
    );
}

#[test]
fn broken_foreign_write() {
    let findings = assert_caught("foreign-write.py");
    assert!(
        findings
            .iter()
            .all(|f| f.message.contains("shop-sessions-debug"))
    );
}

#[test]
fn broken_adopt_remote() {
    let findings = assert_caught("adopt-remote.py");
    assert!(
        findings
            .iter()
            .all(|f| f.scenario == "d-remote-externalsecret")
    );
    assert!(findings.iter().any(|f| f.request.as_deref()
        == Some(
            "DELETE /apis/external-secrets.io/v1/namespaces/shop/externalsecrets/shop-sessions-app"
        )));
}

#[test]
fn broken_uses_put() {
    let findings = assert_caught("uses-put.py");
    assert!(
        findings.iter().all(|f| f.request.as_deref()
            == Some("PUT /api/v1/namespaces/shop/secrets/shop-sessions-app"))
    );
}

#[test]
fn broken_crashes() {
    let findings = assert_caught("crashes.py");
    assert!(
        findings.iter().any(|f| f.message.contains("KeyError")),
        "{}",
        describe(&findings)
    );
    // d stops before the crash, as it should.
    assert!(
        findings
            .iter()
            .all(|f| f.scenario != "d-remote-externalsecret")
    );
}

#[test]
fn broken_writes_unchanged() {
    let findings = assert_caught("writes-unchanged.py");
    assert!(
        findings.iter().all(|f| f.run == 2
            || f.scenario == "b-partial-secrets"
            || f.scenario == "f-repair-wrong-server"),
        "{}",
        describe(&findings)
    );
}

#[test]
fn broken_restarts_correct_server() {
    let findings = assert_caught("restarts-correct-server.py");
    assert!(findings.iter().all(
        |f| f.request.as_deref() == Some("DELETE /api/v1/namespaces/shop/pods/shop-sessions-0")
    ));
    // Repairing a stale server is no finding; restarting it again once it is fixed is.
    assert!(
        findings
            .iter()
            .all(|f| f.scenario != "f-repair-wrong-server" || f.run == 2),
        "{}",
        describe(&findings)
    );
    assert!(
        findings
            .iter()
            .any(|f| f.scenario == "f-repair-wrong-server" && f.run == 2),
        "{}",
        describe(&findings)
    );
}

#[test]
fn broken_writes_before_adopting() {
    let findings = assert_caught("writes-before-adopting.py");
    let patch = "PATCH /api/v1/namespaces/shop/secrets/shop-sessions-app";
    // The controller regenerates where the Secret looks invalid, and names the patch.
    assert!(
        findings.iter().any(|f| f.rule == "runtime-value-rewritten"
            && f.scenario == "i-adopt-under-controller"
            && f.request.as_deref() == Some(patch)),
        "{}",
        describe(&findings)
    );
    // Where the Secret is valid, the order alone is the finding.
    assert!(
        findings
            .iter()
            .filter(|f| f.scenario == "c-adopt-generator")
            .all(|f| f.rule == "runtime-adoption-order"),
        "{}",
        describe(&findings)
    );
    // A component's plan adds a key the generator never made: the data no longer matches its
    // hash, and the controller regenerates in c too.
    let script = fixture("broken/writes-before-adopting.py");
    let findings = simulate(&Case::of("component").bundle(&script), &opts()).unwrap();
    assert!(
        findings.iter().any(|f| f.rule == "runtime-value-rewritten"
            && f.scenario == "c-adopt-generator"
            && f.message.contains("data-hash")),
        "{}",
        describe(&findings)
    );
}

#[test]
fn broken_deletes_generators_first() {
    let findings = assert_caught("deletes-generators-first.py");
    assert!(findings.iter().all(|f| f.request.as_deref()
        == Some(
            "DELETE /apis/generators.external-secrets.io/v1alpha1/namespaces/shop/passwords/shop-sessions-password"
        )));
}

#[test]
fn broken_no_wait_for_deletion() {
    let findings = assert_caught("no-wait-for-deletion.py");
    assert!(
        findings.iter().all(|f| f.message.contains("still exists")),
        "{}",
        describe(&findings)
    );
    // With no generator to delete in between, the Secret write itself comes too early, and
    // where the Secret looks invalid the controller rewrites it.
    let mut case = Case::of("component");
    case.retired.clear();
    let mut bundle = case.bundle(&fixture("broken/no-wait-for-deletion.py"));
    bundle
        .role_rules
        .retain(|r| !r.resources.contains(&"passwords".to_string()));
    let findings = simulate(&bundle, &opts()).unwrap();
    let rules: BTreeSet<&str> = findings.iter().map(|f| f.rule).collect();
    assert_eq!(
        rules,
        BTreeSet::from(["runtime-adoption-order", "runtime-value-rewritten"]),
        "{}",
        describe(&findings)
    );
}

#[test]
fn broken_patch_without_test() {
    let findings = assert_caught("patch-without-test.py");
    assert!(
        findings.iter().all(|f| f.request.as_deref()
            == Some("PATCH /api/v1/namespaces/shop/secrets/shop-sessions-app"))
    );
}

#[test]
fn broken_writes_twice() {
    let findings = assert_caught("writes-twice.py");
    assert!(
        findings
            .iter()
            .all(|f| f.message.contains("a second time in one run")),
        "{}",
        describe(&findings)
    );
}

#[test]
fn broken_prints_value() {
    let findings = assert_caught("prints-value.py");
    assert!(
        findings
            .iter()
            .all(|f| f.message.contains("standard error") && f.request.is_none()),
        "{}",
        describe(&findings)
    );
}

#[test]
fn broken_short_value() {
    let findings = assert_caught("short-value.py");
    assert!(
        findings.iter().all(|f| f
            .message
            .contains("16 characters where the plan asks for 32")),
        "{}",
        describe(&findings)
    );
}

#[test]
fn broken_hex_value() {
    let findings = assert_caught("hex-value.py");
    assert!(
        findings
            .iter()
            .all(|f| f.message.contains("distinct characters")),
        "{}",
        describe(&findings)
    );
}

#[test]
fn broken_seeded_random() {
    let findings = assert_caught("seeded-random.py");
    assert!(
        findings
            .iter()
            .any(|f| f.message.contains("is the one created for key password")),
        "{}",
        describe(&findings)
    );
    // `check` sees the source statically.
    let found = crate::runtime::python::check_script(&fixture("broken/seeded-random.py"));
    let rules: BTreeSet<&str> = found.iter().map(|f| f.rule).collect();
    assert_eq!(rules, BTreeSet::from(["runtime-weak-random"]), "{found:?}");
}

#[test]
fn broken_floods_output() {
    let findings = assert_caught("floods-output.py");
    assert!(
        findings
            .iter()
            .any(|f| f.message.contains("over the 1 MiB") && f.message.contains("standard output")),
        "{}",
        describe(&findings)
    );
}

#[test]
fn broken_connects_elsewhere() {
    let findings = assert_caught("connects-elsewhere.py");
    assert!(
        findings
            .iter()
            .any(|f| f.message.contains("connected to 127.0.0.1:9,")),
        "{}",
        describe(&findings)
    );
}

#[test]
fn every_broken_variant_is_tested_and_differs_from_the_reference_in_few_lines() {
    let reference: Vec<String> = fixture("create.py")
        .lines()
        .skip(1)
        .map(String::from)
        .collect();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/runtime/broken");
    let this_file = include_str!("tests.rs");
    let mut seen = 0;
    for entry in fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let script = fs::read_to_string(&path).unwrap();
        let (rule, _) = expectation(&script);
        for rule in std::iter::once(rule).chain(also(&script)) {
            assert!(
                RULES.contains(&rule.as_str()),
                "{name}: unknown rule {rule}"
            );
        }
        assert!(
            this_file.contains(&format!("{name}\")")),
            "{name} has no test"
        );
        let variant: Vec<&str> = script.lines().skip(1).collect();
        let changed = variant
            .iter()
            .filter(|l| !reference.iter().any(|r| r == *l))
            .count()
            + reference
                .iter()
                .filter(|r| !variant.contains(&r.as_str()))
                .count();
        assert!(
            (1..=8).contains(&changed),
            "{name} differs from create.py in {changed} lines"
        );
        seen += 1;
    }
    assert!(seen >= 19, "only {seen} broken variants");
}

#[test]
fn a_role_without_patch_yields_an_unauthorized_patch() {
    let case = Case::of("cache");
    let mut bundle = case.bundle(&fixture("create.py"));
    for r in &mut bundle.role_rules {
        r.verbs.retain(|v| v != "patch");
    }
    let findings = simulate(&bundle, &opts()).unwrap();
    let patch = "PATCH /api/v1/namespaces/shop/secrets/shop-sessions-app";
    assert!(
        findings
            .iter()
            .any(|f| f.rule == "runtime-unauthorized-request"
                && f.request.as_deref() == Some(patch)
                && f.scenario == "b-partial-secrets"),
        "{}",
        describe(&findings)
    );
    // The program cannot complete the Secret, so it fails there too; a is unaffected.
    assert!(
        findings
            .iter()
            .any(|f| f.rule == "runtime-failed" && f.scenario == "b-partial-secrets")
    );
    assert!(
        findings
            .iter()
            .all(|f| f.scenario != "a-empty-namespace" || f.run == 2)
    );
}

fn write_script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    fs::write(&path, body).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A scratch folder for a test, removed at the end.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let path =
            std::env::temp_dir().join(format!("credlint-test-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        Scratch(path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Alive and not a zombie, and still the process we started (its command line says so).
fn alive(pid: u32, marker: &str) -> bool {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat
        .rsplit(')')
        .next()
        .and_then(|s| s.split_whitespace().next())
        .unwrap_or("");
    let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    !stat.is_empty() && state != "Z" && String::from_utf8_lossy(&cmdline).contains(marker)
}

fn listening(port: u16) -> bool {
    let hex = format!(":{port:04X} ");
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|f| {
        fs::read_to_string(f).unwrap_or_default().lines().any(|l| {
            l.split_whitespace()
                .nth(1)
                .is_some_and(|local| format!("{local} ").ends_with(&hex))
                && l.split_whitespace().nth(3) == Some("0A")
        })
    })
}

#[test]
fn a_hanging_program_is_killed_in_time_and_leaves_nothing_behind() {
    let scratch = Scratch::new("hang");
    let log = scratch.0.join("log");
    // Writable by the pod's user, whom credlint runs the program as when it is root.
    fs::write(&log, "").unwrap();
    fs::set_permissions(&log, fs::Permissions::from_mode(0o666)).unwrap();
    // The wrapper records the python pid (exec keeps it), a background child in the same
    // process group, the API port and the run folder, then becomes python.
    let wrapper = write_script(
        &scratch.0,
        "python-wrapper",
        &format!(
            "#!/bin/sh\necho \"pid $$\" >> {log}\nsleep 1000 &\necho \"child $!\" >> {log}\necho \"port $KUBERNETES_SERVICE_PORT\" >> {log}\necho \"dir $(dirname \"$1\")\" >> {log}\nexec python3 \"$@\"\n",
            log = log.display()
        ),
    );
    let timeout = Duration::from_millis(400);
    let case = Case::of("component");
    let started = Instant::now();
    let findings = simulate(
        &case.bundle(&fixture("broken/hangs.py")),
        &SimOptions {
            python: wrapper,
            timeout,
            // The wrapper logs to a file outside the run folder, which confinement forbids.
            confine: false,
            require_sandbox: false,
        },
    )
    .unwrap();
    let elapsed = started.elapsed();
    // Seven scenarios, one killed run each (a second run after a timeout is skipped).
    assert_eq!(findings.len(), 7, "{}", describe(&findings));
    assert!(
        findings.iter().all(
            |f| f.rule == "runtime-failed" && f.message.contains("did not finish within 0.4 s")
        ),
        "{}",
        describe(&findings)
    );
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
    let log = fs::read_to_string(&log).unwrap();
    let mut pids = 0;
    for line in log.lines() {
        let (what, value) = line.split_once(' ').unwrap();
        match what {
            "pid" => assert!(
                !alive(value.parse().unwrap(), "create.py"),
                "python {value} outlived the run"
            ),
            "child" => assert!(
                !alive(value.parse().unwrap(), "sleep"),
                "its child {value} outlived the run"
            ),
            "port" => assert!(
                !listening(value.parse().unwrap()),
                "port {value} still listens"
            ),
            _ => assert!(!Path::new(value).exists(), "{value} was not removed"),
        }
        pids += usize::from(what == "pid");
    }
    // As root, one more start: the question whether the pod's user can start the interpreter.
    assert_eq!(pids, 7 + usize::from(unsafe_euid() == 0));
}

/// Runs a Python check inside the in-cluster environment, optionally as `nobody`.
fn run_in_cluster_env(check: &str, as_nobody: bool) -> (child::Exit, String) {
    let dir = incluster::RunDir::create().unwrap();
    incluster::write_environment(&dir, "the-token", "not really a CA\n", NS, &[], None, false)
        .unwrap();
    incluster::write_program(&dir, check, "{}").unwrap();
    let mut confine = super::confine::Confine::new(Duration::from_secs(10));
    let python = if as_nobody {
        // As credlint runs it when it is root: the pod's user, owning the run folder.
        dir.hand_to(super::confine::POD_UID, super::confine::POD_UID)
            .unwrap();
        confine.with_user();
        PathBuf::from("/usr/bin/python3")
    } else {
        PathBuf::from("python3")
    };
    let env = incluster::child_env(&dir, std::net::Ipv4Addr::LOCALHOST.into(), 1, false);
    let Ok(outcome) = child::run(
        &python,
        &dir,
        &env,
        Duration::from_secs(10),
        &confine,
        &mut None,
    ) else {
        panic!("{} did not start", python.display());
    };
    assert!(!dir.join("stderr").exists());
    (outcome.exit, outcome.stderr_tail)
}

const HOOK_CHECK: &str = r#"import os, pathlib, ssl, sys
sa = "/var/run/secrets/kubernetes.io/serviceaccount"
assert open(sa + "/token").read() == "the-token"
assert pathlib.Path(sa, "token").read_text() == "the-token"
assert pathlib.Path(sa + "/namespace").exists() and pathlib.Path(sa).is_dir()
assert sorted(p.name for p in pathlib.Path(sa).iterdir()) == ["ca.crt", "namespace", "token"]
assert os.path.isfile(sa + "/ca.crt") and os.path.exists(sa.encode() + b"/token")
assert os.read(os.open(sa + "/namespace", os.O_RDONLY), 64) == b"shop"
assert os.stat("/run/secrets/kubernetes.io/serviceaccount//token").st_size == 9
assert sorted(os.listdir(sa)) == ["ca.crt", "namespace", "token"]
with open(file=sa + "/../serviceaccount/token", mode="rb") as f:
    assert f.read() == b"the-token"
assert not os.path.exists("/var/run/secrets/kubernetes.io/other")
try:
    ssl.create_default_context(cafile=sa + "/ca.crt")
    sys.exit("the fake CA file loaded")
except ssl.SSLError:
    pass  # reached the file written for this run (it holds no certificate)
print("hook ok", os.getuid(), file=sys.stderr)
"#;

#[test]
fn the_in_cluster_path_resolves_to_the_run_files() {
    let (exit, stderr) = run_in_cluster_env(HOOK_CHECK, false);
    assert_eq!(exit, child::Exit::Code(0), "{stderr}");
    assert!(stderr.contains("hook ok"), "{stderr}");
}

#[test]
fn the_in_cluster_path_resolves_for_a_non_root_user() {
    if !Path::new("/usr/bin/python3").exists() || unsafe_euid() != 0 {
        eprintln!("skipped: needs root and /usr/bin/python3 to run as the pod's user");
        return;
    }
    let (exit, stderr) = run_in_cluster_env(HOOK_CHECK, true);
    assert_eq!(exit, child::Exit::Code(0), "{stderr}");
    assert!(stderr.contains("hook ok 65532"), "{stderr}");
}

/// The whole simulation with the Python child running as the pod's user, as credlint runs it
/// when it is root and the interpreter is reachable for that user.
#[test]
fn the_reference_passes_as_a_non_root_user() {
    if !Path::new("/usr/bin/python3").exists() || unsafe_euid() != 0 {
        eprintln!("skipped: needs root and /usr/bin/python3 to run as the pod's user");
        return;
    }
    let python = PathBuf::from("/usr/bin/python3");
    let case = Case::of("component");
    let findings = simulate(
        &case.bundle(&fixture("create.py")),
        &SimOptions {
            python,
            timeout: Duration::from_secs(15),
            confine: true,
            require_sandbox: false,
        },
    )
    .unwrap();
    assert!(findings.is_empty(), "{}", describe(&findings));
}

fn unsafe_euid() -> u32 {
    // SAFETY: geteuid(2) cannot fail and touches no memory.
    unsafe { libc::geteuid() }
}

#[test]
fn a_missing_python_is_an_error() {
    let case = Case::of("component");
    let opts = SimOptions {
        python: PathBuf::from("/nonexistent/python3"),
        timeout: Duration::from_secs(1),
        confine: true,
        require_sandbox: false,
    };
    let err = simulate(&case.bundle("print(1)\n"), &opts).unwrap_err();
    assert!(matches!(err, SimError::PythonMissing { .. }), "{err}");
    assert!(err.to_string().contains("/nonexistent/python3"));
}

#[test]
fn an_unusable_plan_is_an_error() {
    let mut bundle = Case::of("component").bundle("print(1)\n");
    bundle.plan_json = "{not json".into();
    assert!(matches!(
        simulate(&bundle, &opts()),
        Err(SimError::InvalidPlan(_))
    ));
    bundle.plan_json = "{\"secrets\": 5}".into();
    assert!(matches!(
        simulate(&bundle, &opts()),
        Err(SimError::InvalidPlan(_))
    ));
}

#[test]
fn failures_quote_stderr_without_values() {
    // Prints every value it can read, then fails: the message keeps the text, not the values.
    let script = fixture("create.py").replace(
        "    repair_servers(api, plan, data_by_secret)\n",
        "    print([base64.b64decode(v).decode() for d in data_by_secret.values() for v in d.values()], file=sys.stderr)\n    raise Stop(1, \"values printed\")\n",
    );
    let case = Case::of("component");
    let findings = simulate(&case.bundle(&script), &opts()).unwrap();
    let failed: Vec<&SimFinding> = findings
        .iter()
        .filter(|f| f.rule == "runtime-failed")
        .collect();
    assert!(!failed.is_empty(), "{}", describe(&findings));
    for f in failed {
        assert!(
            f.message.contains("values printed") && f.message.contains("[redacted]"),
            "{}",
            f.message
        );
        let printed = f.message.split("['").nth(1).unwrap_or("");
        assert!(printed.starts_with("[redacted]"), "{}", f.message);
    }
}

// ---- the server, without python ----

/// A TLS client's view of the fake API server: TLS 1.3, and one session ticket a connection,
/// as a cluster's API server (Go's TLS server) sends.
#[test]
fn the_api_server_sends_one_session_ticket_a_connection() {
    use rustls::client::{Resumption, Tls12ClientSessionValue, Tls13ClientSessionValue};
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, ServerName};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Keeps nothing; counts the TLS 1.3 tickets the server sent.
    #[derive(Debug, Default)]
    struct Tickets(AtomicUsize);
    impl rustls::client::ClientSessionStore for Tickets {
        fn set_kx_hint(&self, _: ServerName<'static>, _: rustls::NamedGroup) {}
        fn kx_hint(&self, _: &ServerName<'_>) -> Option<rustls::NamedGroup> {
            None
        }
        fn set_tls12_session(&self, _: ServerName<'static>, _: Tls12ClientSessionValue) {}
        fn tls12_session(&self, _: &ServerName<'_>) -> Option<Tls12ClientSessionValue> {
            None
        }
        fn remove_tls12_session(&self, _: &ServerName<'static>) {}
        fn insert_tls13_ticket(&self, _: ServerName<'static>, _: Tls13ClientSessionValue) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
        fn take_tls13_ticket(&self, _: &ServerName<'static>) -> Option<Tls13ClientSessionValue> {
            None
        }
    }

    let pki = incluster::make_pki().unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(pki.ca_pem.as_bytes()).unwrap())
        .unwrap();
    let tickets = Arc::new(Tickets::default());
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.resumption = Resumption::store(tickets.clone());
    let name = ServerName::try_from("kubernetes.default.svc").unwrap();
    let mut client =
        rustls::Connection::from(rustls::ClientConnection::new(Arc::new(config), name).unwrap());
    let mut server = rustls::Connection::from(rustls::ServerConnection::new(pki.tls).unwrap());
    // What one side has to say, handed to the other (never an empty read: rustls takes that
    // for the end of the stream).
    let pass = |from: &mut rustls::Connection, to: &mut rustls::Connection| {
        let mut wire = Vec::new();
        while from.wants_write() {
            from.write_tls(&mut wire).unwrap();
        }
        if !wire.is_empty() {
            to.read_tls(&mut wire.as_slice()).unwrap();
            to.process_new_packets().unwrap();
        }
    };
    for _ in 0..10 {
        pass(&mut client, &mut server);
        pass(&mut server, &mut client);
    }
    assert!(!client.is_handshaking());
    assert_eq!(
        client.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_3)
    );
    assert_eq!(tickets.0.load(Ordering::Relaxed), 1);
}

fn context(rules: Vec<RoleRule>) -> ApiContext {
    let pki = incluster::make_pki().unwrap();
    ApiContext {
        tls: pki.tls,
        token: "t".into(),
        rules,
        namespace: NS.into(),
        user: "system:serviceaccount:shop:x-credentials".into(),
        cluster: Mutex::new(Cluster::new(NS)),
        script_lines: 1000,
    }
}

fn call(
    ctx: &ApiContext,
    method: &str,
    target: &str,
    content_type: &str,
    body: Value,
) -> (u16, Value) {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut headers = vec![("authorization".to_string(), "Bearer t".to_string())];
    if !content_type.is_empty() {
        headers.push(("content-type".into(), content_type.into()));
    }
    let req = HttpRequest {
        method: method.into(),
        path: path.into(),
        query: query.into(),
        headers,
        body: if body.is_null() {
            Vec::new()
        } else {
            serde_json::to_vec(&body).unwrap()
        },
        keep_alive: true,
    };
    let resp = handle_api(ctx, &req);
    (resp.status, resp.body)
}

/// A GET that reports the program's clock as the hook does (nanoseconds since the run began).
fn call_at(ctx: &ApiContext, method: &str, target: &str, clock: Option<u64>) -> (u16, Value) {
    let mut headers = vec![("authorization".to_string(), "Bearer t".to_string())];
    if let Some(ns) = clock {
        headers.push(("x-credlint-clock".into(), ns.to_string()));
    }
    let req = HttpRequest {
        method: method.into(),
        path: target.into(),
        query: String::new(),
        headers,
        body: Vec::new(),
        keep_alive: true,
    };
    let resp = handle_api(ctx, &req);
    (resp.status, resp.body)
}

#[test]
fn the_cluster_clock_follows_the_program_and_never_goes_back() {
    let ctx = context(vec![rule(&["*"], &["*"], None, &["*"])]);
    let get = |clock: Option<u64>| call_at(&ctx, "GET", SECRETS, clock).0;
    let now = || lock(&ctx.cluster).now();
    assert_eq!(get(Some(5_000_000_000)), 200);
    assert_eq!(now(), 5_000_000_000);
    // Back in time, or unreadable: ignored; without a clock a request is a round trip.
    assert_eq!(get(Some(1)), 200);
    assert_eq!(now(), 5_000_000_000);
    let forged = HttpRequest {
        method: "GET".into(),
        path: SECRETS.into(),
        query: String::new(),
        headers: vec![
            ("authorization".into(), "Bearer t".into()),
            ("x-credlint-clock".into(), "-7".into()),
        ],
        body: Vec::new(),
        keep_alive: true,
    };
    assert_eq!(server::request_clock(&forged), None);
    assert_eq!(get(None), 200);
    assert_eq!(now(), 5_000_000_000 + cluster::REQUEST_NANOS);
    // A new run's clock starts at 0 where the last one stopped.
    lock(&ctx.cluster).start_run();
    assert_eq!(get(Some(2_000_000_000)), 200);
    assert_eq!(now(), 7_000_000_000 + cluster::REQUEST_NANOS);
    assert_eq!(get(Some(u64::MAX)), 200);
    assert_eq!(now(), u64::MAX);
    assert_eq!(get(None), 200);
    assert_eq!(now(), u64::MAX);
}

const SECRETS: &str = "/api/v1/namespaces/shop/secrets";

#[test]
fn a_value_a_patch_copies_out_of_data_is_seen_where_it_lands() {
    let ctx = context(Case::of("component").role());
    let value = "c2VjcmV0LXZhbHVlLTEyMzQ1Njc4OQ==";
    lock(&ctx.cluster).seed_secret(json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "shop-api-session", "labels": {}}, "data": {"password": value}}));
    let ops = json!([{"op": "copy", "from": "/data/password", "path": "/metadata/labels/hint"}]);
    let (status, _) = call(
        &ctx,
        "PATCH",
        "/api/v1/namespaces/shop/secrets/shop-api-session",
        "application/json-patch+json",
        ops,
    );
    assert_eq!(status, 200);
    let sent: Vec<String> = lock(&ctx.cluster)
        .events
        .iter()
        .filter_map(|e| match e {
            cluster::Event::Sent { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect();
    // The request holds no value; the label it made does.
    assert!(!sent[0].contains(value), "{sent:?}");
    assert!(sent.iter().any(|t| t.contains(value)), "{sent:?}");
}
const A: &str = "/api/v1/namespaces/shop/secrets/a";

#[test]
fn the_server_answers_as_the_api_server_does() {
    let ctx = context(
        Case::of("component")
            .role()
            .into_iter()
            .map(|mut r| {
                if r.resources == ["secrets"] && r.resource_names.is_some() {
                    r.resource_names = Some(strings(&["a", "missing"]));
                }
                r
            })
            .collect(),
    );
    let secret = json!({"metadata": {"name": "a"}, "data": {"password": "cHc="}});
    assert_eq!(
        call(&ctx, "POST", SECRETS, "application/json", secret.clone()).0,
        201
    );
    assert_eq!(
        call(&ctx, "POST", SECRETS, "application/json", secret.clone()).0,
        409
    );
    let (status, got) = call(&ctx, "GET", A, "", Value::Null);
    assert_eq!(status, 200);
    let rv = got["metadata"]["resourceVersion"].clone();
    // Authorization comes before existence.
    assert_eq!(
        call(
            &ctx,
            "GET",
            "/api/v1/namespaces/shop/secrets/other",
            "",
            Value::Null
        )
        .0,
        403
    );
    assert_eq!(
        call(
            &ctx,
            "GET",
            "/api/v1/namespaces/shop/secrets/missing",
            "",
            Value::Null
        )
        .0,
        404
    );
    assert_eq!(call(&ctx, "PUT", A, "application/json", got.clone()).0, 403);
    assert_eq!(call(&ctx, "GET", SECRETS, "", Value::Null).0, 403);
    // A stale test op is refused; a current one applies and bumps the resourceVersion.
    let stale = json!([{"op": "test", "path": "/metadata/resourceVersion", "value": "1"}, {"op": "add", "path": "/data/u", "value": "dQ=="}]);
    assert_eq!(
        call(&ctx, "PATCH", A, "application/json-patch+json", stale).0,
        422
    );
    let ok = json!([{"op": "test", "path": "/metadata/resourceVersion", "value": rv}, {"op": "add", "path": "/data/u", "value": "dQ=="}]);
    let (status, patched) = call(&ctx, "PATCH", A, "application/json-patch+json", ok);
    assert_eq!(status, 200);
    assert_ne!(patched["metadata"]["resourceVersion"], rv);
    // A patch that changes nothing is not written.
    let rv2 = patched["metadata"]["resourceVersion"].clone();
    let (status, same) = call(
        &ctx,
        "PATCH",
        A,
        "application/merge-patch+json",
        json!({"data": {"u": "dQ=="}}),
    );
    assert_eq!(
        (status, same["metadata"]["resourceVersion"].clone()),
        (200, rv2)
    );
    let (status, merged) = call(
        &ctx,
        "PATCH",
        A,
        "application/merge-patch+json",
        json!({"stringData": {"v": "x"}}),
    );
    assert_eq!((status, merged["data"]["v"].clone()), (200, json!("eA==")));
    // Server-side apply, as the API server answers it.
    const APPLY: &str = "application/apply-patch+yaml";
    let applied = |data: Value| {
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a"},
               "data": data})
    };
    assert_eq!(call(&ctx, "PATCH", A, APPLY, applied(json!({}))).0, 400);
    let mine = format!("{A}?fieldManager=create-py");
    // `v` was set by the merge patch above: another manager's field, another value.
    let (status, conflict) = call(&ctx, "PATCH", &mine, APPLY, applied(json!({"v": "eQ=="})));
    assert_eq!(status, 409, "{conflict}");
    assert!(conflict["message"].as_str().unwrap().contains(".data.v"));
    let forced = format!("{mine}&force=true");
    let (status, taken) = call(&ctx, "PATCH", &forced, APPLY, applied(json!({"v": "eQ=="})));
    assert_eq!((status, taken["data"]["v"].clone()), (200, json!("eQ==")));
    // The same apply again changes nothing; one that omits `v` removes it (this manager's).
    let rv3 = taken["metadata"]["resourceVersion"].clone();
    let (status, again) = call(&ctx, "PATCH", &mine, APPLY, applied(json!({"v": "eQ=="})));
    assert_eq!(
        (status, again["metadata"]["resourceVersion"].clone()),
        (200, rv3)
    );
    let (status, dropped) = call(&ctx, "PATCH", &mine, APPLY, applied(json!({"w": "dw=="})));
    assert_eq!(status, 200);
    assert!(dropped["data"].get("v").is_none() && dropped["data"]["u"] == "dQ==");
    assert_eq!(
        call(
            &ctx,
            "PATCH",
            &mine,
            APPLY,
            applied(json!({"x": "not base64!"}))
        )
        .0,
        422
    );
    assert_eq!(
        call(&ctx, "PATCH", A, "application/yaml", applied(json!({}))).0,
        415
    );
    assert_eq!(
        call(
            &ctx,
            "PATCH",
            A,
            "application/merge-patch+json",
            json!({"data": {"w": "not base64!"}})
        )
        .0,
        422
    );
    let (status, body) = call(
        &ctx,
        "GET",
        "/api/v1/namespaces/shop/secrets/other",
        "",
        Value::Null,
    );
    assert_eq!(body["kind"], "Status");
    assert_eq!(body["reason"], "Forbidden");
    assert_eq!(status, 403);
    // Every write is an event; the denied ones are denials.
    let cluster = lock(&ctx.cluster);
    let denied = cluster
        .events
        .iter()
        .filter(|e| matches!(e, cluster::Event::Denied { .. }))
        .count();
    assert_eq!(denied, 4);
    drop(cluster);
    // A wrong token is refused before anything else.
    let mut req = HttpRequest {
        method: "GET".into(),
        path: A.into(),
        query: String::new(),
        headers: vec![],
        body: vec![],
        keep_alive: false,
    };
    assert_eq!(handle_api(&ctx, &req).status, 401);
    req.headers
        .push(("authorization".into(), "Bearer nope".into()));
    assert_eq!(handle_api(&ctx, &req).status, 401);
}

fn seed_adoption(ctx: &ApiContext) -> String {
    let mut cluster = lock(&ctx.cluster);
    let uid = cluster.seed_external_secret(json!({"metadata": {"name": "a"}, "spec": {}}), false);
    cluster.seed_secret(json!({"metadata": {"name": "a", "ownerReferences": [{"kind": "ExternalSecret", "name": "a", "uid": uid}]},
                               "data": {"password": "cHc="}}));
    uid
}

#[test]
fn deleting_an_externalsecret_follows_its_propagation_policy() {
    let es = "/apis/external-secrets.io/v1beta1/namespaces/shop/externalsecrets/a";
    let all = vec![rule(&["*"], &["*"], None, &["*"])];
    let owned = |secret: &Value| secret["metadata"].get("ownerReferences").is_some();

    let ctx = context(all.clone());
    seed_adoption(&ctx);
    let (status, body) = call(
        &ctx,
        "DELETE",
        es,
        "application/json",
        json!({"propagationPolicy": "Orphan"}),
    );
    assert_eq!(status, 202);
    assert_eq!(body["metadata"]["finalizers"], json!(["orphan"]));
    assert_eq!(body["apiVersion"], "external-secrets.io/v1beta1");
    // Still being finalized for DELETE_LAG requests: the garbage collector has not acted yet.
    for _ in 0..cluster::DELETE_LAG - 1 {
        let (_, secret) = call(&ctx, "GET", A, "", Value::Null);
        assert!(owned(&secret));
    }
    let (status, pending) = call(&ctx, "GET", es, "", Value::Null);
    assert_eq!(status, 200);
    assert!(pending["metadata"].get("deletionTimestamp").is_some());
    // Gone once the deletion is observed, the Secret kept without the reference.
    assert_eq!(call(&ctx, "GET", es, "", Value::Null).0, 404);
    let (_, secret) = call(&ctx, "GET", A, "", Value::Null);
    assert_eq!(secret["data"]["password"], "cHc=");
    assert!(!owned(&secret));

    // No body and no query: Background, and the garbage collector takes the Secret once the
    // owner is gone. Foreground takes it too.
    for body in [Value::Null, json!({"propagationPolicy": "Foreground"})] {
        let ctx = context(all.clone());
        seed_adoption(&ctx);
        let content_type = if body.is_null() {
            ""
        } else {
            "application/json"
        };
        assert_eq!(call(&ctx, "DELETE", es, content_type, body).0, 202);
        for _ in 0..cluster::DELETE_LAG {
            assert_eq!(call(&ctx, "GET", A, "", Value::Null).0, 200);
        }
        assert_eq!(call(&ctx, "GET", A, "", Value::Null).0, 404);
        assert_eq!(call(&ctx, "GET", es, "", Value::Null).0, 404);
    }

    // The query parameter counts when there is no body.
    let ctx = context(all);
    seed_adoption(&ctx);
    assert_eq!(
        call(
            &ctx,
            "DELETE",
            &format!("{es}?propagationPolicy=Orphan"),
            "",
            Value::Null
        )
        .0,
        202
    );
    assert_eq!(call(&ctx, "GET", A, "", Value::Null).0, 200);
    let ctx = context(vec![rule(&["*"], &["*"], None, &["*"])]);
    seed_adoption(&ctx);
    assert_eq!(
        call(
            &ctx,
            "DELETE",
            &format!("{es}?propagationPolicy=Sideways"),
            "",
            Value::Null
        )
        .0,
        422
    );
}

/// A generator-backed ExternalSecret as External Secrets left it, with its valid Secret.
fn seed_controlled(ctx: &ApiContext, generator: bool) {
    let mut cluster = lock(&ctx.cluster);
    if generator {
        cluster.seed_generator("a-password");
    }
    let uid = cluster.seed_external_secret(
        json!({"metadata": {"name": "a", "finalizers": [cluster::ESO_FINALIZER]},
               "spec": {"refreshInterval": "0", "refreshPolicy": "CreatedOnce",
                        "target": {"name": "a", "creationPolicy": "Owner", "deletionPolicy": "Retain"},
                        "dataFrom": [{"sourceRef": {"generatorRef": {"kind": "Password", "name": "a-password"}}}]},
               "status": {"refreshTime": "2026-10-01T00:00:00Z", "syncedResourceVersion": "1-0"}}),
        false,
    );
    let data = json!({"password": "cHc="});
    cluster.seed_secret(json!({"metadata": {"name": "a",
        "labels": {cluster::MANAGED_LABEL: "true"},
        "annotations": {cluster::DATA_HASH: cluster::data_hash(Some(&data))},
        "ownerReferences": [{"kind": "ExternalSecret", "name": "a", "uid": uid, "controller": true}]},
        "data": data}));
}

fn controller_events(ctx: &ApiContext) -> Vec<cluster::Event> {
    lock(&ctx.cluster)
        .events
        .iter()
        .filter(|e| {
            matches!(
                e,
                cluster::Event::ControllerWrite { .. } | cluster::Event::RefreshFailed { .. }
            )
        })
        .cloned()
        .collect()
}

#[test]
fn external_secrets_refreshes_a_secret_that_looks_invalid_and_blames_the_write() {
    let all = vec![rule(&["*"], &["*"], None, &["*"])];
    let patch = json!([{"op": "add", "path": "/data/extra", "value": "eA=="}]);

    // A valid Secret whose metadata changes stays as it is.
    let ctx = context(all.clone());
    seed_controlled(&ctx, true);
    let label = json!([{"op": "add", "path": "/metadata/labels/x", "value": "y"}]);
    call(&ctx, "PATCH", A, "application/json-patch+json", label);
    for _ in 0..3 {
        call(&ctx, "GET", A, "", Value::Null);
    }
    assert_eq!(controller_events(&ctx), vec![]);

    // A new key changes the data under the data-hash annotation: the next reconcile (after
    // the full cache has caught up) regenerates the password and puts the ownership back.
    let ctx = context(all.clone());
    seed_controlled(&ctx, true);
    call(
        &ctx,
        "PATCH",
        A,
        "application/json-patch+json",
        patch.clone(),
    );
    let (_, before) = call(&ctx, "GET", A, "", Value::Null);
    assert_eq!(before["data"]["password"], "cHc=");
    let (_, after) = call(&ctx, "GET", A, "", Value::Null);
    assert_ne!(after["data"]["password"], "cHc=");
    assert_eq!(after["data"]["extra"], "eA==");
    assert_eq!(
        after["metadata"]["annotations"][cluster::DATA_HASH],
        json!(cluster::data_hash(after.get("data")))
    );
    let events = controller_events(&ctx);
    assert!(
        matches!(&events[..], [cluster::Event::ControllerWrite { trigger, .. }]
            if trigger == "PATCH /api/v1/namespaces/shop/secrets/a"),
        "{events:?}"
    );

    // Without its generator the refresh fails, is recorded once, and leaves the value.
    let ctx = context(all.clone());
    seed_controlled(&ctx, false);
    call(
        &ctx,
        "PATCH",
        A,
        "application/json-patch+json",
        patch.clone(),
    );
    for _ in 0..3 {
        call(&ctx, "GET", A, "", Value::Null);
    }
    let (_, after) = call(&ctx, "GET", A, "", Value::Null);
    assert_eq!(after["data"]["password"], "cHc=");
    let events = controller_events(&ctx);
    assert!(
        matches!(&events[..], [cluster::Event::RefreshFailed { generator, .. }] if generator == "a-password"),
        "{events:?}"
    );

    // A write while the ExternalSecret is terminating still meets a controller that has not
    // observed the deletion: the reconcile queued for the Secret runs first.
    let ctx = context(all);
    seed_controlled(&ctx, true);
    let es = "/apis/external-secrets.io/v1/namespaces/shop/externalsecrets/a";
    let orphan = json!({"propagationPolicy": "Orphan"});
    assert_eq!(call(&ctx, "DELETE", es, "application/json", orphan).0, 202);
    call(&ctx, "PATCH", A, "application/json-patch+json", patch);
    for _ in 0..4 {
        call(&ctx, "GET", es, "", Value::Null);
    }
    assert_eq!(call(&ctx, "GET", es, "", Value::Null).0, 404);
    let (_, after) = call(&ctx, "GET", A, "", Value::Null);
    assert_ne!(after["data"]["password"], "cHc=");
    assert!(after["metadata"].get("ownerReferences").is_none());
}

#[test]
fn a_deleted_pod_is_replaced_with_a_new_uid() {
    let ctx = context(vec![rule(
        &[""],
        &["pods"],
        Some(&["p-0"]),
        &["get", "delete"],
    )]);
    let template = PodTemplate {
        port: 1,
        port_name: "valkey",
        container: "valkey",
        env_name: "P",
        secret: "a".into(),
        key: "password".into(),
    };
    lock(&ctx.cluster).seed_pod(
        "p-0",
        template,
        Some(b"old".to_vec()),
        Replacement::Stale(b"old".to_vec()),
        false,
    );
    let pod = "/api/v1/namespaces/shop/pods/p-0";
    let (_, before) = call(&ctx, "GET", pod, "", Value::Null);
    assert_eq!(before["status"]["phase"], "Running");
    assert_eq!(before["status"]["podIP"], "127.0.0.1");
    let (status, deleting) = call(&ctx, "DELETE", pod, "", Value::Null);
    assert_eq!(status, 200);
    assert!(deleting["metadata"].get("deletionTimestamp").is_some());
    // Terminating, whatever wall time passes: the cluster waits in the program's time (a
    // request without a clock is a millisecond of it).
    std::thread::sleep(cluster::POD_REPLACED + Duration::from_millis(10));
    let (status, between) = call(&ctx, "GET", pod, "", Value::Null);
    assert_eq!(status, 200);
    assert!(between["metadata"].get("deletionTimestamp").is_some());
    // The program slept past the replacement: gone, then replaced.
    let replaced = lock(&ctx.cluster).now() + cluster::nanos(cluster::POD_REPLACED);
    let (status, after) = call_at(&ctx, "GET", pod, Some(replaced));
    assert_eq!(status, 200);
    assert_ne!(after["metadata"]["uid"], before["metadata"]["uid"]);
    assert_eq!(
        lock(&ctx.cluster).pod_server("p-0"),
        Some((b"old".to_vec(), false))
    );
    assert_eq!(
        call(
            &ctx,
            "GET",
            "/api/v1/namespaces/shop/pods/p-1",
            "",
            Value::Null
        )
        .0,
        403
    );
}

const SELF_CHECK: &str = "# -*- coding: utf-8 -*-\r\n# \u{fc}n\u{ef}code \u{2713}, a CRLF line, no final newline\nimport hashlib, os, socket, ssl, sys, urllib.error, urllib.request\nsa = \"/var/run/secrets/kubernetes.io/serviceaccount\"\nassert len(sys.argv) == 2 and os.path.basename(sys.argv[0]) == \"create.py\"\nassert os.path.basename(sys.argv[1]) == \"plan.json\"\nme = hashlib.sha256(open(sys.argv[0], \"rb\").read()).hexdigest()\nplan = hashlib.sha256(open(sys.argv[1], \"rb\").read()).hexdigest()\nctx = ssl.create_default_context(cafile=sa + \"/ca.crt\")\nctx.verify_flags |= ssl.VERIFY_X509_STRICT\nhost, port = os.environ[\"KUBERNETES_SERVICE_HOST\"], os.environ[\"KUBERNETES_SERVICE_PORT\"]\nns = open(sa + \"/namespace\").read()\nreq = urllib.request.Request(\"https://%s:%s/api/v1/namespaces/%s/secrets/shop-api-session\" % (host, port, ns))\nreq.add_header(\"Authorization\", \"Bearer \" + open(sa + \"/token\").read())\ntry:\n    code = urllib.request.urlopen(req, context=ctx).status\nexcept urllib.error.HTTPError as err:\n    code = err.code\nwith socket.create_connection((host, int(port))) as raw:\n    with ctx.wrap_socket(raw, server_hostname=\"kubernetes.default.svc\") as tls:\n        tls.sendall(b\"GET /version HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n\")\n        head = tls.recv(8).decode()\n        suite = \"%s %s\" % (tls.version(), tls.cipher()[0])\nsys.stderr.write(\"checks ok %s %s %d %s %s\" % (me, plan, code, head, suite))\nsys.exit(3)";

/// The program file is the bundle's bytes, argv is the Job's, the server's certificate passes
/// strict X.509 checks (Python 3.13's default) for both SAN forms, and the handshake ends in
/// the suite a cluster's API server (Go) picks for OpenSSL's offer.
#[test]
fn the_program_runs_unmodified_as_the_job_runs_it() {
    use sha2::{Digest, Sha256};
    let case = Case::of("component");
    let bundle = case.bundle(SELF_CHECK);
    let hex = |b: &[u8]| {
        Sha256::digest(b)
            .iter()
            .map(|x| format!("{x:02x}"))
            .collect::<String>()
    };
    let expected = format!(
        "checks ok {} {} 404 HTTP/1.1 TLSv1.3 TLS_AES_128_GCM_SHA256",
        hex(SELF_CHECK.as_bytes()),
        hex(bundle.plan_json.as_bytes())
    );
    let findings = simulate(&bundle, &opts()).unwrap();
    let failed = findings
        .iter()
        .find(|f| f.rule == "runtime-failed" && f.scenario == "a-empty-namespace" && f.run == 1)
        .unwrap_or_else(|| panic!("{}", describe(&findings)));
    assert!(
        failed.message.contains(&expected),
        "{}\nwanted {expected}",
        failed.message
    );
}

#[test]
fn a_panicking_handler_ends_its_connection_only_and_stopping_closes_the_port() {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    let handler = Arc::new(|mut stream: TcpStream, _stop: &AtomicBool| {
        let mut byte = [0u8; 1];
        let deadline = Instant::now() + Duration::from_secs(5);
        while stream.read(&mut byte).is_err() && Instant::now() < deadline {}
        assert_ne!(byte[0], b'p', "a handler panic that this test provokes");
        let _ = stream.write_all(b"ok");
    });
    let mut service = server::Service::start("test", handler, None).unwrap();
    let port = service.port();
    let mut first = TcpStream::connect(("127.0.0.1", port)).unwrap();
    first.write_all(b"p").unwrap();
    let mut got = Vec::new();
    let _ = first.read_to_end(&mut got);
    assert!(got.is_empty());
    let mut second = TcpStream::connect(("127.0.0.1", port)).unwrap();
    second.write_all(b"x").unwrap();
    let mut got = Vec::new();
    second.read_to_end(&mut got).unwrap();
    assert_eq!(got, b"ok");
    service.stop();
    assert!(!listening(port));
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
}

#[test]
fn broken_restarts_on_unclear_answer() {
    let findings = assert_caught("restarts-on-unclear-answer.py");
    assert!(
        findings.iter().all(|f| f.scenario == "h-unclear-answer"),
        "{}",
        describe(&findings)
    );
    assert!(
        findings
            .iter()
            .all(|f| f.message.contains("no clear answer")),
        "{}",
        describe(&findings)
    );
}

#[test]
fn broken_does_nothing() {
    let findings = assert_caught("does-nothing.py");
    assert!(
        findings.iter().all(|f| f.rule == "runtime-incomplete"),
        "{}",
        describe(&findings)
    );
}

/// A value in an annotation under an encoding is a leak of the request that sent it, and the
/// only finding: the rest of the program is the reference.
fn assert_leaked_by_create(file: &str) {
    let findings = assert_caught(file);
    assert!(
        findings
            .iter()
            .all(|f| f.request.as_deref() == Some("POST /api/v1/namespaces/shop/secrets")),
        "{file}:\n{}",
        describe(&findings)
    );
}

#[test]
fn broken_leaks_base64_record() {
    assert_leaked_by_create("leaks-base64-record.py");
}

#[test]
fn broken_leaks_hex() {
    assert_leaked_by_create("leaks-hex.py");
}

#[test]
fn broken_leaks_percent() {
    assert_leaked_by_create("leaks-percent.py");
}

#[test]
fn broken_leaks_escaped() {
    assert_leaked_by_create("leaks-escaped.py");
}

#[test]
fn broken_leaks_split() {
    assert_leaked_by_create("leaks-split.py");
}

/// A created Secret the next sync deletes is rewritten by the Job of that sync: the finding
/// names the request that set the Secret up, in the first run, and the step.
fn assert_lost_at_sync(step: &str, file: &str) -> Vec<SimFinding> {
    let findings: Vec<SimFinding> = assert_caught(file)
        .into_iter()
        .filter(|f| f.rule == "runtime-value-rewritten")
        .collect();
    assert!(
        findings.iter().all(|f| f.run == 1
            && f.request.as_deref() == Some("POST /api/v1/namespaces/shop/secrets")
            && f.message.contains(step)),
        "{file}:\n{}",
        describe(&findings)
    );
    findings
}

#[test]
fn broken_owner_job() {
    let findings = assert_lost_at_sync("hook Job shop-sessions-credentials", "owner-job.py");
    assert!(findings.iter().all(|f| !f.warning));
}

#[test]
fn broken_owner_configmap() {
    let step = "the next sync deletes the hook ConfigMap shop-sessions-credentials";
    let findings = assert_lost_at_sync(step, "owner-configmap.py");
    assert!(findings.iter().all(|f| !f.warning));
}

#[test]
fn broken_tracking_annotation() {
    let findings = assert_lost_at_sync("Argo CD prunes it", "tracking-annotation.py");
    assert!(findings.iter().all(|f| !f.warning));
}

#[test]
fn broken_instance_label() {
    // The platform tracks by annotation: the label alone is a warning, the Secret kept (and
    // the reference's patch of the second run removes the label: a needless write).
    let findings = assert_lost_at_sync("tracks by label", "instance-label.py");
    assert!(
        findings.iter().all(|f| f.warning),
        "{}",
        describe(&findings)
    );
}

#[test]
fn broken_apply_forced() {
    // Server-side apply is accepted and judged as the write it is: an unguarded patch that
    // replaces existing values.
    let findings = assert_caught("apply-forced.py");
    assert!(
        findings.iter().any(|f| {
            f.rule == "runtime-value-rewritten"
                && f.request.as_deref().is_some_and(|r| {
                    r.starts_with("PATCH ") && r.contains("fieldManager=credentials")
                })
        }),
        "{}",
        describe(&findings)
    );
}

#[test]
fn broken_gives_up_and_writes() {
    // Caught only where the controller is slow: elsewhere its patience is enough.
    let findings = assert_caught("gives-up-and-writes.py");
    assert!(
        findings
            .iter()
            .all(|f| f.scenario == scenario::J_SLOW && f.message.contains("still exists")),
        "{}",
        describe(&findings)
    );
}

#[test]
fn the_program_sleeps_on_a_virtual_clock() {
    // A thousand seconds of sleep, with --timeout far below it: the clocks move by what the
    // program slept, no wall time passes, and a negative sleep still fails as Python's does.
    let prefix = "import time as _t\n\
        _m, _w, _p, _n = _t.monotonic(), _t.time(), _t.perf_counter(), _t.monotonic_ns()\n\
        _t.sleep(1000)\n\
        assert _t.monotonic() - _m >= 1000 and _t.time() - _w >= 1000, 'clock'\n\
        assert _t.perf_counter() - _p >= 1000 and _t.monotonic_ns() - _n >= 10**12, 'clock'\n\
        assert _t.time() > 1793491200, 'epoch'\n\
        try:\n    _t.sleep(-1)\nexcept ValueError:\n    pass\nelse:\n    raise SystemExit(9)\n";
    let script = format!("{prefix}{}", fixture("create.py"));
    let started = Instant::now();
    let findings = simulate(
        &Case::of("component").bundle(&script),
        &SimOptions {
            timeout: Duration::from_secs(20),
            ..opts()
        },
    )
    .unwrap();
    assert!(findings.is_empty(), "{}", describe(&findings));
    // Every scenario's two runs slept 1000 s each; a real sleep would have been killed.
    assert!(started.elapsed() < Duration::from_secs(300));
}

/// An interpreter the pod's user cannot start (it lies in a folder closed to that user) runs
/// the program as credlint's user, and the layers say why: for the first bundle, which asks
/// it, and for the next, which is told the answer.
#[test]
fn an_interpreter_closed_to_the_pods_user_runs_as_credlints_user_in_every_bundle() {
    if unsafe_euid() != 0 {
        eprintln!("SKIPPED: only root runs a program as the pod's user");
        return;
    }
    let Some(real) = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()
        .filter(|o| o.status.success())
    else {
        eprintln!("SKIPPED: no python3");
        return;
    };
    let scratch = Scratch::new("closed-interpreter");
    let closed = scratch.0.join("closed");
    fs::create_dir(&closed).unwrap();
    fs::set_permissions(&closed, fs::Permissions::from_mode(0o700)).unwrap();
    let python = closed.join("python3");
    std::os::unix::fs::symlink(String::from_utf8_lossy(&real.stdout).trim(), &python).unwrap();
    let options = SimOptions { python, ..opts() };
    for owner in ["first", "second"] {
        let bundle = Case::of("component").bundle(&fixture("create.py"));
        let simulated = simulate_counted(&bundle, &options).unwrap();
        assert!(
            simulated.findings.is_empty(),
            "{owner}: {}",
            describe(&simulated.findings)
        );
        let missing = simulated.layers.missing();
        assert!(
            missing
                .iter()
                .any(|(layer, why)| *layer == "user" && why.contains("cannot start as uid")),
            "{owner}: {missing:?}"
        );
    }
}

/// `$(VAR)` expansion as the kubelet does it: known names replaced, unknown ones and an
/// unclosed `$(` kept as written, `$$` one `$`, any other `$` kept with what follows.
#[test]
fn a_containers_values_expand_as_the_kubelets_do() {
    let known = |name: &str| match name {
        "A" => Some("x".to_string()),
        "" => Some("empty".to_string()),
        _ => None,
    };
    for (input, expected) in [
        ("$(A)", "x"),
        ("pre-$(A)-$(A)-post", "pre-x-x-post"),
        ("$(B)", "$(B)"),
        ("$$(A)", "$(A)"),
        ("$$$(A)", "$x"),
        ("$x$(A)", "$xx"),
        ("$é$(A)", "$éx"),
        ("$(A", "$(A"),
        ("$(unclosed $(A)", "$(unclosed $(A)"),
        ("$()", "empty"),
        ("cost $", "cost $"),
        ("", ""),
    ] {
        assert_eq!(podenv::expand(input, known), expected, "{input:?}");
    }
}

/// The kubelet's list: each value sees only what is defined before it and the service
/// variables; a later definition of a name replaces the earlier one in place; the service
/// variables the container does not set follow it; pod fields come from the pod.
#[test]
fn the_kubelets_list_is_built_in_order() {
    use podenv::{EnvVar, PodFacts, PodField, Source};
    let var = |name: &str, source: Source| EnvVar {
        name: name.into(),
        source,
    };
    let vars = [
        var("EARLY", Source::Text("$(LATE)".into())),
        var(
            "HOST",
            Source::Text("$(KUBERNETES_SERVICE_HOST):$(EARLY)".into()),
        ),
        var("LATE", Source::Known("$(HOST)".into())),
        var("EARLY", Source::Text("again".into())),
        var("KUBERNETES_SERVICE_PORT", Source::Text("8443".into())),
        var("NAME", Source::Pod(PodField::Name)),
        var(
            "URL",
            Source::Text("$(NAME).$(KUBERNETES_SERVICE_PORT)".into()),
        ),
    ];
    let service = [
        (
            "KUBERNETES_SERVICE_HOST".to_string(),
            "10.96.0.1".to_string(),
        ),
        ("KUBERNETES_SERVICE_PORT".to_string(), "443".to_string()),
    ];
    let pod = PodFacts::new("job-abcde").unwrap();
    let got = podenv::resolve(&vars, &service, &pod);
    let expected = [
        ("EARLY", "again"),
        ("HOST", "10.96.0.1:$(LATE)"),
        ("LATE", "$(HOST)"),
        ("KUBERNETES_SERVICE_PORT", "8443"),
        ("NAME", "job-abcde"),
        ("URL", "job-abcde.8443"),
        ("KUBERNETES_SERVICE_HOST", "10.96.0.1"),
    ];
    let got: Vec<(&str, &str)> = got.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(got, expected);
    // A pod's identifiers are UUIDs of version 4.
    let uid = PodFacts::new("x").unwrap().uid;
    assert_eq!(uid.len(), 36, "{uid}");
    assert_eq!(&uid[14..15], "4", "{uid}");
    assert_ne!(uid, PodFacts::new("x").unwrap().uid);
}

/// `resourceFieldRef`: the limit or request in units of the divisor, rounded up; an unset
/// CPU or memory limit is the node's, an unset request the limit or 0; what the API server
/// refuses, and the node's disk, have none.
#[test]
fn resource_fields_are_the_containers_quantities_in_the_divisors_units() {
    let resources = strings(&[
        "limits.cpu",
        "250m",
        "limits.memory",
        "1.5Gi",
        "requests.memory",
        "100M",
    ]);
    let resources: Vec<(String, String)> = resources
        .chunks(2)
        .map(|p| (p[0].clone(), p[1].clone()))
        .collect();
    let value = |resource: &str, divisor: Option<&str>| {
        podenv::resource_value(resource, divisor, &resources, 4, 8 << 30)
    };
    for (resource, divisor, expected) in [
        ("limits.cpu", None, Some("1")),
        ("limits.cpu", Some("1m"), Some("250")),
        ("limits.memory", None, Some("1610612736")),
        ("limits.memory", Some("1Mi"), Some("1536")),
        ("limits.memory", Some("1G"), Some("2")),
        ("requests.memory", Some("1k"), Some("100000")),
        ("requests.cpu", Some("1m"), Some("250")),
        ("limits.ephemeral-storage", Some("1Gi"), None),
        ("requests.ephemeral-storage", None, Some("0")),
        ("limits.gpu", None, None),
        ("cpu", None, None),
        ("limits.cpu", Some("0"), None),
        ("limits.cpu", Some("1x"), None),
    ] {
        assert_eq!(
            value(resource, divisor).ok().as_deref(),
            expected,
            "{resource} / {divisor:?}"
        );
    }
    let bare = |q: &str| {
        podenv::resource_value(
            "limits.memory",
            None,
            &[("limits.memory".into(), q.into())],
            1,
            1,
        )
        .ok()
    };
    assert_eq!(bare("1e3").as_deref(), Some("1000"));
    assert_eq!(bare("2E").as_deref(), Some("2000000000000000000"));
    assert_eq!(bare("0.5").as_deref(), Some("1"));
    assert_eq!(bare("-1"), None);
    assert_eq!(bare("1.2.3"), None);
    assert_eq!(bare("."), None);
}

/// The variables that act as a process or the interpreter starts keep a bundle off the zygote
/// (which starts as root, before any run is confined); the others do not.
#[test]
fn variables_that_act_at_start_are_known() {
    for name in [
        "PYTHONPATH",
        "PYTHONWARNINGS",
        "PYTHONHOME",
        "LD_PRELOAD",
        "LD_LIBRARY_PATH",
        "LC_ALL",
        "LANG",
        "TZ",
        "OPENSSL_CONF",
        "SSL_CERT_FILE",
        "MALLOC_ARENA_MAX",
        "GLIBC_TUNABLES",
        "GCONV_PATH",
        "HOME",
        "PATH",
    ] {
        assert!(podenv::acts_at_start(name), "{name}");
    }
    for name in [
        "POD_NAME",
        "MODE",
        "HTTPS_PROXY",
        "KUBERNETES_SERVICE_HOST",
        "pythonpath",
    ] {
        assert!(!podenv::acts_at_start(name), "{name}");
    }
}
