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

/// Decoding depth: base64 of a JSON record that holds the value's hex is three layers.
const DECODE_DEPTH: usize = 3;
/// Decoded bytes looked at per searched text, as a multiple of its length: the decodings of
/// one layer (escapes, percent, two hex and four base64 alignments) come to about six times
/// the text, and the deeper layers get what is left.
const DECODE_BUDGET_FACTOR: usize = 16;
/// A run of hex or base64 characters shorter than this holds no window of a value.
const MIN_ENCODED_RUN: usize = 16;

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

    /// Whether `text`, or what a program could have made of a value in it, holds a window
    /// of a known value: the text as it is, and decoded (JSON and YAML string escapes,
    /// percent-encoding, hex, base64 standard and URL-safe at any alignment), layer under
    /// layer up to [`DECODE_DEPTH`], within a budget of decoded bytes per text.
    pub fn found_in(&self, text: &[u8]) -> bool {
        let mut budget = text.len().saturating_mul(DECODE_BUDGET_FACTOR);
        self.search(text, DECODE_DEPTH, &mut budget)
    }

    fn found_as_is(&self, text: &[u8]) -> bool {
        self.lengths
            .iter()
            .any(|&len| text.len() >= len && text.windows(len).any(|w| self.windows.contains(w)))
    }

    fn search(&self, text: &[u8], depth: usize, budget: &mut usize) -> bool {
        if self.found_as_is(text) {
            return true;
        }
        if depth == 0 {
            return false;
        }
        for decoded in decodings(text) {
            if decoded.len() > *budget {
                return false;
            }
            *budget -= decoded.len();
            if self.search(&decoded, depth - 1, budget) {
                return true;
            }
        }
        false
    }
}

/// The texts a program's encodings of `text` decode to, each differing from it. Runs of hex
/// and base64 are decoded where they stand; the decodings of one kind and alignment are
/// joined by newlines, so a window never spans two runs.
fn decodings(text: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    if text.contains(&b'\\') {
        out.push(unescape(text));
    }
    if text.contains(&b'%') {
        out.push(percent_decode(text));
    }
    let mut hex = [Vec::new(), Vec::new()];
    let mut b64 = [Vec::new(), Vec::new(), Vec::new(), Vec::new()];
    for run in runs(text, is_base64_char) {
        if run.len() < MIN_ENCODED_RUN {
            continue;
        }
        if run.iter().all(u8::is_ascii_hexdigit) {
            for (parity, into) in hex.iter_mut().enumerate() {
                for pair in run[parity..].chunks_exact(2) {
                    into.push(hex_value(pair[0]) << 4 | hex_value(pair[1]));
                }
                into.push(b'\n');
            }
        }
        for (alignment, into) in b64.iter_mut().enumerate() {
            let chars: Vec<u8> = run[alignment..]
                .iter()
                .map(|&c| match c {
                    b'-' => b'+',
                    b'_' => b'/',
                    c => c,
                })
                .collect();
            let whole = chars.len() / 4 * 4;
            if let Ok(bytes) = LENIENT.decode(&chars[..whole]) {
                into.extend_from_slice(&bytes);
                into.push(b'\n');
            }
        }
    }
    out.extend(hex.into_iter().chain(b64).filter(|d| !d.is_empty()));
    out.retain(|d| d.as_slice() != text);
    out
}

/// Standard base64 that takes what a run holds: no padding, any trailing bits.
const LENIENT: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    base64::engine::GeneralPurposeConfig::new()
        .with_decode_allow_trailing_bits(true)
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
);

fn is_base64_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'-' | b'_')
}

/// The maximal runs of characters that satisfy `keep`.
fn runs(text: &[u8], keep: fn(u8) -> bool) -> impl Iterator<Item = &[u8]> {
    text.split(move |&c| !keep(c)).filter(|r| !r.is_empty())
}

fn hex_value(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        b'A'..=b'F' => c - b'A' + 10,
        _ => 0,
    }
}

/// `n` hex digits at the start of `text`, as a number.
fn hex_number(text: &[u8], n: usize) -> Option<u32> {
    let digits = text.get(..n)?;
    digits.iter().try_fold(0u32, |acc, &c| {
        c.is_ascii_hexdigit()
            .then(|| acc << 4 | u32::from(hex_value(c)))
    })
}

