//! Properties every run must have, whatever its input: checked by the fuzz targets and the
//! property tests alike. Each panics with what went wrong.

use crate::load::source::Source;
use crate::model::outcome::Outcome;

/// Every finding lies inside its file: the span within the text and on character boundaries,
/// the line and column those of the span's start, the end not before the start.
pub fn locations_inside(outcome: &Outcome, files: &[(String, String)]) {
    for f in &outcome.findings {
        let Some((path, text)) = files.get(f.loc.file) else {
            panic!(
                "{} points at file {} of {}",
                f.rule,
                f.loc.file,
                files.len()
            );
        };
        let span = f.loc.span;
        assert!(
            span.start() <= span.end() && span.end() <= text.len(),
            "{} at {path}: span {span:?} outside {} bytes",
            f.rule,
            text.len()
        );
        let source = Source::new(f.loc.file, text);
        let loc = source.loc(span);
        assert_eq!(
            (loc.line, loc.column, loc.end_line, loc.end_column),
            (f.loc.line, f.loc.column, f.loc.end_line, f.loc.end_column),
            "{} at {path}: line and column disagree with the span",
            f.rule
        );
        assert!(f.loc.line >= 1 && f.loc.column >= 1, "{}", f.rule);
        assert!(
            (f.loc.end_line, f.loc.end_column) >= (f.loc.line, f.loc.column),
            "{} at {path}: ends before it starts",
            f.rule
        );
    }
}

/// The rules reported on `object` of file `file`: a finding names its object; one without
/// (a YAML or text finding) belongs to the object whose text holds it.
pub fn rules_on<'o>(
    outcome: &'o Outcome,
    file: usize,
    object: &crate::model::object::Object,
) -> std::collections::BTreeSet<&'o str> {
    let reference = object.reference();
    let span = object.root.span;
    outcome
        .findings
        .iter()
        .filter(|f| match &f.object {
            Some(o) => *o == reference,
            None => {
                f.loc.file == file && f.loc.span.start >= span.start && f.loc.span.end <= span.end
            }
        })
        .map(|f| f.rule.as_str())
        .collect()
}

/// The JSON report, as `--format json` writes it.
pub fn report(outcome: &Outcome) -> Vec<u8> {
    let mut out = Vec::new();
    crate::report::json::write(outcome, &Default::default(), &mut out)
        .expect("writing to memory cannot fail");
    out
}
