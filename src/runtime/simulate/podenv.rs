//! The container's environment as the kubelet builds it: `envFrom` first, then each `env`
//! entry in order, a `value`'s `$(VAR)` references expanded against what is defined before
//! it and the service variables, then the service variables not yet defined. The container
//! runtime puts the image's variables and `HOSTNAME` under that list (`incluster::child_env`).

use std::collections::BTreeMap;

/// One variable of the container, in the kubelet's order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvVar {
    pub name: String,
    pub source: Source,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// An `env` entry's `value`, expanded when the pod starts.
    Text(String),
    /// A value known from the render (a ConfigMap's key, a label), taken as it is.
    Known(String),
    /// A field of the pod that exists only once the pod does.
    Pod(PodField),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodField {
    Name,
    Uid,
    NodeName,
    /// `status.podIP`, `status.podIPs`, `status.hostIP`, `status.hostIPs`.
    Address,
    /// The `controller-uid` labels the Job controller puts on its pods.
    JobUid,
}

/// What the pod's fields hold in a simulation.
pub struct PodFacts {
    pub name: String,
    pub uid: String,
    pub node: String,
    pub address: String,
    pub job_uid: String,
}

impl PodFacts {
    /// The fields of a new pod named `name` (fresh identifiers, the pod's address as its
    /// hosts file gives it).
    pub fn new(name: &str) -> std::io::Result<PodFacts> {
        Ok(PodFacts {
            name: name.to_string(),
            uid: uuid()?,
            node: format!(
                "node-{}",
                super::incluster::random_token(5)?.to_ascii_lowercase()
            ),
            address: super::incluster::POD_ADDRESS.into(),
            job_uid: uuid()?,
        })
    }

    fn get(&self, field: PodField) -> &str {
        match field {
            PodField::Name => &self.name,
            PodField::Uid => &self.uid,
            PodField::NodeName => &self.node,
            PodField::Address => &self.address,
            PodField::JobUid => &self.job_uid,
        }
    }
}

/// A random (version 4) UUID, as the API server gives an object.
fn uuid() -> std::io::Result<String> {
    let mut b = super::incluster::random_bytes(16)?;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex = crate::common::hex(&b);
    Ok(format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    ))
}

/// The kubelet's list for the container: `vars` in order, each `value` expanded against the
/// variables before it and `service` (the service variables), then the service variables the
/// container does not define. A later definition of a name replaces an earlier one.
pub fn resolve(
    vars: &[EnvVar],
    service: &[(String, String)],
    pod: &PodFacts,
) -> Vec<(String, String)> {
    let services: BTreeMap<&str, &str> = service
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let mut out: Vec<(String, String)> = Vec::new();
    for var in vars {
        let value = match &var.source {
            Source::Text(text) => expand(text, |name| {
                out.iter()
                    .rev()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.clone())
                    .or_else(|| services.get(name).map(|v| v.to_string()))
            }),
            Source::Known(value) => value.clone(),
            Source::Pod(field) => pod.get(*field).to_string(),
        };
        set(&mut out, &var.name, value);
    }
    for (k, v) in service {
        if !out.iter().any(|(name, _)| name == k) {
            out.push((k.clone(), v.clone()));
        }
    }
    out
}

/// Whether a variable named `name` acts when a process or the interpreter starts (the
/// dynamic loader's, the C library's locale, time zone and allocator, OpenSSL's
/// configuration, Python's own, the home folder `site` reads): a zygote, which starts before
/// its runs are confined, is never started with one of the container's, and a bundle whose
/// container sets one runs a fresh interpreter each run (`zygote.rs`).
pub fn acts_at_start(name: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "PYTHON", "LD_", "LC_", "MALLOC", "GLIBC_", "OPENSSL", "SSL_", "GCONV", "TZ",
    ];
    const NAMES: &[&str] = &["LANG", "LANGUAGE", "LOCPATH", "NLSPATH", "HOME", "PATH"];
    PREFIXES.iter().any(|p| name.starts_with(p)) || NAMES.contains(&name)
}

/// Sets `name` in `env`, in place where it is already defined.
pub fn set(env: &mut Vec<(String, String)>, name: &str, value: String) {
    match env.iter_mut().find(|(k, _)| k == name) {
        Some(entry) => entry.1 = value,
        None => env.push((name.to_string(), value)),
    }
}

