//! What to lint: files named on the command line, folders walked for manifests (skipping hidden
//! folders and what .gitignore ignores), and standard input.

use std::path::{Path, PathBuf};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    File(PathBuf),
    Stdin,
    /// Bytes already read (standard input, read once and shared with the report).
    Memory(std::sync::Arc<Vec<u8>>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputFile {
    /// The path as shown in findings (`-` for standard input).
    pub display: String,
    pub origin: Origin,
}

/// A path that cannot be linted; the run goes on with the others but exits 2.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputError {
    pub path: String,
    pub message: String,
}

pub const MANIFEST_EXTENSIONS: &[&str] = &["yaml", "yml", "json"];

/// Expands the command-line paths into files, in a stable order: files as named, folders
/// walked and sorted. Folders to exclude are matched against path components.
pub fn collect(paths: &[String], exclude: &[String]) -> (Vec<InputFile>, Vec<InputError>) {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    for arg in paths {
        if arg == "-" {
            files.push(InputFile {
                display: "-".into(),
                origin: Origin::Stdin,
            });
            continue;
        }
        let path = Path::new(arg);
        match std::fs::metadata(path) {
            Err(e) => errors.push(InputError {
                path: arg.clone(),
                message: describe_io(&e),
            }),
            Ok(meta) if meta.is_dir() => walk(path, exclude, &mut files, &mut errors),
            Ok(_) => files.push(InputFile {
                display: display_path(path),
                origin: Origin::File(path.to_path_buf()),
            }),
        }
    }
    (files, errors)
}

fn walk(root: &Path, exclude: &[String], files: &mut Vec<InputFile>, errors: &mut Vec<InputError>) {
    let mut found = Vec::new();
    let walker = ignore::WalkBuilder::new(root)
        .hidden(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .ignore(false)
        .parents(true)
        // A .gitignore counts even outside a git checkout (a rendered tree copied elsewhere).
        .require_git(false)
        .follow_links(true)
        .build();
    for entry in walker {
        match entry {
            Ok(entry) => {
                let path = entry.path();
                let is_file = entry.file_type().is_some_and(|t| t.is_file());
                if !is_file || !has_manifest_extension(path) || is_excluded(path, root, exclude) {
                    continue;
                }
                found.push(path.to_path_buf());
            }
            Err(err) => {
                // A symlink loop is a cycle in the folder, not a file that cannot be read.
                if is_loop(&err) {
                    continue;
                }
                // A symlink that leads nowhere (or to itself) under a name credlint would not
                // read anyway (`README.md -> gone`) is none of its business.
                if let Some(path) = error_path_buf(&err)
                    && is_broken_link(&path)
                    && !has_manifest_extension(&path)
                {
                    continue;
                }
                errors.push(InputError {
                    path: error_path(&err).unwrap_or_else(|| display_path(root)),
                    message: err.to_string(),
                });
            }
        }
    }
    found.sort();
    files.extend(found.into_iter().map(|p| InputFile {
        display: display_path(&p),
        origin: Origin::File(p),
    }));
}

fn is_loop(err: &ignore::Error) -> bool {
    match err {
        ignore::Error::Loop { .. } => true,
        ignore::Error::WithPath { err, .. } | ignore::Error::WithDepth { err, .. } => is_loop(err),
        _ => false,
    }
}

fn error_path_buf(err: &ignore::Error) -> Option<PathBuf> {
    match err {
        ignore::Error::WithPath { path, .. } => Some(path.clone()),
        ignore::Error::WithDepth { err, .. } => error_path_buf(err),
        _ => None,
    }
}

fn is_broken_link(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
        && std::fs::metadata(path).is_err()
}

fn error_path(err: &ignore::Error) -> Option<String> {
    match err {
        ignore::Error::WithPath { path, .. } => Some(display_path(path)),
        ignore::Error::WithDepth { err, .. } => error_path(err),
        _ => None,
    }
}

fn has_manifest_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| MANIFEST_EXTENSIONS.contains(&e))
}

/// Whether `path` (under `root`) lies in an excluded folder: one named as a path relative to
/// `root`, or as a single folder name anywhere in the path.
pub fn is_excluded(path: &Path, root: &Path, exclude: &[String]) -> bool {
    let relative = path.strip_prefix(root).unwrap_or(path);
    exclude.iter().any(|ex| {
        let ex = ex.trim_end_matches('/');
        relative.starts_with(ex)
            || relative
                .components()
                .any(|c| c.as_os_str().to_str() == Some(ex))
    })
}

fn display_path(path: &Path) -> String {
    let text = path.to_string_lossy();
    text.strip_prefix("./").unwrap_or(&text).to_string()
}

pub fn describe_io(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or folder".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}

/// The size of a file's bytes, where it is known without reading them.
pub fn size(file: &InputFile) -> Option<usize> {
    match &file.origin {
        Origin::File(path) => std::fs::metadata(path)
            .ok()
            .and_then(|m| usize::try_from(m.len()).ok()),
        Origin::Memory(bytes) => Some(bytes.len()),
        Origin::Stdin => None,
    }
}

/// Reads a file's bytes; standard input is read by the caller.
pub fn read(file: &InputFile) -> Result<Vec<u8>, String> {
    match &file.origin {
        Origin::File(path) => std::fs::read(path).map_err(|e| describe_io(&e)),
        Origin::Memory(bytes) => Ok(bytes.as_ref().clone()),
        Origin::Stdin => {
            let mut buf = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin(), &mut buf)
                .map(|_| buf)
                .map_err(|e| describe_io(&e))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_that_lead_nowhere_matter_only_under_a_manifest_name() {
        let dir = std::env::temp_dir().join(format!("credlint-input-links-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.yaml"), "a: 1\n").unwrap();
        std::os::unix::fs::symlink("self", dir.join("self")).unwrap();
        std::os::unix::fs::symlink("gone", dir.join("README.md")).unwrap();
        let root = dir.to_string_lossy().into_owned();
        let (files, errors) = collect(std::slice::from_ref(&root), &[]);
        assert_eq!(files.len(), 1);
        assert!(errors.is_empty(), "{errors:?}");
        // A link to nowhere named like a manifest is a path that cannot be read.
        std::os::unix::fs::symlink("gone.yaml", dir.join("b.yaml")).unwrap();
        let (files, errors) = collect(&[root], &[]);
        assert_eq!(files.len(), 1);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].path.ends_with("b.yaml"), "{errors:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
