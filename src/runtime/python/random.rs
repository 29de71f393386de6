//! `runtime-weak-random`: a value generated from a predictable source, where the source shows
//! it (ADR-072 point 2 wants a credential nobody can guess, and the image has `secrets`).
//!
//! Seen: calls into the `random` module that draw values (`random.choice`, `choices`,
//! `sample`, `shuffle`, `randint`, `randrange`, `getrandbits`, `randbytes`, `random`, `seed`,
//! `Random(...)`), through `import random`, `import random as r` or `from random import
//! choice`; `uuid.uuid1()` (time and host address) and `uuid.uuid3`/`uuid5` (a hash of a name);
//! a `hashlib` digest of a constant (a string or bytes literal, or a literal's `.encode()`); and
//! a `hashlib` digest or `random` seed built from the time or the process id (`time.time()`,
//! `time.time_ns()`, `time.monotonic()`, `datetime.now()`, `os.getpid()`, ...).
//! Not findings: `random.SystemRandom()` (it reads the kernel's generator), the float draws a
//! retry loop uses for jitter (`uniform`, `gauss`, `expovariate`, ...), `secrets`,
//! `os.urandom` and `uuid.uuid4()`.
//!
//! Not seen: a module reached under another name at run time (`getattr`, `__import__(name)`),
//! and a constant that reaches a digest through a variable.

use std::collections::{HashMap, HashSet};

use tree_sitter::Node;

use super::names::{child, kind};

use super::text::{string_template, text};
use super::walk::Facts;
use super::{RULE_RANDOM, ScriptFinding, finding_at};

/// Functions of `random` that draw values a credential could be made of.
const DRAWS: &[&str] = &[
    "choice",
    "choices",
    "sample",
    "shuffle",
    "randint",
    "randrange",
    "getrandbits",
    "randbytes",
    "random",
    "seed",
    "Random",
];

const HASHES: &[&str] = &[
    "md5",
    "sha1",
    "sha224",
    "sha256",
    "sha384",
    "sha512",
    "sha3_224",
    "sha3_256",
    "sha3_384",
    "sha3_512",
    "blake2b",
    "blake2s",
    "shake_128",
    "shake_256",
    "new",
];

/// Calls whose value is the time or the process id.
const CLOCKS: &[&str] = &[
    "time",
    "time_ns",
    "monotonic",
    "monotonic_ns",
    "perf_counter",
    "perf_counter_ns",
    "now",
    "utcnow",
    "today",
    "getpid",
    "getppid",
];

/// What the script's imports bind: module aliases and names imported from a module.
#[derive(Default)]
struct Names {
    /// alias -> module (`r` -> `random`).
    modules: HashMap<String, String>,
    /// local name -> (module, original name).
    imported: HashMap<String, (String, String)>,
}

fn names(facts: &Facts<'_>, src: &str) -> Names {
    let mut out = Names::default();
    for site in &facts.imports {
        let node = site.node;
        let mut cursor = node.walk();
        let items: Vec<Node<'_>> = node.children_by_field_name("name", &mut cursor).collect();
        match kind(node) {
            "import_statement" => {
                for item in items {
                    let (name, alias) = split_alias(item, src);
                    let local =
                        alias.unwrap_or_else(|| name.split('.').next().unwrap_or("").into());
                    out.modules.insert(local, name);
                }
            }
            "import_from_statement" => {
                let Some(module) = child(node, "module_name") else {
                    continue;
                };
                let module = text(module, src).to_string();
                for item in items {
                    let (name, alias) = split_alias(item, src);
                    out.imported.insert(
                        alias.unwrap_or_else(|| name.clone()),
                        (module.clone(), name),
                    );
                }
            }
            _ => {}
        }
    }
    out
}

fn split_alias(item: Node<'_>, src: &str) -> (String, Option<String>) {
    if kind(item) == "aliased_import" {
        let name = child(item, "name")
            .map(|n| text(n, src).to_string())
            .unwrap_or_default();
        let alias = child(item, "alias").map(|n| text(n, src).to_string());
        (name, alias)
    } else {
        (text(item, src).to_string(), None)
    }
}

