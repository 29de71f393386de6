//! Scalar resolution as go-yaml v2 does it (the decoder behind kubectl, Helm and Argo CD), and
//! the conversion of keys to strings that sigs.k8s.io/yaml applies on the way to JSON.
//!
//! v2 implements YAML 1.1 scalars: `y`, `yes`, `on` are true; `0777` is octal; `1_000` is 1000;
//! a decimal integer too large for 64 bits becomes a float; timestamps stay strings when decoded
//! into untyped values.

use super::node::Value;
use std::borrow::Cow;

/// The core-schema tag a scalar carries, if any (`!!str`, `!!int`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoreTag {
    Str,
    Int,
    Float,
    Bool,
    Null,
    Timestamp,
    Binary,
    Merge,
    /// A tag go-yaml does not resolve (`!custom`, `!!set`): the text stays a string.
    Other,
}

impl CoreTag {
    pub fn from_suffix(core_suffix: Option<&str>) -> CoreTag {
        match core_suffix {
            Some("str") => CoreTag::Str,
            Some("int") => CoreTag::Int,
            Some("float") => CoreTag::Float,
            Some("bool") => CoreTag::Bool,
            Some("null") => CoreTag::Null,
            Some("timestamp") => CoreTag::Timestamp,
            Some("binary") => CoreTag::Binary,
            Some("merge") => CoreTag::Merge,
            _ => CoreTag::Other,
        }
    }
}

/// Resolves a scalar. `plain` says whether it was written without quotes or block indicator:
/// only untagged plain scalars are resolved implicitly. `Err` carries go-yaml's complaint about a
/// tag the text does not fit (`!!int abc`).
pub fn resolve<'a>(
    text: Cow<'a, str>,
    plain: bool,
    tag: Option<CoreTag>,
) -> Result<Value<'a>, String> {
    match tag {
        None if !plain => Ok(Value::Str(text)),
        None => Ok(implicit(text)),
        Some(CoreTag::Str) | Some(CoreTag::Other) | Some(CoreTag::Merge) => Ok(Value::Str(text)),
        Some(CoreTag::Binary) => decode_base64(&text)
            .map(|bytes| Value::Str(Cow::Owned(go_string(&bytes))))
            .ok_or_else(|| format!("cannot decode !!binary `{text}`: not base64")),
        // go-yaml hands a timestamp to an untyped value as the text it was written as, but
        // only text that parses as one may carry the tag.
        Some(CoreTag::Timestamp) if is_go_timestamp(&text) => Ok(Value::Str(text)),
        Some(CoreTag::Timestamp) => Err(format!(
            "cannot decode {} `{}` as a !!timestamp",
            tag_name_of(&implicit(text.clone())),
            text
        )),
        Some(wanted) => {
            let resolved = implicit(text.clone());
            match (wanted, &resolved) {
                (CoreTag::Int, Value::Int(_))
                | (CoreTag::Float, Value::Float(_))
                | (CoreTag::Bool, Value::Bool(_))
                | (CoreTag::Null, Value::Null) => Ok(resolved),
                (CoreTag::Float, Value::Int(i)) => Ok(Value::Float(*i as f64)),
                _ => Err(format!(
                    "cannot decode {} `{}` as a {}",
                    tag_name_of(&resolved),
                    text,
                    tag_name(wanted)
                )),
            }
        }
    }
}

fn tag_name_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "!!null",
        Value::Bool(_) => "!!bool",
        Value::Int(_) => "!!int",
        Value::Float(_) => "!!float",
        _ => "!!str",
    }
}

fn tag_name(tag: CoreTag) -> &'static str {
    match tag {
        CoreTag::Int => "!!int",
        CoreTag::Float => "!!float",
        CoreTag::Bool => "!!bool",
        CoreTag::Null => "!!null",
        _ => "!!str",
    }
}

/// Implicit resolution of an untagged plain scalar.
fn implicit(text: Cow<'_, str>) -> Value<'_> {
    let s: &str = &text;
    let Some(&first) = s.as_bytes().first() else {
        return Value::Null;
    };
    // go-yaml looks only at scalars whose first byte hints at a non-string.
    match first {
        b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~' => {
            keyword(s).unwrap_or(Value::Str(text))
        }
        b'.' => {
            if let Some(v) = keyword(s) {
                return v;
            }
            match parse_go_float(s) {
                Some(f) => Value::Float(f),
                None => Value::Str(text),
            }
        }
        b'+' | b'-' | b'0'..=b'9' => {
            if let Some(v) = keyword(s) {
                return v;
            }
            number(s).unwrap_or(Value::Str(text))
        }
        _ => Value::Str(text),
    }
}

