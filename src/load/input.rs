//! What to lint: files named on the command line, folders walked for manifests, and standard
//! input; and every read of them, bounded.
//!
//! The walk skips hidden folders and what git ignores, as git sees it: the `.gitignore` files
//! from the repository's root down, `.git/info/exclude` and the global excludes file, and
//! nothing above the repository (outside a repository, the `.gitignore` files from the walked
//! folder down). It never leaves the walked folder: a symbolic link whose target lies outside
//! is not followed, and a warning names the link and its target (never what it holds). Only
//! regular files are read: a device, FIFO or socket is refused, walked or named. A chart's
//! unrendered `templates/` folder (beside its `Chart.yaml`) is no manifest: it is left out with
//! a warning, walked or named (docs/bundle.md, "Files that are not manifests").

use crate::common::spread::{Serial, Spread};
use std::ffi::OsStr;
use std::fs::Metadata;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    File(PathBuf),
    Stdin,
    /// Bytes already read (standard input, read once and shared with the report).
    Memory(Arc<Vec<u8>>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputFile {
    /// The path as shown in findings (`-` for standard input).
    pub display: String,
    pub origin: Origin,
}

/// A path that cannot be linted (the run goes on with the others but exits 2), or, among
/// [`Collected::warnings`], one that is left out on purpose.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputError {
    pub path: String,
    pub message: String,
}

/// What the command-line paths expand to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Collected {
    pub files: Vec<InputFile>,
    /// Paths that cannot be read: the run exits 2.
    pub errors: Vec<InputError>,
    /// Paths not read on purpose (a link out of the walked folder, a FIFO found in a walk):
    /// said on standard error, without changing the exit code.
    pub warnings: Vec<InputError>,
    /// The exclude entries that left out no file of any folder walked (a misspelt folder):
    /// the command line warns about its own.
    pub unused_excludes: Vec<String>,
}

pub const MANIFEST_EXTENSIONS: &[&str] = &["yaml", "yml", "json"];

/// The largest file, or standard input, credlint reads: 256 MiB. Larger input is refused with
/// exit 2 before it is read whole, so no offset into a text can pass 32 bits and a device or
/// an endless pipe cannot fill the memory. Rendered manifests are a few MB; the API server
/// refuses a request body over 3 MiB.
pub const MAX_INPUT_BYTES: u64 = 256 << 20;

/// The largest ignore file (`.gitignore`, `.git/info/exclude`, the global excludes) the walk
/// honours: 1 MiB, tens of thousands of patterns. A larger one is refused with exit 2 rather
/// than compiled at a cost of gigabytes.
pub const MAX_IGNORE_FILE_BYTES: u64 = 1 << 20;

/// Why an `exclude` entry (`--exclude` or credlint.toml) is refused: one that is empty, or that
/// names the walked folder itself, would exclude every folder.
pub fn exclude_problem(entry: &str) -> Option<String> {
    let trimmed = entry.trim();
    let bare = trimmed.trim_matches('/');
    let bare = bare.trim_start_matches("./");
    if trimmed.is_empty() {
        Some("an empty folder name excludes nothing it could name".into())
    } else if bare.is_empty() || bare == "." {
        Some(format!(
            "`{entry}` names the walked folder itself, which would exclude every file"
        ))
    } else {
        None
    }
}

/// Expands the command-line paths into files, in a stable order: files as named, folders
/// walked and sorted. Folders to exclude are matched against path components.
pub fn collect<P: AsRef<OsStr>>(paths: &[P], exclude: &[String]) -> Collected {
    let mut out = Collected::default();
    let mut used = vec![false; exclude.len()];
    let mut walked = false;
    let cwd = std::env::current_dir().and_then(|d| d.canonicalize()).ok();
    for arg in paths {
        let arg = arg.as_ref();
        if arg == "-" {
            out.files.push(InputFile {
                display: "-".into(),
                origin: Origin::Stdin,
            });
            continue;
        }
        let path = Path::new(arg);
        let shown = display_path(path);
        // A link named on the command line is followed only within the current folder.
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
            && let (Some(cwd), Ok(target)) = (&cwd, path.canonicalize())
            && !target.starts_with(cwd)
        {
            out.warnings
                .push(link_out(path, &target, "the current folder"));
            continue;
        }
        match std::fs::metadata(path) {
            Err(e) => out.errors.push(InputError {
                path: shown,
                message: describe_io(&e),
            }),
            Ok(meta) if meta.is_dir() => {
                walked = true;
                walk(path, exclude, &mut used, &mut out)
            }
            Ok(meta) if !meta.is_file() => out.errors.push(InputError {
                path: shown,
                message: not_regular(&meta.file_type()),
            }),
            Ok(_) => match chart_templates_above(path) {
                Some(folder) => out.warnings.push(chart_templates(&folder)),
                None => out.files.push(InputFile {
                    display: shown,
                    origin: Origin::File(path.to_path_buf()),
                }),
            },
        }
    }
    if walked {
        out.unused_excludes = exclude
            .iter()
            .zip(used)
            .filter(|(_, used)| !used)
            .map(|(entry, _)| entry.clone())
            .collect();
    }
    out
}

