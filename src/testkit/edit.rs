//! Edits of a manifest's text that keep most of its structure, for the fuzz targets: replace
//! a value, drop, repeat, swap or re-indent a line, change an annotation, swap a verb.

use super::Choices;

const VALUES: &[&str] = &[
    "PreSync",
    "Sync",
    "0",
    "1",
    "-1",
    "+1",
    "one",
    "x",
    "true",
    "false",
    "null",
    "~",
    "[]",
    "{}",
    "'*'",
    "\"\"",
    "list",
    "watch",
    "update",
    "*",
    "BeforeHookCreation",
    "HookSucceeded",
    "0777",
    "yes",
    "on",
    "y",
    "1e3",
    "&a x",
    "*a",
    "|",
    "|-",
    ">",
    "!!int 1",
    "'1'",
    "\"PreSync\"",
    "[create]",
    "{a: 1}",
    "RuntimeDefault",
    "ALL",
    "registry.example/x:1",
    "a-credentials",
    "a-credentials-0123abcd",
];

const VERBS: &[&str] = &[
    "create", "get", "patch", "delete", "list", "watch", "update", "*", "escalate",
];

/// Applies `count` random edits to `text`, line by line (line ends kept as they are).
pub fn edit(c: &mut dyn Choices, text: &str, count: usize) -> String {
    let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_string).collect();
    for _ in 0..count {
        if lines.is_empty() {
            lines.push(format!("{}\n", c.pick(VALUES)));
            continue;
        }
        let i = c.below(lines.len());
        match c.below(9) {
            0 => {
                if let Some(at) = lines[i].find(": ") {
                    let end = if lines[i].ends_with("\r\n") {
                        lines[i].len() - 2
                    } else if lines[i].ends_with('\n') {
                        lines[i].len() - 1
                    } else {
                        lines[i].len()
                    };
                    let value = *c.pick(VALUES);
                    lines[i].replace_range(at + 2..end.max(at + 2), value);
                }
            }
            1 => {
                lines.remove(i);
            }
            2 => {
                let copy = lines[i].clone();
                lines.insert(i, copy);
            }
            3 => {
                let j = c.below(lines.len());
                lines.swap(i, j);
            }
            4 => lines[i].insert_str(0, "  "),
            5 => {
                let trimmed = lines[i].strip_prefix("  ").map(str::to_string);
                if let Some(t) = trimmed {
                    lines[i] = t;
                }
            }
            6 => {
                // An annotation value.
                let hooks: Vec<usize> = (0..lines.len())
                    .filter(|&k| lines[k].contains("argoproj.io/") || lines[k].contains("helm.sh/"))
                    .collect();
                if !hooks.is_empty() {
                    let k = *c.pick(&hooks);
                    if let Some(at) = lines[k].rfind(": ") {
                        let value = *c.pick(VALUES);
                        lines[k] = format!("{}: {value}\n", &lines[k][..at]);
                    }
                }
            }
            7 => {
                // A verb.
                let from = *c.pick(VERBS);
                let to = *c.pick(VERBS);
                let with: Vec<usize> = (0..lines.len())
                    .filter(|&k| lines[k].contains(from))
                    .collect();
                if !with.is_empty() {
                    let k = *c.pick(&with);
                    lines[k] = lines[k].replacen(from, to, 1);
                }
            }
            _ => {
                let j = c.below(lines.len());
                let copy = lines[j].clone();
                lines.insert(i, copy);
            }
        }
    }
    lines.concat()
}
