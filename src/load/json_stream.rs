//! Concatenated JSON objects (`{...}{...}`, or one object per line), as kubectl reads them: a
//! stream whose first character is `{` is decoded as JSON values back to back, and only when
//! fewer than two decode does kubectl read it as YAML instead. Each object becomes a document of
//! its own, so one object's findings never hide another's.

use std::ops::Range;

/// A stream of two or more JSON objects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonStream {
    /// Each object, in order.
    pub objects: Vec<Range<usize>>,
    /// Where something other than an object follows them: kubectl stops there with an error.
    pub trailing: Option<usize>,
}

/// The objects of `text`, when it is a stream of at least two JSON objects; `None` otherwise
/// (the text is read as YAML, as kubectl reads it).
pub fn objects(text: &str) -> Option<JsonStream> {
    let bytes = text.as_bytes();
    let start = if bytes.starts_with("\u{feff}".as_bytes()) {
        3
    } else {
        0
    };
    let mut at = skip_space(bytes, start);
    let from = at;
    let mut objects = Vec::new();
    // serde_json says where each value ends and whether it is JSON at all: two YAML flow
    // mappings (`{a: 1}{b: 2}`) are no JSON stream, though their brackets match.
    let mut values =
        serde_json::Deserializer::from_str(&text[from..]).into_iter::<serde::de::IgnoredAny>();
    while bytes.get(at) == Some(&b'{') {
        let Some(Ok(_)) = values.next() else {
            break;
        };
        let end = from + values.byte_offset();
        objects.push(at..end);
        at = skip_space(bytes, end);
    }
    if objects.len() < 2 {
        return None;
    }
    let trailing = (at < bytes.len()).then_some(at);
    if let Some(from) = trailing {
        // An object cut short is still a document: its parse error is reported where it stops.
        if bytes[from] == b'{' {
            objects.push(from..bytes.len());
            return Some(JsonStream {
                objects,
                trailing: None,
            });
        }
    }
    Some(JsonStream { objects, trailing })
}

fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).is_some_and(|b| b" \t\r\n".contains(b)) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_back_to_back_or_one_per_line_are_split() {
        let text = "{\"a\": \"}{\"}{\"b\": [1, {\"c\": 2}]}\n\n{\"d\": \"\\\"}\"}\n";
        let stream = objects(text).unwrap();
        let parts: Vec<&str> = stream.objects.iter().map(|r| &text[r.clone()]).collect();
        assert_eq!(
            parts,
            [
                "{\"a\": \"}{\"}",
                "{\"b\": [1, {\"c\": 2}]}",
                "{\"d\": \"\\\"}\"}"
            ]
        );
        assert_eq!(stream.trailing, None);
    }

    #[test]
    fn one_object_or_yaml_is_left_to_the_yaml_reader() {
        assert_eq!(objects("{\"a\": 1}\n"), None);
        assert_eq!(objects("{\"a\": 1}\n---\n{\"b\": 2}\n"), None);
        assert_eq!(objects("kind: Role\n"), None);
        assert_eq!(objects("[{\"a\": 1}, {\"b\": 2}]"), None);
        // YAML flow mappings back to back match as brackets, but are no JSON.
        assert_eq!(objects("{a: 1}\n{b: 2}\n"), None);
        assert_eq!(objects("{\"a\": 1}\n{b: 2}\n"), None);
        assert_eq!(objects(""), None);
    }

    #[test]
    fn what_follows_the_objects_is_located() {
        let text = "\u{feff} {\"a\": 1}{\"b\": 2} tail";
        let stream = objects(text).unwrap();
        assert_eq!(stream.objects.len(), 2);
        assert_eq!(stream.trailing, Some(text.find("tail").unwrap()));
        // An object cut short is a document of its own.
        let text = "{\"a\": 1}{\"b\": 2}{\"c\": ";
        let stream = objects(text).unwrap();
        assert_eq!(stream.objects.last(), Some(&(16..text.len())));
        assert_eq!(stream.trailing, None);
    }
}