fn keyword(s: &str) -> Option<Value<'static>> {
    Some(match s {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            Value::Bool(true)
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            Value::Bool(false)
        }
        "~" | "null" | "Null" | "NULL" => Value::Null,
        ".nan" | ".NaN" | ".NAN" => Value::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => Value::Float(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => Value::Float(f64::NEG_INFINITY),
        _ => return None,
    })
}

/// Numbers starting with a sign or digit: integers with Go's base prefixes (after removing
/// underscores), then YAML-style floats, then `0b` binary.
fn number(s: &str) -> Option<Value<'static>> {
    let plain: Cow<str> = if s.contains('_') {
        Cow::Owned(s.replace('_', ""))
    } else {
        Cow::Borrowed(s)
    };
    match parse_go_int(&plain) {
        Ok(i) => return Some(Value::Int(i)),
        Err(IntError::Range) => {
            // ParseUint succeeds for large positive values; a uint64 reaches JSON as a number
            // that Kubernetes' untyped decoding reads as a float.
            if let Some(u) = parse_go_uint(&plain) {
                return Some(Value::Float(u as f64));
            }
        }
        Err(IntError::Syntax) => {}
    }
    if is_yaml_style_float(&plain)
        && let Some(f) = parse_go_float(&plain)
    {
        return Some(Value::Float(f));
    }
    // Go's ParseInt would accept a second sign after the prefix; `0b` digits here must not.
    let binary = |digits: &str, sign: &str| {
        if digits.starts_with(['+', '-']) {
            return None;
        }
        i64::from_str_radix(&format!("{sign}{digits}"), 2).ok()
    };
    if let Some(bits) = plain.strip_prefix("0b") {
        return binary(bits, "").map(Value::Int);
    }
    if let Some(bits) = plain.strip_prefix("-0b") {
        return binary(bits, "-").map(Value::Int);
    }
    None
}

enum IntError {
    Syntax,
    Range,
}

