//! What credlint's CEL evaluates as Kubernetes and Kyverno do: the standard macros, operators and
//! functions, the strings extension and optional values. Anything else a policy uses (a
//! Kubernetes library such as quantity or sets, a Kyverno library that reads the cluster or the
//! network, a variable only the cluster has) makes the policy `policy-unsupported`.

use crate::lint::cel::Usage;

/// Operators and functions whose results match Kubernetes' CEL. `format`, `reverse` and the
/// timestamp and duration functions are left out: credlint's CEL has them in another form or not
/// at all.
pub const FUNCTIONS: &[&str] = &[
    // Operators, and what the macros expand to.
    "_&&_",
    "_||_",
    "_?_:_",
    "!_",
    "-_",
    "_==_",
    "_!=_",
    "_<_",
    "_<=_",
    "_>_",
    "_>=_",
    "_+_",
    "_-_",
    "_*_",
    "_/_",
    "_%_",
    "_[_]",
    "@in",
    "@not_strictly_false",
    // Standard functions.
    "size",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "bool",
    "dyn",
    "type",
    "matches",
    "contains",
    "startsWith",
    "endsWith",
    // The strings extension.
    "charAt",
    "indexOf",
    "lastIndexOf",
    "lowerAscii",
    "upperAscii",
    "replace",
    "split",
    "substring",
    "trim",
    "join",
    // Optional values.
    "_?._",
    "_[?_]",
    "orValue",
    "or",
    "hasValue",
    "value",
];

/// Functions called on a namespace, as `optional.of(x)`.
const QUALIFIED: &[&str] = &["optional.of", "optional.none", "optional.ofNonZeroValue"];

/// Names a ValidatingPolicy expression may read, and what each is here.
const VARIABLES: &[&str] = &["object", "oldObject", "request", "variables"];

/// Fields of `request` known before the manifest is applied (credlint binds them as a create).
pub const REQUEST_FIELDS: &[&str] = &[
    "kind",
    "resource",
    "subResource",
    "requestKind",
    "requestResource",
    "requestSubResource",
    "name",
    "namespace",
    "operation",
    "dryRun",
];

/// Where an expression stands: match conditions are evaluated before the variables exist.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    MatchCondition,
    Body,
}

/// Evaluation recurses once per level of the expression tree: deeper trees than this are
/// refused rather than risk the stack. `&&` and `||` chains are balanced by the parser, so only
/// a long chain of `+` or of comparisons comes near it; the catalog's deepest is 17.
pub const MAX_DEPTH: usize = 40;

/// Why an expression cannot be evaluated faithfully, if it cannot.
pub fn check(usage: &Usage, place: Place) -> Result<(), String> {
    if usage.depth > MAX_DEPTH {
        return Err(format!(
            "the expression nests {} levels deep, more than the {MAX_DEPTH} credlint evaluates",
            usage.depth
        ));
    }
    if let Some(name) = usage.structs.iter().next() {
        return Err(format!(
            "the expression builds a `{name}` message, which credlint's CEL does not know"
        ));
    }
    for (root, function) in &usage.calls_on_identifiers {
        if is_variable(root) {
            identifier(root, place)?;
            method(function)?;
        } else {
            qualified(root, function)?;
        }
    }
    for name in &usage.identifiers {
        identifier(name, place)?;
    }
    for (root, field) in &usage.fields {
        if root == "request" && !REQUEST_FIELDS.contains(&field.as_str()) {
            return Err(match field.as_str() {
                "userInfo" => "`request.userInfo` depends on who applies the manifest, which credlint cannot know".into(),
                _ => format!("`request.{field}` is only known when the cluster receives the request"),
            });
        }
    }
    for function in &usage.functions {
        method(function)?;
    }
    Ok(())
}

fn is_variable(name: &str) -> bool {
    VARIABLES.contains(&name)
        || matches!(
            name,
            "namespaceObject" | "params" | "authorizer" | "exceptions"
        )
}

