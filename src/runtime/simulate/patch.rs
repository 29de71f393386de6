//! JSON patch (RFC 6902) and JSON merge patch (RFC 7386), as the API server applies them to an
//! object: a malformed patch is a bad request (400), a patch that does not apply, including a
//! failed `test`, is unprocessable (422).

use serde_json::{Map, Value};

#[derive(Debug, PartialEq, Eq)]
pub enum PatchError {
    /// The patch document is not a list of operations: HTTP 400.
    Malformed(String),
    /// An operation does not apply to the object, or a `test` failed: HTTP 422.
    Failed(String),
}

/// A JSON pointer split into its unescaped reference tokens.
fn pointer_tokens(pointer: &str) -> Result<Vec<String>, PatchError> {
    if pointer.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = pointer.strip_prefix('/') else {
        return Err(PatchError::Failed(format!(
            "JSON pointer {pointer:?} does not start with /"
        )));
    };
    Ok(rest
        .split('/')
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect())
}

fn array_index(token: &str, len: usize, allow_end: bool) -> Result<usize, PatchError> {
    if allow_end && token == "-" {
        return Ok(len);
    }
    let valid = !token.is_empty()
        && token.bytes().all(|b| b.is_ascii_digit())
        && (token == "0" || !token.starts_with('0'));
    let index = if valid {
        token.parse::<usize>().ok()
    } else {
        None
    };
    match index {
        Some(i) if i < len || (allow_end && i == len) => Ok(i),
        _ => Err(PatchError::Failed(format!(
            "array index {token:?} is out of range"
        ))),
    }
}

fn get<'a>(doc: &'a Value, tokens: &[String]) -> Option<&'a Value> {
    let mut current = doc;
    for token in tokens {
        current = match current {
            Value::Object(map) => map.get(token)?,
            Value::Array(items) => items.get(array_index(token, items.len(), false).ok()?)?,
            _ => return None,
        };
    }
    Some(current)
}

/// The parent container of the location `tokens` names, and the last token.
fn parent_mut<'a>(
    doc: &'a mut Value,
    tokens: &'a [String],
) -> Result<(&'a mut Value, &'a str), PatchError> {
    let Some((last, parents)) = tokens.split_last() else {
        return Err(PatchError::Failed(
            "the operation needs a non-root path".into(),
        ));
    };
    let mut current = doc;
    for token in parents {
        current = match current {
            Value::Object(map) => map.get_mut(token),
            Value::Array(items) => {
                let i = array_index(token, items.len(), false)?;
                items.get_mut(i)
            }
            _ => None,
        }
        .ok_or_else(|| PatchError::Failed(format!("path segment {token:?} does not exist")))?;
    }
    Ok((current, last.as_str()))
}

fn add(doc: &mut Value, tokens: &[String], value: Value) -> Result<(), PatchError> {
    if tokens.is_empty() {
        *doc = value;
        return Ok(());
    }
    let (parent, last) = parent_mut(doc, tokens)?;
    match parent {
        Value::Object(map) => {
            map.insert(last.to_string(), value);
            Ok(())
        }
        Value::Array(items) => {
            let i = array_index(last, items.len(), true)?;
            items.insert(i, value);
            Ok(())
        }
        _ => Err(PatchError::Failed(format!(
            "cannot add {last:?} to a scalar"
        ))),
    }
}

fn remove(doc: &mut Value, tokens: &[String]) -> Result<Value, PatchError> {
    let (parent, last) = parent_mut(doc, tokens)?;
    match parent {
        Value::Object(map) => map
            .remove(last)
            .ok_or_else(|| PatchError::Failed(format!("cannot remove missing key {last:?}"))),
        Value::Array(items) => {
            let i = array_index(last, items.len(), false)?;
            Ok(items.remove(i))
        }
        _ => Err(PatchError::Failed(format!(
            "cannot remove {last:?} from a scalar"
        ))),
    }
}

/// Applies an RFC 6902 patch to a copy of `doc`.
pub fn apply_json_patch(doc: &Value, patch: &Value) -> Result<Value, PatchError> {
    let Value::Array(ops) = patch else {
        return Err(PatchError::Malformed(
            "a JSON patch must be a list of operations".into(),
        ));
    };
    let mut out = doc.clone();
    for op in ops {
        let Value::Object(op) = op else {
            return Err(PatchError::Malformed(
                "a JSON patch operation must be an object".into(),
            ));
        };
        let text = |field: &str| -> Result<&str, PatchError> {
            op.get(field)
                .and_then(Value::as_str)
                .ok_or_else(|| PatchError::Malformed(format!("operation lacks {field:?}")))
        };
        let value = || -> Result<Value, PatchError> {
            op.get("value")
                .cloned()
                .ok_or_else(|| PatchError::Malformed("operation lacks \"value\"".into()))
        };
        let name = text("op")?;
        let path = pointer_tokens(text("path")?)?;
        match name {
            "add" => add(&mut out, &path, value()?)?,
            "remove" => {
                if path.is_empty() {
                    return Err(PatchError::Failed("cannot remove the whole object".into()));
                }
                remove(&mut out, &path)?;
            }
            "replace" => {
                if get(&out, &path).is_none() {
                    return Err(PatchError::Failed(
                        "replace: the path does not exist".into(),
                    ));
                }
                if !path.is_empty() {
                    remove(&mut out, &path)?;
                }
                add(&mut out, &path, value()?)?;
            }
            "move" | "copy" => {
                let from = pointer_tokens(text("from")?)?;
                let moved = get(&out, &from).cloned().ok_or_else(|| {
                    PatchError::Failed(format!("{name}: \"from\" does not exist"))
                })?;
                if name == "move" {
                    if path.len() > from.len() && path[..from.len()] == from[..] {
                        return Err(PatchError::Failed("move: cannot move into a child".into()));
                    }
                    if !from.is_empty() {
                        remove(&mut out, &from)?;
                    }
                }
                add(&mut out, &path, moved)?;
            }
            "test" => {
                let expected = value()?;
                if get(&out, &path) != Some(&expected) {
                    return Err(PatchError::Failed(format!(
                        "test failed at {:?}",
                        text("path")?
                    )));
                }
            }
            other => {
                return Err(PatchError::Malformed(format!(
                    "unknown operation {other:?}"
                )));
            }
        }
    }
    Ok(out)
}