/// Go's `strconv.ParseInt(s, 0, 64)`: optional sign, then `0x`, `0o`, `0b` or a leading `0`
/// (octal) prefix.
fn parse_go_int(s: &str) -> Result<i64, IntError> {
    let (negative, unsigned) = match s.as_bytes().first() {
        Some(b'+') => (false, &s[1..]),
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    let magnitude = parse_go_uint_digits(unsigned)?;
    if negative {
        if magnitude <= (i64::MAX as u64) + 1 {
            Ok((magnitude as i64).wrapping_neg())
        } else {
            Err(IntError::Range)
        }
    } else if magnitude <= i64::MAX as u64 {
        Ok(magnitude as i64)
    } else {
        Err(IntError::Range)
    }
}

/// Go's `strconv.ParseUint(s, 0, 64)` (no sign allowed).
fn parse_go_uint(s: &str) -> Option<u64> {
    parse_go_uint_digits(s).ok()
}

fn parse_go_uint_digits(s: &str) -> Result<u64, IntError> {
    let b = s.as_bytes();
    if b.is_empty() {
        return Err(IntError::Syntax);
    }
    let (radix, digits) = if b[0] == b'0' && b.len() >= 3 && matches!(b[1], b'x' | b'X') {
        (16, &s[2..])
    } else if b[0] == b'0' && b.len() >= 3 && matches!(b[1], b'o' | b'O') {
        (8, &s[2..])
    } else if b[0] == b'0' && b.len() >= 3 && matches!(b[1], b'b' | b'B') {
        (2, &s[2..])
    } else if b[0] == b'0' && b.len() > 1 {
        (8, &s[1..])
    } else {
        (10, s)
    };
    if digits.is_empty() || !digits.bytes().all(|c| (c as char).is_digit(radix)) {
        return Err(IntError::Syntax);
    }
    u64::from_str_radix(digits, radix).map_err(|_| IntError::Range)
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`
fn is_yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Go's `strconv.ParseFloat(s, 64)` for the decimal forms YAML can reach here. Go also accepts
/// "inf"/"nan" spellings and hex floats, which only reach this point after a leading `.`, where
/// none of them can occur; out-of-range values are an error in Go.
fn parse_go_float(s: &str) -> Option<f64> {
    // Go accepts `_` between digits (`.5_0` is 0.5).
    let stripped;
    let s = if s.contains('_') {
        if !go_underscores_ok(s) {
            return None;
        }
        stripped = s.replace('_', "");
        stripped.as_str()
    } else {
        s
    };
    if !s
        .bytes()
        .all(|c| c.is_ascii_digit() || b".eE+-".contains(&c))
    {
        return None;
    }
    let f: f64 = s.parse().ok()?;
    f.is_finite().then_some(f)
}

/// Go's rule for `_` in a number: each one between two digits.
fn go_underscores_ok(s: &str) -> bool {
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    let mut saw = b'^';
    for c in s.bytes() {
        if c.is_ascii_digit() {
            saw = b'0';
        } else if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
        } else {
            if saw == b'_' {
                return false;
            }
            saw = b'!';
        }
    }
    saw != b'_'
}

/// Go's `base64.StdEncoding.DecodeString`: line breaks are skipped, anything else outside the
/// alphabet is an error, and the padding must be there.
fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let digits: Vec<u8> = text
        .bytes()
        .filter(|b| !matches!(b, b'\r' | b'\n'))
        .collect();
    if !digits.len().is_multiple_of(4) {
        return None;
    }
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let mut out = Vec::with_capacity(digits.len() / 4 * 3);
    let groups = digits.len() / 4;
    for (n, group) in digits.chunks(4).enumerate() {
        let padding = match group {
            [_, _, b'=', b'='] => 2,
            [_, _, _, b'='] => 1,
            _ => 0,
        };
        if padding > 0 && n + 1 != groups {
            return None;
        }
        let mut acc = 0u32;
        for &c in &group[..4 - padding] {
            acc = (acc << 6) | u32::from(value(c)?);
        }
        acc <<= 6 * padding as u32;
        let bytes = acc.to_be_bytes();
        out.extend_from_slice(&bytes[1..4 - padding]);
    }
    Some(out)
}

/// Bytes as encoding/json writes a Go string: each byte that is not part of valid UTF-8
/// becomes U+FFFD.
fn go_string(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for _ in chunk.invalid() {
            out.push(char::REPLACEMENT_CHARACTER);
        }
    }
    out
}

/// Whether go-yaml parses `s` as a timestamp: four digits and `-`, then one of the layouts
/// `2006-1-2T15:4:5.999999999Z07:00` (`T` or `t`), `2006-1-2 15:4:5.999999999` and
/// `2006-1-2`, read as Go's time.Parse reads them (one or two digits for the month, day, hour,
/// minute and second, each in range; the day within its month).
fn is_go_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let year: u32 = s[..4].parse().unwrap_or(0);
    let mut i = 5;
    // One or two digits, as Go's getnum reads them.
    let num = |i: &mut usize| -> Option<u32> {
        let first = *b.get(*i).filter(|c| c.is_ascii_digit())?;
        *i += 1;
        let mut n = u32::from(first - b'0');
        if let Some(&c) = b.get(*i).filter(|c| c.is_ascii_digit()) {
            n = n * 10 + u32::from(c - b'0');
            *i += 1;
        }
        Some(n)
    };
    let expect = |i: &mut usize, c: u8| -> Option<()> { (b.get(*i) == Some(&c)).then(|| *i += 1) };
    let date = (|| {
        let month = num(&mut i).filter(|m| (1..=12).contains(m))?;
        expect(&mut i, b'-')?;
        let day = num(&mut i)?;
        let leap =
            year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
        let days = [
            31,
            if leap { 29 } else { 28 },
            31,
            30,
            31,
            30,
            31,
            31,
            30,
            31,
            30,
            31,
        ];
        (1..=days[month as usize - 1]).contains(&day).then_some(())
    })();
    if date.is_none() {
        return false;
    }
    if i == b.len() {
        return true;
    }
    let separator = b[i];
    if !matches!(separator, b'T' | b't' | b' ') {
        return false;
    }
    i += 1;
    let time = (|| {
        num(&mut i).filter(|h| *h < 24)?;
        expect(&mut i, b':')?;
        num(&mut i).filter(|m| *m < 60)?;
        expect(&mut i, b':')?;
        num(&mut i).filter(|s| *s < 60)?;
        // An optional fraction: `.` or `,` and at least one digit.
        if matches!(b.get(i), Some(b'.' | b',')) && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
            i += 1;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
        }
        Some(())
    })();
    if time.is_none() {
        return false;
    }
    if separator == b' ' {
        return i == b.len();
    }
    // The zone is required: `Z`, or a sign and hh:mm.
    match b.get(i) {
        Some(b'Z') => i + 1 == b.len(),
        Some(b'+' | b'-') => {
            let zone = &b[i + 1..];
            zone.len() == 5
                && zone[2] == b':'
                && zone[..2].iter().chain(&zone[3..]).all(u8::is_ascii_digit)
                && (zone[0] - b'0') * 10 + (zone[1] - b'0') <= 24
                && (zone[3] - b'0') * 10 + (zone[4] - b'0') <= 60
        }
        _ => false,
    }
}

/// Whether go-yaml resolves the scalar to a uint64 (an integer beyond int64 that fits 64
/// bits unsigned), which sigs.k8s.io/yaml cannot make a JSON key of.
pub fn is_uint64(text: &str, plain: bool, tag: Option<CoreTag>) -> bool {
    match tag {
        None if plain => {}
        Some(CoreTag::Int) => {}
        _ => return false,
    }
    if keyword(text).is_some()
        || !text.starts_with(['+', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9'])
    {
        return false;
    }
    // Go's ParseUint takes no sign; what it reads beyond int64 ParseInt refuses as out of range.
    // Its `0b` prefix covers go-yaml's own binary form too.
    !text.starts_with(['+', '-'])
        && parse_go_uint_digits(&text.replace('_', "")).is_ok_and(|n| n > i64::MAX as u64)
}

/// The JSON key sigs.k8s.io/yaml makes of a resolved key; `None` for keys it rejects (null).
pub fn key_string<'a>(value: &Value<'a>) -> Option<Cow<'a, str>> {
    Some(match value {
        Value::Str(s) => s.clone(),
        Value::Int(i) => Cow::Owned(i.to_string()),
        Value::Bool(b) => Cow::Borrowed(if *b { "true" } else { "false" }),
        Value::Float(f) => Cow::Owned(go_format_float32(*f)),
        Value::Null | Value::Seq(_) | Value::Map(_) => return None,
    })
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 32)`, with YAML's spellings of the special values.
fn go_format_float32(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    let f = f as f32;
    // Rust's `{:e}` gives the shortest digits that round-trip, as Go's -1 precision does.
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    // With the shortest precision, Go's %g uses the exponent form when exp < -4 or exp >= 6.
    if (-4..6).contains(&exp) {
        return format!("{f}");
    }
    let (sign, digits) = mantissa
        .strip_prefix('-')
        .map_or(("", mantissa), |d| ("-", d));
    format!(
        "{sign}{digits}e{}{:02}",
        if exp < 0 { '-' } else { '+' },
        exp.abs()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(s: &str) -> Value<'_> {
        resolve(Cow::Borrowed(s), true, None).unwrap()
    }

    #[test]
    fn yaml_1_1_booleans_and_nulls() {
        for t in [
            "y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "true", "True", "TRUE",
        ] {
            assert_eq!(plain(t), Value::Bool(true), "{t}");
        }
        for f in ["n", "N", "no", "NO", "off", "Off", "false", "FALSE"] {
            assert_eq!(plain(f), Value::Bool(false), "{f}");
        }
        for n in ["", "~", "null", "Null", "NULL"] {
            assert_eq!(plain(n), Value::Null, "{n:?}");
        }
        assert_eq!(plain("yEs"), Value::Str("yEs".into()));
        assert_eq!(plain("nULL"), Value::Str("nULL".into()));
    }

    #[test]
    fn integers_with_go_prefixes() {
        assert_eq!(plain("0777"), Value::Int(511));
        assert_eq!(plain("0o17"), Value::Int(15));
        assert_eq!(plain("0x1F"), Value::Int(31));
        assert_eq!(plain("-0x10"), Value::Int(-16));
        assert_eq!(plain("0b101"), Value::Int(5));
        assert_eq!(plain("-0b11"), Value::Int(-3));
        assert_eq!(plain("1_000"), Value::Int(1000));
        assert_eq!(plain("+7"), Value::Int(7));
        assert_eq!(plain("-9223372036854775808"), Value::Int(i64::MIN));
    }

    #[test]
    fn floats_and_fallbacks() {
        assert_eq!(
            plain("08"),
            Value::Float(8.0),
            "invalid octal falls back to a float"
        );
        assert_eq!(plain("1e3"), Value::Float(1000.0));
        assert_eq!(plain(".5"), Value::Float(0.5));
        assert_eq!(plain("1."), Value::Float(1.0));
        assert_eq!(
            plain("18446744073709551615"),
            Value::Float(18446744073709551615.0)
        );
        assert_eq!(plain("99999999999999999999999"), Value::Float(1e23));
        assert!(matches!(plain(".nan"), Value::Float(f) if f.is_nan()));
        assert_eq!(plain("-.inf"), Value::Float(f64::NEG_INFINITY));
        for s in [
            "1:20",
            "2001-12-14",
            "0x",
            "1.2.3",
            "-",
            "+",
            "1e",
            "v1",
            "._5",
            ".5_",
            "12abc",
        ] {
            assert_eq!(plain(s), Value::Str(s.into()), "{s}");
        }
        // Go's float syntax takes `_` between digits.
        assert_eq!(plain(".5_0"), Value::Float(0.5));
    }

    #[test]
    fn tags_go_yaml_checks() {
        fn tagged(s: &str, tag: CoreTag) -> Result<Value<'_>, String> {
            resolve(Cow::Borrowed(s), true, Some(tag))
        }
        for ok in [
            "2001-12-14",
            "2001-1-2",
            "2000-02-29",
            "2001-12-14t21:59:43.10-05:00",
            "2001-12-14T21:59:43Z",
            "2001-12-14 21:59:43.10",
            "2001-12-14 1:2:3",
        ] {
            assert_eq!(
                tagged(ok, CoreTag::Timestamp),
                Ok(Value::Str(ok.into())),
                "{ok}"
            );
        }
        for bad in [
            "2001-02-29",
            "2001-13-01",
            "2001-12-14 21:59:43.10 -5",
            "2001-12-14T21:59:43",
            "2001-12-14T24:00:00Z",
            "hello",
            "12",
            "01-12-14",
        ] {
            assert!(tagged(bad, CoreTag::Timestamp).is_err(), "{bad}");
        }
        assert_eq!(
            tagged("aGVs\nbG8=\n", CoreTag::Binary),
            Ok(Value::Str("hello".into()))
        );
        for bad in ["aGVs bG8=", "aGVsbG8", "a=Vs", "aGk=aGk="] {
            assert!(tagged(bad, CoreTag::Binary).is_err(), "{bad}");
        }
        // Each byte that is not UTF-8 is one U+FFFD, as encoding/json writes it.
        assert_eq!(
            tagged("4oI=", CoreTag::Binary),
            Ok(Value::Str("\u{fffd}\u{fffd}".into()))
        );
    }

    #[test]
    fn integers_beyond_int64_are_uint64_keys() {
        for text in [
            "18446744073709551615",
            "9223372036854775808",
            "0xFFFFFFFFFFFFFFFF",
        ] {
            assert!(is_uint64(text, true, None), "{text}");
            assert!(!is_uint64(text, false, None), "{text} quoted");
        }
        assert!(is_uint64("18446744073709551615", false, Some(CoreTag::Int)));
        for text in [
            "9223372036854775807",
            "-9223372036854775809",
            "18446744073709551616",
            "x",
        ] {
            assert!(!is_uint64(text, true, None), "{text}");
        }
    }

    #[test]
    fn quoted_and_tagged() {
        assert_eq!(
            resolve("yes".into(), false, None).unwrap(),
            Value::Str("yes".into())
        );
        assert_eq!(
            resolve("1".into(), true, Some(CoreTag::Str)).unwrap(),
            Value::Str("1".into())
        );
        assert_eq!(
            resolve("1".into(), false, Some(CoreTag::Int)).unwrap(),
            Value::Int(1)
        );
        assert_eq!(
            resolve("1".into(), true, Some(CoreTag::Float)).unwrap(),
            Value::Float(1.0)
        );
        assert!(resolve("abc".into(), true, Some(CoreTag::Int)).is_err());
        assert_eq!(
            resolve("aGk=".into(), false, Some(CoreTag::Binary)).unwrap(),
            Value::Str("hi".into())
        );
    }

    #[test]
    fn keys_become_json_strings() {
        assert_eq!(key_string(&Value::Int(1)).unwrap(), "1");
        assert_eq!(key_string(&Value::Bool(true)).unwrap(), "true");
        assert_eq!(key_string(&Value::Float(1.5)).unwrap(), "1.5");
        assert_eq!(key_string(&Value::Float(1e7)).unwrap(), "1e+07");
        assert_eq!(key_string(&Value::Float(0.0001)).unwrap(), "0.0001");
        assert_eq!(key_string(&Value::Float(f64::INFINITY)).unwrap(), ".inf");
        assert!(key_string(&Value::Null).is_none());
    }
}
