//! Helpers with users in more than one stage; below every stage, importing none of them.

pub mod sha256;
pub mod wordhash;

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
    fn shorten_keeps_the_first_line_and_forty_characters() {
        assert_eq!(super::shorten("short"), "short");
        assert_eq!(super::shorten("a\n"), "a");
        assert_eq!(super::shorten("a\nb"), "a…");
        let long = "é".repeat(41);
        assert_eq!(super::shorten(&long), format!("{}…", "é".repeat(40)));
    }
}
