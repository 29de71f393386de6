//! The cache's secret: every entry, the index of files read and the folder's mark carry an
//! HMAC-SHA256 under it, so a cache folder is trusted only for what this machine's credlint
//! wrote. Anyone can write the folder (a committed `.credlint_cache/`, a cache restored in CI
//! from another branch, a shared `CREDLINT_CACHE_DIR`); no one without the key can write an
//! entry that verifies.
//!
//! The key lives outside the cache folder and the repository: in the user's state folder
//! (`$XDG_STATE_HOME/credlint/cache-key`, else `~/.local/state/credlint/cache-key`), 32
//! random bytes created on first use with mode 0600 and linked into place atomically, so two
//! first runs agree on one key. `CREDLINT_CACHE_KEY` gives one instead, to share a cache on
//! purpose (a CI secret for a restored cache); docs/trust.md says when that is safe.

use ring::hmac;
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The variable that gives the key instead of the file.
pub const VARIABLE: &str = "CREDLINT_CACHE_KEY";
/// The key file's length, and the shortest key the variable may give.
const KEY_BYTES: usize = 32;

/// The key of this user, or why there is none (the run then goes without a cache).
pub(super) fn load(cache_dir: &Path) -> Result<hmac::Key, String> {
    if let Some(value) = std::env::var_os(VARIABLE).filter(|v| !v.is_empty()) {
        use std::os::unix::ffi::OsStrExt;
        let bytes = value.as_bytes();
        if bytes.len() < KEY_BYTES {
            return Err(format!(
                "{VARIABLE} is shorter than {KEY_BYTES} characters (give it a long random secret)"
            ));
        }
        return Ok(hmac::Key::new(hmac::HMAC_SHA256, bytes));
    }
    let path = key_path().ok_or_else(|| {
        format!("no $XDG_STATE_HOME or $HOME to keep the cache's key in (or set {VARIABLE})")
    })?;
    inside_cache(&path, cache_dir)?;
    let bytes = match read_key(&path) {
        Ok(bytes) => bytes,
        Err(Missing) => {
            create_key(&path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
            read_key(&path).map_err(|e| e.say(&path))?
        }
        Err(e) => return Err(e.say(&path)),
    };
    Ok(hmac::Key::new(hmac::HMAC_SHA256, &bytes))
}

/// `$XDG_STATE_HOME/credlint/cache-key`, else `$HOME/.local/state/credlint/cache-key` (the XDG
/// base directory rules: a relative value is ignored).
fn key_path() -> Option<PathBuf> {
    let absolute = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    let state = absolute("XDG_STATE_HOME")
        .or_else(|| absolute("HOME").map(|home| home.join(".local").join("state")))?;
    Some(state.join("credlint").join("cache-key"))
}

/// A key kept inside the cache folder would travel with it: refused.
fn inside_cache(key: &Path, cache_dir: &Path) -> Result<(), String> {
    let (Some(parent), Ok(cache)) = (key.parent(), std::fs::canonicalize(cache_dir)) else {
        return Ok(());
    };
    // The parent may not exist yet: then its nearest existing ancestor decides.
    let mut existing = parent;
    while !existing.exists() {
        match existing.parent() {
            Some(p) => existing = p,
            None => return Ok(()),
        }
    }
    match std::fs::canonicalize(existing) {
        Ok(real) if real.starts_with(&cache) => Err(format!(
            "the key file {} would be inside the cache folder {}",
            key.display(),
            cache_dir.display()
        )),
        _ => Ok(()),
    }
}

enum KeyError {
    Missing,
    Bad(String),
}
use KeyError::Missing;

impl KeyError {
    fn say(self, path: &Path) -> String {
        match self {
            Missing => format!("{} vanished after it was created", path.display()),
            KeyError::Bad(why) => format!("the key file {} {why}", path.display()),
        }
    }
}

/// The key file's bytes, when it is a regular file (not followed through a link) of this user,
/// readable by no one else, and of the key's length.
fn read_key(path: &Path) -> Result<Vec<u8>, KeyError> {
    let mut file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Missing),
        Err(e) => return Err(KeyError::Bad(format!("cannot be read: {e}"))),
    };
    let meta = file
        .metadata()
        .map_err(|e| KeyError::Bad(format!("cannot be read: {e}")))?;
    if !meta.is_file() {
        return Err(KeyError::Bad("is not a regular file".into()));
    }
    if meta.uid() != rustix::process::geteuid().as_raw() {
        return Err(KeyError::Bad("belongs to another user".into()));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(KeyError::Bad(format!(
            "is readable or writable by others (mode {:o}; it must be 0600)",
            meta.mode() & 0o777
        )));
    }
    if meta.len() != KEY_BYTES as u64 {
        return Err(KeyError::Bad(format!("is not {KEY_BYTES} bytes long")));
    }
    let mut bytes = vec![0; KEY_BYTES];
    file.read_exact(&mut bytes)
        .map_err(|e| KeyError::Bad(format!("cannot be read: {e}")))?;
    Ok(bytes)
}

