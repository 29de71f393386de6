//! The cache of `check` and `simulate`: what linting a file produced (its documents' findings,
//! the facts its bundle members leave, its ignore annotations and counts), kept per file under
//! a key of the file's bytes and everything else that decides that result: credlint's build,
//! the rule catalog and the engine options that change verdicts (the configured image,
//! `--policy` files). A run that finds a file's entry skips reading its YAML; bundles are then
//! assembled, and the pre-commit narrowing done, from the cached facts as from fresh ones.
//!
//! A stage of its own between `lint` and `cli`: it does file-system work the engine should not
//! know about (the engine only sees the [`Memo`] it is handed), and it encodes the engine's
//! and the model's types, so it sits above both.
//!
//! A file the cache saw read before, unchanged since (the same inode, size and times), is not
//! even read: [`files`] holds each file's digest under its metadata, as git's index does.
//!
//! Entries are files named by their key, written to a temporary name and renamed into place,
//! so concurrent runs see a whole entry or none. Each entry starts with a magic line, its full
//! key and two HMAC-SHA256 tags under this user's secret ([`key`]): one of its name, one of its
//! whole content. A damaged, truncated, foreign, forged or copied entry is a miss (and is
//! rewritten), never trusted: the folder is input like any other (docs/trust.md). A folder that
//! is a symbolic link, or that git tracks, is not used at all. When the folder holds more than
//! [`MAX_BYTES`], the least recently used entries are removed, and only entries whose name tag
//! verifies; the folder is listed for that only once runs have written a quarter of the limit
//! since it last was, or a day has passed (a ledger file keeps the count), so a run that writes
//! one entry does not stat thousands.
//!
//! A run of many files also writes a pack ([`pack`]): the entries it used in one file, so that
//! the next run of the same files, after an edit, opens one file instead of one per input.
//! Each entry in it is checked as a file entry is.
//!
//! `simulate` keeps its verdicts in the same folder, under the same header and tags
//! ([`simulation`]): what simulating a bundle found, under a key of everything the simulation
//! reads.

mod codec;
mod files;
pub mod key;
mod pack;
pub mod simulation;

use crate::lint::Options;
use crate::model::outcome::{FileOut, Memo, MemoKey};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime};

/// The folder used when none is named: in the folder credlint runs in, as ruff's is.
pub const DEFAULT_DIR: &str = ".credlint_cache";
/// The environment variable that moves the folder (`--cache-dir` wins over it).
pub const DIR_VARIABLE: &str = "CREDLINT_CACHE_DIR";
/// Entries beyond this many bytes in all are pruned, least recently used first, down to 3/4.
pub const MAX_BYTES: u64 = 256 << 20;
/// The largest entry read back: 64 MiB, far above what linting one file leaves (a few KB per
/// finding). A larger file under an entry's name (or one that is no regular file) is a miss,
/// never read, and the fresh result is written over it; a result that would encode larger is
/// not kept.
pub const MAX_ENTRY_BYTES: u64 = 64 << 20;
/// A hit refreshes its entry's time when it is older than this, so pruning keeps what runs use
/// without a write per hit.
const REFRESH_AFTER: Duration = Duration::from_secs(3600);
/// How the temporary files of entries being written start (hidden, and credlint's own name, so
/// that pruning a folder shared with other programs removes none of theirs).
const TEMP_PREFIX: &str = ".credlint-tmp-";
/// Temporary files older than this were left by a run that died: pruned.
const STALE_TEMP: Duration = Duration::from_secs(3600);
/// The ledger: when the folder was last pruned and how many bytes of entries runs have written
/// since (`SECONDS BYTES`). Runs racing on it can lose a count; the folder then stays over the
/// limit a little longer, never without bound (each run adds what it wrote).
const LEDGER: &str = ".credlint-written";
/// The folder is pruned once runs have written this much since it last was...
const PRUNE_AFTER_BYTES: u64 = MAX_BYTES / 4;
/// ...or this long after.
const PRUNE_AFTER: Duration = Duration::from_secs(24 * 3600);

/// Identifies the format and what wrote it; an entry that does not start with it is foreign.
const MAGIC: &[u8; 16] = b"credlint-cache4\n";
/// Magic, key, body length, the tag of the name (the key), the tag of all before it and the body.
const HEADER: usize = 16 + 32 + 8 + 32 + 32;
/// The mark of a folder this user's credlint made or checked: the tag of the folder's identity
/// (device and inode, so a fresh clone's folder is a new one).
const MARK: &str = ".credlint-folder";

