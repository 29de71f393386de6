//! The whole check on structure-aware mutations of bundles. Two kinds of input:
//! - `F`, a count N, N bytes of choices, then a manifest (the seeds are the fixtures): the
//!   manifest gets N line edits (a value replaced, a line dropped, repeated, swapped or
//!   re-indented, an annotation changed, a verb swapped) and is checked beside a valid bundle;
//! - anything else: choices for credlint's generator: a valid bundle or a single-fault mutant
//!   of any rule, laid out in random files and styles, then edited likewise.
//!
//! Properties: no panic; the same input gives the same report twice; every finding lies inside
//! its file; the valid bundle beside an edited fixture keeps all of its own findings (none).
#![no_main]

mod common;

use arbitrary::Unstructured;
use common::{ENGINE, Fuzzed, lint_twice};
use credlint::testkit::{self, Choices, FAMILIES, edit};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let [b'F', n, rest @ ..] = data {
        let n = usize::from(*n).min(rest.len());
        let (choices, text) = rest.split_at(n);
        let text = String::from_utf8_lossy(text);
        let mut u = Unstructured::new(choices);
        let mut c = Fuzzed(&mut u);
        let edits = c.below(8);
        let edited = edit::edit(&mut c, &text, edits);
        // A valid bundle in a namespace and under an owner no fixture uses.
        let mut beside = credlint::testkit::render::Spec::example(
            "fuzz-beside",
            "fuzz-owner",
            "cache",
            &credlint::testkit::render::clean_script(),
        );
        beside.image = credlint::testkit::render::EXAMPLE_IMAGE.to_string();
        let files = vec![
            ("beside.yaml".to_string(), beside.render()),
            ("edited.yaml".to_string(), edited),
        ];
        let outcome = ENGINE.with(|e| lint_twice(e, &files));
        // No finding may land in the valid bundle's file. One in the edited file may name that
        // bundle: an object there can rightly concern it (a ClusterRoleBinding of
        // `system:authenticated` gives its ServiceAccount rights, `rbac-extra-binding`; a second
        // member of its kind is `bundle-duplicate`).
        let lost: Vec<_> = outcome
            .findings
            .iter()
            .filter(|f| f.loc.file == 0)
            .collect();
        assert!(
            lost.is_empty(),
            "the valid bundle beside got findings: {lost:?}"
        );
        return;
    }
    let mut u = Unstructured::new(data);
    let mut c = Fuzzed(&mut u);
    let pick = c.below(FAMILIES.len() + 1);
    let mut case = match FAMILIES.get(pick) {
        Some(family) if !family.simulate => testkit::mutant(&mut c, family),
        _ => testkit::valid(&mut c),
    };
    let edits = c.below(4);
    if edits > 0 && !case.files.is_empty() {
        let i = c.below(case.files.len());
        case.files[i].1 = edit::edit(&mut c, &case.files[i].1, edits);
    }
    ENGINE.with(|e| lint_twice(e, &case.files));
});
