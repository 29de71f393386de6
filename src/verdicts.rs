//! Verdicts of one program remembered by the projection of the object it observes
//! (`cel::reads`): a clean render repeats a handful of shapes across thousands of bundles, so
//! most objects are decided by one lookup instead of an evaluation. The schema check keeps its
//! verdicts (clean or not) the same way, by the shape of the object (`schema::shape`).
//!
//! Keys are kept exactly, not as digests, so two projections can never be confused.

use crate::cel::Verdict;
use crate::wordhash::WordState;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// How a program earns its cache: after this many lookups it must hit at least one in eight
/// (a program whose projections carry names never repeats, and stops keeping them).
const TRIAL: usize = 256;
/// Bounds per program: a projection longer than this is not kept, nor more bytes of keys.
const MAX_KEY: usize = 4096;
const MAX_BYTES: usize = 256 * 1024;

pub struct VerdictCache<V = Verdict> {
    known: Mutex<Known<V>>,
    lookups: AtomicUsize,
    hits: AtomicUsize,
}

struct Known<V> {
    map: HashMap<Box<[u8]>, V, WordState>,
    bytes: usize,
}

impl<V> Default for VerdictCache<V> {
    fn default() -> Self {
        VerdictCache {
            known: Mutex::new(Known {
                map: HashMap::default(),
                bytes: 0,
            }),
            lookups: AtomicUsize::new(0),
            hits: AtomicUsize::new(0),
        }
    }
}

thread_local! {
    /// The key being built, reused so a lookup allocates nothing.
    static KEY: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

impl<V: Clone> VerdictCache<V> {
    /// The verdict for the projection `write` produces, from the cache or from `decide`.
    pub fn get_or(&self, write: impl FnOnce(&mut Vec<u8>), decide: impl FnOnce() -> V) -> V {
        let lookups = self.lookups.fetch_add(1, Relaxed);
        if lookups >= TRIAL && self.hits.load(Relaxed) * 8 < lookups {
            return decide();
        }
        KEY.with_borrow_mut(|key| {
            key.clear();
            write(key);
            if let Some(v) = self.lock().map.get(key.as_slice()) {
                self.hits.fetch_add(1, Relaxed);
                return v.clone();
            }
            let verdict = decide();
            let mut known = self.lock();
            if key.len() <= MAX_KEY && known.bytes + key.len() <= MAX_BYTES {
                known.bytes += key.len();
                known.map.insert(key.as_slice().into(), verdict.clone());
            }
            verdict
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Known<V>> {
        // A panic while holding the lock leaves a map that is whole, so it stays usable.
        self.known.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verdict_is_decided_once_per_projection() {
        let cache: VerdictCache = VerdictCache::default();
        let calls = std::cell::Cell::new(0);
        let decide = |v: Verdict| {
            calls.set(calls.get() + 1);
            v
        };
        let a = |k: &mut Vec<u8>| k.extend_from_slice(b"projection a");
        let b = |k: &mut Vec<u8>| k.extend_from_slice(b"projection b");
        assert_eq!(cache.get_or(a, || decide(Verdict::Pass)), Verdict::Pass);
        assert_eq!(cache.get_or(a, || decide(Verdict::Deny)), Verdict::Pass);
        assert_eq!(cache.get_or(b, || decide(Verdict::Deny)), Verdict::Deny);
        assert_eq!(calls.get(), 2);
    }

    #[test]
    fn a_program_that_never_repeats_stops_being_cached() {
        let cache: VerdictCache = VerdictCache::default();
        for i in 0..TRIAL * 2 {
            cache.get_or(|k| k.extend_from_slice(&i.to_le_bytes()), || Verdict::Pass);
        }
        let kept = cache.lock().map.len();
        assert_eq!(kept, TRIAL);
    }

    #[test]
    fn long_projections_are_decided_every_time() {
        let cache: VerdictCache = VerdictCache::default();
        let long = |k: &mut Vec<u8>| k.resize(MAX_KEY + 1, 7);
        cache.get_or(long, || Verdict::Pass);
        assert_eq!(cache.get_or(long, || Verdict::Deny), Verdict::Deny);
    }
}