pub struct Cache {
    dir: PathBuf,
    /// The folder, opened once it was checked: entries are read relative to it, so a warm run
    /// resolves one name per entry, and a folder swapped for a link later reads nothing else.
    folder: std::os::fd::OwnedFd,
    secret: ring::hmac::Key,
    fingerprint: [u8; 32],
    temp_counter: AtomicUsize,
    /// Bytes of entries this run wrote.
    written: AtomicU64,
    /// The files earlier runs read, to know their bytes without reading them.
    files: files::Index,
    /// The name of the pack of this run's files ([`Memo::begin`]), for a run of many.
    pack_name: OnceLock<[u8; 32]>,
    /// That pack, read once the run must go file by file ([`Memo::file_by_file`], or the
    /// first lookup): a run served whole reads none.
    pack: OnceLock<Option<pack::Pack>>,
    /// The entries this run used, in the pack or not, for the pack written at the end, and
    /// the bytes of those kept here (none once they would make too large a pack).
    used: Mutex<(Vec<Used>, u64)>,
    /// The largest pack this run writes ([`pack::MAX_BYTES`]; a test lowers it).
    pack_limit: u64,
}

/// An entry a run used: one of the pack's, or one read or written as a file (its bytes).
enum Used {
    Packed([u8; 32]),
    Own([u8; 32], Vec<u8>),
}

/// The pack is written again when more than one in this many of a run's entries were not in
/// it: an edit or two reads a file entry or two more, which costs less than the rewrite.
const PACK_REWRITE_SHARE: usize = 16;