fn identifier(name: &str, place: Place) -> Result<(), String> {
    match name {
        "variables" if place == Place::MatchCondition => Err(
            "a match condition reads `variables`, which Kubernetes and Kyverno evaluate only after the match conditions".into(),
        ),
        n if VARIABLES.contains(&n) => Ok(()),
        "namespaceObject" => Err("`namespaceObject` is the Namespace object in the cluster, which credlint cannot read".into()),
        "params" => Err("`params` is a parameter resource in the cluster (paramRef), which credlint cannot read".into()),
        "authorizer" => Err("`authorizer` asks the cluster's authorizer, which credlint cannot do".into()),
        "exceptions" => Err("`exceptions` are PolicyExceptions in the cluster, which credlint cannot read".into()),
        "resource" | "http" | "globalContext" | "image" | "imagedata" => Err(format!(
            "`{name}` is a Kyverno library that reads the cluster or the network, which credlint does not do"
        )),
        other => Err(format!(
            "`{other}` is not a variable of a ValidatingPolicy, so Kyverno would refuse the expression"
        )),
    }
}

fn method(function: &str) -> Result<(), String> {
    if FUNCTIONS.contains(&function) {
        return Ok(());
    }
    let what = match function {
        "quantity" | "isQuantity" | "asInteger" | "asApproximateFloat" | "isInteger" | "sign"
        | "compareTo" | "isGreaterThan" | "isLessThan" | "add" | "sub" => {
            "the Kubernetes quantity library"
        }
        "url" | "isURL" | "getScheme" | "getHost" | "getHostname" | "getPort"
        | "getEscapedPath" | "getQuery" => "the Kubernetes URL library",
        "ip"
        | "isIP"
        | "cidr"
        | "isCIDR"
        | "family"
        | "isLoopback"
        | "isUnspecified"
        | "isGlobalUnicast"
        | "isLinkLocalMulticast"
        | "isLinkLocalUnicast"
        | "containsIP"
        | "containsCIDR"
        | "prefixLength"
        | "masked" => "the Kubernetes IP and CIDR library",
        "isSorted" | "sum" | "min" | "max" | "distinct" | "flatten" | "slice" | "sort"
        | "sortBy" | "first" | "last" | "range" => "a list library",
        "find" | "findAll" => "the Kubernetes regex library",
        "semver" | "isSemver" | "major" | "minor" | "patch" => "the Kubernetes semver library",
        "timestamp" | "duration" | "getFullYear" | "getMonth" | "getDayOfMonth"
        | "getDayOfWeek" | "getDayOfYear" | "getDate" | "getHours" | "getMinutes"
        | "getSeconds" | "getMilliseconds" => "timestamps and durations",
        "format" | "reverse" | "quote" => "a newer version of the strings extension",
        "path" | "group" | "check" | "allowed" | "reason" | "errored" | "error"
        | "serviceAccount" | "subresource" | "namespace" | "name" | "fieldSelector"
        | "labelSelector" => "the Kubernetes authorizer library",
        "transformList" | "transformMap" | "transformMapEntry" => "two-variable comprehensions",
        _ => "",
    };
    Err(if what.is_empty() {
        format!("the function `{function}` is not one credlint's CEL evaluates")
    } else {
        format!("the function `{function}` ({what}) is not one credlint's CEL evaluates")
    })
}

fn qualified(namespace: &str, function: &str) -> Result<(), String> {
    let name = format!("{namespace}.{function}");
    if QUALIFIED.contains(&name.as_str()) {
        return Ok(());
    }
    Err(match namespace {
        "resource" | "globalContext" => {
            format!("`{name}` reads the cluster, which credlint cannot do")
        }
        "http" => format!("`{name}` calls a service over the network, which credlint does not do"),
        "image" | "imagedata" => {
            format!("`{name}` reads an image registry, which credlint does not do")
        }
        "sets" => {
            format!("`{name}` (the Kubernetes sets library) is not one credlint's CEL evaluates")
        }
        _ => format!("the function `{name}` is not one credlint's CEL evaluates"),
    })
}
