//! The index of files read: for each, its identity, size and times as `fstat` gave them just
//! before a run read it, and the SHA-256 of the bytes read. A later run whose `stat` of a path
//! gives the very same identity, size and times knows the file's bytes without opening it, the
//! way git's index knows a file unchanged; every other file is read and hashed as before.
//!
//! Why that is safe: any write to a file sets its change time (`ctime`) to the clock's time,
//! and nobody can set a `ctime` back (`touch -d` moves the modification time only). So a file
//! written after a run's `fstat` shows a later `ctime` than the one recorded, unless both fall
//! in one tick of the file system's clock. Only files whose `ctime` is at least [`SETTLED`]
//! older than the run's start are recorded, so no later write can share their tick. (An inode
//! freed and reused by a new file gets a new `ctime` too.)
//!
//! Writes through a shared memory mapping are the exception: the kernel sets the times when a
//! clean page is first written, and later writes to that page change nothing `stat` shows until
//! the page is written back (within about 35 s with Linux's default writeback settings), after
//! which the next write sets the times again. So a file is recorded only once its modification
//! time is [`MAPPED_WRITES`] old too: every write the times did not show has then reached the
//! bytes this run hashed. What the index still cannot see (a writeback held back longer than
//! that, a file system that keeps no times, a clock that runs back) is listed in docs/trust.md;
//! `--no-cache` reads every file.
//!
//! One index serves every setting (the digests are of the bytes alone; an entry's key adds the
//! settings), is read on first use, and is written back, whole and atomically, only by a run
//! that learned something. Runs racing to write it lose some records, which costs the next run
//! a read of those files, never a wrong result.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime};

/// The index's file in the cache folder (hidden, so pruning, which removes entries by their
/// hexadecimal names, leaves it alone).
pub(super) const NAME: &str = ".credlint-files";
/// Identifies the index's format.
const MAGIC: &[u8; 16] = b"credlint-files2\n";
/// Magic, record count, the tag of the count and records under the cache's secret.
const HEADER: usize = 16 + 8 + 32;
/// Device, inode, size, modification and change times (seconds, nanoseconds), digest.
const RECORD: usize = 8 * 3 + (8 + 4) * 2 + 32;
/// Records kept at most (10 MiB): a run that learns more keeps what it learned and as many of
/// the older records as fit.
const MAX_RECORDS: usize = 1 << 17;
/// How long before a run's start a file must have last changed to be recorded: more than the
/// coarsest clock tick of a file system (FAT's two seconds).
const SETTLED: Duration = Duration::from_secs(3);
/// How old a file's modification time must be to be recorded: longer than a page written
/// through a mapping stays writable without the times changing (Linux writes dirty pages back
/// after 30 s, checked every 5 s, by default).
const MAPPED_WRITES: Duration = Duration::from_secs(60);

/// A file, whatever its name: the device and inode `stat` gives.
type Identity = (u64, u64);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Record {
    size: u64,
    modified: (i64, u32),
    changed: (i64, u32),
    content: [u8; 32],
}

impl Record {
    fn of(meta: &std::fs::Metadata, content: [u8; 32]) -> Record {
        Record {
            size: meta.size(),
            modified: (meta.mtime(), meta.mtime_nsec().clamp(0, 999_999_999) as u32),
            changed: (meta.ctime(), meta.ctime_nsec().clamp(0, 999_999_999) as u32),
            content,
        }
    }
}

pub(super) struct Index {
    path: PathBuf,
    secret: ring::hmac::Key,
    /// Files whose change time is before this are recorded...
    settled_before: (i64, u32),
    /// ...when their modification time is before this.
    unmapped_before: (i64, u32),
    loaded: OnceLock<HashMap<Identity, Record>>,
    learned: Mutex<HashMap<Identity, Record>>,
}

impl Index {
    /// The index in `dir`, for a run that starts now (nothing is read yet).
    pub(super) fn new(dir: &Path, secret: ring::hmac::Key) -> Index {
        Index::starting(dir, SystemTime::now(), secret)
    }

    fn starting(dir: &Path, start: SystemTime, secret: ring::hmac::Key) -> Index {
        let before = |age: Duration| {
            let t = start
                .checked_sub(age)
                .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
                .unwrap_or_default();
            (
                i64::try_from(t.as_secs()).unwrap_or(i64::MAX),
                t.subsec_nanos(),
            )
        };
        Index {
            path: dir.join(NAME),
            secret,
            settled_before: before(SETTLED),
            unmapped_before: before(MAPPED_WRITES),
            loaded: OnceLock::new(),
            learned: Mutex::new(HashMap::new()),
        }
    }

