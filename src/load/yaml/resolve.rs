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
            .map(|bytes| Value::Str(Cow::Owned(String::from_utf8_lossy(&bytes).into_owned())))
            .ok_or_else(|| format!("cannot decode !!binary `{text}`: not base64")),
        Some(CoreTag::Timestamp) => Ok(Value::Str(text)),
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
    if !s
        .bytes()
        .all(|c| c.is_ascii_digit() || b".eE+-".contains(&c))
    {
        return None;
    }
    let f: f64 = s.parse().ok()?;
    f.is_finite().then_some(f)
}

fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    let mut padding = 0;
    for c in text.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => {
                padding += 1;
                continue;
            }
            b' ' | b'\n' | b'\r' | b'\t' => continue,
            _ => return None,
        };
        if padding > 0 {
            return None;
        }
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
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
            ".5_0",
            "12abc",
        ] {
            assert_eq!(plain(s), Value::Str(s.into()), "{s}");
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