impl Cache {
    /// Opens (creating it if needed) the cache in `dir` for runs with `options`. The folder gets
    /// a `.gitignore` holding `*`, so that no one commits it, and a CACHEDIR.TAG, so that backup
    /// tools skip it.
    ///
    /// Refused (the run goes without a cache, with the reason): a folder that is a symbolic
    /// link (a committed `.credlint_cache -> /elsewhere` would have entries written and pruned
    /// there), a folder git tracks (a committed cache is the change's, not this machine's),
    /// and a run with no key ([`key::load`]).
    pub fn open(dir: &Path, options: &Options) -> std::io::Result<Cache> {
        let refuse = |why: String| std::io::Error::other(why);
        let existed = match std::fs::symlink_metadata(dir) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(refuse(
                    "it is a symbolic link, and a cache folder is never used through one".into(),
                ));
            }
            Ok(_) => true,
            Err(_) => false,
        };
        let secret = key::load(dir).map_err(refuse)?;
        // A folder that exists already and is not a cache (`--cache-dir /tmp`) gets no
        // .gitignore of ours: that could hide someone else's files from git.
        let ours = !existed || dir.join("CACHEDIR.TAG").is_file();
        std::fs::create_dir_all(dir)?;
        // A folder this run made, or one checked before, needs no question to git; the mark
        // records the check (a clone or a new folder under the same name is not marked).
        if !existed || !marked(dir, &secret) {
            if let Some(file) = tracked(dir).filter(|_| existed) {
                return Err(refuse(format!(
                    "git tracks {file} in it: a committed cache is not this machine's, and is \
                     neither read, written nor pruned"
                )));
            }
            mark(dir, &secret);
        }
        for (name, text) in [
            (
                ".gitignore",
                "# Written by credlint: its cache, never to be committed.\n*\n",
            ),
            (
                "CACHEDIR.TAG",
                "Signature: 8a477f597d28d172789f06886806bc55\n# credlint's cache (https://bford.info/cachedir/)\n",
            ),
        ] {
            let path = dir.join(name);
            if ours && !path.exists() {
                write_atomically(dir, &path, text.as_bytes(), 0)?;
            }
        }
        use rustix::fs::{Mode, OFlags};
        let folder = rustix::fs::open(
            dir,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Cache {
            dir: dir.to_path_buf(),
            folder,
            fingerprint: fingerprint(options),
            temp_counter: AtomicUsize::new(0),
            written: AtomicU64::new(0),
            files: files::Index::new(dir, secret.clone()),
            secret,
            pack_name: OnceLock::new(),
            pack: OnceLock::new(),
            used: Mutex::new((Vec::new(), 0)),
            pack_limit: pack::MAX_BYTES,
        })
    }

    fn path(&self, key: &[u8; 32]) -> PathBuf {
        self.dir.join(crate::common::hex(key))
    }

    /// A test, for another thread, of whether a file named `name` with these bytes has an
    /// entry: the head start on a file's programs (`runtime::prewarm`) is wasted on a file whose
    /// result is cached. An entry that turns out damaged is a miss later, linted as usual.
    pub fn holds(&self) -> impl Fn(&str, &[u8]) -> bool + Send + 'static {
        let dir = self.dir.clone();
        let fingerprint = self.fingerprint;
        move |name, bytes| {
            let key = key_of(
                &fingerprint,
                crate::load::source::yaml_name(name),
                &digest(bytes),
            );
            dir.join(crate::common::hex(&key)).is_file()
        }
    }

    /// What a run does once it has linted every file: writes back the index of files read
    /// (when it learned any) and prunes the folder ([`Cache::prune`]).
    pub fn finish(&self) {
        let _ = self
            .files
            .save(self.temp_counter.fetch_add(1, Ordering::Relaxed));
        self.save_pack();
        self.prune();
    }

    /// Removes the least recently used entries when the folder holds more than `MAX_BYTES`, and
    /// temporary files a dead run left. Only after a run that wrote, and only when the ledger
    /// says enough was written since the folder was last listed (or it is old, or missing):
    /// otherwise this run's bytes are added to it.
    pub fn prune(&self) {
        let written = self.written.load(Ordering::Relaxed);
        if written == 0 {
            return;
        }
        let ledger = self.dir.join(LEDGER);
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        // A ledger of ours is a few bytes; anything else is as good as none.
        let read = read_regular(&ledger, 1..=64).and_then(|(b, _)| parse_ledger(&b));
        let (pruned_at, since) = match read {
            Some((at, bytes)) if !prune_due(at, bytes.saturating_add(written), now) => {
                (at, bytes.saturating_add(written))
            }
            _ => {
                prune(&self.dir, MAX_BYTES, &self.secret);
                (now, 0)
            }
        };
        let n = self.temp_counter.fetch_add(1, Ordering::Relaxed);
        // A ledger that cannot be written only means the next writing run lists the folder.
        let _ = write_atomically(
            &self.dir,
            &ledger,
            format!("{pruned_at} {since}\n").as_bytes(),
            n,
        );
    }
}

impl Memo for Cache {
    fn key(&self, yaml_name: bool, bytes: &[u8]) -> MemoKey {
        let content = digest(bytes);
        MemoKey {
            key: key_of(&self.fingerprint, yaml_name, &content),
            content,
        }
    }

    fn key_unread(&self, path: &Path, yaml_name: bool) -> Option<MemoKey> {
        let content = self.files.content(path)?;
        Some(MemoKey {
            key: key_of(&self.fingerprint, yaml_name, &content),
            content,
        })
    }

    fn read_as(&self, seen: &std::fs::Metadata, key: &MemoKey) {
        self.files.learn(seen, key.content);
    }

    fn begin(&self, names: &[&str]) {
        if names.len() < pack::MIN_FILES {
            return;
        }
        let mut state = Sha256::new();
        state.update(b"credlint-pack\0");
        state.update(self.fingerprint);
        state.update((names.len() as u64).to_le_bytes());
        for name in names {
            state.update((name.len() as u64).to_le_bytes());
            state.update(name.as_bytes());
        }
        let _ = self.pack_name.set(state.finalize().into());
    }

    fn file_by_file(&self) {
        // Read on the thread that learned it, while the others go on asking after files.
        let _ = self.pack();
    }

    fn recall(&self, key: &MemoKey, file: usize) -> Option<FileOut> {
        let packed = self
            .pack()
            .and_then(|p| p.get(&key.key))
            .and_then(|entry| body(entry, &key.key, &self.secret))
            .and_then(|body| codec::decode(body, file));
        if let Some(out) = packed {
            self.used(Used::Packed(key.key));
            return Some(out);
        }
        let entry = self.entry(&key.key)?;
        let out = codec::decode(&entry[HEADER..], file)?;
        self.used(Used::Own(key.key, entry));
        Some(out)
    }