    /// The digest of the bytes now at `path`, when the index holds the file unchanged.
    pub(super) fn content(&self, path: &Path) -> Option<[u8; 32]> {
        let known = self.loaded();
        // An empty index (a first run) knows no file: no `stat` before the read's own.
        if known.is_empty() {
            return None;
        }
        let meta = std::fs::metadata(path).ok()?;
        if !meta.is_file() {
            return None;
        }
        let record = known.get(&(meta.dev(), meta.ino()))?;
        (Record::of(&meta, record.content) == *record).then_some(record.content)
    }

    /// Records that the file `seen` describes (before the read) held bytes of digest `content`,
    /// if it had settled before the run began.
    pub(super) fn learn(&self, seen: &std::fs::Metadata, content: [u8; 32]) {
        let record = Record::of(seen, content);
        if !seen.is_file()
            || record.changed >= self.settled_before
            || record.modified >= self.unmapped_before
            // No times at all: a file system that keeps none cannot tell a change.
            || record.changed == (0, 0)
        {
            return;
        }
        let identity = (seen.dev(), seen.ino());
        if self.loaded.get().and_then(|l| l.get(&identity)) == Some(&record) {
            return;
        }
        super::lock(&self.learned).insert(identity, record);
    }

    /// Writes the index back when this run learned something; `n` makes the temporary name
    /// unique within the run. Returns whether it wrote.
    pub(super) fn save(&self, n: usize) -> bool {
        let learned = std::mem::take(&mut *super::lock(&self.learned));
        if learned.is_empty() {
            return false;
        }
        let room = MAX_RECORDS.saturating_sub(learned.len());
        let older = self
            .loaded()
            .iter()
            .filter(|(identity, _)| !learned.contains_key(identity))
            .take(room)
            .map(|(i, r)| (*i, *r))
            .collect::<Vec<_>>();
        let mut records: Vec<(Identity, Record)> = learned.into_iter().collect();
        records.extend(older);
        records.truncate(MAX_RECORDS);
        super::write_atomically(
            self.path.parent().unwrap_or(Path::new(".")),
            &self.path,
            &encode(&records, &self.secret),
            n,
        )
        .is_ok()
    }

    fn loaded(&self) -> &HashMap<Identity, Record> {
        self.loaded.get_or_init(|| {
            super::read_regular(
                &self.path,
                HEADER as u64..=(HEADER + MAX_RECORDS * RECORD) as u64,
            )
            .and_then(|(bytes, _)| decode(&bytes, &self.secret))
            .unwrap_or_default()
        })
    }
}

fn encode(records: &[(Identity, Record)], secret: &ring::hmac::Key) -> Vec<u8> {
    let mut body = Vec::with_capacity(records.len() * RECORD);
    for ((dev, ino), r) in records {
        body.extend_from_slice(&dev.to_le_bytes());
        body.extend_from_slice(&ino.to_le_bytes());
        body.extend_from_slice(&r.size.to_le_bytes());
        body.extend_from_slice(&r.modified.0.to_le_bytes());
        body.extend_from_slice(&r.modified.1.to_le_bytes());
        body.extend_from_slice(&r.changed.0.to_le_bytes());
        body.extend_from_slice(&r.changed.1.to_le_bytes());
        body.extend_from_slice(&r.content);
    }
    let mut out = Vec::with_capacity(HEADER + body.len());
    out.extend_from_slice(MAGIC);
    let count = (records.len() as u64).to_le_bytes();
    out.extend_from_slice(&count);
    out.extend_from_slice(super::key::tag(secret, &[b"files", MAGIC, &count, &body]).as_ref());
    out.extend_from_slice(&body);
    out
}

