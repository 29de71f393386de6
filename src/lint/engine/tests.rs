use super::*;

fn located(outcome: &Outcome) -> Vec<(String, usize, usize)> {
    let mut found: Vec<(String, usize, usize)> = outcome
        .findings
        .iter()
        .map(|f| (f.rule.clone(), f.loc.line, f.loc.column))
        .collect();
    found.sort();
    found
}

/// A create.py another thread is still analysing is taken up after the file's other documents;
/// its findings are the same, at the same places, as when it is checked on the spot.
#[test]
fn a_program_analysed_elsewhere_is_reported_after_the_rest_in_place() {
    let path = "fixtures/runtime-non-stdlib-import/bad-requests.yaml";
    let text = std::fs::read_to_string(path).unwrap();
    let script = yaml::parse(&text)
        .into_iter()
        .find_map(|p| match p {
            Parsed::Document(d) => d
                .root
                .at(&["data", "create.py"])
                .and_then(Node::as_str)
                .map(str::to_string),
            Parsed::Error(_) | Parsed::Unread(_) => None,
        })
        .unwrap();
    crate::runtime::python::claim(&script);
    let waited = check_text("bad-requests.yaml", &text, Options::default()).unwrap();
    let on_the_spot = check_text("bad-requests.yaml", &text, Options::default()).unwrap();
    let waited = located(&waited);
    assert_eq!(waited, located(&on_the_spot));
    let imports: Vec<_> = waited
        .iter()
        .filter(|(rule, _, _)| rule == "runtime-non-stdlib-import")
        .map(|(_, line, column)| (*line, *column))
        .collect();
    assert_eq!(imports, [(97, 12), (98, 10)]);
}
