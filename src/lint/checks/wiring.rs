//! `rolebinding-wiring` (decided from the RoleBinding alone: its name says whose it is) and
//! `job-wiring` (decided once the Job's owner is known).

use crate::load::source::At;
use crate::load::yaml::{Node, Span};
use crate::model::bundle::{JobFacts, SUFFIX};

pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
pub const COMMAND: [&str; 3] = [
    "python3",
    "/credentials/create.py",
    "/credentials/plan.json",
];
pub const MOUNT_PATH: &str = "/credentials";

pub fn rolebinding(root: &Node, owner: &str, namespace: Option<&str>) -> Vec<(Span, String)> {
    let mut out = Vec::new();
    let expected = format!("{owner}{SUFFIX}");
    let anchor = crate::load::locate::root_span(root);
    match root.get("roleRef") {
        None => out.push((
            anchor,
            format!("the RoleBinding has no roleRef; it binds the Role `{expected}`"),
        )),
        Some(role_ref) => {
            let mut field = |key: &str, want: &str, what: &str| match role_ref.get(key) {
                Some(n) if n.as_str() == Some(want) => {}
                Some(n) => out.push((
                    n.span,
                    format!(
                        "roleRef {key} is `{}`; {what}",
                        n.display_scalar().unwrap_or_default()
                    ),
                )),
                None => out.push((
                    root.entry("roleRef").map_or(anchor, |e| e.key_span),
                    format!("roleRef has no {key}; {what}"),
                )),
            };
            field(
                "kind",
                "Role",
                "the credentials RoleBinding binds a namespaced Role",
            );
            field(
                "apiGroup",
                RBAC_GROUP,
                "the Role's API group is rbac.authorization.k8s.io",
            );
            field(
                "name",
                &expected,
                &format!("it binds the owner's Role `{expected}`"),
            );
        }
    }
    let subjects = root
        .get("subjects")
        .and_then(Node::as_seq)
        .unwrap_or_default();
    if subjects.is_empty() {
        let at = root.entry("subjects").map_or(anchor, |e| e.key_span);
        out.push((
            at,
            format!("the RoleBinding binds no subject; it binds the ServiceAccount `{expected}`"),
        ));
    }
    let mut seen_account = false;
    for subject in subjects {
        let text = |key| subject.get(key).and_then(Node::as_str);
        let is_account = text("kind") == Some("ServiceAccount")
            && text("name") == Some(expected.as_str())
            // An empty namespace, like none, is the binding's own (as the RBAC authorizer reads
            // a ServiceAccount subject).
            && text("namespace")
                .is_none_or(|ns| ns.is_empty() || Some(ns) == namespace || namespace.is_none())
            && text("apiGroup").is_none_or(str::is_empty);
        if is_account && !seen_account {
            seen_account = true;
            continue;
        }
        let (span, what) = if is_account {
            (
                subject.span,
                "binds the ServiceAccount a second time".to_string(),
            )
        } else if text("kind") != Some("ServiceAccount") {
            let n = subject.get("kind").unwrap_or(subject);
            (
                n.span,
                format!("binds a {}", text("kind").unwrap_or("subject without kind")),
            )
        } else if text("name") != Some(expected.as_str()) {
            let n = subject.get("name").unwrap_or(subject);
            (
                n.span,
                format!("binds the ServiceAccount `{}`", text("name").unwrap_or("")),
            )
        } else if let Some(n) = subject
            .get("apiGroup")
            .filter(|_| text("apiGroup").is_some_and(|g| !g.is_empty()))
        {
            (
                n.span,
                "gives a ServiceAccount subject an API group".to_string(),
            )
        } else {
            let n = subject.get("namespace").unwrap_or(subject);
            (
                n.span,
                format!(
                    "binds a ServiceAccount of namespace `{}`",
                    text("namespace").unwrap_or("")
                ),
            )
        };
        out.push((
            span,
            format!("the credentials RoleBinding {what}; its only subject is the ServiceAccount `{expected}` of its own namespace"),
        ));
    }
    out
}

pub fn job(job: &JobFacts, owner: &str) -> Vec<(At, String)> {
    let mut out = Vec::new();
    let expected = format!("{owner}{SUFFIX}");
    match &job.service_account {
        None => out.push((
            job.pod_loc,
            format!(
                "the Job sets no serviceAccountName: it would run as `default`, not `{expected}`"
            ),
        )),
        Some((sa, loc)) if *sa != expected => out.push((
            *loc,
            format!("the Job runs as the ServiceAccount `{sa}`, not `{expected}`"),
        )),
        Some(_) => {}
    }
    let volume = job
        .volumes
        .iter()
        .find(|v| v.config_map.as_deref() == Some(&expected));
    match volume {
        None => match job.volumes.iter().find(|v| v.config_map.is_some()) {
            Some(other) => out.push((
                other.loc,
                format!(
                    "the Job mounts the ConfigMap `{}`, not `{expected}`",
                    other.config_map.as_deref().unwrap_or("")
                ),
            )),
            None => out.push((
                job.pod_loc,
                format!("the Job has no volume from the ConfigMap `{expected}`"),
            )),
        },
        Some(volume) => match job.mounts.iter().find(|m| m.volume == volume.name) {
            Some(m) if m.path.trim_end_matches('/') == MOUNT_PATH => {}
            Some(m) => out.push((
                m.loc,
                format!(
                    "the ConfigMap is mounted at `{}`, not at {MOUNT_PATH}",
                    m.path
                ),
            )),
            None => out.push((
                job.container_loc.unwrap_or(job.pod_loc),
                format!(
                    "the container does not mount the volume `{}` at {MOUNT_PATH}",
                    volume.name
                ),
            )),
        },
    }
    let Some(container) = &job.container_loc else {
        out.push((job.pod_loc, "the Job has no container".into()));
        return out;
    };
    if job.command != COMMAND {
        let shown = if job.command.is_empty() {
            "the image's entrypoint".to_string()
        } else {
            format!("`{}`", job.command.join(" "))
        };
        out.push((
            job.command_loc.unwrap_or(*container),
            format!("the container runs {shown}, not `{}`", COMMAND.join(" ")),
        ));
    }
    out
}
