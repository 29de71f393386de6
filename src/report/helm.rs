//! Which Helm template a finding comes from. `helm template` writes `# Source: CHART/templates/
//! FILE.yaml` as the first line of each document it renders; a finding inside such a document
//! carries that path, so the user fixes the template, not the rendered output.

use super::Texts;
use crate::model::outcome::Outcome;
use std::collections::HashMap;

const MARKER: &str = "# Source: ";

/// The Helm source of each finding of a run, in the order of `outcome.findings`; `None` where
/// the document holds no `# Source:` line.
#[derive(Clone, Debug, Default)]
pub struct Sources(Vec<Option<String>>);

impl Sources {
    /// Reads again the files that findings point into and looks up each finding's document.
    pub fn of(outcome: &Outcome, texts: &Texts) -> Sources {
        let mut by_file: HashMap<usize, Vec<(usize, Option<String>)>> = HashMap::new();
        let found = outcome
            .findings
            .iter()
            .map(|f| {
                let documents = by_file.entry(f.loc.file).or_insert_with(|| {
                    texts
                        .read(outcome, f.loc.file)
                        .map_or_else(Vec::new, |t| documents(&t))
                });
                at(documents, f.loc.span.start())
            })
            .collect();
        Sources(found)
    }

    /// The source of finding `i`.
    pub fn get(&self, i: usize) -> Option<&str> {
        self.0.get(i).and_then(|s| s.as_deref())
    }
}

/// Each document's start offset with the path its `# Source:` comment names.
fn documents(text: &str) -> Vec<(usize, Option<String>)> {
    crate::load::yaml::document_ranges(text)
        .into_iter()
        .map(|range| {
            let start = range.start;
            (start, source_comment(&text[range]))
        })
        .collect()
}

/// The `# Source:` comment among the lines before a document's content (after its `---`).
fn source_comment(document: &str) -> Option<String> {
    for (i, line) in document.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if i == 0 && line.starts_with("---") {
            continue;
        }
        let trimmed = line.trim_start();
        if let Some(path) = trimmed.strip_prefix(MARKER) {
            let path = path.trim();
            return (!path.is_empty()).then(|| path.to_string());
        }
        if !(trimmed.is_empty() || trimmed.starts_with('#')) {
            return None;
        }
    }
    None
}

/// The source of the document holding `offset`.
fn at(documents: &[(usize, Option<String>)], offset: usize) -> Option<String> {
    let i = documents.partition_point(|(start, _)| *start <= offset);
    documents.get(i.checked_sub(1)?)?.1.clone()
}