/// Whether `dir` is a Helm chart's templates folder: `templates` beside a `Chart.yaml` (the
/// only name Helm reads a chart by). Its files are Go templates, not YAML, until rendered.
pub fn is_chart_templates(dir: &Path) -> bool {
    dir.file_name() == Some(OsStr::new("templates"))
        && dir
            .parent()
            .is_some_and(|chart| chart.join("Chart.yaml").is_file())
}

/// The chart templates folder a named file lies in, if any (`charts/web/templates/a/b.yaml`).
fn chart_templates_above(file: &Path) -> Option<PathBuf> {
    file.ancestors()
        .skip(1)
        .find(|dir| is_chart_templates(dir))
        .map(Path::to_path_buf)
}

/// The warning that a chart's templates are left out, once per folder of a walk.
fn chart_templates(folder: &Path) -> InputError {
    InputError {
        path: display_path(folder),
        message: "a Helm chart's templates, not rendered manifests; not read (lint the output \
                  of `helm template` instead)"
            .into(),
    }
}

fn link_out(link: &Path, target: &Path, tree: &str) -> InputError {
    // The target as written, and where it leads when that reads differently.
    let written = std::fs::read_link(link).unwrap_or_else(|_| target.to_path_buf());
    let resolved = if written == target {
        String::new()
    } else {
        format!(" (that is {})", target.display())
    };
    InputError {
        path: display_path(link),
        message: format!(
            "a symbolic link to {}{resolved}, outside {tree}: not followed",
            written.display()
        ),
    }
}

/// What a file that is not a regular one is, for the message that refuses it.
fn not_regular(kind: &std::fs::FileType) -> String {
    use std::os::unix::fs::FileTypeExt;
    let what = if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_dir() {
        "a folder"
    } else {
        "not a regular file"
    };
    format!("{what}: credlint reads only regular files")
}

/// The repository the folder is in: the nearest ancestor (itself included) holding `.git`.
fn repository_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|d| std::fs::symlink_metadata(d.join(".git")).is_ok())
        .map(Path::to_path_buf)
}

/// The ignore files of `dir` (and, at the repository root, `.git/info/exclude`) that are too
/// large to honour.
fn oversized_ignore_files(dir: &Path, at_repository_root: bool) -> Vec<PathBuf> {
    let mut candidates = vec![dir.join(".gitignore")];
    if at_repository_root {
        candidates.push(dir.join(".git/info/exclude"));
    }
    candidates
        .into_iter()
        .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.len() > MAX_IGNORE_FILE_BYTES))
        .collect()
}

fn too_large_ignore(path: &Path) -> InputError {
    InputError {
        path: display_path(path),
        message: format!(
            "an ignore file larger than {} KiB; credlint does not honour one that large",
            MAX_IGNORE_FILE_BYTES >> 10
        ),
    }
}

