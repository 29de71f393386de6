//! The top-level standard-library modules of every Python a credentials image may carry.
//! The lists are data (`data/python-stdlib/`, see its README for how they were made).

/// How many versions the lists cover.
pub(super) const VERSION_COUNT: usize = 6;

/// Each version with its list, oldest first.
pub(super) const LISTS: [(&str, &str); VERSION_COUNT] = [
    ("3.9", include_str!("../../../data/python-stdlib/3.9.txt")),
    ("3.10", include_str!("../../../data/python-stdlib/3.10.txt")),
    ("3.11", include_str!("../../../data/python-stdlib/3.11.txt")),
    ("3.12", include_str!("../../../data/python-stdlib/3.12.txt")),
    ("3.13", include_str!("../../../data/python-stdlib/3.13.txt")),
    ("3.14", include_str!("../../../data/python-stdlib/3.14.txt")),
];

/// The versions, oldest first, whose standard library lacks top-level module `name`.
pub(super) fn missing_from(name: &str) -> Vec<&'static str> {
    LISTS
        .iter()
        .filter(|(_, list)| !holds(list, name))
        .map(|(version, _)| *version)
        .collect()
}

/// Whether `list` (one name a line) has `name` as a whole line. Searched in the text itself:
/// a script checks a few names, too few to pay for building a set of each list per run.
pub(super) fn holds(list: &str, name: &str) -> bool {
    if name.is_empty() || name.contains('\n') {
        return false;
    }
    let bytes = list.as_bytes();
    memchr::memmem::find_iter(bytes, name.as_bytes()).any(|at| {
        let starts_line = at == 0 || bytes[at - 1] == b'\n';
        let ends_line = bytes.get(at + name.len()).is_none_or(|&b| b == b'\n');
        starts_line && ends_line
    })
}

/// `3.9-3.14`, `3.13-3.14`, `3.9`, or `3.9, 3.11` for versions that do not follow each other.
pub(super) fn describe(versions: &[&str]) -> String {
    let order: Vec<&str> = LISTS.iter().map(|(v, _)| *v).collect();
    let index = |v: &str| order.iter().position(|o| *o == v).unwrap_or(usize::MAX);
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for v in versions {
        let i = index(v);
        match runs.last_mut() {
            Some((_, end)) if *end + 1 == i => *end = i,
            _ => runs.push((i, i)),
        }
    }
    let name = |i: usize| order.get(i).copied().unwrap_or("?");
    runs.iter()
        .map(|(a, b)| {
            if a == b {
                name(*a).to_string()
            } else {
                format!("{}-{}", name(*a), name(*b))
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}
