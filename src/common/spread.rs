//! How a stage's independent pieces of work run: one after another, or spread over threads.
//!
//! The stages below the executor (`src/exec/`) never decide that themselves and never look at
//! which thread they are on: a function that can split its work takes a [`Spread`] and asks it.
//! [`Serial`] is the reference every other spread must agree with, result for result.

/// A way to run independent pieces of work; every method returns results in the items' order.
pub trait Spread: Sync {
    /// The size of the pieces a scan of `len` bytes is cut into, or `None` to scan it whole.
    /// A size is a multiple of 4 KiB (a page, and the line index's block).
    fn piece_bytes(&self, len: usize) -> Option<usize>;

    /// `f` on each of `items`.
    fn map<I: Sync, T: Send>(&self, items: &[I], f: impl Fn(&I) -> T + Sync + Send) -> Vec<T>;

    /// `f` on each of `items`, which it may change.
    fn map_mut<I: Send, T: Send>(
        &self,
        items: &mut [I],
        f: impl Fn(&mut I) -> T + Sync + Send,
    ) -> Vec<T>;

    /// `a` and `b`, which may run side by side; their results in that order.
    fn join<A: Send, B: Send>(
        &self,
        a: impl FnOnce() -> A + Send,
        b: impl FnOnce() -> B + Send,
    ) -> (A, B) {
        (a(), b())
    }
}

/// Everything on the calling thread, nothing cut into pieces.
#[derive(Clone, Copy, Debug, Default)]
pub struct Serial;

impl Spread for Serial {
    fn piece_bytes(&self, _len: usize) -> Option<usize> {
        None
    }

    fn map<I: Sync, T: Send>(&self, items: &[I], f: impl Fn(&I) -> T + Sync + Send) -> Vec<T> {
        items.iter().map(f).collect()
    }

    fn map_mut<I: Send, T: Send>(
        &self,
        items: &mut [I],
        f: impl Fn(&mut I) -> T + Sync + Send,
    ) -> Vec<T> {
        items.iter_mut().map(f).collect()
    }
}