/// The records of an index file; `None` for anything damaged, truncated, foreign or not
/// tagged under `secret` (an index that says a bad file holds a clean file's bytes would pass
/// it unread).
fn decode(bytes: &[u8], secret: &ring::hmac::Key) -> Option<HashMap<Identity, Record>> {
    let (head, body) = bytes.split_at_checked(HEADER)?;
    let count = usize::try_from(u64::from_le_bytes(head[16..24].try_into().ok()?)).ok()?;
    if &head[..16] != MAGIC
        || count > MAX_RECORDS
        || body.len() != count * RECORD
        || !super::key::verify(
            secret,
            &[b"files", MAGIC, &head[16..24], body],
            &head[24..HEADER],
        )
    {
        return None;
    }
    let u64_at =
        |r: &[u8], at: usize| u64::from_le_bytes(r[at..at + 8].try_into().unwrap_or([0; 8]));
    let u32_at =
        |r: &[u8], at: usize| u32::from_le_bytes(r[at..at + 4].try_into().unwrap_or([0; 4]));
    let mut records = HashMap::with_capacity(count);
    for r in body.chunks_exact(RECORD) {
        let record = Record {
            size: u64_at(r, 16),
            modified: (u64_at(r, 24) as i64, u32_at(r, 32)),
            changed: (u64_at(r, 36) as i64, u32_at(r, 44)),
            content: r[48..80].try_into().ok()?,
        };
        records.insert((u64_at(r, 0), u64_at(r, 8)), record);
    }
    Some(records)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::TempDir;

    fn secret(byte: u8) -> ring::hmac::Key {
        ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &[byte; 32])
    }

    #[test]
    fn a_file_is_known_while_unchanged_and_only_once_settled() {
        let dir = TempDir::new("credlint-files-index");
        let file = dir.join("a.yaml");
        std::fs::write(&file, "a: 1\n").unwrap();
        let seen = std::fs::metadata(&file).unwrap();
        // Just written: a run starting now does not record it.
        let now = Index::new(&dir, secret(1));
        assert_eq!(now.content(&file), None);
        now.learn(&seen, [7; 32]);
        assert!(!now.save(0), "an unsettled file is not recorded");
        assert!(!dir.join(NAME).exists());
        // Settled, but modified within the last minute (a mapped write may not show yet).
        let soon = Index::starting(&dir, SystemTime::now() + SETTLED * 2, secret(1));
        soon.learn(&seen, [7; 32]);
        assert!(!soon.save(0), "a recently modified file is not recorded");
        // A run starting later does, and the next run knows the file from its metadata.
        let later = SystemTime::now() + MAPPED_WRITES * 2;
        let learning = Index::starting(&dir, later, secret(1));
        assert_eq!(learning.content(&file), None);
        learning.learn(&seen, [7; 32]);
        assert!(learning.save(0));
        let next = Index::starting(&dir, later, secret(1));
        assert_eq!(next.content(&file), Some([7; 32]));
        assert_eq!(next.content(&dir.join("other.yaml")), None, "no such file");
        // Learning what it already holds writes nothing.
        next.learn(&seen, [7; 32]);
        assert!(!next.save(1));
        // Rewritten with bytes of the same size, the times put back: not known.
        std::thread::sleep(Duration::from_millis(20));
        std::fs::write(&file, "a: 2\n").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(seen.modified().unwrap())
            .unwrap();
        assert_eq!(Index::starting(&dir, later, secret(1)).content(&file), None);
        // A damaged index is as good as none.
        let mut bytes = std::fs::read(dir.join(NAME)).unwrap();
        bytes[HEADER] ^= 1;
        std::fs::write(dir.join(NAME), &bytes).unwrap();
        let damaged = Index::starting(&dir, later, secret(1));
        assert!(damaged.loaded().is_empty());
        // An index another secret wrote (a restored or committed cache) is as good as none.
        let mut records = vec![((seen.dev(), seen.ino()), Record::of(&seen, [7; 32]))];
        std::fs::write(dir.join(NAME), encode(&records, &secret(2))).unwrap();
        assert!(Index::starting(&dir, later, secret(1)).loaded().is_empty());
        records[0].1.content = [8; 32];
        std::fs::write(dir.join(NAME), encode(&records, &secret(1))).unwrap();
        assert_eq!(Index::starting(&dir, later, secret(1)).loaded().len(), 1);
    }

    fn record(n: u8) -> Record {
        Record {
            size: u64::from(n) * 1000,
            modified: (1_700_000_000 + i64::from(n), 5),
            changed: (-3, 999_999_999),
            content: [n; 32],
        }
    }

    #[test]
    fn records_read_back_as_written_and_damage_reads_as_none() {
        let records: Vec<(Identity, Record)> = (1..=3)
            .map(|n| ((u64::from(n), u64::MAX - u64::from(n)), record(n)))
            .collect();
        let bytes = encode(&records, &secret(1));
        assert_eq!(bytes.len(), HEADER + 3 * RECORD);
        let back = decode(&bytes, &secret(1)).unwrap();
        assert_eq!(back.len(), 3);
        for (identity, r) in &records {
            assert_eq!(back.get(identity), Some(r));
        }
        // Any flipped byte, a cut or an extra byte is refused whole.
        for at in [0, 17, 25, HEADER, HEADER + RECORD + 40, bytes.len() - 1] {
            let mut damaged = bytes.clone();
            damaged[at] ^= 1;
            assert!(
                decode(&damaged, &secret(1)).is_none(),
                "flipped byte {at} was trusted"
            );
        }
        assert!(decode(&bytes[..bytes.len() - 1], &secret(1)).is_none());
        assert!(
            decode(&bytes, &secret(2)).is_none(),
            "another secret's index"
        );
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode(&longer, &secret(1)).is_none());
        assert!(
            decode(&encode(&[], &secret(1)), &secret(1))
                .unwrap()
                .is_empty()
        );
    }
}
