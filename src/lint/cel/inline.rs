//! Writing a rule's variables into its expressions: `variables.x` becomes `(<x's text>)`.
//! String literals are left alone.

/// Replaces `variables.NAME` outside string literals by the text of `NAME` from `known`
/// (already expanded), in parentheses. Unknown names stay as written, so using them fails at
/// evaluation, as an undefined variable does in Kubernetes.
pub fn variables(text: &str, known: &[(String, String)]) -> String {
    const PREFIX: &str = "variables.";
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'\'' || c == b'"' {
            let end = string_end(bytes, i);
            out.push_str(&text[i..end]);
            i = end;
            continue;
        }
        let at_word_start = i == 0 || !is_ident(bytes[i - 1]) && bytes[i - 1] != b'.';
        if at_word_start && text[i..].starts_with(PREFIX) {
            let name_start = i + PREFIX.len();
            let name_end = name_start
                + bytes[name_start..]
                    .iter()
                    .take_while(|&&b| is_ident(b))
                    .count();
            let name = &text[name_start..name_end];
            if let Some((_, expr)) = known.iter().rev().find(|(n, _)| n == name) {
                out.push('(');
                out.push_str(expr);
                out.push(')');
                i = name_end;
                continue;
            }
        }
        let ch = text[i..].chars().next().unwrap_or(' ');
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The end (exclusive) of the string literal that starts at `start` (quote, or triple quote).
fn string_end(bytes: &[u8], start: usize) -> usize {
    let quote = bytes[start];
    let triple = bytes.get(start..start + 3) == Some(&[quote, quote, quote][..]);
    let mut i = start + if triple { 3 } else { 1 };
    while i < bytes.len() {
        if bytes[i] == b'\\' {
            i += 2;
            continue;
        }
        if triple {
            if bytes.get(i..i + 3) == Some(&[quote, quote, quote][..]) {
                return i + 3;
            }
        } else if bytes[i] == quote {
            return i + 1;
        }
        i += 1;
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn replaces_references_outside_strings() {
        let vars = known(&[("pod", "object.spec"), ("all", "(object.spec).containers")]);
        assert_eq!(
            variables(
                "variables.pod.x && 'variables.pod' == \"variables.all\"",
                &vars
            ),
            "(object.spec).x && 'variables.pod' == \"variables.all\""
        );
        assert_eq!(
            variables("size(variables.all) > 0", &vars),
            "size(((object.spec).containers)) > 0"
        );
        assert_eq!(variables("my_variables.pod", &vars), "my_variables.pod");
        assert_eq!(variables("variables.missing", &vars), "variables.missing");
        assert_eq!(
            variables("'it\\'s variables.pod'", &vars),
            "'it\\'s variables.pod'"
        );
    }
}