    fn remember(&self, key: &MemoKey, file: usize, out: &FileOut) {
        if let Some(body) = codec::encode(out, file)
            && let Some(entry) = self.file_entry(&key.key, &body)
        {
            self.used(Used::Own(key.key, entry));
        }
    }

    fn recall_run(&self, key: &[u8; 32], files: usize) -> Option<crate::model::outcome::RunOut> {
        codec::decode_run(&self.entry(key)?[HEADER..], files)
    }

    fn remember_run(&self, key: &[u8; 32], out: &crate::model::outcome::Outcome) {
        self.file_entry(key, &codec::encode_run(out));
    }
}

impl Cache {
    /// The entry named `key`, whole, once its tags verify (its body starts at [`HEADER`]). A
    /// hit refreshes the entry's time now and then, for pruning.
    fn entry(&self, key: &[u8; 32]) -> Option<Vec<u8>> {
        let name = crate::common::hex(key);
        let file = open_in(&self.folder, &name, rustix::fs::OFlags::RDONLY).ok()?;
        let (bytes, modified) = read_open(file, HEADER as u64..=MAX_ENTRY_BYTES)?;
        body(&bytes, key, &self.secret)?;
        refresh(&self.folder, &name, modified);
        Some(bytes)
    }

    /// Seals `body` under `key` and writes it into place; the entry, or `None` when it is too
    /// large to keep.
    fn file_entry(&self, key: &[u8; 32], body: &[u8]) -> Option<Vec<u8>> {
        if (HEADER + body.len()) as u64 > MAX_ENTRY_BYTES {
            return None;
        }
        let entry = seal(&self.secret, key, body);
        let n = self.temp_counter.fetch_add(1, Ordering::Relaxed);
        // A cache that cannot be written only makes the next run slower.
        if write_atomically(&self.dir, &self.path(key), &entry, n).is_ok() {
            self.written
                .fetch_add(entry.len() as u64, Ordering::Relaxed);
        }
        Some(entry)
    }

    /// The pack of this run's files, when the run has one and it reads back as one.
    fn pack(&self) -> Option<&pack::Pack> {
        let name = self.pack_name.get()?;
        self.pack
            .get_or_init(|| pack::load(&self.folder, name, &self.secret))
            .as_ref()
    }

    /// Notes an entry the run used, when it is a run with a pack. Once the entries kept would
    /// make a pack over its limit, none is kept: the run writes no pack.
    fn used(&self, entry: Used) {
        if self.pack_name.get().is_none() {
            return;
        }
        let mut used = lock(&self.used);
        let (list, bytes) = &mut *used;
        if *bytes > self.pack_limit {
            return;
        }
        if let Used::Own(_, e) = &entry {
            *bytes += e.len() as u64;
            if *bytes > self.pack_limit {
                list.clear();
                list.shrink_to_fit();
                return;
            }
        }
        list.push(entry);
    }

    /// Writes the pack of this run's entries, when the run has one and the pack read (if any)
    /// missed more than a few of them.
    fn save_pack(&self) {
        let Some(name) = self.pack_name.get() else {
            return;
        };
        let (used, bytes) = std::mem::take(&mut *lock(&self.used));
        if bytes > self.pack_limit {
            return;
        }
        let outside = used.iter().filter(|u| matches!(u, Used::Own(..))).count();
        let old = self.pack.get().and_then(Option::as_ref);
        // (No pack read and no entry from outside it: nothing was used.)
        if used.len() < pack::MIN_FILES
            || (old.is_some() && outside * PACK_REWRITE_SHARE <= used.len())
        {
            return;
        }
        let mut entries: Vec<([u8; 32], &[u8])> = used
            .iter()
            .filter_map(|u| match u {
                Used::Packed(key) => old.and_then(|p| p.get(key)).map(|e| (*key, e)),
                Used::Own(key, entry) => Some((*key, entry.as_slice())),
            })
            .collect();
        let Some(bytes) = pack::build(&self.secret, name, &mut entries, self.pack_limit) else {
            return;
        };
        let n = self.temp_counter.fetch_add(1, Ordering::Relaxed);
        if write_atomically(&self.dir, &self.path(name), &bytes, n).is_ok() {
            self.written
                .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        }
    }
}

