//! Entries of `simulate`: what simulating one bundle found ([`Simulated`]: the findings of each
//! scenario and run, before they are placed on the manifest) under a key of everything the
//! simulation reads. The findings carry no line or file: `cli::simulate` places them on the
//! bundle's objects as they stand in this run, so an entry serves a bundle whose file moved,
//! was renamed or gained lines above it.
//!
//! The entries share the folder, the header and the HMAC tags of `check`'s ([`super::Cache`]),
//! so the same trust rules hold: a forged, copied or damaged entry is a miss, and the bundle is
//! simulated afresh. Keys are domain-separated from `check`'s (a different field layout under a
//! name of their own), and the body starts with a tag of its own.

use super::{Cache, HEADER};
pub use crate::runtime::simulate::Simulated;
use crate::runtime::simulate::{
    EnvSource, EnvVar, LAYER_NAMES, Layers, PodField, RULES, RoleRule, SCENARIOS, SimBundle,
    SimFinding, SimOptions,
};
use sha2::{Digest, Sha256};

/// The start of every simulation entry's body (its format's version in the last byte).
const TAG: &[u8; 4] = b"sim\x03";
/// The most findings, and the longest text, an entry is read back with: far above what a
/// simulation reports (a few dozen findings of a few hundred bytes).
const MAX_FINDINGS: usize = 1 << 16;

/// What, beside the bundle, decides a simulation's verdict: credlint's build, the options and
/// the environment the programs run in (the interpreter's identity, the host's user and kernel,
/// gathered by the caller). Computed once per run; [`SimContext::key`] adds each bundle.
pub struct SimContext {
    state: Sha256,
}

/// Adds `bytes` with its length, so that no two lists of fields run together the same.
fn field(state: &mut Sha256, bytes: &[u8]) {
    state.update((bytes.len() as u64).to_le_bytes());
    state.update(bytes);
}

fn list(state: &mut Sha256, items: &[String]) {
    state.update((items.len() as u64).to_le_bytes());
    for item in items {
        field(state, item.as_bytes());
    }
}

impl SimContext {
    pub fn new(options: &SimOptions, environment: &str) -> SimContext {
        // Named field by field, so that an option added to the simulation fails to compile
        // here until it is part of the key.
        let SimOptions {
            python,
            timeout,
            confine,
            // Decides whether a program runs, not what it does: a kept verdict carries the
            // layers it was reached under, which `cli::simulate` checks against the flag.
            require_sandbox: _,
        } = options;
        let mut state = Sha256::new();
        field(&mut state, b"credlint-simulation");
        field(&mut state, super::MAGIC);
        field(&mut state, env!("CARGO_PKG_VERSION").as_bytes());
        // The sources credlint was built from, the fake cluster and the Python hook among
        // them: a rebuilt credlint does not trust what an older build simulated.
        field(&mut state, env!("CREDLINT_BUILD_DIGEST").as_bytes());
        field(&mut state, python.as_os_str().as_encoded_bytes());
        field(&mut state, &timeout.as_millis().to_le_bytes());
        field(&mut state, &[u8::from(*confine)]);
        field(&mut state, environment.as_bytes());
        SimContext { state }
    }

