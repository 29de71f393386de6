//! The pack: one file holding every entry a run of many files used, so that the next run of
//! the same files, after an edit, reads one file where it would open one entry per input.
//!
//! It only saves the opening: each entry in it is a whole entry, with the header and tags a
//! file entry has, and is checked as one ([`super::body`]) when it is looked up. Its directory
//! is not trusted: it can only point a key at bytes that then fail to verify (a miss, and the
//! file entry is read instead), never make a forged or copied result pass.

use super::{HEADER, key};

/// Identifies a pack; its name tag is made as an entry's, so pruning knows it for its own.
pub(super) const MAGIC: &[u8; 16] = b"credlint-pack01\n";
/// Magic, the pack's key, the tag of that key (as an entry's name tag), the number of entries.
pub(super) const HEAD: usize = 16 + 32 + 32 + 8;
/// A directory slot: an entry's key, its offset in the pack and its length.
const SLOT: usize = 32 + 8 + 8;
/// A run of fewer files reads its entries one by one: a pack would cost it more to load.
pub(super) const MIN_FILES: usize = 64;
/// The largest pack read or written; a run whose entries come to more goes without one.
pub(super) const MAX_BYTES: u64 = super::MAX_BYTES / 4;

/// Whether `header` (a file's first bytes) starts a pack named `name` this user's credlint
/// wrote (what pruning may remove).
pub(super) fn owns(header: &[u8], name: &[u8; 32], secret: &ring::hmac::Key) -> bool {
    header.len() >= HEAD
        && &header[..16] == MAGIC
        && &header[16..48] == name
        && key::verify(secret, &[b"name", name], &header[48..80])
}

/// A pack read back, its directory checked for size (not for truth, see the module's note).
pub(super) struct Pack {
    bytes: Vec<u8>,
    count: usize,
}

impl Pack {
    /// The pack in `bytes` when it is one, of `name`, written under `secret`.
    pub(super) fn parse(bytes: Vec<u8>, name: &[u8; 32], secret: &ring::hmac::Key) -> Option<Pack> {
        if !owns(&bytes, name, secret) {
            return None;
        }
        let head = &bytes[..HEAD];
        let count = usize::try_from(u64::from_le_bytes(head[80..88].try_into().ok()?)).ok()?;
        let directory = count.checked_mul(SLOT)?.checked_add(HEAD)?;
        (directory <= bytes.len()).then_some(Pack { bytes, count })
    }

    /// The bytes the directory files under `key` (an entry still to be verified).
    pub(super) fn get(&self, key: &[u8; 32]) -> Option<&[u8]> {
        let (slots, _) = self.bytes[HEAD..HEAD + self.count * SLOT].as_chunks::<SLOT>();
        // The directory is sorted by key when written; a pack that is not finds less.
        let slot = &slots[slots.binary_search_by(|s| s[..32].cmp(key)).ok()?];
        let field =
            |at: usize| usize::try_from(u64::from_le_bytes(slot[at..at + 8].try_into().ok()?)).ok();
        let (at, len) = (field(32)?, field(40)?);
        self.bytes.get(at..at.checked_add(len)?)
    }
}

/// The pack named `name` in `folder`, refreshed for pruning when old; `None` for none, or
/// for anything else.
pub(super) fn load(
    folder: &std::os::fd::OwnedFd,
    name: &[u8; 32],
    secret: &ring::hmac::Key,
) -> Option<Pack> {
    let hex = crate::common::hex(name);
    let file = super::open_in(folder, &hex, rustix::fs::OFlags::RDONLY).ok()?;
    let (bytes, modified) = super::read_open(file, HEAD as u64..=MAX_BYTES)?;
    super::refresh(folder, &hex, modified);
    Pack::parse(bytes, name, secret)
}

/// A pack named `name` of `entries` (each a whole entry under its key), under `secret`;
/// `None` when it would be larger than `limit` bytes.
pub(super) fn build(
    secret: &ring::hmac::Key,
    name: &[u8; 32],
    entries: &mut Vec<([u8; 32], &[u8])>,
    limit: u64,
) -> Option<Vec<u8>> {
    entries.sort_unstable_by_key(|a| a.0);
    entries.dedup_by(|a, b| a.0 == b.0);
    let data: usize = entries.iter().map(|(_, e)| e.len()).sum();
    let size = HEAD + entries.len() * SLOT + data;
    if size as u64 > limit || entries.iter().any(|(_, e)| e.len() < HEADER) {
        return None;
    }
    let mut out = Vec::with_capacity(size);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(name);
    out.extend_from_slice(key::tag(secret, &[b"name", name]).as_ref());
    out.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    let mut at = HEAD + entries.len() * SLOT;
    for (key, entry) in entries.iter() {
        out.extend_from_slice(key);
        out.extend_from_slice(&(at as u64).to_le_bytes());
        out.extend_from_slice(&(entry.len() as u64).to_le_bytes());
        at += entry.len();
    }
    for (_, entry) in entries.iter() {
        out.extend_from_slice(entry);
    }
    Some(out)
}