/// Applies an RFC 7386 merge patch to a copy of `doc`.
pub fn apply_merge_patch(doc: &Value, patch: &Value) -> Value {
    fn merge(target: &mut Value, patch: &Value) {
        let Value::Object(fields) = patch else {
            *target = patch.clone();
            return;
        };
        if !target.is_object() {
            *target = Value::Object(Map::new());
        }
        if let Value::Object(map) = target {
            for (key, value) in fields {
                if value.is_null() {
                    map.remove(key);
                } else {
                    merge(map.entry(key.clone()).or_insert(Value::Null), value);
                }
            }
        }
    }
    let mut out = doc.clone();
    merge(&mut out, patch);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn secret() -> Value {
        json!({"metadata": {"name": "a", "resourceVersion": "7", "labels": {"x/y": "1"}},
               "data": {"password": "cA=="}, "list": [1, 2]})
    }

    #[test]
    fn test_op_guards_the_patch() {
        let ok = json!([{"op": "test", "path": "/metadata/resourceVersion", "value": "7"},
                        {"op": "add", "path": "/data/user", "value": "dQ=="}]);
        let out = apply_json_patch(&secret(), &ok).unwrap();
        assert_eq!(out["data"]["user"], "dQ==");
        assert_eq!(out["data"]["password"], "cA==");
        let stale = json!([{"op": "test", "path": "/metadata/resourceVersion", "value": "6"},
                           {"op": "add", "path": "/data/user", "value": "dQ=="}]);
        assert!(matches!(
            apply_json_patch(&secret(), &stale),
            Err(PatchError::Failed(_))
        ));
    }

    #[test]
    fn operations_follow_rfc_6902() {
        let doc = secret();
        let p = |ops: Value| apply_json_patch(&doc, &ops);
        assert_eq!(
            p(json!([{"op": "remove", "path": "/metadata/labels/x~1y"}])).unwrap()["metadata"]["labels"],
            json!({})
        );
        assert!(matches!(
            p(json!([{"op": "remove", "path": "/data/user"}])),
            Err(PatchError::Failed(_))
        ));
        assert!(matches!(
            p(json!([{"op": "replace", "path": "/data/user", "value": "x"}])),
            Err(PatchError::Failed(_))
        ));
        assert_eq!(
            p(json!([{"op": "replace", "path": "/data/password", "value": "eA=="}])).unwrap()["data"]
                ["password"],
            "eA=="
        );
        // add needs the parent to exist.
        assert!(matches!(
            p(json!([{"op": "add", "path": "/metadata/annotations/a", "value": "b"}])),
            Err(PatchError::Failed(_))
        ));
        assert_eq!(
            p(json!([{"op": "add", "path": "/list/-", "value": 3}])).unwrap()["list"],
            json!([1, 2, 3])
        );
        assert_eq!(
            p(json!([{"op": "add", "path": "/list/0", "value": 0}])).unwrap()["list"],
            json!([0, 1, 2])
        );
        assert!(matches!(
            p(json!([{"op": "add", "path": "/list/01", "value": 0}])),
            Err(PatchError::Failed(_))
        ));
        assert_eq!(
            p(json!([{"op": "move", "from": "/data/password", "path": "/data/old"}])).unwrap()["data"],
            json!({"old": "cA=="})
        );
        assert_eq!(
            p(json!([{"op": "copy", "from": "/data/password", "path": "/data/old"}])).unwrap()["data"],
            json!({"old": "cA==", "password": "cA=="})
        );
        assert!(matches!(
            p(json!({"op": "add"})),
            Err(PatchError::Malformed(_))
        ));
        assert!(matches!(
            p(json!([{"op": "frobnicate", "path": "/a"}])),
            Err(PatchError::Malformed(_))
        ));
        assert!(matches!(
            p(json!([{"op": "add", "path": "/a"}])),
            Err(PatchError::Malformed(_))
        ));
        assert!(matches!(
            p(json!([{"op": "add", "path": "a", "value": 1}])),
            Err(PatchError::Failed(_))
        ));
        // Nothing is applied when a later operation fails.
        assert!(p(json!([{"op": "add", "path": "/data/u", "value": "x"}, {"op": "test", "path": "/nope", "value": 1}])).is_err());
    }

    #[test]
    fn merge_patch_follows_rfc_7386() {
        let out = apply_merge_patch(
            &secret(),
            &json!({"data": {"password": null, "user": "dQ=="}, "metadata": {"labels": {"x/y": null}}}),
        );
        assert_eq!(out["data"], json!({"user": "dQ=="}));
        assert_eq!(out["metadata"]["labels"], json!({}));
        assert_eq!(out["metadata"]["name"], "a");
        assert_eq!(apply_merge_patch(&secret(), &json!([1])), json!([1]));
    }
}
