//! Test-only (feature `testkit`, or unit tests): generators shared by the property tests (`tests/properties.rs`) and the fuzz targets
//! (`fuzz/`): random valid bundles in every rendering style, split across files, and
//! single-fault mutants, one family per rule. Not used by `credlint check`.
//!
//! Every choice goes through [`Choices`], so the same generator is driven by a seeded
//! [`Rng`] in the tests and by the fuzzer's bytes in the fuzz targets.

pub mod edit;
pub mod emit;
pub mod faults;
pub mod generate;
pub mod invariants;
pub mod lint;
pub mod render;
pub mod spread;
pub mod temp;

pub use emit::{Layout, render_files};
pub use temp::TempDir;

/// The text of every `fixtures/**/*.yaml` file that is UTF-8 (those of bad bytes are the
/// loader's business), for unit tests that check a mechanism on every fixture.
#[cfg(test)]
pub(crate) fn fixture_texts() -> Vec<String> {
    let mut texts = Vec::new();
    let mut stack = vec![std::path::PathBuf::from("fixtures")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml")
                && let Ok(text) = std::fs::read_to_string(&path)
            {
                texts.push(text);
            }
        }
    }
    assert!(texts.len() > 100, "{} fixture files", texts.len());
    texts
}

/// The `*.yaml` files of the fixture folders `dirs`, each folder's in name order, as the inputs
/// of a run (named by their paths).
#[cfg(test)]
pub(crate) fn fixture_inputs(dirs: &[&str]) -> Vec<crate::load::input::InputFile> {
    let mut inputs = Vec::new();
    for dir in dirs {
        let mut paths: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .collect();
        paths.sort();
        inputs.extend(paths.into_iter().map(|p| crate::load::input::InputFile {
            display: p.display().to_string(),
            origin: crate::load::input::Origin::File(p),
        }));
    }
    inputs
}

pub use faults::{FAMILIES, Family, UNREACHABLE};
pub use generate::{Draft, draft};

/// A source of choices.
pub trait Choices {
    /// A number in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize;

    fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in.max(1)) == 0
    }

    /// A number in `lo..=hi`.
    fn between(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }
}

impl dyn Choices + '_ {
    pub fn pick<'t, T>(&mut self, items: &'t [T]) -> &'t T {
        &items[self.below(items.len())]
    }

    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }
}

/// SplitMix64: small, fast, and the same sequence for the same seed everywhere.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

impl Choices for Rng {
    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}

/// A finished case: files as `(path, text)`, and the credentials image to lint with.
#[derive(Clone, Debug)]
pub struct Case {
    pub files: Vec<(String, String)>,
    pub credentials_image: Option<String>,
}

impl Case {
    /// The files as in-memory inputs for [`crate::exec::Executor::run`].
    pub fn inputs(&self) -> Vec<crate::load::input::InputFile> {
        self.files
            .iter()
            .map(|(path, text)| crate::load::input::InputFile {
                display: path.clone(),
                origin: crate::load::input::Origin::Memory(std::sync::Arc::new(
                    text.as_bytes().to_vec(),
                )),
            })
            .collect()
    }

    /// Every file, with its name, for a failure message.
    pub fn show(&self) -> String {
        let mut out = String::new();
        if let Some(image) = &self.credentials_image {
            out.push_str(&format!("(--credentials-image {image})\n"));
        }
        for (path, text) in &self.files {
            out.push_str(&format!("==> {path} <==\n{text}\n"));
        }
        out
    }
}

/// A valid case: a random bundle (sometimes two), rendered in random styles and files.
pub fn valid(c: &mut dyn Choices) -> Case {
    let mut draft = draft(c);
    draft.finish();
    let layout = Layout::random(c, &draft);
    draft.case(&layout)
}

/// Writes `cases` generated cases under `dir/caseNN/`: every `valid_every`-th one valid, the
/// others a mutant of the next family `check` alone decides (a simulate family gives a valid
/// case), for tests that need a varied tree on disk.
pub fn write_tree(dir: &std::path::Path, seed: u64, cases: usize, valid_every: usize) {
    let mut c = Rng::new(seed);
    for i in 0..cases {
        let family = &FAMILIES[i % FAMILIES.len()];
        let case = if i % valid_every == 0 || family.simulate {
            valid(&mut c)
        } else {
            mutant(&mut c, family)
        };
        for (path, text) in &case.files {
            let target = dir.join(format!("case{i:02}")).join(path);
            std::fs::create_dir_all(target.parent().unwrap()).unwrap();
            std::fs::write(target, text).unwrap();
        }
    }
}

/// A mutant: a random valid case with one fault of `family`'s rule.
pub fn mutant(c: &mut dyn Choices, family: &Family) -> Case {
    let mut draft = draft(c);
    if let Some(spec_fault) = family.spec {
        spec_fault(c, &mut draft);
        draft.rebuild();
    }
    draft.finish();
    if let Some(object_fault) = family.objects {
        object_fault(c, &mut draft);
    }
    let mut layout = Layout::random(c, &draft);
    if let Some(layout_fault) = family.layout {
        layout_fault(c, &draft, &mut layout);
    }
    let mut case = draft.case(&layout);
    if let Some(text_fault) = family.text {
        text_fault(c, &mut case);
    }
    case
}
