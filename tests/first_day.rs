//! The rough edges a new user meets on the first day (issue 35): messages that point at the
//! offending node and name what is wrong, and flags that behave as in other linters.

mod common;

use common::{credlint, json};

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