/// Writes a new random key to a temporary file of mode 0600 and links it to `path`: a run
/// that loses the race to another keeps the other's key (the link fails, the file is read).
fn create_key(path: &Path) -> std::io::Result<()> {
    let random = ring::rand::SystemRandom::new();
    let mut key = [0u8; KEY_BYTES];
    let mut tag = [0u8; 8];
    for buf in [&mut key[..], &mut tag[..]] {
        ring::rand::SecureRandom::fill(&random, buf)
            .map_err(|_| std::io::Error::other("no random bytes from the system"))?;
    }
    let parent = path.parent().unwrap_or(Path::new("."));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(parent)?;
    let temp = parent.join(format!(".cache-key-{}", crate::common::hex(&tag)));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&temp)?;
    let linked = file
        .write_all(&key)
        .and_then(|_| file.sync_all())
        .and_then(|_| match std::fs::hard_link(&temp, path) {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
            other => other,
        });
    let _ = std::fs::remove_file(&temp);
    linked
}

/// The tag of `parts` under `key`, each part with its length (so no two lists run together).
pub(super) fn tag(key: &hmac::Key, parts: &[&[u8]]) -> hmac::Tag {
    let mut context = hmac::Context::with_key(key);
    for part in parts {
        context.update(&(part.len() as u64).to_le_bytes());
        context.update(part);
    }
    context.sign()
}

/// Whether `tag` is the tag of `parts` under `key` (compared in constant time).
pub(super) fn verify(key: &hmac::Key, parts: &[&[u8]], tag: &[u8]) -> bool {
    let expected = self::tag(key, parts);
    let expected = expected.as_ref();
    // Every byte compared, whatever differs first.
    expected.len() == tag.len() && expected.iter().zip(tag).fold(0, |d, (a, b)| d | (a ^ b)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::TempDir;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_key_is_created_once_private_and_refused_when_others_can_read_it() {
        let dir = TempDir::new("credlint-cache-key");
        let path = dir.join("state").join("credlint").join("cache-key");
        assert!(matches!(read_key(&path), Err(Missing)));
        create_key(&path).unwrap();
        let first = read_key(&path).ok().unwrap();
        assert_eq!(first.len(), KEY_BYTES);
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o600);
        // A second creation (a run that lost the race) keeps the first key.
        create_key(&path).unwrap();
        assert_eq!(read_key(&path).ok().unwrap(), first);
        // No temporary file is left.
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, ["cache-key"]);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(read_key(&path), Err(KeyError::Bad(_))));
        // A link is not followed, even to a good key.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let link = dir.join("link");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        assert!(matches!(read_key(&link), Err(KeyError::Bad(_))));
    }

    #[test]
    fn tags_bind_every_part_and_its_bounds() {
        let key = hmac::Key::new(hmac::HMAC_SHA256, b"0123456789abcdef0123456789abcdef");
        let other = hmac::Key::new(hmac::HMAC_SHA256, b"0123456789abcdef0123456789abcdeF");
        let t = tag(&key, &[b"ab", b"c"]);
        assert!(verify(&key, &[b"ab", b"c"], t.as_ref()));
        assert!(!verify(&key, &[b"a", b"bc"], t.as_ref()));
        assert!(!verify(&other, &[b"ab", b"c"], t.as_ref()));
        assert!(!verify(&key, &[b"ab", b"c"], &t.as_ref()[..31]));
    }
}