/// The value behind `m`, even after a panic elsewhere: the cache's lists and maps are never
/// left half-written by one (a push or an insert is one call).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Gives the file `name` of `folder`, last written at `modified`, the time now when that was
/// long ago: pruning keeps what runs use, without a write per hit.
fn refresh(folder: &std::os::fd::OwnedFd, name: &str, modified: SystemTime) {
    if modified.elapsed().unwrap_or_default() > REFRESH_AFTER {
        // A read-only cache still serves: the time only orders pruning.
        let flags = rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::APPEND;
        let _ = open_in(folder, name, flags).and_then(|f| f.set_modified(SystemTime::now()));
    }
}

/// The SHA-256 of a file's bytes alone.
fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// An entry's key: the settings, whether the file's name reads as YAML, and the digest of its
/// bytes (so that the index of files read, which holds digests, serves every setting).
fn key_of(fingerprint: &[u8; 32], yaml_name: bool, content: &[u8; 32]) -> [u8; 32] {
    let mut state = Sha256::new();
    state.update(fingerprint);
    state.update([u8::from(yaml_name)]);
    state.update(content);
    state.finalize().into()
}

/// The file `name` of the opened `folder`, with `flags` (read or write) and never through a
/// link, a FIFO's wait or a terminal: an entry is read in one open, one `fstat` and one read
/// (a warm run does this for every file), and anything but a regular file is not read (a FIFO
/// would make the open wait, a device is not ours): a miss, and the fresh result is renamed
/// over it.
fn open_in(
    folder: &std::os::fd::OwnedFd,
    name: &str,
    flags: rustix::fs::OFlags,
) -> std::io::Result<std::fs::File> {
    use rustix::fs::OFlags;
    let flags = flags | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    Ok(rustix::fs::openat(folder, name, flags, rustix::fs::Mode::empty())?.into())
}

/// A file of the folder whose size is in `sizes` (the ledger), as [`open_in`] reads an entry.
fn read_regular(
    path: &Path,
    sizes: std::ops::RangeInclusive<u64>,
) -> Option<(Vec<u8>, SystemTime)> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_NOFOLLOW)
        .open(path)
        .ok()?;
    read_open(file, sizes)
}

/// What [`read_regular`] reads of a file it opened.
fn read_open(
    mut file: std::fs::File,
    sizes: std::ops::RangeInclusive<u64>,
) -> Option<(Vec<u8>, SystemTime)> {
    use std::io::Read;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || !sizes.contains(&meta.len()) {
        return None;
    }
    // Entries are renamed into place whole and never written again, so the size fstat gives
    // is the entry's; a shorter file fails the read, and the header's length is checked.
    let mut bytes = vec![0; usize::try_from(meta.len()).ok()?];
    file.read_exact(&mut bytes).ok()?;
    Some((bytes, meta.modified().unwrap_or_else(|_| SystemTime::now())))
}

/// An entry: the header ([`HEADER`]) and `body`, tagged under `secret`.
fn seal(secret: &ring::hmac::Key, key: &[u8; 32], body: &[u8]) -> Vec<u8> {
    let len = (body.len() as u64).to_le_bytes();
    let mut entry = Vec::with_capacity(HEADER + body.len());
    entry.extend_from_slice(MAGIC);
    entry.extend_from_slice(key);
    entry.extend_from_slice(&len);
    let name = key::tag(secret, &[b"name", key]);
    entry.extend_from_slice(name.as_ref());
    let whole = key::tag(secret, &[b"entry", MAGIC, key, &len, name.as_ref(), body]);
    entry.extend_from_slice(whole.as_ref());
    entry.extend_from_slice(body);
    entry
}

/// Whether an entry's header is this format's, for `key`, with a name tag that verifies: an
/// entry this user's credlint wrote under that name (what pruning may remove).
fn own_header(header: &[u8], key: &[u8; 32], secret: &ring::hmac::Key) -> bool {
    header.len() >= HEADER
        && &header[..16] == MAGIC
        && &header[16..48] == key
        && key::verify(secret, &[b"name", key], &header[56..88])
}

