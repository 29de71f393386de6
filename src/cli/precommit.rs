//! `check --pre-commit FILE...`: the pre-commit framework passes only the files a commit
//! changes, while a bundle's five objects may sit in five files. So the whole tree under the
//! current folder is linted (it is fast), and the report is narrowed to what the changed files
//! touch: every finding located in a changed file, and every finding on a bundle that has a
//! member in a changed file, wherever that finding is reported. Changing one file of a valid
//! split bundle therefore reports nothing, and breaking one reports the bundle's findings even
//! when they point into a file the commit did not change.

use crate::lint::engine::{Options, Outcome};
use crate::load::input::{self, InputError, InputFile};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The files to lint for a pre-commit run and which of them changed.
pub struct Inputs {
    /// The tree under the current folder, then any changed file the walk did not hold (one
    /// `.gitignore` hides, say): those are linted all the same, since the commit holds them.
    pub files: Vec<InputFile>,
    /// Indices into `files` of the changed files.
    pub changed: HashSet<usize>,
    /// Changed paths that cannot be read: the run exits 2.
    pub errors: Vec<InputError>,
    /// Files of the tree that cannot be read, outside the changed ones: reported as notes only.
    pub tree_errors: Vec<InputError>,
    /// Paths not read on purpose (links out of the tree, special files): said as warnings.
    pub warnings: Vec<InputError>,
}

/// Collects the tree under `root` and the changed `paths` (folders among them are walked).
/// Changed files inside an `exclude`d folder are not linted, as the walk would not lint them.
pub fn inputs(root: &Path, paths: &[PathBuf], exclude: &[String]) -> Inputs {
    let given = input::collect(paths, exclude);
    let tree = input::collect(&[root], exclude);
    let (errors, tree_errors, mut files) = (given.errors, tree.errors, tree.files);
    let mut warnings = given.warnings;
    warnings.extend(tree.warnings);
    let given = given.files;
    let key = |f: &InputFile| match &f.origin {
        input::Origin::File(p) => std::fs::canonicalize(p).ok(),
        _ => None,
    };
    let mut index: std::collections::HashMap<PathBuf, usize> = files
        .iter()
        .enumerate()
        .filter_map(|(i, f)| key(f).map(|k| (k, i)))
        .collect();
    let mut changed = HashSet::new();
    for file in given {
        let input::Origin::File(path) = &file.origin else {
            continue;
        };
        if input::is_excluded(path, root, exclude) {
            continue;
        }
        let Some(k) = key(&file) else { continue };
        let i = *index.entry(k).or_insert_with(|| {
            files.push(file.clone());
            files.len() - 1
        });
        changed.insert(i);
    }
    Inputs {
        files,
        changed,
        errors,
        tree_errors,
        warnings,
    }
}

/// Lints the tree under `root` with the changed `paths` marked; the error is why the run could
/// not start. Files of the tree that cannot be read are noted on standard error.
pub fn lint(
    root: &Path,
    paths: &[PathBuf],
    exclude: &[String],
    options: Options,
    memo: Option<&dyn crate::lint::engine::Memo>,
) -> Result<(Outcome, HashSet<usize>), String> {
    if paths.iter().any(|p| p.as_os_str() == "-") {
        return Err("--pre-commit takes the changed files, not standard input".into());
    }
    let (inputs, engine) = crate::cli::compile_while(options, || inputs(root, paths, exclude));
    for w in &inputs.warnings {
        eprintln!("credlint: warning: {}: {}", w.path, w.message);
    }
    for e in &inputs.tree_errors {
        eprintln!(
            "credlint: note: {}: {} (not among the changed files; a bundle with a member there \
             may be judged incomplete)",
            e.path, e.message
        );
    }
    if inputs.files.is_empty() {
        return Err(format!(
            "nothing to lint: no *.yaml, *.yml or *.json file under {}",
            root.display()
        ));
    }
    let engine = engine?;
    Ok((
        engine.run_with(&inputs.files, inputs.errors, memo),
        inputs.changed,
    ))
}

/// Keeps the findings the changed files touch (see the module comment).
pub fn narrow(outcome: &mut Outcome, changed: &HashSet<usize>) {
    let bundles: HashSet<String> = outcome
        .bundles
        .iter()
        .filter(|b| {
            b.members
                .values()
                .flatten()
                .any(|m| changed.contains(&crate::load::source::Loc::from(&m.loc).file))
        })
        .map(|b| b.id())
        .collect();
    outcome.findings.retain(|f| {
        changed.contains(&f.loc.file) || f.bundle.as_ref().is_some_and(|b| bundles.contains(b))
    });
}
