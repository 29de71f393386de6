//! What the targets share: the fuzzer's bytes as choices, and one engine per thread.

use arbitrary::Unstructured;
use credlint::exec::Executor;
use credlint::lint::Options;

/// The fuzzer's bytes as the generators' choices (0 once they run out).
pub struct Fuzzed<'u, 'a>(pub &'u mut Unstructured<'a>);

impl credlint::testkit::Choices for Fuzzed<'_, '_> {
    fn below(&mut self, n: usize) -> usize {
        if n <= 1 {
            return 0;
        }
        self.0.int_in_range(0..=n - 1).unwrap_or(0)
    }
}

thread_local! {
    pub static ENGINE: Executor = Executor::new(Options::default()).expect("the catalog compiles");
}

/// Lints in-memory files twice and checks the run's invariants: the same report both times,
/// every location inside its file. Returns the report.
pub fn lint_twice(engine: &Executor, files: &[(String, String)]) -> credlint::model::outcome::Outcome {
    let inputs: Vec<credlint::load::input::InputFile> = files
        .iter()
        .map(|(path, text)| credlint::load::input::InputFile {
            display: path.clone(),
            origin: credlint::load::input::Origin::Memory(std::sync::Arc::new(
                text.as_bytes().to_vec(),
            )),
        })
        .collect();
    let first = engine.run(&inputs, Vec::new());
    let second = engine.run(&inputs, Vec::new());
    let report = credlint::testkit::invariants::report(&first);
    assert_eq!(
        report,
        credlint::testkit::invariants::report(&second),
        "the same input gave two reports"
    );
    credlint::testkit::invariants::locations_inside(&first, files);
    first
}
