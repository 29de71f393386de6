//! Kubernetes RBAC as the API server applies it: what a request asks for (its "request info")
//! and whether a Role's rules, plus the cluster's default grants to every authenticated
//! identity, allow it.
//!
//! Follows `k8s.io/apiserver` request-info parsing and the RBAC authorizer's rule matching:
//! the verb comes from the method and the path (a nameless GET is `list`, or `watch` when the
//! `watch` parameter is set to anything but `false`/`0`, or when the path starts with `watch/`;
//! a nameless DELETE is `deletecollection`), `resourceNames` match only the request's name (so a
//! create or list, which carry none, never match a named rule, and an empty list means "any
//! name"), and `*` is a wildcard in verbs, apiGroups and resources but not in resourceNames.

use super::RoleRule;

/// What one HTTP request asks for, in RBAC's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestInfo {
    /// False for non-resource URLs such as `/version`.
    pub is_resource: bool,
    pub verb: String,
    pub api_group: String,
    pub api_version: String,
    pub namespace: String,
    pub resource: String,
    pub subresource: String,
    pub name: String,
    /// The decoded path, as RBAC's nonResourceURLs compare it.
    pub path: String,
}

/// Parses a request as the API server's request-info resolver does. `path` is the raw path
/// (percent-encoded), `query` the raw query string without `?`.
pub fn request_info(method: &str, path: &str, query: &str) -> RequestInfo {
    let decoded = percent_decode(path);
    let mut info = RequestInfo {
        is_resource: false,
        verb: method.to_ascii_lowercase(),
        api_group: String::new(),
        api_version: String::new(),
        namespace: String::new(),
        resource: String::new(),
        subresource: String::new(),
        name: String::new(),
        path: decoded.clone(),
    };
    let trimmed = decoded.trim_matches('/');
    let mut parts: Vec<&str> = if trimmed.is_empty() {
        Vec::new()
    } else {
        trimmed.split('/').collect()
    };
    if parts.len() < 3 {
        return info;
    }
    match parts[0] {
        "api" => parts.remove(0),
        "apis" => {
            // `/apis/<group>/<version>/...` needs at least group, version and a resource.
            if parts.len() < 4 {
                return info;
            }
            parts.remove(0);
            info.api_group = parts.remove(0).to_string();
            ""
        }
        _ => return info,
    };
    info.is_resource = true;
    info.api_version = parts.remove(0).to_string();

    if parts.first() == Some(&"watch") || parts.first() == Some(&"proxy") {
        if parts.len() < 2 {
            // The API server refuses such a request; no rule can allow an empty verb.
            info.verb = String::new();
            return info;
        }
        info.verb = parts.remove(0).to_string();
    } else {
        info.verb = match method {
            "POST" => "create",
            "GET" | "HEAD" => "get",
            "PUT" => "update",
            "PATCH" => "patch",
            "DELETE" => "delete",
            _ => "",
        }
        .to_string();
    }

    if parts.first() == Some(&"namespaces") && parts.len() > 1 {
        info.namespace = parts[1].to_string();
        // `namespaces/<ns>/status` and `/finalize` are subresources of the namespace itself.
        if parts.len() > 2 && parts[2] != "status" && parts[2] != "finalize" {
            parts.drain(..2);
        }
    }

    let subresource_allowed = info.verb != "proxy";
    if parts.len() >= 3 && subresource_allowed {
        info.subresource = parts[2].to_string();
    }
    if parts.len() >= 2 {
        info.name = parts[1].to_string();
    }
    if let Some(resource) = parts.first() {
        info.resource = resource.to_string();
    }

    if info.name.is_empty() && info.verb == "get" {
        info.verb = if watch_requested(query) {
            "watch"
        } else {
            "list"
        }
        .to_string();
        if let Some(name) = field_selector_name(query) {
            info.name = name;
        }
    }
    if info.name.is_empty() && info.verb == "delete" {
        info.verb = "deletecollection".to_string();
    }
    info
}

/// The first `watch` parameter turns a list into a watch unless it is `0` or `false`
/// (any case); an empty value counts as true, as Kubernetes' bool parameter conversion does.
fn watch_requested(query: &str) -> bool {
    query_values(query, "watch")
        .next()
        .is_some_and(|v| v != "0" && !v.eq_ignore_ascii_case("false"))
}

