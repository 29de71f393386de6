//! A word-at-a-time multiplicative hash for credlint's caches (projections, scripts). Their
//! maps are bounded and compare keys exactly, so SipHash's resistance to chosen keys would buy
//! nothing: a bad spread costs a little time, never a wrong answer.

use std::hash::{BuildHasherDefault, Hasher};

pub type WordState = BuildHasherDefault<WordHasher>;

#[derive(Default)]
pub struct WordHasher(u64);

impl Hasher for WordHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().unwrap_or_default()));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(last) ^ ((rest.len() as u64) << 59));
        }
    }

    fn finish(&self) -> u64 {
        // A final avalanche so that the low bits hashbrown uses depend on every word.
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h
    }
}

impl WordHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn every_byte_and_the_length_count() {
        let h = |b: &[u8]| WordState::default().hash_one(b);
        assert_ne!(h(b"abcdefgh1"), h(b"abcdefgh2"));
        assert_ne!(h(b"abc"), h(b"abc\0"));
        assert_ne!(h(b""), h(b"\0"));
        assert_eq!(h(b"same text"), h(b"same text"));
    }
}