    /// The key of `bundle`'s simulation; `extra` is what else of the bundle is to count (the
    /// Job's image and command, which a run does not read today but a pod would).
    pub fn key(&self, bundle: &SimBundle, extra: &[String]) -> [u8; 32] {
        // Field by field, as above: a field added to what the simulation reads is keyed.
        let SimBundle {
            namespace,
            owner,
            kind,
            plan_json,
            script,
            role_rules,
            run_as: (uid, gid),
            env,
            unset,
        } = bundle;
        let mut state = self.state.clone();
        for text in [namespace, owner, kind, plan_json, script] {
            field(&mut state, text.as_bytes());
        }
        state.update(uid.to_le_bytes());
        state.update(gid.to_le_bytes());
        state.update((role_rules.len() as u64).to_le_bytes());
        for rule in role_rules {
            let RoleRule {
                api_groups,
                resources,
                resource_names,
                verbs,
                non_resource_urls,
            } = rule;
            list(&mut state, api_groups);
            list(&mut state, resources);
            match resource_names {
                None => state.update([0]),
                Some(names) => {
                    state.update([1]);
                    list(&mut state, names);
                }
            }
            list(&mut state, verbs);
            list(&mut state, non_resource_urls);
        }
        state.update((env.len() as u64).to_le_bytes());
        for EnvVar { name, source } in env {
            field(&mut state, name.as_bytes());
            match source {
                EnvSource::Text(text) => {
                    state.update([0]);
                    field(&mut state, text.as_bytes());
                }
                EnvSource::Known(value) => {
                    state.update([1]);
                    field(&mut state, value.as_bytes());
                }
                EnvSource::Pod(pod) => state.update([
                    2,
                    match pod {
                        PodField::Name => 0,
                        PodField::Uid => 1,
                        PodField::NodeName => 2,
                        PodField::Address => 3,
                        PodField::JobUid => 4,
                    },
                ]),
            }
        }
        list(&mut state, unset);
        list(&mut state, extra);
        state.finalize().into()
    }
}

impl Cache {
    /// The simulation kept under `key`, when an entry this user's credlint wrote is there and
    /// whole.
    pub fn recall_simulation(&self, key: &[u8; 32]) -> Option<Simulated> {
        decode(&self.entry(key)?[HEADER..])
    }

    /// Keeps `simulated` under `key`; a verdict with a timed-out run is not kept (how far that
    /// run got depended on the machine's load).
    pub fn remember_simulation(&self, key: &[u8; 32], simulated: &Simulated) {
        if simulated.timed_out {
            return;
        }
        if let Some(body) = encode(simulated) {
            self.file_entry(key, &body);
        }
    }
}

/// `TAG`, the counts, then each finding: its rule's and scenario's index, the run, the warning
/// flag, the request (a flag and the text), the message and the origin line (a flag and the
/// line); then the sandbox's layers: their count, and each layer's index in `LAYER_NAMES`,
/// whether it held, and (where it did not) why. Lengths and counts are u32 LE.
pub(super) fn encode(s: &Simulated) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(64 + s.findings.len() * 128);
    out.extend_from_slice(TAG);
    let count = |n: usize| u32::try_from(n).ok().map(u32::to_le_bytes);
    out.extend_from_slice(&count(s.scenarios)?);
    out.extend_from_slice(&count(s.runs)?);
    out.extend_from_slice(&count(s.findings.len())?);
    for f in &s.findings {
        let rule = RULES.iter().position(|r| *r == f.rule)?;
        let scenario = SCENARIOS.iter().position(|x| *x == f.scenario)?;
        out.extend_from_slice(&[rule as u8, scenario as u8, f.run, u8::from(f.warning)]);
        match &f.request {
            None => out.push(0),
            Some(request) => {
                out.push(1);
                out.extend_from_slice(&count(request.len())?);
                out.extend_from_slice(request.as_bytes());
            }
        }
        out.extend_from_slice(&count(f.message.len())?);
        out.extend_from_slice(f.message.as_bytes());
        match f.origin {
            None => out.push(0),
            Some(line) => {
                out.push(1);
                out.extend_from_slice(&line.to_le_bytes());
            }
        }
    }
    out.extend_from_slice(&count(s.layers.entries.len())?);
    for (name, state) in &s.layers.entries {
        out.push(LAYER_NAMES.iter().position(|n| n == name)? as u8);
        match state {
            Ok(()) => out.push(1),
            Err(why) => {
                out.push(0);
                out.extend_from_slice(&count(why.len())?);
                out.extend_from_slice(why.as_bytes());
            }
        }
    }
    Some(out)
}

