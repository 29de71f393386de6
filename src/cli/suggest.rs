//! "Did you mean ...?": the closest known word to a misspelt one (a rule id, a config key).

/// The candidate closest to `word` by edit distance, when it is close enough to be a typo
/// (at most a third of the word's length, and at least one edit allowed).
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    if word.is_empty() {
        return None;
    }
    let limit = (word.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .map(|c| (distance(word, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, c)| (*d, *c))
        .map(|(_, c)| c)
}

/// Levenshtein distance over characters.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        current[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = previous[j] + usize::from(ca != *cb);
            current[j + 1] = substitute.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typo_finds_its_word_and_a_stranger_finds_nothing() {
        let keys = ["select", "ignore", "severity"];
        assert_eq!(closest("slect", keys), Some("select"));
        assert_eq!(closest("ignroe", keys), Some("ignore"));
        assert_eq!(closest("colour", keys), None);
        assert_eq!(
            closest("job-tt", ["job-ttl", "job-seccomp"]),
            Some("job-ttl")
        );
        assert_eq!(closest("", ["a"]), None);
        assert_eq!(distance("kitten", "sitting"), 3);
    }
}
