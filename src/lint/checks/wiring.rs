//! `rolebinding-wiring` (decided from the RoleBinding alone: its name says whose it is) and
//! `job-wiring` (decided once the Job's owner is known).

use crate::load::source::At;
use crate::load::yaml::{Node, Span};
use crate::model::bundle::{Automount, JobFacts, Mount, SUFFIX, Volume};

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

/// The names the Job must reference: its bundle's ServiceAccount and ConfigMap (the names
/// ADR-072 gives them when the bundle lacks one), and whether that ServiceAccount turns the
/// token off.
pub struct Wanted<'a> {
    pub account: &'a str,
    pub config_map: &'a str,
    pub account_automount: Automount,
}

pub fn job(job: &JobFacts, wanted: &Wanted) -> Vec<(At, String)> {
    let mut out = Vec::new();
    let expected = wanted.account;
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
    token(job, wanted, &mut out);
    let expected = wanted.config_map;
    let volume = job
        .volumes
        .iter()
        .find(|v| v.config_map.as_deref() == Some(expected));
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
            Some(m) if m.path.trim_end_matches('/') == MOUNT_PATH => {
                files(job, volume, m, &mut out)
            }
            // One file mounted on its own: `files` says which one is then missing.
            Some(m) if m.sub_path.is_some() => files(job, volume, m, &mut out),
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

/// The program needs the token of its ServiceAccount to call the API server.
fn token(job: &JobFacts, wanted: &Wanted, out: &mut Vec<(At, String)>) {
    match (job.automount, wanted.account_automount) {
        (Some((false, loc)), _) => out.push((
            loc,
            "the pod sets automountServiceAccountToken: false: the program has no token to \
             call the API server with"
                .into(),
        )),
        (None, Some((false, loc))) => out.push((
            loc,
            format!(
                "the ServiceAccount `{}` sets automountServiceAccountToken: false and the Job's \
                 pod does not set it to true: the program has no token",
                wanted.account
            ),
        )),
        _ => {}
    }
}

/// The two files the command names, under /credentials.
const FILES: [&str; 2] = ["create.py", "plan.json"];

/// What the ConfigMap volume puts under /credentials, and whether the non-root user can read it.
fn files(job: &JobFacts, volume: &Volume, mount: &Mount, out: &mut Vec<(At, String)>) {
    if let Some(loc) = volume.optional {
        out.push((
            loc,
            "the ConfigMap volume is optional: the pod starts without the program when the \
             ConfigMap is missing, and the Job fails instead of waiting for it"
                .into(),
        ));
    }
    let mut present: Vec<(&str, Option<i64>)> = match &volume.items {
        None => FILES.iter().map(|f| (*f, None)).collect(),
        Some((items, _)) => items
            .iter()
            .filter(|(key, _, _)| FILES.contains(&key.as_str()))
            .map(|(key, mode, _)| (key.as_str(), *mode))
            .collect(),
    };
    if let Some((sub, loc)) = &mount.sub_path {
        // A subPath mounts one file of the volume, at the mount path itself.
        let kept = mount.path.rsplit('/').next() == Some(sub.as_str());
        present.retain(|(f, _)| *f == sub.as_str() && kept);
        for f in FILES
            .iter()
            .filter(|f| !present.iter().any(|(p, _)| p == *f))
        {
            out.push((
                *loc,
                format!(
                    "the mount takes only `{sub}` of the ConfigMap (subPath): \
                     /credentials/{f} is missing"
                ),
            ));
        }
        return;
    }
    if let Some((_, loc)) = &volume.items {
        for f in FILES
            .iter()
            .filter(|f| !present.iter().any(|(p, _)| p == *f))
        {
            out.push((
                *loc,
                format!("the volume's items leave out `{f}`: /credentials/{f} is missing"),
            ));
        }
    }
    // Another mount over the program or its plan hides the ConfigMap's file.
    for other in job.mounts.iter().filter(|m| m.volume != volume.name) {
        let path = other.path.trim_end_matches('/');
        if let Some(f) = FILES.iter().find(|f| path == format!("{MOUNT_PATH}/{f}")) {
            out.push((
                other.loc,
                format!(
                    "the volume `{}` is mounted over /credentials/{f}: it hides the ConfigMap's \
                     {f}",
                    other.volume
                ),
            ));
        }
    }
    // The files belong to root (and to the fsGroup when the pod sets one); the program runs as
    // another user, so it reads through the "other" bits, or the group's.
    let readable = |mode: i64| mode & 0o004 != 0 || (job.fs_group && mode & 0o040 != 0);
    if let Some((mode, loc)) = volume.default_mode
        && !readable(mode)
        && present.iter().any(|(_, m)| m.is_none())
    {
        out.push((
            loc,
            format!(
                "defaultMode {mode:#o} lets only root read the files: the program runs as \
                 another user and cannot read create.py or plan.json"
            ),
        ));
    }
    if let Some((items, _)) = &volume.items {
        for (key, mode, loc) in items {
            if let Some(mode) = mode
                && FILES.contains(&key.as_str())
                && !readable(*mode)
            {
                out.push((
                    *loc,
                    format!(
                        "`{key}` gets mode {mode:#o}, which lets only root read it: the \
                         program runs as another user"
                    ),
                ));
            }
        }
    }
}
