//! Output formats, one file each. They read an [`Outcome`] and write to a `Write`.

pub mod json;
pub mod text;

use crate::engine::Outcome;

/// The texts of the files findings point into, read again when a format shows source lines
/// (the run itself drops them as it goes). Standard input is kept by the caller.
pub struct Texts {
    pub stdin: Option<String>,
}

impl Texts {
    pub fn read(&self, outcome: &Outcome, file: usize) -> Option<String> {
        let path = outcome.files.get(file)?;
        if path == "-" {
            return self.stdin.clone();
        }
        let bytes = std::fs::read(path).ok()?;
        // Invalid UTF-8 is shown as U+FFFD only where it stands; lines stay where they were.
        Some(match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => e
                .into_bytes()
                .utf8_chunks()
                .flat_map(|c| {
                    let bad = "?".repeat(c.invalid().len());
                    [c.valid().to_string(), bad]
                })
                .collect(),
        })
    }
}