/// Kubernetes' expansion of a variable's `value`: `$(NAME)` becomes the variable's value
/// where `lookup` knows it and stays as written where not; `$$` is one `$`; any other `$`
/// is kept with the character after it, and an unclosed `$(` is kept as written.
pub fn expand(input: &str, lookup: impl Fn(&str) -> Option<String>) -> String {
    let bytes = input.as_bytes();
    let mut out = String::with_capacity(input.len());
    // `$`, `(` and `)` are ASCII, so every cut below falls between characters.
    let mut start = 0;
    let mut i = 0;
    while i + 1 < bytes.len() {
        if bytes[i] != b'$' {
            i += 1;
            continue;
        }
        out.push_str(&input[start..i]);
        match bytes[i + 1] {
            b'$' => {
                out.push('$');
                i += 2;
            }
            b'(' => match input[i + 2..].find(')') {
                Some(len) => {
                    let name = &input[i + 2..i + 2 + len];
                    match lookup(name) {
                        Some(value) => out.push_str(&value),
                        None => {
                            out.push_str("$(");
                            out.push_str(name);
                            out.push(')');
                        }
                    }
                    i += 3 + len;
                }
                None => {
                    out.push_str("$(");
                    i += 2;
                }
            },
            _ => {
                // The `$` and the whole character after it.
                let next = input[i + 1..].chars().next().map_or(1, char::len_utf8);
                out.push_str(&input[i..i + 1 + next]);
                i += 1 + next;
            }
        }
        start = i;
    }
    out.push_str(&input[start.min(input.len())..]);
    out
}

/// A `resourceFieldRef`'s value as the kubelet gives it: the container's limit or request of
/// `resource` (`limits.cpu`, `requests.memory`, ...) in units of `divisor` (1 where unset),
/// rounded up. An unset CPU or memory limit is the node's (`node_cpus`, `node_memory` in
/// bytes), an unset request the limit where there is one and else 0. `Err` says why there is
/// no value: a resource or quantity no API server admits, or a node's disk, which simulate
/// does not know.
pub fn resource_value(
    resource: &str,
    divisor: Option<&str>,
    resources: &[(String, String)],
    node_cpus: u64,
    node_memory: u64,
) -> Result<String, String> {
    let refused = || {
        Err(format!(
            "`resource: {resource}`, which no API server admits"
        ))
    };
    let Some((group, name)) = resource.split_once('.') else {
        return refused();
    };
    let written = |group: &str| {
        resources
            .iter()
            .rev()
            .find(|(k, _)| k.split_once('.') == Some((group, name)))
            .map(|(_, v)| v.as_str())
    };
    if !["cpu", "memory", "ephemeral-storage"].contains(&name) {
        return refused();
    }
    let cpu = name == "cpu";
    let bad = |q: &str| format!("the quantity `{q}`, which no API server admits");
    let amount = match (group, written(group), written("limits")) {
        ("limits" | "requests", Some(q), _) | ("requests", None, Some(q)) => {
            quantity(q).ok_or_else(|| bad(q))?
        }
        ("requests", None, None) => (0, 1),
        ("limits", None, _) if cpu => (u128::from(node_cpus), 1),
        ("limits", None, _) if name == "memory" => (u128::from(node_memory), 1),
        ("limits", None, _) => {
            return Err("the node's ephemeral storage, which simulate does not know".into());
        }
        _ => return refused(),
    };
    let divisor_text = divisor.unwrap_or("1");
    let divisor = quantity(divisor_text).ok_or_else(|| bad(divisor_text))?;
    // CPU in thousandths, each rounded up first; bytes whole, likewise.
    let scale = if cpu { 1000 } else { 1 };
    let whole = |(num, den): (u128, u128)| num.checked_mul(scale).map(|n| n.div_ceil(den));
    match (whole(amount), whole(divisor)) {
        (Some(value), Some(unit)) if unit > 0 => Ok(value.div_ceil(unit).to_string()),
        _ => Err(bad(divisor_text)),
    }
}

/// A Kubernetes quantity (`500m`, `1.5`, `128Mi`, `1e3`) as a fraction `(num, den)`; `None`
/// for a negative or malformed one, or one too large to hold.
fn quantity(text: &str) -> Option<(u128, u128)> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
        return None;
    }
    let digits: u128 = format!("{whole}{fraction}").parse().ok()?;
    let mut den = 10u128.checked_pow(u32::try_from(fraction.len()).ok()?)?;
    let mut num = digits;
    let binary = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    let decimal = [
        ("n", -9),
        ("u", -6),
        ("m", -3),
        ("", 0),
        ("k", 3),
        ("M", 6),
        ("G", 9),
        ("T", 12),
        ("P", 15),
        ("E", 18),
    ];
    let exponent: i32 = if let Some(i) = binary.iter().position(|s| *s == suffix) {
        num = num.checked_mul(1024u128.checked_pow(u32::try_from(i + 1).ok()?)?)?;
        0
    } else if let Some((_, e)) = decimal.iter().find(|(s, _)| *s == suffix) {
        *e
    } else if let Some(e) = suffix.strip_prefix(['e', 'E']) {
        e.parse().ok()?
    } else {
        return None;
    };
    let power = 10u128.checked_pow(exponent.unsigned_abs())?;
    if exponent >= 0 {
        num = num.checked_mul(power)?;
    } else {
        den = den.checked_mul(power)?;
    }
    Some((num, den))
}
