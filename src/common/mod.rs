//! Helpers with users in more than one stage; below every stage, importing none of them.

pub mod sha256;
pub mod spread;
pub mod wordhash;

/// A map keyed by the input's names, filled on every run (bundle links, the one-writer checks'
/// indexes): foldhash, a fraction of SipHash's cost on short keys, with a seed drawn at random
/// per process, so a change cannot choose names that collide (credlint exits before anyone could
/// learn the seed from its timing). Not for anything that needs a stable or secret hash.
pub type Map<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
/// [`Map`]'s set.
pub type Set<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

/// `bytes` in lower-case hexadecimal, two digits a byte (a cache entry's name, a Job-name
/// hash): by table, since a warm run names thousands of entries.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    out
}

/// A value as a message quotes it: its first line, at most 40 characters, `…` where more was
/// left out.
pub fn shorten(s: &str) -> String {
    let line = s.lines().next().unwrap_or("");
    let mut out: String = line.chars().take(40).collect();
    if out != s.trim_end_matches('\n') {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn hex_is_two_lower_case_digits_a_byte() {
        assert_eq!(super::hex(&[]), "");
        assert_eq!(super::hex(&[0, 9, 10, 0xab, 0xff]), "00090aabff");
        let all: Vec<u8> = (0..=255).collect();
        let expected: String = all.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(super::hex(&all), expected);
    }

    #[test]
    fn shorten_keeps_the_first_line_and_forty_characters() {
        assert_eq!(super::shorten("short"), "short");
        assert_eq!(super::shorten("a\n"), "a");
        assert_eq!(super::shorten("a\nb"), "a…");
        let long = "é".repeat(41);
        assert_eq!(super::shorten(&long), format!("{}…", "é".repeat(40)));
    }
}
