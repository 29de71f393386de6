//! A [`Spread`] for tests: every scan cut into small pieces, the pieces run one after another,
//! so that the code that joins pieces is exercised on texts of a few hundred KiB.

use crate::common::spread::{Serial, Spread};

/// The piece size: a multiple of the line index's 4 KiB block, small enough for quick tests.
pub const PIECE: usize = 64 << 10;

/// Cuts every scan longer than one piece; runs everything on the calling thread.
#[derive(Clone, Copy, Debug, Default)]
pub struct Pieces;

impl Spread for Pieces {
    fn piece_bytes(&self, len: usize) -> Option<usize> {
        (len > PIECE).then_some(PIECE)
    }

    fn map<I: Sync, T: Send>(&self, items: &[I], f: impl Fn(&I) -> T + Sync + Send) -> Vec<T> {
        Serial.map(items, f)
    }

    fn map_mut<I: Send, T: Send>(
        &self,
        items: &mut [I],
        f: impl Fn(&mut I) -> T + Sync + Send,
    ) -> Vec<T> {
        Serial.map_mut(items, f)
    }
}
