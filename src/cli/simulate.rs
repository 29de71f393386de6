//! `credlint simulate`: each bundle's create.py run against the fake API server of
//! [`crate::runtime::simulate`], its findings placed on the program in the ConfigMap (the scenario, the
//! run and the request are in the message).

use crate::lint::catalog::Catalog;
use crate::lint::checks::Emit;
use crate::model::Finding;
use crate::model::bundle::{Bundle, Facts, MemberKind};
use crate::runtime::simulate::{self, RoleRule, SimBundle, SimError, SimOptions};

/// A bundle that could not be simulated, and why.
pub struct Skipped {
    pub bundle: String,
    pub reason: String,
}

/// Builds what the simulator needs from an assembled bundle.
pub fn sim_bundle(bundle: &Bundle) -> Result<SimBundle, String> {
    let cm = bundle.config_map().ok_or("it has no ConfigMap")?;
    let plan_json = cm
        .plan_text
        .clone()
        .ok_or("its ConfigMap has no plan.json")?;
    let script = cm.script.clone().ok_or("its ConfigMap has no create.py")?;
    let kind = bundle
        .plan()
        .map(|p| p.kind.clone())
        .filter(|k| !k.is_empty())
        .ok_or("its plan.json cannot be read")?;
    let role = bundle.first(MemberKind::Role).ok_or("it has no Role")?;
    let Facts::Role(rules) = &role.facts else {
        return Err("it has no Role".into());
    };
    Ok(SimBundle {
        namespace: bundle.namespace.clone().unwrap_or_else(|| "default".into()),
        owner: bundle.owner.clone(),
        kind,
        plan_json,
        script,
        role_rules: rules
            .iter()
            .map(|r| RoleRule {
                api_groups: r.groups.clone(),
                resources: r.resources.clone(),
                resource_names: r.names.clone(),
                verbs: r.verbs.clone(),
                non_resource_urls: Vec::new(),
            })
            .collect(),
    })
}

/// Simulates every bundle, a few at a time (each run has its own server, port and folder).
pub fn run(
    bundles: &[Bundle],
    options: &SimOptions,
) -> Result<(Vec<Finding>, Vec<Skipped>), SimError> {
    let catalog = Catalog::get();
    let mut work = Vec::new();
    let mut skipped = Vec::new();
    for b in bundles {
        match sim_bundle(b) {
            Ok(sim) => work.push((b, sim)),
            Err(reason) => skipped.push(Skipped {
                bundle: b.id(),
                reason: reason.to_string(),
            }),
        }
    }
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(1, 4);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<(usize, Result<Vec<simulate::SimFinding>, SimError>)> =
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    scope.spawn(|| {
                        let mut done = Vec::new();
                        loop {
                            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some((_, sim)) = work.get(i) else { break };
                            done.push((i, simulate::simulate(sim, options)));
                        }
                        done
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_default())
                .collect()
        });
    let mut emit = Emit::new(catalog);
    let mut ordered = results;
    ordered.sort_by_key(|(i, _)| *i);
    for (i, result) in ordered {
        let (bundle, _) = &work[i];
        let findings = result?;
        let Some(cm) = bundle.first(MemberKind::ConfigMap) else {
            continue;
        };
        let loc = match &cm.facts {
            Facts::ConfigMap(facts) => facts.script_loc.unwrap_or(cm.loc),
            _ => cm.loc,
        };
        let id = bundle.id();
        for f in findings {
            let mut message = format!("{} (run {}): {}", f.scenario, f.run, f.message);
            if let Some(request) = &f.request
                && !f.message.contains(request.as_str())
            {
                message.push_str(&format!(" [{request}]"));
            }
            emit.add(f.rule, loc, message, Some(&cm.object()), Some(&id));
        }
    }
    Ok((emit.findings, skipped))
}