/// A list or watch limited by `fieldSelector=metadata.name=<n>` carries that name for RBAC.
fn field_selector_name(query: &str) -> Option<String> {
    let selector = query_values(query, "fieldSelector").next()?;
    for term in selector.split(',') {
        let term = term.trim();
        if term.contains("!=") {
            continue;
        }
        let (field, value) = match term.split_once("==") {
            Some(pair) => pair,
            None => term.split_once('=')?,
        };
        if field.trim() == "metadata.name" {
            let value = value.trim();
            let valid = !value.is_empty()
                && value != "."
                && value != ".."
                && !value.contains('/')
                && !value.contains('%');
            return valid.then(|| value.to_string());
        }
    }
    None
}

/// The decoded values of one query parameter, in order.
pub fn query_values<'a>(query: &'a str, key: &'a str) -> impl Iterator<Item = String> + 'a {
    query.split('&').filter_map(move |pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (percent_decode(&k.replace('+', " ")) == key).then(|| percent_decode(&v.replace('+', " ")))
    })
}

/// Percent-decoding that keeps invalid escapes as they are and never fails.
pub fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = |b: u8| (b as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A rule as the authorizer sees it (the bundle's Role, or a default cluster grant).
#[derive(Debug, Clone, Copy)]
struct Rule<'a> {
    api_groups: &'a [String],
    resources: &'a [String],
    resource_names: &'a [String],
    verbs: &'a [String],
    non_resource_urls: &'a [String],
}

fn has(list: &[String], wanted: &str) -> bool {
    list.iter().any(|x| x == "*" || x == wanted)
}

fn rule_allows(rule: Rule<'_>, info: &RequestInfo) -> bool {
    if !has(rule.verbs, &info.verb) {
        return false;
    }
    if !info.is_resource {
        return rule.non_resource_urls.iter().any(|url| {
            url == "*"
                || *url == info.path
                || url
                    .strip_suffix('*')
                    .is_some_and(|prefix| info.path.starts_with(prefix))
        });
    }
    let combined = if info.subresource.is_empty() {
        info.resource.clone()
    } else {
        format!("{}/{}", info.resource, info.subresource)
    };
    let resource_ok = rule.resources.iter().any(|r| {
        r == "*"
            || *r == combined
            || (!info.subresource.is_empty()
                && r.strip_prefix("*/") == Some(info.subresource.as_str()))
    });
    has(rule.api_groups, &info.api_group)
        && resource_ok
        && (rule.resource_names.is_empty() || rule.resource_names.contains(&info.name))
}

/// Grants every authenticated service account has in a cluster with the default bootstrap
/// policy (system:basic-user, system:discovery, system:public-info-viewer and
/// system:service-account-issuer-discovery), so that a program is not blamed for them.
struct DefaultGrants {
    review_groups: Vec<String>,
    reviews: Vec<String>,
    create: Vec<String>,
    urls: Vec<String>,
    get: Vec<String>,
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

impl DefaultGrants {
    fn new() -> Self {
        DefaultGrants {
            review_groups: strings(&["authorization.k8s.io", "authentication.k8s.io"]),
            reviews: strings(&[
                "selfsubjectaccessreviews",
                "selfsubjectrulesreviews",
                "selfsubjectreviews",
            ]),
            create: strings(&["create"]),
            urls: strings(&[
                "/api",
                "/api/*",
                "/apis",
                "/apis/*",
                "/healthz",
                "/livez",
                "/readyz",
                "/openapi",
                "/openapi/*",
                "/version",
                "/version/",
                "/.well-known/openid-configuration",
                "/.well-known/openid-configuration/",
                "/openid/v1/jwks",
                "/openid/v1/jwks/",
            ]),
            get: strings(&["get"]),
        }
    }

    fn allows(&self, info: &RequestInfo) -> bool {
        let reviews = Rule {
            api_groups: &self.review_groups,
            resources: &self.reviews,
            resource_names: &[],
            verbs: &self.create,
            non_resource_urls: &[],
        };
        let discovery = Rule {
            api_groups: &[],
            resources: &[],
            resource_names: &[],
            verbs: &self.get,
            non_resource_urls: &self.urls,
        };
        rule_allows(reviews, info) || rule_allows(discovery, info)
    }
}

/// Whether the bundle's Role, bound in `namespace`, or a default cluster grant allows the request.
pub fn authorize(rules: &[RoleRule], namespace: &str, info: &RequestInfo) -> bool {
    if DefaultGrants::new().allows(info) {
        return true;
    }
    // A Role's rules apply to resource requests in its own namespace only; its
    // nonResourceURLs (which the API server refuses in a Role anyway) never apply.
    if !info.is_resource || info.namespace != namespace {
        return false;
    }
    rules.iter().any(|r| {
        rule_allows(
            Rule {
                api_groups: &r.api_groups,
                resources: &r.resources,
                resource_names: r.resource_names.as_deref().unwrap_or(&[]),
                verbs: &r.verbs,
                non_resource_urls: &[],
            },
            info,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(
        groups: &[&str],
        resources: &[&str],
        names: Option<&[&str]>,
        verbs: &[&str],
    ) -> RoleRule {
        RoleRule {
            api_groups: strings(groups),
            resources: strings(resources),
            resource_names: names.map(strings),
            verbs: strings(verbs),
            non_resource_urls: Vec::new(),
        }
    }

    /// (method, path, query) -> (verb, group, namespace, resource, subresource, name, is_resource)
    #[test]
    fn request_info_table() {
        type Want<'a> = (&'a str, &'a str, &'a str, &'a str, &'a str, &'a str, bool);
        let table: &[(&str, &str, &str, Want)] = &[
            (
                "GET",
                "/api/v1/namespaces/shop/secrets/a",
                "",
                ("get", "", "shop", "secrets", "", "a", true),
            ),
            (
                "HEAD",
                "/api/v1/namespaces/shop/secrets/a",
                "",
                ("get", "", "shop", "secrets", "", "a", true),
            ),
            (
                "GET",
                "/api/v1/namespaces/shop/secrets",
                "",
                ("list", "", "shop", "secrets", "", "", true),
            ),
            (
                "GET",
                "/api/v1/namespaces/shop/secrets/",
                "",
                ("list", "", "shop", "secrets", "", "", true),
            ),
            (
                "GET",
                "/api/v1/namespaces/shop/secrets",
                "watch=true",
                ("watch", "", "shop", "secrets", "", "", true),
            ),
            (
                "GET",
                "/api/v1/namespaces/shop/secrets",
                "watch=1",
                ("watch", "", "shop", "secrets", "", "", true),
            ),
            (
                "GET",
                "/api/v1/namespaces/shop/secrets",
                "watch=",
                ("watch", "", "shop", "secrets", "", "", true),
            ),
            (
                "GET",
                "/api/v1/namespaces/shop/secrets",
                "watch=False",
                ("list", "", "shop", "secrets", "", "", true),
            ),
            (
                "GET",
                "/api/v1/namespaces/shop/secrets",
                "watch=0&watch=1",
                ("list", "", "shop", "secrets", "", "", true),
            ),
            (
                "GET",
                "/api/v1/watch/namespaces/shop/secrets",
                "",
                ("watch", "", "shop", "secrets", "", "", true),
            ),
            (
                "GET",
                "/api/v1/watch/namespaces/shop/secrets/a",
                "",
                ("watch", "", "shop", "secrets", "", "a", true),
            ),
            (
                "GET",
                "/api/v1/namespaces/shop/secrets",
                "fieldSelector=metadata.name%3Da",
                ("list", "", "shop", "secrets", "", "a", true),
            ),
            (
                "GET",
                "/api/v1/namespaces/shop/secrets",
                "fieldSelector=metadata.name!=a",
                ("list", "", "shop", "secrets", "", "", true),
            ),
            (
                "POST",
                "/api/v1/namespaces/shop/secrets",
                "",
                ("create", "", "shop", "secrets", "", "", true),
            ),
            (
                "PUT",
                "/api/v1/namespaces/shop/secrets/a",
                "",
                ("update", "", "shop", "secrets", "", "a", true),
            ),
            (
                "PATCH",
                "/api/v1/namespaces/shop/secrets/a",
                "",
                ("patch", "", "shop", "secrets", "", "a", true),
            ),
            (
                "DELETE",
                "/api/v1/namespaces/shop/secrets/a",
                "",
                ("delete", "", "shop", "secrets", "", "a", true),
            ),
            (
                "DELETE",
                "/api/v1/namespaces/shop/secrets",
                "",
                ("deletecollection", "", "shop", "secrets", "", "", true),
            ),
            (
                "PUT",
                "/api/v1/namespaces/shop/secrets/a/status",
                "",
                ("update", "", "shop", "secrets", "status", "a", true),
            ),
            (
                "GET",
                "/apis/external-secrets.io/v1/namespaces/shop/externalsecrets/a",
                "",
                (
                    "get",
                    "external-secrets.io",
                    "shop",
                    "externalsecrets",
                    "",
                    "a",
                    true,
                ),
            ),
            (
                "DELETE",
                "/apis/generators.external-secrets.io/v1alpha1/namespaces/shop/passwords/g",
                "",
                (
                    "delete",
                    "generators.external-secrets.io",
                    "shop",
                    "passwords",
                    "",
                    "g",
                    true,
                ),
            ),
            (
                "GET",
                "/api/v1/namespaces/shop",
                "",
                ("get", "", "shop", "namespaces", "", "shop", true),
            ),
            (
                "PUT",
                "/api/v1/namespaces/shop/finalize",
                "",
                ("update", "", "shop", "namespaces", "finalize", "shop", true),
            ),
            (
                "GET",
                "/api/v1/nodes/n1",
                "",
                ("get", "", "", "nodes", "", "n1", true),
            ),
            (
                "GET",
                "/api/v1/namespaces/sh%6Fp/secrets/a",
                "",
                ("get", "", "shop", "secrets", "", "a", true),
            ),
            (
                "OPTIONS",
                "/api/v1/namespaces/shop/secrets/a",
                "",
                ("", "", "shop", "secrets", "", "a", true),
            ),
            ("GET", "/version", "", ("get", "", "", "", "", "", false)),
            (
                "GET",
                "/apis/external-secrets.io",
                "",
                ("get", "", "", "", "", "", false),
            ),
            ("POST", "/healthz", "", ("post", "", "", "", "", "", false)),
        ];
        for (method, path, query, want) in table {
            let got = request_info(method, path, query);
            let got_tuple = (
                got.verb.as_str(),
                got.api_group.as_str(),
                got.namespace.as_str(),
                got.resource.as_str(),
                got.subresource.as_str(),
                got.name.as_str(),
                got.is_resource,
            );
            assert_eq!(&got_tuple, want, "{method} {path}?{query}");
        }
    }

    fn allowed(rules: &[RoleRule], method: &str, path: &str, query: &str) -> bool {
        authorize(rules, "shop", &request_info(method, path, query))
    }

    const SECRET_A: &str = "/api/v1/namespaces/shop/secrets/a";
    const SECRETS: &str = "/api/v1/namespaces/shop/secrets";

    #[test]
    fn adr_role_allows_exactly_its_requests() {
        let rules = vec![
            rule(&[""], &["secrets"], None, &["create"]),
            rule(&[""], &["secrets"], Some(&["a"]), &["get", "patch"]),
            rule(
                &["external-secrets.io"],
                &["externalsecrets"],
                Some(&["a"]),
                &["get", "delete"],
            ),
        ];
        assert!(allowed(&rules, "POST", SECRETS, ""));
        assert!(allowed(&rules, "GET", SECRET_A, ""));
        assert!(allowed(&rules, "PATCH", SECRET_A, ""));
        assert!(!allowed(&rules, "PUT", SECRET_A, ""));
        assert!(!allowed(&rules, "DELETE", SECRET_A, ""));
        assert!(!allowed(&rules, "GET", SECRETS, ""));
        assert!(!allowed(&rules, "GET", SECRETS, "watch=true"));
        assert!(!allowed(
            &rules,
            "GET",
            "/api/v1/namespaces/shop/secrets/b",
            ""
        ));
        assert!(!allowed(
            &rules,
            "PATCH",
            "/api/v1/namespaces/shop/secrets/a/status",
            ""
        ));
        // The Role is bound in its namespace only.
        assert!(!allowed(
            &rules,
            "GET",
            "/api/v1/namespaces/other/secrets/a",
            ""
        ));
        assert!(!allowed(
            &rules,
            "POST",
            "/api/v1/namespaces/other/secrets",
            ""
        ));
        assert!(allowed(
            &rules,
            "DELETE",
            "/apis/external-secrets.io/v1beta1/namespaces/shop/externalsecrets/a",
            ""
        ));
        // A group is part of the match: the same resource name in another group is not allowed.
        assert!(!allowed(
            &rules,
            "GET",
            "/apis/other.io/v1/namespaces/shop/externalsecrets/a",
            ""
        ));
        // A list narrowed to a permitted name by a field selector is still a list.
        assert!(!allowed(
            &rules,
            "GET",
            SECRETS,
            "fieldSelector=metadata.name=a"
        ));
    }

    #[test]
    fn resource_names_edge_cases() {
        // `[]` is the same as absent: every name, and nameless requests too.
        let empty = vec![rule(
            &[""],
            &["secrets"],
            Some(&[]),
            &["get", "list", "create"],
        )];
        assert!(allowed(&empty, "GET", SECRET_A, ""));
        assert!(allowed(&empty, "GET", SECRETS, ""));
        assert!(allowed(&empty, "POST", SECRETS, ""));
        // `[""]` matches exactly the nameless requests: create and list, not a named get.
        let blank = vec![rule(
            &[""],
            &["secrets"],
            Some(&[""]),
            &["get", "list", "create"],
        )];
        assert!(allowed(&blank, "POST", SECRETS, ""));
        assert!(allowed(&blank, "GET", SECRETS, ""));
        assert!(!allowed(&blank, "GET", SECRET_A, ""));
        // create carries no name, so a named create rule never matches.
        let named_create = vec![rule(&[""], &["secrets"], Some(&["a"]), &["create", "list"])];
        assert!(!allowed(&named_create, "POST", SECRETS, ""));
        assert!(!allowed(&named_create, "GET", SECRETS, ""));
        assert!(allowed(
            &named_create,
            "GET",
            SECRETS,
            "fieldSelector=metadata.name=a"
        ));
        // `*` is not a wildcard in resourceNames.
        let star_name = vec![rule(&[""], &["secrets"], Some(&["*"]), &["get"])];
        assert!(!allowed(&star_name, "GET", SECRET_A, ""));
    }

    #[test]
    fn wildcards_and_subresources() {
        let all = vec![rule(&["*"], &["*"], None, &["*"])];
        assert!(allowed(&all, "PUT", SECRET_A, ""));
        assert!(allowed(
            &all,
            "DELETE",
            "/apis/x.io/v1/namespaces/shop/things",
            ""
        ));
        assert!(!allowed(
            &all,
            "GET",
            "/api/v1/namespaces/other/secrets/a",
            ""
        ));
        let star_verb = vec![rule(&[""], &["secrets"], None, &["*"])];
        assert!(allowed(&star_verb, "GET", SECRETS, "watch=1"));
        assert!(!allowed(
            &star_verb,
            "GET",
            "/api/v1/namespaces/shop/pods/p",
            ""
        ));
        assert!(!allowed(
            &star_verb,
            "PUT",
            "/api/v1/namespaces/shop/secrets/a/status",
            ""
        ));
        let status = vec![rule(&[""], &["*/status"], None, &["update"])];
        assert!(allowed(
            &status,
            "PUT",
            "/api/v1/namespaces/shop/secrets/a/status",
            ""
        ));
        assert!(!allowed(&status, "PUT", SECRET_A, ""));
        let exact_sub = vec![rule(&[""], &["secrets/status"], None, &["patch"])];
        assert!(allowed(
            &exact_sub,
            "PATCH",
            "/api/v1/namespaces/shop/secrets/a/status",
            ""
        ));
        assert!(!allowed(&exact_sub, "PATCH", SECRET_A, ""));
        // Verbs are compared exactly.
        let upper = vec![rule(&[""], &["secrets"], None, &["GET"])];
        assert!(!allowed(&upper, "GET", SECRET_A, ""));
        // An unknown method has an empty verb: only `*` matches it, as in the RBAC authorizer.
        assert!(allowed(&star_verb, "OPTIONS", SECRET_A, ""));
        assert!(!allowed(&upper, "OPTIONS", SECRET_A, ""));
        let get = vec![rule(&[""], &["secrets"], None, &["get", ""])];
        assert!(allowed(&get, "OPTIONS", SECRET_A, ""));
    }

    #[test]
    fn defaults_and_non_resource_urls() {
        let mut with_urls = rule(&[""], &["secrets"], None, &["get", "post"]);
        with_urls.non_resource_urls = strings(&["*"]);
        let rules = vec![with_urls];
        // Discovery is granted to every authenticated identity by the default bootstrap policy.
        assert!(allowed(&[], "GET", "/version", ""));
        assert!(allowed(&[], "GET", "/apis/external-secrets.io", ""));
        assert!(allowed(
            &[],
            "POST",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            ""
        ));
        // A Role's nonResourceURLs never grant anything.
        assert!(!allowed(&rules, "POST", "/healthz", ""));
        assert!(!allowed(&rules, "GET", "/metrics", ""));
        assert!(!allowed(&[], "GET", "/metrics", ""));
    }

    #[test]
    fn percent_decoding_never_fails() {
        assert_eq!(percent_decode("a%2Fb"), "a/b");
        assert_eq!(percent_decode("a%2"), "a%2");
        assert_eq!(percent_decode("%"), "%");
        assert_eq!(percent_decode("%zz%41"), "%zzA");
        assert_eq!(percent_decode("%ff"), "\u{fffd}");
    }
}