/// The body of an entry, when it is whole and was written under `key` by this user's credlint
/// (its tag verifies under `secret`): anything else, forged, copied from another key's entry
/// or written under another secret, is `None`.
fn body<'b>(entry: &'b [u8], key: &[u8; 32], secret: &ring::hmac::Key) -> Option<&'b [u8]> {
    if entry.len() < HEADER || &entry[..16] != MAGIC || &entry[16..48] != key {
        return None;
    }
    let (len, name) = (&entry[48..56], &entry[56..88]);
    let body = &entry[HEADER..];
    (body.len() as u64 == u64::from_le_bytes(len.try_into().ok()?)
        && key::verify(
            secret,
            &[b"entry", MAGIC, key, len, name, body],
            &entry[88..HEADER],
        ))
    .then_some(body)
}

/// What, beside a file's bytes, decides what linting it produces.
fn fingerprint(options: &Options) -> [u8; 32] {
    // Named field by field, so that an option added to the engine fails to compile here until
    // it is either part of the key or said not to change verdicts.
    let Options {
        credentials_image,
        keep,
        policies,
        pragma_everywhere,
    } = options;
    let mut state = Sha256::new();
    let mut field = |bytes: &[u8]| {
        // Each field with its length, so that no two lists of fields run together the same.
        state.update((bytes.len() as u64).to_le_bytes());
        state.update(bytes);
    };
    field(MAGIC);
    field(env!("CARGO_PKG_VERSION").as_bytes());
    // The digest of the sources the binary was built from (build.rs): a rebuilt credlint of
    // the same version does not trust what an older build wrote.
    field(env!("CREDLINT_BUILD_DIGEST").as_bytes());
    for (name, text) in crate::lint::catalog::RULE_FILES {
        field(name.as_bytes());
        field(text.as_bytes());
    }
    field(credentials_image.as_deref().unwrap_or("").as_bytes());
    field(&[
        u8::from(credentials_image.is_some()),
        u8::from(keep.programs),
        u8::from(*pragma_everywhere),
    ]);
    if let Some(set) = policies {
        for f in &set.files {
            field(f.display.as_bytes());
            field(f.text.as_bytes());
        }
    }
    state.finalize().into()
}

/// Writes `bytes` to a temporary file in `dir` and renames it to `path`: readers see the old
/// file or the new one, never part of one.
fn write_atomically(dir: &Path, path: &Path, bytes: &[u8], n: usize) -> std::io::Result<()> {
    // The time as well as the process id: runs in two containers sharing a cache folder can
    // have the same id. `create_new`: never write into another run's temporary file.
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let temp = dir.join(format!("{TEMP_PREFIX}{}-{nanos}-{n}", std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp)?;
    let renamed = file
        .write_all(bytes)
        .and_then(|_| std::fs::rename(&temp, path));
    if renamed.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    renamed
}

/// The ledger's `SECONDS BYTES`.
fn parse_ledger(bytes: &[u8]) -> Option<(u64, u64)> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut words = text.split_ascii_whitespace();
    let at = words.next()?.parse().ok()?;
    let since = words.next()?.parse().ok()?;
    words.next().is_none().then_some((at, since))
}

/// Whether the folder is to be listed: enough written since it last was, or long ago (a time
/// ahead of `now` is a clock that moved back: listed too).
fn prune_due(pruned_at: u64, written_since: u64, now: u64) -> bool {
    written_since >= PRUNE_AFTER_BYTES
        || now.saturating_sub(pruned_at) >= PRUNE_AFTER.as_secs()
        || pruned_at > now
}

/// Keeps the entries of `dir` under `limit` bytes (down to 3/4 of it once over, so that pruning
/// is rare), removing the least recently used first, and removes stale temporary files.
fn prune(dir: &Path, limit: u64, secret: &ring::hmac::Key) {
    let Ok(listing) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries = Vec::new();
    let mut total = 0;
    for e in listing.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        let Ok(meta) = e.metadata() else { continue };
        let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        if name.starts_with(TEMP_PREFIX) {
            if modified.elapsed().unwrap_or_default() > STALE_TEMP {
                let _ = std::fs::remove_file(e.path());
            }
        } else if let Some(key) = unhex(&name)
            && meta.is_file()
            && read_header(&e.path())
                .is_some_and(|h| own_header(&h, &key, secret) || pack::owns(&h, &key, secret))
        {
            // Only this cache's own entries count and go: another program's file named by
            // 64 hexadecimal digits (a container layer, a build store) is never touched.
            total += meta.len();
            entries.push((modified, meta.len(), e.path()));
        }
    }
    if total <= limit {
        return;
    }
    entries.sort();
    for (_, len, path) in entries {
        if total <= limit / 4 * 3 {
            break;
        }
        if std::fs::remove_file(&path).is_ok() {
            total -= len;
        }
    }
}

