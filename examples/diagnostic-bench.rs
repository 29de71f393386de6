//! How much a diagnostic near the end of a large file costs to render as text:
//! `cargo run --release --example diagnostic-bench -- FILE`.
//!
//! FILE gets a faulty Role appended (in a copy), is linted once, and the text report is written
//! with that one finding and with it repeated 1,000 times: the difference is what each further
//! diagnostic costs once the file's text and line index are loaded (the point is that this does
//! not rescan the file for every diagnostic).

use credlint::exec::Executor;
use credlint::lint::Options;
use credlint::load::input;
use credlint::report::{Texts, text};
use std::time::Instant;

// A hook, so that the Role is a bundle member (a lone Role without one is no candidate).
const FAULT: &str = "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: late-credentials\n  namespace: late\n  annotations:\n    argocd.argoproj.io/hook: PreSync\nrules:\n  - apiGroups: [\"\"]\n    resources: [secrets]\n    verbs: [list]\n";

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: diagnostic-bench FILE");
        std::process::exit(2);
    };
    let mut text = std::fs::read_to_string(&path).expect("FILE is readable UTF-8");
    text.push_str(FAULT);
    let copy = std::env::temp_dir().join(format!(
        "credlint-diagnostic-bench-{}.yaml",
        std::process::id()
    ));
    std::fs::write(&copy, &text).expect("the temp folder is writable");
    let files = input::collect(&[&copy], &[]).files;
    let mut outcome = Executor::new(Options::default())
        .unwrap()
        .run(&files, Vec::new());
    outcome.findings.retain(|f| f.rule == "role-forbidden-verb");
    assert_eq!(outcome.findings.len(), 1, "the appended fault is found");
    let finding = outcome.findings[0].clone();
    let texts = Texts {
        stdin: None,
        stdin_name: None,
    };
    let style = text::Style::default();
    let time = |outcome: &credlint::model::outcome::Outcome| {
        let started = Instant::now();
        let mut sink = Vec::new();
        text::write(outcome, &texts, &Default::default(), &style, &mut sink)
            .expect("writes to memory");
        (started.elapsed(), sink.len())
    };
    let median = |outcome: &credlint::model::outcome::Outcome| {
        let mut runs: Vec<(std::time::Duration, usize)> = (0..5).map(|_| time(outcome)).collect();
        runs.sort();
        runs[2]
    };
    let (one, _) = median(&outcome);
    outcome.findings = vec![finding; 1000];
    let (many, bytes) = median(&outcome);
    let each = (many.saturating_sub(one)).as_secs_f64() / 999.0;
    println!(
        "file {:.1} MB, finding at line {}: first diagnostic {:.1} ms (reads the file and indexes its lines once), each further one {:.1} us ({} bytes of report)",
        text.len() as f64 / 1e6,
        outcome.findings[0].loc.line,
        one.as_secs_f64() * 1e3,
        each * 1e6,
        bytes
    );
    let _ = std::fs::remove_file(&copy);
}
