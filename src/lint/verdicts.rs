//! Verdicts of one program remembered by the projection of the object it observes
//! (`cel::reads`): a clean render repeats a handful of shapes across thousands of bundles, so
//! most objects are decided by one lookup instead of an evaluation. The schema check keeps its
//! verdicts (clean or not) the same way, by the shape of the object (`schema::shape`).
//!
//! Keys are kept exactly, not as digests, so two projections can never be confused.

use crate::common::wordhash::WordState;
use crate::lint::cel::Verdict;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;
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
    /// The key of the object whose verdicts are being decided (`ObjectVerdicts`).
    static OBJECT_KEY: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Every verdict one object needed, by program slot.
pub type Verdicts = Arc<[Option<Verdict>]>;

/// The verdicts of the programs run on one object, looked up once under the object's key on
/// the union of what they read (`Pattern::union`): an object with that key needs the same
/// programs and gets the same verdicts. On a miss they are decided one by one (each program
/// with its own cache) and kept together when the object is done.
pub struct ObjectVerdicts<'c> {
    cache: &'c VerdictCache<Verdicts>,
    key: Vec<u8>,
    /// Found under the key.
    known: Option<Verdicts>,
    /// Decided for this object, by slot (empty when all were known).
    decided: Vec<Option<Verdict>>,
    /// Whether `decided` is kept under the key when the object is done (a miss).
    keep: bool,
}

impl<'c> ObjectVerdicts<'c> {
    pub fn new(
        cache: &'c VerdictCache<Verdicts>,
        slots: usize,
        write: impl FnOnce(&mut Vec<u8>),
    ) -> ObjectVerdicts<'c> {
        let mut key = OBJECT_KEY.take();
        key.clear();
        // A cache that has stopped keeping is not worth writing the key for.
        let found = if cache.off() {
            Found::Off
        } else {
            write(&mut key);
            cache.find(&key)
        };
        let (known, keep) = match found {
            Found::Hit(v) => (Some(v), false),
            Found::Miss => (None, true),
            Found::Off => (None, false),
        };
        ObjectVerdicts {
            cache,
            key,
            decided: if known.is_some() {
                Vec::new()
            } else {
                vec![None; slots]
            },
            known,
            keep,
        }
    }

    /// The verdict of the program in `slot`: known for this object, or from `decide` (once).
    pub fn get(&mut self, slot: usize, decide: impl FnOnce() -> Verdict) -> Verdict {
        if let Some(Some(v)) = self.known.as_ref().and_then(|k| k.get(slot)) {
            return v.clone();
        }
        match self.decided.get_mut(slot) {
            Some(cell) => cell.get_or_insert_with(decide).clone(),
            // Known objects need no other program; should one, it is decided uncached.
            None => decide(),
        }
    }

    /// Keeps what a miss decided, for the next object with this key.
    pub fn finish(self) {
        if self.keep {
            self.cache.keep(&self.key, self.decided.into());
        }
        OBJECT_KEY.set(self.key);
    }
}

/// What a cache knows of a key.
pub enum Found<V> {
    Hit(V),
    /// Not known; worth keeping once decided.
    Miss,
    /// The cache has stopped keeping verdicts: its keys do not repeat.
    Off,
}

impl<V: Clone> VerdictCache<V> {
    /// The verdict for the projection `write` produces, from the cache or from `decide`.
    pub fn get_or(&self, write: impl FnOnce(&mut Vec<u8>), decide: impl FnOnce() -> V) -> V {
        if self.off() {
            return decide();
        }
        KEY.with_borrow_mut(|key| {
            key.clear();
            write(key);
            match self.find(key) {
                Found::Hit(v) => v,
                Found::Miss => {
                    let verdict = decide();
                    self.keep(key, verdict.clone());
                    verdict
                }
                Found::Off => decide(),
            }
        })
    }

    fn off(&self) -> bool {
        let lookups = self.lookups.load(Relaxed);
        lookups >= TRIAL && self.hits.load(Relaxed) * 8 < lookups
    }

    /// Looks `key` up (and counts the lookup toward the cache's trial).
    pub fn find(&self, key: &[u8]) -> Found<V> {
        if self.off() {
            return Found::Off;
        }
        self.lookups.fetch_add(1, Relaxed);
        match self.lock().map.get(key) {
            Some(v) => {
                self.hits.fetch_add(1, Relaxed);
                Found::Hit(v.clone())
            }
            None => Found::Miss,
        }
    }

    /// Keeps the verdict decided for `key`, within the cache's bounds.
    pub fn keep(&self, key: &[u8], verdict: V) {
        let mut known = self.lock();
        if key.len() <= MAX_KEY && known.bytes + key.len() <= MAX_BYTES {
            known.bytes += key.len();
            known.map.insert(key.into(), verdict);
        }
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
    fn an_objects_verdicts_are_kept_together_and_decided_once() {
        let cache: VerdictCache<Verdicts> = VerdictCache::default();
        let calls = std::cell::Cell::new(0);
        let decide = |v: Verdict| {
            calls.set(calls.get() + 1);
            v
        };
        let object = |k: &mut Vec<u8>| k.extend_from_slice(b"object a");
        // A miss: each program decided once, however often it is asked.
        let mut first = ObjectVerdicts::new(&cache, 3, object);
        assert_eq!(first.get(0, || decide(Verdict::Pass)), Verdict::Pass);
        assert_eq!(first.get(0, || decide(Verdict::Deny)), Verdict::Pass);
        assert_eq!(first.get(2, || decide(Verdict::Deny)), Verdict::Deny);
        first.finish();
        assert_eq!(calls.get(), 2);
        // The next object with that key is decided by the lookup alone.
        let mut second = ObjectVerdicts::new(&cache, 3, object);
        assert_eq!(second.get(0, || decide(Verdict::Deny)), Verdict::Pass);
        assert_eq!(second.get(2, || decide(Verdict::Pass)), Verdict::Deny);
        // A program the first object never needed is decided, not invented.
        assert_eq!(second.get(1, || decide(Verdict::Deny)), Verdict::Deny);
        second.finish();
        assert_eq!(calls.get(), 3);
        // Another key knows nothing.
        let mut other = ObjectVerdicts::new(&cache, 3, |k| k.extend_from_slice(b"object b"));
        assert_eq!(other.get(0, || decide(Verdict::Deny)), Verdict::Deny);
        assert_eq!(calls.get(), 4);
    }

    #[test]
    fn long_projections_are_decided_every_time() {
        let cache: VerdictCache = VerdictCache::default();
        let long = |k: &mut Vec<u8>| k.resize(MAX_KEY + 1, 7);
        cache.get_or(long, || Verdict::Pass);
        assert_eq!(cache.get_or(long, || Verdict::Deny), Verdict::Deny);
    }
}