/// The 32 bytes a name of 64 lowercase hexadecimal digits spells (as entries are named).
fn unhex(name: &str) -> Option<[u8; 32]> {
    let digits = name.as_bytes();
    if digits.len() != 64 {
        return None;
    }
    let value = |d: u8| match d {
        b'0'..=b'9' => Some(d - b'0'),
        b'a'..=b'f' => Some(d - b'a' + 10),
        _ => None,
    };
    let mut out = [0; 32];
    for (o, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
        *o = value(pair[0])? << 4 | value(pair[1])?;
    }
    Some(out)
}

/// The first [`HEADER`] bytes of the file at `path` (not followed through a link).
fn read_header(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_NOFOLLOW)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut header = Vec::with_capacity(HEADER);
    file.take(HEADER as u64).read_to_end(&mut header).ok()?;
    (header.len() == HEADER).then_some(header)
}

/// The folder's identity as its mark records it.
fn identity(dir: &Path) -> Option<[u8; 16]> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(dir).ok()?;
    let mut out = [0; 16];
    out[..8].copy_from_slice(&meta.dev().to_le_bytes());
    out[8..].copy_from_slice(&meta.ino().to_le_bytes());
    Some(out)
}

/// Whether `dir` holds this user's mark for this very folder.
fn marked(dir: &Path, secret: &ring::hmac::Key) -> bool {
    let Some(id) = identity(dir) else {
        return false;
    };
    read_regular(&dir.join(MARK), 32..=32)
        .is_some_and(|(tag, _)| key::verify(secret, &[b"folder", &id], &tag))
}

/// Marks `dir` as checked (a mark that cannot be written only costs the next run the check).
fn mark(dir: &Path, secret: &ring::hmac::Key) {
    if let Some(id) = identity(dir) {
        let tag = key::tag(secret, &[b"folder", &id]);
        let _ = write_atomically(dir, &dir.join(MARK), tag.as_ref(), 0);
    }
}

/// The first file under `dir` that git tracks, if `dir` is in a work tree that tracks any
/// (no git, or no repository: nothing is tracked).
fn tracked(dir: &Path) -> Option<String> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        // A repository's own settings run no program here.
        .args(["-c", "core.fsmonitor=false", "ls-files", "-z", "--", "."])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let first = out.stdout.split(|&b| b == 0).find(|n| !n.is_empty())?;
    Some(String::from_utf8_lossy(first).into_owned())
}

/// Where the cache of a run goes: `--cache-dir`, else `$CREDLINT_CACHE_DIR`, else
/// `.credlint_cache` at the project's root: the folder of the credlint.toml in use (`config`),
/// else the top of the git work tree holding the current folder, else the current folder. So a
/// run from a subfolder shares the cache of the repository instead of starting one there.
/// `None` with `--no-cache`.
pub fn folder(flag: Option<&Path>, disabled: bool, config: Option<&Path>) -> Option<PathBuf> {
    if disabled {
        return None;
    }
    let variable = std::env::var_os(DIR_VARIABLE).filter(|v| !v.is_empty());
    Some(match (flag, variable) {
        (Some(dir), _) => dir.to_path_buf(),
        (None, Some(dir)) => PathBuf::from(dir),
        (None, None) => project_root(config).join(DEFAULT_DIR),
    })
}

/// The folder the default cache lives in (see [`folder`]); `""` (the current folder) when
/// neither a configuration nor a git work tree says otherwise.
fn project_root(config: Option<&Path>) -> PathBuf {
    if let Some(parent) = config.and_then(Path::parent) {
        return parent.to_path_buf();
    }
    // `.git` is a folder in a clone and a file in a linked work tree or a submodule.
    if let Ok(here) = std::env::current_dir()
        && let Some(top) = here.ancestors().find(|a| a.join(".git").exists())
        && top != here
    {
        return top.to_path_buf();
    }
    PathBuf::new()
}

#[cfg(test)]
mod tests;
