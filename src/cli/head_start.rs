//! `check`'s head start: the create.py analysis of the files a `check` command line names,
//! begun from the raw arguments before clap parses them, on the thread the program started on.
//!
//! That analysis (tree-sitter's parse and the checks over the tree) is the longest chain of a
//! pre-commit hook's run, and parsing the command line alone took 0.5 ms of a 10-object file's
//! run before it could start. A new thread was no better place for it: its first instruction
//! came 1 to 1.7 ms after the spawn while the spawning thread stayed busy (measured on a
//! 2-core virtual machine; 0.1 ms when the spawner waited: Linux had queued it behind its
//! spawner, see [`crate::common::place`]). So the thread that is already running analyses, and
//! the rest of `check`, which has that much time to spare, goes to a new thread started on the
//! other CPU (`cli::main`); the process ends when both are done. A run that ends without
//! linting (a usage error `check` finds itself) still waits for the analysis, which the 1 MiB
//! bound on the files read ahead keeps short.
//!
//! The raw arguments are read loosely: every argument after `check` that is a regular file
//! counts, including the value of an option such as `--policy p.yaml`. That costs nothing but
//! a read: the analysis is a memo keyed by the program's text, which linting takes up if, and
//! only if, a file it lints holds that program.

use crate::lint::checks::runtime::{CacheState, Cached, Job, prewarm};
use crate::load::input::{InputFile, Origin, display_path};
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::mpsc::{Sender, channel};

/// The subcommand and the flag read from the raw arguments, as clap spells them (a test holds
/// them to clap's definition).
const CHECK: &str = "check";
const NO_CACHE: &str = "--no-cache";

/// What `check` has to finish of the head start.
#[derive(Default)]
pub struct HeadStart {
    /// Where `check` sends which files the cache holds, once it is open: the analysis waits for
    /// that before it analyses anything. `None` when nothing was started or the line says
    /// `--no-cache` (then every program is analysed at once).
    pub cache: Option<Sender<Option<Cached>>>,
}

impl HeadStart {
    /// What `check` has to finish of the head start, and the analysis to run, when `argv` (the
    /// program's name first) is a `check` command that names at least one file; `None` for any
    /// other command line.
    pub fn plan(argv: impl IntoIterator<Item = OsString>) -> Option<(HeadStart, Job)> {
        let mut argv = argv.into_iter().skip(1);
        if argv.next()? != CHECK {
            return None;
        }
        let (files, no_cache) = named(argv);
        let (state, cache) = if no_cache {
            (CacheState::None, None)
        } else {
            let (tell, ask) = channel();
            (CacheState::Later(ask), Some(tell))
        };
        prewarm(&files, state).map(|job| (HeadStart { cache }, job))
    }
}

/// The regular files among `check`'s arguments (a link is left to linting, which decides
/// whether it may follow it), and whether `--no-cache` is among them. Options end at `--`.
fn named(args: impl Iterator<Item = OsString>) -> (Vec<InputFile>, bool) {
    let mut files = Vec::new();
    let mut no_cache = false;
    let mut options = true;
    for arg in args {
        if options && arg == "--" {
            options = false;
            continue;
        }
        if options && arg.as_encoded_bytes().starts_with(b"-") {
            no_cache |= arg == NO_CACHE;
            continue;
        }
        let path = PathBuf::from(arg);
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
            files.push(InputFile {
                display: display_path(&path),
                origin: Origin::File(path),
            });
        }
    }
    (files, no_cache)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> impl Iterator<Item = OsString> {
        list.iter()
            .map(OsString::from)
            .collect::<Vec<_>>()
            .into_iter()
    }

    /// A folder holding one small manifest, `a.yaml`, and that file's path.
    fn a_file(tag: &str) -> (crate::testkit::temp::TempDir, String) {
        let dir = crate::testkit::temp::TempDir::new(tag);
        let a = dir.join("a.yaml");
        std::fs::write(&a, "kind: ConfigMap\n").unwrap();
        let a = a.to_str().unwrap().to_string();
        (dir, a)
    }

    /// The files named, with the same display name linting gives them, and `--no-cache` seen
    /// only as an option: after `--` it is a path, and standard input (`-`) is no file.
    #[test]
    fn the_named_files_and_the_cache_flag_are_read_from_the_raw_arguments() {
        let (dir, a) = a_file("credlint-head-start");
        let a = a.as_str();
        let missing = dir.join("missing.yaml");
        let missing = missing.to_str().unwrap();
        let folder = dir.to_str().unwrap();

        let (files, no_cache) = named(args(&[a, "--no-cache", missing, folder, "-"]));
        let shown: Vec<&str> = files.iter().map(|f| f.display.as_str()).collect();
        assert_eq!(shown, [display_path(std::path::Path::new(a))]);
        assert!(no_cache);

        let (files, no_cache) = named(args(&["--format", "json", a]));
        assert_eq!(files.len(), 1);
        assert!(!no_cache);

        let (files, no_cache) = named(args(&["--", "--no-cache", a]));
        assert_eq!(files.len(), 1);
        assert!(!no_cache);
    }

    /// A link is not read ahead, wherever it leads: linting decides whether to follow it.
    #[cfg(unix)]
    #[test]
    fn a_link_is_not_read_ahead() {
        let dir = crate::testkit::temp::TempDir::new("credlint-head-start-link");
        let target = dir.join("target.yaml");
        std::fs::write(&target, "kind: ConfigMap\n").unwrap();
        let link = dir.join("link.yaml");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let (files, _) = named(args(&[link.to_str().unwrap()]));
        assert!(files.is_empty());
    }

    /// Only `check` starts anything, and a `check` that names no file starts nothing either;
    /// with `--no-cache` the analysis waits for no answer from the cache.
    #[test]
    fn only_a_check_naming_a_file_starts_the_analysis() {
        let (_dir, a) = a_file("credlint-head-start-begin");
        let a = a.as_str();
        let begun = |line: &[&str]| match HeadStart::plan(args(line)) {
            Some((head, _job)) => (true, head.cache.is_some()),
            None => (false, false),
        };
        assert_eq!(begun(&["credlint", "simulate", a]), (false, false));
        assert_eq!(
            begun(&["credlint", "check", "--format", "json"]),
            (false, false)
        );
        assert_eq!(
            begun(&["credlint", "check", a, "--no-cache"]),
            (true, false)
        );
        assert_eq!(begun(&["credlint", "check", a]), (true, true));
    }

    /// The raw arguments are read with clap's own names: renaming the subcommand or the flag
    /// there without here would quietly end the head start.
    #[test]
    fn the_names_read_raw_are_clap_s() {
        use clap::CommandFactory;
        let cli = crate::cli::Cli::command();
        let check = cli
            .find_subcommand(CHECK)
            .expect("clap has the check subcommand");
        assert!(
            check
                .get_arguments()
                .any(|a| a.get_long().map(|l| format!("--{l}")).as_deref() == Some(NO_CACHE))
        );
    }
}