/// JSON and YAML double-quoted string escapes (`\n`, `\xXX`, `\uXXXX` with surrogate
/// pairs, `\UXXXXXXXX`); what is no escape stays as it is.
fn unescape(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        if text[i] != b'\\' || i + 1 == text.len() {
            out.push(text[i]);
            i += 1;
            continue;
        }
        let rest = &text[i + 2..];
        let (code, used) = match text[i + 1] {
            b'x' => (hex_number(rest, 2), 2),
            b'u' => match hex_number(rest, 4) {
                Some(high @ 0xD800..=0xDBFF) if rest.get(4..6) == Some(b"\\u".as_slice()) => {
                    match hex_number(&rest[6..], 4) {
                        Some(low @ 0xDC00..=0xDFFF) => {
                            (Some(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)), 10)
                        }
                        _ => (Some(high), 4),
                    }
                }
                code => (code, 4),
            },
            b'U' => (hex_number(rest, 8), 8),
            b'n' => (Some(u32::from(b'\n')), 0),
            b't' => (Some(u32::from(b'\t')), 0),
            b'r' => (Some(u32::from(b'\r')), 0),
            b'0' => (Some(0), 0),
            c => (Some(u32::from(c)), 0),
        };
        match code.and_then(char::from_u32) {
            Some(c) => {
                let mut buf = [0; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                i += 2 + used;
            }
            None => {
                out.push(text[i]);
                i += 1;
            }
        }
    }
    out
}

/// `%XX` as the byte it stands for; a `%` without two hex digits stays.
fn percent_decode(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        match (text[i], hex_number(&text[i + 1..], 2)) {
            (b'%', Some(byte)) => {
                out.push(byte as u8);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
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
                warning: false,
            origin: None,
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
            warning: false,
            origin: None,
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

    const VALUE: &str = "Zq3xV9mPpL2rT8wKc4YhN6bD";

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn a_value_is_found_under_the_encodings_a_program_would_use() {
        let index = LeakIndex::new(&set(&[VALUE]));
        let record = format!(r#"{{"secret":"shop-sessions-app","v":"{VALUE}"}}"#);
        // Base64 of a record, so the value's own base64 is no substring, at every alignment
        // in a run of base64 characters and URL-safe.
        let b64 = B64.encode(&record);
        assert!(!index.found_as_is(b64.as_bytes()));
        for prefix in ["", "a", "ab", "abc"] {
            let text = format!(r#"{{"audit":"{prefix}{b64}"}}"#);
            assert!(index.found_in(text.as_bytes()), "{text}");
        }
        let url_safe = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&record);
        assert!(index.found_in(format!("token={url_safe}&x=1").as_bytes()));
        // Hex, at either parity of its run.
        assert!(index.found_in(hex(VALUE.as_bytes()).as_bytes()));
        assert!(index.found_in(format!("0{}", hex(VALUE.as_bytes())).as_bytes()));
        // Percent-encoding of every byte.
        let percent: String = VALUE.bytes().map(|b| format!("%{b:02X}")).collect();
        assert!(index.found_in(percent.as_bytes()));
        // JSON and YAML string escapes.
        let json: String = VALUE
            .chars()
            .map(|c| format!("\\u{:04x}", c as u32))
            .collect();
        assert!(index.found_in(json.as_bytes()));
        let yaml: String = VALUE.bytes().map(|b| format!("\\x{b:02X}")).collect();
        assert!(index.found_in(yaml.as_bytes()));
        // Layers: base64 of a JSON record that holds the value's hex.
        let inner = format!(r#"{{"v":"{}"}}"#, hex(VALUE.as_bytes()));
        assert!(index.found_in(B64.encode(inner).as_bytes()));
    }

    #[test]
    fn decoding_finds_no_value_that_is_not_there() {
        let index = LeakIndex::new(&set(&[VALUE]));
        let other = "Hw8sKq2LmN4pR7tVx9Bz1Cd3";
        let record = format!(r#"{{"secret":"shop-sessions-app","value":"{other}"}}"#);
        for text in [
            B64.encode(&record),
            hex(other.as_bytes()),
            other.bytes().map(|b| format!("%{b:02X}")).collect(),
            other
                .chars()
                .map(|c| format!("\\u{:04x}", c as u32))
                .collect(),
            // Escapes that decode to nothing valid stay as they are.
            r"\u12 \xZZ %G1 \uD800".to_string(),
        ] {
            assert!(!index.found_in(text.as_bytes()), "{text}");
        }
    }

    #[test]
    fn decoding_stops_at_its_depth() {
        let index = LeakIndex::new(&set(&[VALUE]));
        // Hex of hex of hex is three layers; a fourth is past the bound.
        let mut text = VALUE.as_bytes().to_vec();
        for _ in 0..DECODE_DEPTH {
            text = hex(&text).into_bytes();
        }
        assert!(index.found_in(&text));
        assert!(!index.found_in(hex(&text).as_bytes()));
    }
}