/// Reads what [`encode`] wrote; anything else (a wrong tag, an index out of range, a length
/// past the end, bytes left over) is `None`.
pub(super) fn decode(bytes: &[u8]) -> Option<Simulated> {
    let mut r = Reader { bytes, at: 0 };
    if r.take(TAG.len())? != TAG {
        return None;
    }
    let scenarios = r.u32()? as usize;
    let runs = r.u32()? as usize;
    let count = r.u32()? as usize;
    if count > MAX_FINDINGS {
        return None;
    }
    let mut findings = Vec::with_capacity(count);
    for _ in 0..count {
        let head = r.take(4)?;
        let rule = *RULES.get(usize::from(head[0]))?;
        let scenario = *SCENARIOS.get(usize::from(head[1]))?;
        let run = head[2];
        let warning = match head[3] {
            0 => false,
            1 => true,
            _ => return None,
        };
        let request = match r.take(1)?[0] {
            0 => None,
            1 => Some(r.string()?),
            _ => return None,
        };
        let message = r.string()?;
        let origin = match r.take(1)?[0] {
            0 => None,
            1 => Some(r.u32()?),
            _ => return None,
        };
        findings.push(SimFinding {
            rule,
            scenario,
            run,
            request,
            message,
            warning,
            origin,
        });
    }
    let mut layers = Layers::default();
    let count = r.u32()? as usize;
    if count > LAYER_NAMES.len() {
        return None;
    }
    for _ in 0..count {
        let head = r.take(2)?;
        let name = *LAYER_NAMES.get(usize::from(head[0]))?;
        let state = match head[1] {
            1 => Ok(()),
            0 => Err(r.string()?),
            _ => return None,
        };
        if layers.entries.iter().any(|(n, _)| *n == name) {
            return None;
        }
        layers.entries.push((name, state));
    }
    (r.at == bytes.len()).then_some(Simulated {
        findings,
        scenarios,
        runs,
        timed_out: false,
        layers,
    })
}

struct Reader<'b> {
    bytes: &'b [u8],
    at: usize,
}

