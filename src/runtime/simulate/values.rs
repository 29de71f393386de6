//! Checks on values that need no cluster: whether a text holds a known value (the leak
//! check, ADR-072 point 7) and whether the values a program generated are predictable.
//! Values stay in memory; nothing here prints one.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;

use super::SimFinding;
use super::scenario::{DEFAULT_ALPHABET_SIZE, Generated, PREDICTABLE, Plan};

/// A part of a value this long (text or base64) is a leak: 12 characters of a random value
/// carry about 70 bits, and no log line holds them by chance.
pub const LEAK_WINDOW: usize = 12;
/// Values shorter than this are not looked for (they could occur in ordinary text).
pub const MIN_LEAK_VALUE: usize = 8;

/// Every window of every known value, raw and base64.
pub struct LeakIndex {
    windows: HashSet<Vec<u8>>,
    lengths: BTreeSet<usize>,
}

impl LeakIndex {
    pub fn new(values: &BTreeSet<Vec<u8>>) -> LeakIndex {
        let mut index = LeakIndex {
            windows: HashSet::new(),
            lengths: BTreeSet::new(),
        };
        for value in values {
            let encoded = B64.encode(value).into_bytes();
            for form in [value.as_slice(), encoded.as_slice()] {
                if form.len() < MIN_LEAK_VALUE {
                    continue;
                }
                if form.len() <= LEAK_WINDOW {
                    index.lengths.insert(form.len());
                    index.windows.insert(form.to_vec());
                } else {
                    index.lengths.insert(LEAK_WINDOW);
                    for w in form.windows(LEAK_WINDOW) {
                        index.windows.insert(w.to_vec());
                    }
                }
            }
        }
        index
    }

    pub fn found_in(&self, text: &[u8]) -> bool {
        self.lengths
            .iter()
            .any(|&len| text.len() >= len && text.windows(len).any(|w| self.windows.contains(w)))
    }
}

/// E[distinct characters] among `n` drawn uniformly from `alphabet` characters.
fn expected_distinct(alphabet: usize, n: usize) -> f64 {
    let a = alphabet as f64;
    a * (1.0 - (1.0 - 1.0 / a).powi(i32::try_from(n).unwrap_or(i32::MAX)))
}

/// `runtime-predictable-value` over everything a simulation generated: a value created twice
/// (in two fresh namespaces, two runs or for two keys), values of a key that use far fewer
/// distinct characters than random ones of the planned alphabet would, and character
/// positions that hold the same character in every value of a key.
pub fn predictable(plan: &Plan, generated: &[Generated]) -> Vec<SimFinding> {
    let mut out = Vec::new();
    let mut first: BTreeMap<&[u8], &Generated> = BTreeMap::new();
    for g in generated {
        match first.get(g.value.as_slice()) {
            Some(earlier) => out.push(SimFinding {
                rule: PREDICTABLE,
                scenario: g.scenario,
                run: g.run,
                request: None,
                message: format!(
                    "the value created for key {} of Secret {} is the one created for key {} of Secret {} in {} (run {}): a value must be new each time it is generated (ADR-072 point 2)",
                    g.key, g.secret, earlier.key, earlier.secret, earlier.scenario, earlier.run
                ),
            }),
            None => {
                first.insert(&g.value, g);
            }
        }
    }
    let mut by_key: BTreeMap<(&str, &str), Vec<&Generated>> = BTreeMap::new();
    for g in generated {
        by_key.entry((&g.secret, &g.key)).or_default().push(g);
    }
    for ((secret, key), values) in by_key {
        let distinct: BTreeSet<&[u8]> = values.iter().map(|g| g.value.as_slice()).collect();
        let texts: Vec<Vec<char>> = distinct
            .iter()
            .map(|v| String::from_utf8_lossy(v).chars().collect())
            .collect();
        let alphabet = plan
            .secrets
            .iter()
            .find(|s| s.name == secret)
            .and_then(|s| s.specs.get(key))
            .and_then(|s| s.alphabet.as_ref().map(Vec::len))
            .unwrap_or(DEFAULT_ALPHABET_SIZE);
        let Some(last) = values.last() else {
            continue;
        };
        let finding = |message: String| SimFinding {
            rule: PREDICTABLE,
            scenario: last.scenario,
            run: last.run,
            request: None,
            message,
        };
        let n: usize = texts.iter().map(Vec::len).sum();
        let used: BTreeSet<char> = texts.iter().flatten().copied().collect();
        let expected = expected_distinct(alphabet, n);
        if n >= 16 && alphabet > 2 && (used.len() as f64) < expected / 2.0 {
            out.push(finding(format!(
                "the {} values generated for key {key} of Secret {secret} use {} distinct characters where random ones from the planned alphabet of {alphabet} would use about {expected:.0}: about {:.1} random bits per character instead of {:.1}, fewer than the planned length and alphabet give (ADR-072 point 2)",
                texts.len(),
                used.len(),
                (used.len().max(1) as f64).log2(),
                (alphabet as f64).log2()
            )));
        }
        if texts.len() >= 3 {
            let len = texts[0].len();
            if texts.iter().all(|t| t.len() == len) {
                let fixed = (0..len)
                    .filter(|&i| texts.iter().all(|t| t[i] == texts[0][i]))
                    .count();
                if fixed >= 3 {
                    out.push(finding(format!(
                        "{fixed} character positions hold the same character in all {} values generated for key {key} of Secret {secret}: that part is not random (ADR-072 point 2)",
                        texts.len()
                    )));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(values: &[&str]) -> BTreeSet<Vec<u8>> {
        values.iter().map(|v| v.as_bytes().to_vec()).collect()
    }

    #[test]
    fn a_value_is_found_as_text_base64_or_a_long_part() {
        let index = LeakIndex::new(&set(&["Zq3xV9mPpL2rT8wKc4YhN6bD"]));
        assert!(index.found_in(b"password is Zq3xV9mPpL2rT8wKc4YhN6bD."));
        assert!(index.found_in(B64.encode("Zq3xV9mPpL2rT8wKc4YhN6bD").as_bytes()));
        assert!(index.found_in(b"starts with Zq3xV9mPpL2r..."));
        assert!(!index.found_in(b"starts with Zq3xV9mPpL2 (11 characters)"));
        assert!(!index.found_in(b"created Secret shop-sessions-app"));
        // Short values are not looked for at all.
        let short = LeakIndex::new(&set(&["abc"]));
        assert!(!short.found_in(b"abc abc"));
        let eight = LeakIndex::new(&set(&["k3Y9pQ2z"]));
        assert!(eight.found_in(b"x k3Y9pQ2z y"));
    }
}
