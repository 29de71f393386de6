//! `check --pre-commit FILE...`: the pre-commit framework passes only the files a commit
//! changes, while a bundle's five objects may sit in five files. So the whole tree under the
//! current folder is linted (it is fast), and the report is narrowed to what the changed files
//! touch: every finding located in a changed file, and every finding on a bundle that has a
//! member in a changed file, wherever that finding is reported. Changing one file of a valid
//! split bundle therefore reports nothing, and breaking one reports the bundle's findings even
//! when they point into a file the commit did not change.

use crate::lint::Options;
use crate::load::input::{self, InputError, InputFile};
use crate::model::outcome::Outcome;
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
    // A changed file is found in the tree by its path as written first (`./a/b.yaml` is
    // `a/b.yaml`): the same path from the same folder is the same file. Only a path written
    // otherwise (`../repo/a.yaml`, a link) needs every file of the tree resolved, a few system
    // calls each, so the tree's real paths are worked out once and only then.
    let plain = |p: &Path| -> PathBuf {
        p.components()
            .filter(|c| !matches!(c, std::path::Component::CurDir))
            .collect()
    };
    let mut by_path: std::collections::HashMap<PathBuf, usize> = std::collections::HashMap::new();
    for (i, f) in files.iter().enumerate() {
        if let input::Origin::File(p) = &f.origin {
            by_path.entry(plain(p)).or_insert(i);
        }
    }
    let mut index: Option<std::collections::HashMap<PathBuf, usize>> = None;
    let mut changed = HashSet::new();
    for file in given {
        let input::Origin::File(path) = &file.origin else {
            continue;
        };
        if input::is_excluded(path, root, exclude) {
            continue;
        }
        if let Some(&i) = by_path.get(&plain(path)) {
            changed.insert(i);
            continue;
        }
        let index = index.get_or_insert_with(|| {
            files
                .iter()
                .enumerate()
                .filter_map(|(i, f)| key(f).map(|k| (k, i)))
                .collect()
        });
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
    run: crate::cli::Schedule,
    memo: Option<&dyn crate::model::outcome::Memo>,
) -> Result<(Outcome, HashSet<usize>), String> {
    if paths.iter().any(|p| p.as_os_str() == "-") {
        return Err("--pre-commit takes the changed files, not standard input".into());
    }
    let (inputs, engine) = run.start(
        options,
        false,
        || inputs(root, paths, exclude),
        |i| &i.files,
    );
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
    Ok((
        engine.run_marking(&inputs.files, inputs.errors, memo, &inputs.changed),
        inputs.changed,
    ))
}

/// Keeps the findings the changed files touch (see the module comment).
/// The bundles with a member in a changed file are those the run marked
/// ([`crate::exec::Executor::run_marking`]), so no bundle is kept to the end for this.
pub fn narrow(outcome: &mut Outcome, changed: &HashSet<usize>) {
    let bundles = &outcome.touched;
    outcome.findings.retain(|f| {
        changed.contains(&f.loc.file) || f.bundle.as_ref().is_some_and(|b| bundles.contains(b))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A changed file is the tree's own however its path is written: as the walk writes it,
    /// through `.`, or through `..` (found by its real path); it is never added twice.
    #[test]
    fn a_changed_file_is_found_in_the_tree_however_it_is_written() {
        let base = crate::testkit::TempDir::new("credlint-precommit-paths");
        let root = base.join("repo");
        std::fs::create_dir_all(root.join("apps")).unwrap();
        for name in ["a.yaml", "apps/b.yaml", "apps/c.yaml"] {
            std::fs::write(root.join(name), "kind: ConfigMap\n").unwrap();
        }
        let tree = inputs(&root, &[], &[]).files.len();
        assert_eq!(tree, 3);
        let written = [
            root.join("apps/b.yaml"),
            root.join("./apps/./b.yaml"),
            root.join("apps/../apps/b.yaml"),
        ];
        let mut found = Vec::new();
        for path in &written {
            let got = inputs(&root, std::slice::from_ref(path), &[]);
            assert_eq!(got.files.len(), tree, "{} was added", path.display());
            let [i] = got.changed.iter().copied().collect::<Vec<_>>()[..] else {
                panic!("{}: changed {:?}", path.display(), got.changed);
            };
            let input::Origin::File(p) = &got.files[i].origin else {
                panic!("not a file");
            };
            found.push(std::fs::canonicalize(p).unwrap());
        }
        let b = std::fs::canonicalize(root.join("apps/b.yaml")).unwrap();
        assert!(found.iter().all(|p| *p == b), "{found:?}");
    }
}
