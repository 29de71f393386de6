//! Embeds every file of `rules/` in the binary, so the catalog cannot be missing a rule that
//! the repository has; gives the cache a digest of the sources.

use std::fmt::Write;

fn main() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("rules");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".yaml"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let mut out = String::from("pub static RULE_FILES: &[(&str, &str)] = &[\n");
    for name in names {
        let path = dir.join(&name);
        println!("cargo:rerun-if-changed={}", path.display());
        let _ = writeln!(
            out,
            "    ({name:?}, include_str!({:?})),",
            path.display().to_string()
        );
    }
    out.push_str("];\n");
    let target = std::path::Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"))
        .join("rule_files.rs");
    std::fs::write(target, out).expect("OUT_DIR is writable");
    build_digest();
    version();
    // Relative relocations packed (DT_RELR): the loader applies the position-independent
    // binary's pointers in a few passes at start instead of one entry each.
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// `CREDLINT_BUILD_DIGEST`: a digest of the sources and the locked dependencies, part of the
/// cache's key, so that a rebuilt credlint of the same version never trusts what an older build
/// cached (FNV-1a over every file's path and bytes, in a fixed order).
fn build_digest() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("Cargo.lock"), root.join("build.rs")];
    let mut pending = vec![root.join("src")];
    while let Some(dir) = pending.pop() {
        println!("cargo:rerun-if-changed={}", dir.display());
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for path in &files {
        println!("cargo:rerun-if-changed={}", path.display());
        let relative = path.strip_prefix(root).unwrap_or(path);
        let bytes = std::fs::read(path).unwrap_or_default();
        for b in relative.to_string_lossy().bytes().chain([0]).chain(bytes) {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    println!("cargo:rustc-env=CREDLINT_BUILD_DIGEST={hash:016x}");
}

/// `CREDLINT_VERSION`: the crate's version, and the commit it was built from when the sources
/// are a git checkout of this repository (`0.1.0 (1edeef7c2a41)`), so a report of a problem
/// can say which build it came from. Without git, or outside a checkout (a source archive, a
/// vendored copy inside another repository), just the version: the build never fails on it.
fn version() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let version = env!("CARGO_PKG_VERSION");
    let git = |args: &[&str]| -> Option<String> {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(root)
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        out.status.success().then_some(())?;
        let text = String::from_utf8(out.stdout).ok()?;
        Some(text.trim().to_string()).filter(|t| !t.is_empty())
    };
    let ours = git(&["rev-parse", "--show-toplevel"])
        .and_then(|top| std::path::Path::new(&top).canonicalize().ok())
        .is_some_and(|top| root.canonicalize().is_ok_and(|r| r == top));
    let commit = ours
        .then(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .flatten()
        .filter(|c| c.chars().all(|ch| ch.is_ascii_hexdigit()));
    if ours {
        // Rebuilt when HEAD moves: HEAD itself, the branch it names, and the packed refs.
        for file in ["HEAD", "packed-refs"] {
            if let Some(path) = git(&["rev-parse", "--git-path", file]) {
                println!("cargo:rerun-if-changed={}", root.join(path).display());
            }
        }
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"])
            && let Some(path) = git(&["rev-parse", "--git-path", &branch])
        {
            println!("cargo:rerun-if-changed={}", root.join(path).display());
        }
    }
    match commit {
        Some(commit) => println!("cargo:rustc-env=CREDLINT_VERSION={version} ({commit})"),
        None => println!("cargo:rustc-env=CREDLINT_VERSION={version}"),
    }
}
