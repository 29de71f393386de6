//! SHA-256 whose state between updates is plain data. The Job-name hash is begun over a
//! ConfigMap's plan.json and create.py and finished over the Job's image, perhaps in a later
//! run: the state between the two is one of the facts the cache keeps for the ConfigMap.

use sha2::digest::generic_array::GenericArray;

/// The initial hash value of SHA-256 (FIPS 180-4, 5.3.3).
const H0: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// A SHA-256 computation under way: the chaining value after every whole 64-byte block, the
/// bytes of the block not yet complete, and how many bytes went in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sha256State {
    pub chain: [u32; 8],
    /// Fewer than 64 bytes: `length % 64` of them.
    pub pending: Vec<u8>,
    pub length: u64,
}

impl Default for Sha256State {
    fn default() -> Self {
        Sha256State {
            chain: H0,
            pending: Vec::new(),
            length: 0,
        }
    }
}

impl Sha256State {
    pub fn update(&mut self, mut bytes: &[u8]) {
        self.length += bytes.len() as u64;
        if !self.pending.is_empty() {
            let take = (64 - self.pending.len()).min(bytes.len());
            self.pending.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.pending.len() < 64 {
                return;
            }
            let block = std::mem::take(&mut self.pending);
            self.compress(&block);
        }
        let whole = bytes.len() / 64 * 64;
        self.compress(&bytes[..whole]);
        self.pending.extend_from_slice(&bytes[whole..]);
    }

    /// `bytes` holds whole blocks.
    fn compress(&mut self, bytes: &[u8]) {
        for block in bytes.chunks_exact(64) {
            sha2::compress256(
                &mut self.chain,
                std::slice::from_ref(GenericArray::from_slice(block)),
            );
        }
    }

    /// The digest of everything that went in (FIPS 180-4, 5.1.1: a 1 bit, zeros, the length).
    pub fn finalize(mut self) -> [u8; 32] {
        let bits = self.length.wrapping_mul(8);
        let mut tail = std::mem::take(&mut self.pending);
        tail.push(0x80);
        while tail.len() % 64 != 56 {
            tail.push(0);
        }
        tail.extend_from_slice(&bits.to_be_bytes());
        self.compress(&tail);
        let mut out = [0; 32];
        for (bytes, word) in out.chunks_exact_mut(4).zip(self.chain) {
            bytes.copy_from_slice(&word.to_be_bytes());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::Digest;

    #[test]
    fn agrees_with_sha2_for_every_length_and_split() {
        let data: Vec<u8> = (0..300u32).map(|i| (i * 31 % 251) as u8).collect();
        for len in [0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 128, 200, 300] {
            let expected: [u8; 32] = sha2::Sha256::digest(&data[..len]).into();
            for split in [0, 1.min(len), len / 3, len / 2, len.saturating_sub(1), len] {
                let mut state = Sha256State::default();
                state.update(&data[..split]);
                state.update(&data[split..len]);
                assert_eq!(state.pending.len() as u64, state.length % 64);
                assert_eq!(state.finalize(), expected, "length {len}, split at {split}");
            }
        }
    }
}
