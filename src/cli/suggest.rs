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

/// What to say after "unknown rule `id`": the catalog's id one typo away, else the ids that
/// contain the word (`forbidden-verb`: `role-forbidden-verb`), else where the ids are listed.
/// One hint for `--select`/`--ignore`, credlint.toml, annotations and `explain`.
pub fn unknown_rule_hint(id: &str, catalog: &crate::lint::catalog::Catalog) -> String {
    let ids = || catalog.rules.iter().map(|r| r.id.as_str());
    if let Some(close) = closest(id, ids()) {
        return format!("did you mean `{close}`?");
    }
    let containing: Vec<String> = if id.chars().count() >= 3 {
        ids()
            .filter(|r| r.contains(id))
            .take(4)
            .map(|r| format!("`{r}`"))
            .collect()
    } else {
        Vec::new()
    };
    match containing.as_slice() {
        [] => "see `credlint rules`".to_string(),
        [one] => format!("did you mean {one}?"),
        [init @ .., last] => format!("did you mean {} or {last}?", init.join(", ")),
    }
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

    #[test]
    fn an_unknown_rule_is_told_the_typo_then_the_ids_that_contain_it() {
        let catalog = crate::lint::catalog::Catalog::get();
        assert_eq!(
            unknown_rule_hint("job-tll", catalog),
            "did you mean `job-ttl`?"
        );
        assert_eq!(
            unknown_rule_hint("forbidden-verb", catalog),
            "did you mean `role-forbidden-verb`?"
        );
        let several = unknown_rule_hint("pragma", catalog);
        assert!(several.starts_with("did you mean `pragma-"), "{several}");
        assert!(several.contains(" or `"), "{several}");
        assert_eq!(
            unknown_rule_hint("zzzz-nothing", catalog),
            "see `credlint rules`"
        );
    }
}