/// The module and function a call reaches: `random.choice(...)` -> (`random`, `choice`).
fn target(call: Node<'_>, src: &str, names: &Names) -> Option<(String, String)> {
    let function = child(call, "function")?;
    match kind(function) {
        "identifier" => {
            let (module, name) = names.imported.get(text(function, src))?;
            Some((module.clone(), name.clone()))
        }
        "attribute" => {
            let object = child(function, "object")?;
            let attribute = text(child(function, "attribute")?, src);
            let module = match kind(object) {
                "identifier" => {
                    let local = text(object, src);
                    match names.modules.get(local) {
                        Some(m) => m.clone(),
                        // `from datetime import datetime` then `datetime.now()`.
                        None => names.imported.get(local).map(|(m, n)| format!("{m}.{n}"))?,
                    }
                }
                // `datetime.datetime.now()`, `os.path...`: the dotted text, when it is a module.
                "attribute" => {
                    let dotted = text(object, src);
                    let head = dotted.split('.').next().unwrap_or("");
                    let module = names.modules.get(head)?;
                    format!("{module}{}", &dotted[head.len()..])
                }
                _ => return None,
            };
            Some((module, attribute.to_string()))
        }
        _ => None,
    }
}

/// True for a string or bytes literal, or a literal's `.encode()`.
fn constant(node: Node<'_>, src: &str) -> bool {
    match kind(node) {
        "string" | "concatenated_string" => {
            string_template(node, src).is_some_and(|t| t.plain().is_some())
        }
        "call" => child(node, "function").is_some_and(|f| {
            kind(f) == "attribute"
                && child(f, "attribute").is_some_and(|a| text(a, src) == "encode")
                && child(f, "object").is_some_and(|o| constant(o, src))
        }),
        _ => false,
    }
}

/// The first call inside `node` (bounded search) that reads the clock or the process id.
fn clock_inside<'t>(node: Node<'t>, src: &str, names: &Names) -> Option<String> {
    let mut pending = vec![(node, 0u8)];
    let mut visited = 0;
    while let Some((n, depth)) = pending.pop() {
        visited += 1;
        if visited > 256 {
            return None;
        }
        if kind(n) == "call"
            && let Some((module, function)) = target(n, src, names)
        {
            let root = module.split('.').next().unwrap_or("");
            if matches!(root, "time" | "datetime" | "os") && CLOCKS.contains(&function.as_str()) {
                return Some(format!("{module}.{function}()"));
            }
        }
        if depth < 8 {
            let mut cursor = n.walk();
            pending.extend(n.named_children(&mut cursor).map(|c| (c, depth + 1)));
        }
    }
    None
}

pub(super) fn check(facts: &Facts<'_>, src: &str) -> Vec<ScriptFinding> {
    let names = names(facts, src);
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for site in &facts.calls {
        let call = site.node;
        let Some((module, function)) = target(call, src, &names) else {
            continue;
        };
        // Only a digest's arguments are read.
        let args: Vec<Node<'_>> = match (module.as_str(), child(call, "arguments")) {
            ("hashlib", Some(a)) => {
                let mut cursor = a.walk();
                a.named_children(&mut cursor).collect()
            }
            _ => Vec::new(),
        };
        let message = match (module.as_str(), function.as_str()) {
            ("random", f) if DRAWS.contains(&f) => Some(format!(
                "`{}` draws from Python's Mersenne Twister, whose output can be predicted from what it gave before: generate credentials with `secrets` (ADR-072 point 2)",
                text(child(call, "function").unwrap_or(call), src)
            )),
            ("uuid", "uuid1") => Some(
                "`uuid1()` is made of the time and the host's address, not of random bits: generate credentials with `secrets`".into(),
            ),
            ("uuid", f @ ("uuid3" | "uuid5")) => Some(format!(
                "`{f}()` is a hash of its name: the same name gives the same value everywhere"
            )),
            ("hashlib", f) if HASHES.contains(&f) => {
                // `hashlib.new("sha256", data)` hashes its second argument.
                let data = if f == "new" { args.get(1) } else { args.first() };
                match data {
                    Some(d) if constant(*d, src) => Some(format!(
                        "`hashlib.{f}` of a constant is the same value in every namespace and run"
                    )),
                    Some(d) => clock_inside(*d, src, &names).map(|c| {
                        format!("`hashlib.{f}` of `{c}`: the time or process id is easy to guess, and so is its hash")
                    }),
                    None => None,
                }
            }
            _ => None,
        };
        if let Some(message) = message
            && seen.insert(call.id())
        {
            out.push(finding_at(RULE_RANDOM, message, call));
        }
    }
    out
}