impl<'b> Reader<'b> {
    fn take(&mut self, n: usize) -> Option<&'b [u8]> {
        let end = self.at.checked_add(n)?;
        let out = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(out)
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn string(&mut self) -> Option<String> {
        let n = self.u32()? as usize;
        String::from_utf8(self.take(n)?.to_vec()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Simulated {
        Simulated {
            findings: vec![
                SimFinding {
                    rule: RULES[0],
                    scenario: SCENARIOS[1],
                    run: 2,
                    request: Some("GET /api/v1/namespaces/shop/secrets".into()),
                    message: "denied: ünïcode".into(),
                    warning: false,
                    origin: Some(118),
                },
                SimFinding {
                    rule: RULES[12],
                    scenario: SCENARIOS[8],
                    run: 1,
                    request: None,
                    message: String::new(),
                    warning: true,
                    origin: None,
                },
            ],
            scenarios: 9,
            runs: 18,
            timed_out: false,
            layers: Layers {
                entries: vec![
                    ("pid-namespace", Err("refused: ünïcode".into())),
                    ("seccomp", Ok(())),
                    ("audit-hook", Ok(())),
                ],
            },
        }
    }

    #[test]
    fn an_entry_reads_back_as_written() {
        let s = sample();
        assert_eq!(decode(&encode(&s).unwrap()), Some(s));
    }

    #[test]
    fn a_damaged_body_is_refused_never_misread() {
        let bytes = encode(&sample()).unwrap();
        // Every truncation, and every single byte changed, is refused or reads as something
        // that encodes back to exactly those bytes (a changed letter in a message).
        for end in 0..bytes.len() {
            assert_eq!(decode(&bytes[..end]), None, "truncated at {end}");
        }
        for i in 0..bytes.len() {
            let mut changed = bytes.clone();
            changed[i] ^= 0x80;
            if let Some(s) = decode(&changed) {
                assert_eq!(encode(&s).unwrap(), changed, "byte {i}");
            }
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(decode(&longer), None);
    }

    #[test]
    fn a_kept_verdict_comes_back_and_a_timed_out_one_is_not_kept() {
        let base = crate::testkit::TempDir::new("credlint-cache-simulation");
        let dir = base.join("cache");
        let cache = Cache::open(&dir, &crate::lint::Options::default()).unwrap();
        let (key, other) = ([7; 32], [8; 32]);
        assert_eq!(cache.recall_simulation(&key), None, "empty cache");
        cache.remember_simulation(&key, &sample());
        assert_eq!(cache.recall_simulation(&key), Some(sample()));
        // Under another key's name, the entry is a miss (its tags name its own key).
        std::fs::copy(cache.path(&key), cache.path(&other)).unwrap();
        assert_eq!(cache.recall_simulation(&other), None);
        let stopped = Simulated {
            timed_out: true,
            ..sample()
        };
        let third = [9; 32];
        cache.remember_simulation(&third, &stopped);
        assert!(!cache.path(&third).exists());
        assert_eq!(cache.recall_simulation(&third), None);
    }

    fn bundle() -> SimBundle {
        SimBundle {
            namespace: "shop".into(),
            owner: "shop-db".into(),
            kind: "component".into(),
            plan_json: "{}".into(),
            script: "print(1)".into(),
            role_rules: vec![RoleRule {
                api_groups: vec![String::new()],
                resources: vec!["secrets".into()],
                resource_names: None,
                verbs: vec!["get".into()],
                non_resource_urls: Vec::new(),
            }],
            run_as: (65532, 65532),
            env: vec![EnvVar {
                name: "MODE".into(),
                source: EnvSource::Text("$(KUBERNETES_SERVICE_HOST)".into()),
            }],
            unset: Vec::new(),
        }
    }

    #[test]
    fn every_input_of_a_simulation_changes_its_key() {
        let options = SimOptions {
            python: "python3".into(),
            timeout: std::time::Duration::from_secs(20),
            confine: true,
            require_sandbox: false,
        };
        let context = SimContext::new(&options, "python 3.12");
        let base = context.key(&bundle(), &[]);
        assert_eq!(base, context.key(&bundle(), &[]), "the key is stable");
        let mut changed: Vec<[u8; 32]> = Vec::new();
        let edits: Vec<fn(&mut SimBundle)> = vec![
            |b| b.namespace.push('x'),
            |b| b.owner.push('x'),
            |b| b.kind = "cache".into(),
            |b| b.plan_json.push(' '),
            |b| b.script.push('\n'),
            |b| b.role_rules[0].verbs.push("list".into()),
            |b| b.role_rules[0].resource_names = Some(Vec::new()),
            |b| b.role_rules[0].api_groups = Vec::new(),
            |b| b.role_rules.push(RoleRule::default()),
            |b| b.run_as.0 = 1000,
            |b| b.run_as.1 = 1000,
            |b| b.env[0].name.push('X'),
            |b| b.env[0].source = EnvSource::Known("$(KUBERNETES_SERVICE_HOST)".into()),
            |b| b.env[0].source = EnvSource::Pod(PodField::Name),
            |b| b.env.clear(),
            |b| b.unset.push("TOKEN (Secret db, key token)".into()),
        ];
        for edit in edits {
            let mut b = bundle();
            edit(&mut b);
            changed.push(context.key(&b, &[]));
        }
        changed.push(context.key(&bundle(), &["image:1".into()]));
        changed.push(SimContext::new(&options, "python 3.13").key(&bundle(), &[]));
        for other in [
            SimOptions {
                python: "/usr/bin/python3".into(),
                ..options.clone()
            },
            SimOptions {
                timeout: std::time::Duration::from_secs(5),
                ..options.clone()
            },
            SimOptions {
                confine: false,
                ..options.clone()
            },
        ] {
            changed.push(SimContext::new(&other, "python 3.12").key(&bundle(), &[]));
        }
        for (i, key) in changed.iter().enumerate() {
            assert_ne!(*key, base, "edit {i} kept the key");
        }
        // Fields do not run together: moving a character from one to the next is a new key.
        let mut moved = bundle();
        moved.namespace = "sho".into();
        moved.owner = "pshop-db".into();
        assert_ne!(context.key(&moved, &[]), base);
    }
}