fn walk(root: &Path, exclude: &[String], used: &mut [bool], out: &mut Collected) {
    let Ok(canonical_root) = root.canonicalize() else {
        out.errors.push(InputError {
            path: display_path(root),
            message: "cannot resolve the folder".into(),
        });
        return;
    };
    let repository = repository_root(&canonical_root);
    // The ignore files above the walked folder that git reads, from the repository root down.
    if let Some(repo) = &repository {
        let mut oversized = Vec::new();
        for dir in canonical_root.ancestors() {
            oversized.extend(oversized_ignore_files(dir, dir == repo));
            if dir == repo {
                break;
            }
        }
        // The global excludes file as the walker finds it (core.excludesFile, else git's default).
        if let Some(global) = ignore::gitignore::gitconfig_excludes_path()
            && std::fs::metadata(&global).is_ok_and(|m| m.len() > MAX_IGNORE_FILE_BYTES)
        {
            oversized.push(global);
        }
        if !oversized.is_empty() {
            out.errors
                .extend(oversized.iter().map(|p| too_large_ignore(p)));
            return;
        }
    } else if let Some(p) = oversized_ignore_files(&canonical_root, false).first() {
        out.errors.push(too_large_ignore(p));
        return;
    }
    let inside = repository.is_some();
    let left_out: Arc<Mutex<Collected>> = Arc::default();
    let filter = {
        let left_out = left_out.clone();
        let canonical_root = canonical_root.clone();
        move |entry: &ignore::DirEntry| -> bool {
            let path = entry.path();
            if entry.path_is_symlink() {
                // Unresolvable links are reported by the walk itself, where it matters.
                if let Ok(target) = path.canonicalize()
                    && !target.starts_with(&canonical_root)
                {
                    let mut left = left_out.lock().unwrap_or_else(|e| e.into_inner());
                    left.warnings
                        .push(link_out(path, &target, "the walked folder"));
                    return false;
                }
            }
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            if is_dir && is_chart_templates(path) {
                let mut left = left_out.lock().unwrap_or_else(|e| e.into_inner());
                left.warnings.push(chart_templates(path));
                return false;
            }
            if is_dir && let Some(big) = oversized_ignore_files(path, false).first() {
                let mut left = left_out.lock().unwrap_or_else(|e| e.into_inner());
                left.errors.push(too_large_ignore(big));
                return false;
            }
            true
        }
    };
    let walker = ignore::WalkBuilder::new(root)
        .hidden(true)
        .git_ignore(true)
        .git_exclude(inside)
        .git_global(inside)
        .ignore(false)
        // In a repository, git's ignore files from its root down and none above it; outside
        // one, those of the walked folder and below.
        .parents(inside)
        .require_git(inside)
        .follow_links(true)
        .filter_entry(filter)
        .build();
    let mut found = Vec::new();
    for entry in walker {
        match entry {
            Ok(entry) => {
                let path = entry.path();
                let Some(kind) = entry.file_type() else {
                    continue;
                };
                if kind.is_dir() || !has_manifest_extension(path) {
                    continue;
                }
                let mut left_out = false;
                for (entry, used) in exclude.iter().zip(used.iter_mut()) {
                    if is_excluded(path, root, std::slice::from_ref(entry)) {
                        *used = true;
                        left_out = true;
                    }
                }
                if left_out {
                    continue;
                }
                if !kind.is_file() {
                    // Reading a FIFO with no writer would never end; a device never ends.
                    out.warnings.push(InputError {
                        path: display_path(path),
                        message: format!("{}; not read", not_regular(&kind)),
                    });
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
                out.errors.push(InputError {
                    path: error_path(&err).unwrap_or_else(|| display_path(root)),
                    message: err.to_string(),
                });
            }
        }
    }
    let left = std::mem::take(&mut *left_out.lock().unwrap_or_else(|e| e.into_inner()));
    out.errors.extend(left.errors);
    out.warnings.extend(left.warnings);
    // In `Path` order, which compares component by component: sorted on a byte key that orders
    // the same, so the components are not parsed again at every comparison.
    found.sort_by_cached_key(|p| path_order_key(p));
    out.files.extend(found.into_iter().map(|p| InputFile {
        display: display_path(&p),
        origin: Origin::File(p),
    }));
}

/// Bytes that sort as `path` does among paths (`Path`'s order, from its components): each
/// component is its kind (root, `.`, `..`, a name, in `Component`'s order) then its bytes, and
/// ends with a 0, which no name holds, so a name sorts before every longer one it begins.
fn path_order_key(path: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    use std::path::Component;
    let mut key = Vec::with_capacity(path.as_os_str().len() + 8);
    for component in path.components() {
        match component {
            Component::Prefix(_) => key.push(1),
            Component::RootDir => key.push(2),
            Component::CurDir => key.push(3),
            Component::ParentDir => key.push(4),
            Component::Normal(name) => {
                key.push(5);
                key.extend_from_slice(name.as_bytes());
            }
        }
        key.push(0);
    }
    key
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
/// `root`, or as a single folder name anywhere in the path. Entries that would exclude every
/// folder are refused before the walk ([`exclude_problem`]) and never match here.
pub fn is_excluded(path: &Path, root: &Path, exclude: &[String]) -> bool {
    let relative = path.strip_prefix(root).unwrap_or(path);
    exclude.iter().any(|ex| {
        let ex = ex.trim().trim_end_matches('/');
        let ex = ex.strip_prefix("./").unwrap_or(ex);
        !ex.is_empty()
            && (relative.starts_with(ex)
                || relative
                    .components()
                    .any(|c| c.as_os_str().to_str() == Some(ex)))
    })
}

pub fn display_path(path: &Path) -> String {
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

fn too_large(limit: u64) -> String {
    format!(
        "larger than the {} MiB credlint reads from one file or standard input",
        limit >> 20
    )
}

/// Reads a regular file, refusing anything else and anything over `limit` bytes. A FIFO or a
/// device is refused before it is opened; what is opened is checked again, and read no
/// further than the limit, so a file swapped or growing meanwhile cannot make it unbounded.
pub fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, String> {
    read_bounded_seen(path, limit, &Serial).map(|(bytes, _)| bytes)
}

/// [`read_bounded`], also giving the file's metadata as `fstat` gave it before the read (what
/// `check`'s cache compares a later run's `stat` with, to know the bytes without reading them),
/// and reading a large file in the pieces `spread` asks for.
pub fn read_bounded_seen(
    path: &Path,
    limit: u64,
    spread: &impl Spread,
) -> Result<(Vec<u8>, Metadata), String> {
    use std::os::unix::fs::OpenOptionsExt;
    let meta = std::fs::metadata(path).map_err(|e| describe_io(&e))?;
    if !meta.is_file() {
        return Err(not_regular(&meta.file_type()));
    }
    if meta.len() > limit {
        return Err(too_large(limit));
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        // Opening a FIFO put in its place meanwhile must not wait for a writer.
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| describe_io(&e))?;
    let meta = file.metadata().map_err(|e| describe_io(&e))?;
    if !meta.is_file() {
        return Err(not_regular(&meta.file_type()));
    }
    // The size fstat gives, in one read that asks for a byte more: a short read there is the
    // end (`read_to_end` would read in growing chunks from 8 KiB and then once more to see the
    // end, three reads for a 21 KB manifest). A file that grows meanwhile fills the extra byte
    // and is read on to its end, within the limit; a file system that answers in pieces is
    // asked again until the size is reached.
    let expected = usize::try_from(meta.len()).unwrap_or(0);
    let mut bytes = vec![0; expected + 1];
    let mut filled =
        read_in_parts(&file, &mut bytes[..expected], spread).map_err(|e| describe_io(&e))?;
    let mut file = file;
    if filled > 0 {
        // The parts were read at their offsets; reading on starts where they ended.
        std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(filled as u64))
            .map_err(|e| describe_io(&e))?;
    }
    let ended = loop {
        match file.read(&mut bytes[filled..]) {
            Ok(0) => break true,
            Ok(n) => {
                filled += n;
                if filled > expected {
                    break false;
                }
                if filled == expected {
                    break true;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(describe_io(&e)),
        }
    };
    bytes.truncate(filled);
    if !ended {
        file.take(limit + 1 - filled as u64)
            .read_to_end(&mut bytes)
            .map_err(|e| describe_io(&e))?;
    }
    if bytes.len() as u64 > limit {
        return Err(too_large(limit));
    }
    Ok((bytes, meta))
}

/// Reads the start of `file` into `buffer` in the pieces `spread` asks for, each at its own
/// offset: nothing of a file can be linted before it is read, and the page faults of a fresh
/// buffer are most of reading it. Returns how many bytes from the start were read: 0 where
/// `spread` keeps the file whole (the caller reads it), short of `buffer.len()` when the file
/// shrank meanwhile (the caller reads on and sees its end).
fn read_in_parts(
    file: &std::fs::File,
    buffer: &mut [u8],
    spread: &impl Spread,
) -> std::io::Result<usize> {
    use std::os::unix::fs::FileExt;
    // Pieces of whole pages, so that no page is faulted in by two threads.
    let Some(piece) = spread
        .piece_bytes(buffer.len())
        .filter(|p| p.is_multiple_of(4096))
    else {
        return Ok(0);
    };
    let mut chunks: Vec<(usize, &mut [u8])> = buffer.chunks_mut(piece).enumerate().collect();
    let counts = spread.map_mut(&mut chunks, |(i, chunk)| {
        let (i, chunk) = (*i, &mut **chunk);
        let mut done = 0;
        while done < chunk.len() {
            match file.read_at(&mut chunk[done..], (i * piece + done) as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    });
    // The bytes are the file's up to the first piece that came short.
    let mut filled = 0;
    for (count, chunk) in counts.into_iter().zip(buffer.chunks(piece)) {
        let count = count?;
        filled += count;
        if count < chunk.len() {
            break;
        }
    }
    Ok(filled)
}

/// Reads standard input to its end, no further than the size cap.
pub fn read_stdin() -> Result<Vec<u8>, String> {
    let failed = |e: std::io::Error| format!("cannot read standard input: {}", describe_io(&e));
    let mut stdin = std::io::stdin().lock();
    let mut bytes = Vec::new();
    // In pieces, refused as soon as one would pass the cap: `read_to_end` reserves room before
    // it knows the end has come, doubling a full 256 MiB buffer, and an allocator that grows by
    // copying (the binary's does) then holds both for a moment.
    let mut piece = vec![0; 64 * 1024];
    loop {
        let n = match stdin.read(&mut piece) {
            Ok(0) => break Ok(bytes),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => break Err(failed(e)),
        };
        if (bytes.len() + n) as u64 > MAX_INPUT_BYTES {
            break Err(too_large(MAX_INPUT_BYTES));
        }
        bytes.extend_from_slice(&piece[..n]);
    }
}

/// Reads a file's bytes, bounded by the size cap.
pub fn read(file: &InputFile) -> Result<Vec<u8>, String> {
    read_seen(file, &Serial).map(|(bytes, _)| bytes)
}

/// [`read`], with the metadata of a file read from disk as it was before the read, a large one
/// read in the pieces `spread` asks for.
pub fn read_seen(
    file: &InputFile,
    spread: &impl Spread,
) -> Result<(Vec<u8>, Option<Metadata>), String> {
    match &file.origin {
        Origin::File(path) => read_bounded_seen(path, MAX_INPUT_BYTES, spread)
            .map(|(bytes, meta)| (bytes, Some(meta))),
        Origin::Memory(bytes) => Ok((bytes.as_ref().clone(), None)),
        Origin::Stdin => read_stdin().map(|bytes| (bytes, None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh folder, removed when dropped: a failing test leaves nothing behind either.
    struct Temp(PathBuf);

    impl Drop for Temp {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    impl std::ops::Deref for Temp {
        type Target = PathBuf;
        fn deref(&self) -> &PathBuf {
            &self.0
        }
    }

    fn temp(name: &str) -> Temp {
        let dir =
            std::env::temp_dir().join(format!("credlint-input-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Temp(dir)
    }

    /// A large file read in pieces is the file byte for byte; a file shorter than the size it
    /// had is read to its real end; kept whole, nothing is read in pieces.
    #[test]
    fn a_large_file_read_in_parts_is_the_file() {
        use crate::testkit::spread::{PIECE, Pieces};
        let dir = temp("parts");
        let path = dir.join("big.yaml");
        // Every 4-byte word differs, so a part read at a wrong offset shows.
        let size = 5 * PIECE + 12_345;
        let bytes: Vec<u8> = (0..size as u32 / 4 + 1)
            .flat_map(u32::to_le_bytes)
            .take(size)
            .collect();
        std::fs::write(&path, &bytes).unwrap();
        let (read, _) = read_bounded_seen(&path, MAX_INPUT_BYTES, &Pieces).unwrap();
        assert!(read == bytes, "the bytes read differ from the file's");
        let file = std::fs::File::open(&path).unwrap();
        let mut buffer = vec![0; size + 3 * 4096];
        assert_eq!(read_in_parts(&file, &mut buffer, &Pieces).unwrap(), size);
        assert!(buffer[..size] == bytes[..]);
        assert_eq!(read_in_parts(&file, &mut buffer, &Serial).unwrap(), 0);
    }

    /// The sort key orders paths exactly as `Path` does, on paths where byte order differs.
    #[test]
    fn the_sort_key_orders_as_paths_do() {
        let names = [
            "a", "a-b", "a/b", "a//b", "a/./b", "a/b/", "./a", "../a", "/a", "/", "a.b", "a/b-c",
            "a/b/c", "ab", "a\u{e9}", "a~", "A", "a/..", ".", "..", "a/\u{7f}",
        ];
        let mut paths: Vec<PathBuf> = names.iter().map(PathBuf::from).collect();
        for x in names {
            for y in names {
                paths.push(PathBuf::from(format!("{x}/{y}")));
            }
        }
        for a in &paths {
            for b in &paths {
                assert_eq!(
                    path_order_key(a).cmp(&path_order_key(b)),
                    a.cmp(b),
                    "{a:?} against {b:?}"
                );
            }
        }
    }

    #[test]
    fn links_that_lead_nowhere_matter_only_under_a_manifest_name() {
        let dir = temp("links");
        std::fs::write(dir.join("a.yaml"), "a: 1\n").unwrap();
        std::os::unix::fs::symlink("self", dir.join("self")).unwrap();
        std::os::unix::fs::symlink("gone", dir.join("README.md")).unwrap();
        let root = dir.clone().into_os_string();
        let got = collect(std::slice::from_ref(&root), &[]);
        assert_eq!(got.files.len(), 1);
        assert!(got.errors.is_empty(), "{:?}", got.errors);
        // A link to nowhere named like a manifest is a path that cannot be read.
        std::os::unix::fs::symlink("gone.yaml", dir.join("b.yaml")).unwrap();
        let got = collect(&[root], &[]);
        assert_eq!(got.files.len(), 1);
        assert_eq!(got.errors.len(), 1, "{:?}", got.errors);
        assert!(got.errors[0].path.ends_with("b.yaml"), "{:?}", got.errors);
    }

    #[test]
    fn links_out_of_the_walked_folder_are_named_not_followed() {
        let dir = temp("out-links");
        let outside = temp("out-links-target");
        std::fs::write(outside.join("x.yaml"), "kind: Role\n").unwrap();
        std::fs::create_dir_all(dir.join("in")).unwrap();
        std::fs::write(dir.join("in/a.yaml"), "kind: Role\n").unwrap();
        std::os::unix::fs::symlink(outside.join("x.yaml"), dir.join("file.yaml")).unwrap();
        std::os::unix::fs::symlink(&*outside, dir.join("folder")).unwrap();
        // A link that stays inside is followed.
        std::os::unix::fs::symlink("in/a.yaml", dir.join("inside.yaml")).unwrap();
        let got = collect(&[&*dir], &[]);
        let names: Vec<&str> = got.files.iter().map(|f| f.display.as_str()).collect();
        assert!(
            names
                .iter()
                .all(|n| !n.contains("folder") && !n.ends_with("file.yaml"))
        );
        assert_eq!(got.files.len(), 2, "{names:?}");
        assert_eq!(got.warnings.len(), 2, "{:?}", got.warnings);
        for w in &got.warnings {
            assert!(w.message.contains(&outside.display().to_string()), "{w:?}");
        }
    }

    #[test]
    fn reads_stop_at_the_cap_and_refuse_what_is_not_a_file() {
        let dir = temp("cap");
        let path = dir.join("big.yaml");
        std::fs::write(&path, vec![b'a'; 100]).unwrap();
        assert_eq!(read_bounded(&path, 100).map(|b| b.len()), Ok(100));
        assert!(read_bounded(&path, 99).unwrap_err().contains("larger than"));
        let err = read_bounded(Path::new("/dev/zero"), 100).unwrap_err();
        assert!(err.contains("character device"), "{err}");
        let err = read_bounded(&dir, 100).unwrap_err();
        assert!(err.contains("folder"), "{err}");
    }

    /// The read stops at the size fstat gives only where the file ends there: an empty file is
    /// empty, and a file longer than its stated size (procfs states 0) is read to its end.
    #[test]
    fn reads_end_where_the_file_ends_not_where_its_size_says() {
        let dir = temp("sizes");
        for len in [0, 1, 4095, 4096, 70_000] {
            let path = dir.join(format!("f{len}.yaml"));
            let text: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            std::fs::write(&path, &text).unwrap();
            assert_eq!(read_bounded(&path, 1 << 20).unwrap(), text, "{len} bytes");
        }
        let status = Path::new("/proc/self/status");
        if std::fs::metadata(status).is_ok_and(|m| m.len() == 0) {
            let read = read_bounded(status, 1 << 20).unwrap();
            assert!(read.len() > 100, "{} bytes", read.len());
            assert!(read.ends_with(b"\n"));
        }
    }

    #[test]
    fn excludes_that_would_exclude_everything_are_refused() {
        for bad in ["", " ", "/", "//", ".", "./", "/./"] {
            assert!(exclude_problem(bad).is_some(), "{bad:?}");
        }
        for good in ["charts", "vendor/old", "./charts/", "/charts"] {
            assert_eq!(exclude_problem(good), None, "{good:?}");
        }
        let root = Path::new("r");
        assert!(is_excluded(
            Path::new("r/charts/a.yaml"),
            root,
            &["./charts/".into()]
        ));
        assert!(!is_excluded(
            Path::new("r/a.yaml"),
            root,
            &["".into(), "/".into()]
        ));
    }
}
