//! Tests of the create.py checks. Positions are (line, byte column), 0-based.

use std::time::{Duration, Instant};

use super::*;

const CLEAN: &str = include_str!("testdata/clean_create.py");

type Pos = (usize, usize);

/// Every finding as (rule, start, end).
fn spans(script: &str) -> Vec<(&'static str, Pos, Pos)> {
    check_script(script)
        .into_iter()
        .map(|f| {
            (
                f.rule,
                (f.start_line, f.start_byte_col),
                (f.end_line, f.end_byte_col),
            )
        })
        .collect()
}

/// The single finding of `script`; fails when there is not exactly one.
fn only(script: &str) -> ScriptFinding {
    let mut all = check_script(script);
    assert_eq!(
        all.len(),
        1,
        "expected one finding for {script:?}, got {all:#?}"
    );
    all.remove(0)
}

fn assert_only(script: &str, rule: &str, start: Pos, end: Pos, says: &str) {
    let f = only(script);
    assert_eq!(
        (
            f.rule,
            (f.start_line, f.start_byte_col),
            (f.end_line, f.end_byte_col)
        ),
        (rule, start, end),
        "{script:?}: {f:?}"
    );
    assert!(
        f.message.contains(says),
        "message of {script:?} should contain {says:?}: {}",
        f.message
    );
}

fn assert_clean(script: &str) {
    let found = check_script(script);
    assert!(found.is_empty(), "{script:?} should be clean: {found:#?}");
}

// ---------------------------------------------------------------- the clean program

#[test]
fn the_realistic_clean_program_has_no_finding() {
    assert!(CLEAN.lines().count() >= 150);
    assert_clean(CLEAN);
}

#[test]
fn the_clean_program_still_finds_one_injected_problem_of_each_rule() {
    // Guards the test above: the same program with one bad line per rule is not clean.
    let bad = CLEAN
        .replace("import base64\n", "import requests\n")
        .replace(
            "api(\"POST\", f\"/api/v1/namespaces/{NAMESPACE}/secrets\", body)",
            "api(\"PUT\", f\"/api/v1/namespaces/{NAMESPACE}/secrets\", body)",
        )
        .replace("    return 0\n", "    print \"done\"\n    return 0\n");
    let rules: Vec<&str> = check_script(&bad).iter().map(|f| f.rule).collect();
    assert_eq!(rules, [RULE_IMPORT, RULE_METHOD, RULE_SYNTAX]);
}

// ---------------------------------------------------------------- runtime-weak-random

fn random_findings(script: &str) -> Vec<(usize, String)> {
    check_script(script)
        .into_iter()
        .filter(|f| f.rule == RULE_RANDOM)
        .map(|f| (f.start_line, f.message))
        .collect()
}

#[test]
fn predictable_sources_are_weak_random() {
    let script = "import random as r\nimport uuid, hashlib, time, os\nfrom random import choice\n\
                  a = r.choice('ab')\nb = choice('ab')\nc = uuid.uuid1().hex\nd = uuid.uuid5(uuid.NAMESPACE_DNS, 'x')\n\
                  e = hashlib.sha256(b'fixed').hexdigest()\nf = hashlib.sha256(str(time.time()).encode()).hexdigest()\n\
                  g = hashlib.new('md5', 'k'.encode())\nr.seed(os.getpid())\n";
    let lines: Vec<usize> = random_findings(script).iter().map(|(l, _)| *l).collect();
    assert_eq!(
        lines,
        [3, 4, 5, 6, 7, 8, 9, 10],
        "{:?}",
        random_findings(script)
    );
    let messages = random_findings(script);
    assert!(messages[0].1.contains("Mersenne Twister"));
    assert!(messages[2].1.contains("uuid1"));
    assert!(messages[4].1.contains("constant"));
    assert!(messages[5].1.contains("time.time()"));
}

#[test]
fn strong_sources_and_jitter_are_not_weak_random() {
    let script = "import random, secrets, os, uuid, hashlib\n\
                  a = secrets.token_urlsafe(32)\nb = os.urandom(16)\nc = uuid.uuid4().hex\n\
                  d = random.SystemRandom().choice('ab')\ntime_to_wait = random.uniform(0.1, 0.5)\n\
                  e = hashlib.sha256(b).hexdigest()\nf = choice('x')\n";
    assert_eq!(random_findings(script), vec![]);
    // The reference program is clean.
    assert_eq!(random_findings(CLEAN), vec![]);
}

// ---------------------------------------------------------------- runtime-syntax

#[test]
fn python2_print_is_a_syntax_error() {
    assert_only(
        "import sys\nprint \"hello\"\n",
        RULE_SYNTAX,
        (1, 0),
        (1, 13),
        "`print` without parentheses",
    );
    assert_only(
        "import sys\nprint >>sys.stderr, \"x\"\n",
        RULE_SYNTAX,
        (1, 0),
        (1, 23),
        "Python 2",
    );
}

#[test]
fn python3_print_forms_are_fine() {
    assert_clean("import sys\nprint(\"x\")\nprint(1, 2, file=sys.stderr)\nprint\nprint ()\n");
}

#[test]
fn except_with_a_comma_is_a_syntax_error() {
    assert_only(
        "try:\n    pass\nexcept ValueError, e:\n    pass\n",
        RULE_SYNTAX,
        (2, 7),
        (2, 20),
        "`except ValueError, e:` is Python 2 syntax",
    );
    assert_clean("try:\n    pass\nexcept (ValueError, KeyError) as e:\n    pass\n");
}

#[test]
fn an_unclosed_bracket_is_reported_at_the_bracket() {
    assert_only(
        "x = (1,\ny = 2\n",
        RULE_SYNTAX,
        (0, 4),
        (0, 5),
        "`(` is never closed",
    );
    assert_only(
        "def main():\n    r = call(a, b\n    return r\n\nmain()\n",
        RULE_SYNTAX,
        (1, 12),
        (1, 13),
        "`(` is never closed",
    );
    assert_only(
        "d = {\"a\": [1, 2}\n",
        RULE_SYNTAX,
        (0, 15),
        (0, 16),
        "closing `}` does not match the opening `[` on line 1",
    );
    assert_only("x = 1)\n", RULE_SYNTAX, (0, 5), (0, 6), "unmatched `)`");
}

#[test]
fn a_broken_parameter_list_is_reported_on_its_line() {
    let f = only("import os\ndef f(:\n    pass\n");
    assert_eq!(
        (f.rule, f.start_line, f.start_byte_col),
        (RULE_SYNTAX, 1, 5)
    );
}

#[test]
fn bad_indentation_is_reported_where_python_reports_it() {
    assert_only(
        "def f():\n    x = 1\n      y = 2\nz = 3\n",
        RULE_SYNTAX,
        (2, 6),
        (2, 11),
        "unexpected indent",
    );
    assert_only(
        "def f():\nx = 1\n",
        RULE_SYNTAX,
        (1, 0),
        (1, 1),
        "expected an indented block after `def` on line 1",
    );
    assert_only(
        "if a:\n        x = 1\n    y = 2\nz = 4\n",
        RULE_SYNTAX,
        (2, 4),
        (2, 9),
        "unindent does not match any outer indentation level",
    );
    assert_only(
        "if a:\n    x = 1\n  else:\n    y = 2\n",
        RULE_SYNTAX,
        (2, 2),
        (2, 6),
        "`else` does not line up with its `if` on line 1",
    );
    assert_only(
        "  x = 1\n",
        RULE_SYNTAX,
        (0, 2),
        (0, 7),
        "unexpected indent",
    );
    // A tab is 8 columns or 1: this line equals the block in one measure only.
    assert_only(
        "if a:\n\tx = 1\n        y = 2\n",
        RULE_SYNTAX,
        (2, 8),
        (2, 13),
        "inconsistent use of tabs and spaces",
    );
}

#[test]
fn an_empty_block_at_the_end_points_past_the_header() {
    let f = only("for x in y:\n    # nothing yet\n");
    assert_eq!((f.start_line, f.start_byte_col), (2, 0));
    assert!(f.message.contains("after `for` on line 1"), "{f:?}");
}

#[test]
fn free_indentation_inside_brackets_strings_and_comments_is_fine() {
    assert_clean(concat!(
        "x = [\n1,\n        2,\n  ]\n",
        "s = \"\"\"\n  text\n\tmore\n\"\"\"\n",
        "def f():\n# a comment at column 0\n        # and one deeper\n    return 1\n",
        "y = 1 + \\\n      2\n",
        "if x: y = 1\n",
        "while True:\n    for i in x:\n        break\n    else:\n        continue\n",
        "\n   \nclass A:\n\n    def m(self):\n        pass\n",
    ));
}

#[test]
fn a_missing_colon_says_what_was_expected() {
    assert_only(
        "class A\n    pass\n",
        RULE_SYNTAX,
        (0, 7),
        (0, 7),
        "expected `[`, `(` or `:`",
    );
}

#[test]
fn an_unterminated_string_is_reported_at_its_quote() {
    assert_only(
        "x = 1\ny = \"abc\n",
        RULE_SYNTAX,
        (1, 4),
        (1, 5),
        "unterminated string literal",
    );
}

#[test]
fn other_python2_forms_are_syntax_errors() {
    let cases: [(&str, Pos, Pos, &str); 8] = [
        ("exec \"x = 1\"\n", (0, 0), (0, 12), "`exec` as a statement"),
        ("ok = 1 <> 2\n", (0, 7), (0, 9), "`<>`"),
        ("r = `x`\n", (0, 4), (0, 7), "backquotes"),
        ("mode = 0777\n", (0, 7), (0, 11), "leading zeros"),
        ("n = 10L\n", (0, 4), (0, 7), "`L` suffix"),
        (
            "s = ur\"x\"\n",
            (0, 4),
            (0, 9),
            "`ur` is not a valid string prefix",
        ),
        ("raise E, \"m\"\n", (0, 6), (0, 12), "`raise E, message`"),
        (
            "def f((a, b)):\n    pass\n",
            (0, 6),
            (0, 12),
            "tuple parameter",
        ),
    ];
    for (script, start, end, says) in cases {
        assert_only(script, RULE_SYNTAX, start, end, says);
    }
}

#[test]
fn valid_literals_are_not_mistaken_for_python2() {
    assert_clean(
        "a = [0, 00, 0_0, 1_000, 0x_ff, 0o17, 0b1, 10j, 1.5]\nb = [rb\"x\", Rb\"y\", BR\"z\", u\"w\", f\"{a!r:>{w}}\", F'x']\n",
    );
}

#[test]
fn statements_out_of_place_are_syntax_errors() {
    assert_only(
        "x = 1\nreturn x\n",
        RULE_SYNTAX,
        (1, 0),
        (1, 6),
        "`return` outside a function",
    );
    assert_only(
        "if x:\n    break\n",
        RULE_SYNTAX,
        (1, 4),
        (1, 9),
        "`break` outside a loop",
    );
    assert_only(
        "for x in y:\n    def f():\n        continue\n",
        RULE_SYNTAX,
        (2, 8),
        (2, 16),
        "`continue` outside a loop",
    );
    assert_only(
        "f(a=1, b)\n",
        RULE_SYNTAX,
        (0, 7),
        (0, 8),
        "positional argument follows keyword argument",
    );
    assert_clean(
        "def f():\n    for x in y:\n        if x:\n            break\n    return 1\nf(1, *a, b=2, *c, **d)\n",
    );
}

#[test]
fn syntax_newer_than_python_3_9_is_reported_with_its_version() {
    let cases: [(&str, Pos, Pos, &str); 6] = [
        (
            "match x:\n    case 1:\n        pass\n",
            (0, 0),
            (0, 5),
            "needs Python 3.10",
        ),
        (
            "try:\n    pass\nexcept* E:\n    pass\n",
            (2, 0),
            (2, 7),
            "needs Python 3.11",
        ),
        ("type Point = tuple\n", (0, 0), (0, 4), "needs Python 3.12"),
        (
            "x = f\"{d[\"k\"]}\"\n",
            (0, 9),
            (0, 12),
            "needs Python 3.12",
        ),
        (
            "x = f'{\"\\n\".join(a)}'\n",
            (0, 7),
            (0, 19),
            "needs Python 3.12",
        ),
        ("x = t\"{a}\"\n", (0, 4), (0, 10), "needs Python 3.14"),
    ];
    for (script, start, end, says) in cases {
        assert_only(script, RULE_SYNTAX, start, end, says);
    }
    // Other quotes, or a triple-quoted outer string, were always fine.
    assert_clean("x = f\"{d['k']}\"\ny = f\"\"\"{d[\"k\"]}\"\"\"\n");
}

#[test]
fn forms_the_grammar_accepts_but_python_rejects_are_syntax_errors() {
    let cases: [(&str, Pos, Pos, &str); 4] = [
        (
            "x = \"a\nb\"\n",
            (0, 4),
            (0, 5),
            "unterminated string literal",
        ),
        (
            "f(1)\nraise E(\"\nthe end\")\n",
            (1, 8),
            (2, 8),
            "unterminated string literal",
        ),
        ("s = m.group:(0)\n", (0, 4), (0, 15), "annotated assignment"),
        (
            "try:\n    x = 1\ny = 2\n",
            (0, 0),
            (0, 3),
            "`try` needs an `except`",
        ),
    ];
    for (script, start, end, says) in cases {
        assert_only(script, RULE_SYNTAX, start, end, says);
    }
    assert_only(
        "def f[T](x):\n    pass\n",
        RULE_SYNTAX,
        (0, 5),
        (0, 8),
        "needs Python 3.12",
    );
    // Mostly an ERROR node; in this longer program the grammar took it silently.
    let joined = CLEAN.replace("TOKEN})\n    return conn", "TOKEN})return\n    return conn");
    assert_only(&joined, RULE_SYNTAX, (159, 80), (159, 86), "need a `;`");
    // The grammar's own oddities must not become findings on valid code.
    assert_clean(concat!(
        "x = \"a\\\nb\"\n",
        "f(x); g(y)\n",
        "n: int = 1\n",
        "type(obj).attr = 1\n",
        "profiles: Dict[str, List[int]] = {}\n",
        "def g(a: Dict[str, int]) -> Optional[str]:\n    pass\n",
        "try:\n    pass\nfinally:\n    pass\n",
    ));
}

#[test]
fn only_the_first_syntax_error_is_reported() {
    assert_only(
        "print \"a\"\nprint \"b\"\nx = (\n",
        RULE_SYNTAX,
        (0, 0),
        (0, 9),
        "`print`",
    );
}

#[test]
fn a_nul_byte_is_a_syntax_error() {
    assert_only("x = 1\ny = 2\0\n", RULE_SYNTAX, (1, 5), (1, 6), "NUL");
}

// ---------------------------------------------------------------- runtime-non-stdlib-import

#[test]
fn third_party_imports_are_reported_at_the_name() {
    assert_eq!(
        spans(concat!(
            "import os, requests\n",
            "import yaml.constructor as yc\n",
            "from kubernetes.client import CoreV1Api\n",
        )),
        [
            (RULE_IMPORT, (0, 11), (0, 19)),
            (RULE_IMPORT, (1, 7), (1, 23)),
            (RULE_IMPORT, (2, 5), (2, 22)),
        ]
    );
    assert_eq!(
        only("import requests\n").message,
        "`requests` is not in the standard library of Python 3.9-3.14"
    );
    assert_eq!(
        only("from kubernetes.client import CoreV1Api\n").message,
        "`kubernetes` is not in the standard library of Python 3.9-3.14"
    );
}

#[test]
fn modules_missing_from_some_versions_name_those_versions() {
    let cases = [
        ("import tomllib\n", "of Python 3.9-3.10,"),
        ("import cgi\n", "of Python 3.13-3.14,"),
        ("from telnetlib import Telnet\n", "of Python 3.13-3.14,"),
        ("import distutils.util\n", "of Python 3.12-3.14,"),
        ("import imp\n", "of Python 3.12-3.14,"),
        ("import formatter\n", "of Python 3.10-3.14,"),
        ("import compression.zstd\n", "of Python 3.9-3.13,"),
    ];
    for (script, says) in cases {
        let f = only(script);
        assert_eq!(f.rule, RULE_IMPORT);
        assert!(f.message.contains(says), "{script:?}: {}", f.message);
    }
}

#[test]
fn dynamic_imports_with_a_literal_are_checked() {
    assert_eq!(
        spans(concat!(
            "import importlib\n",
            "m = __import__(\"boto3\")\n",
            "n = importlib.import_module(\"google.auth\")\n",
            "o = importlib.import_module(\"json\")\n",
            "p = __import__(name)\n",
            "q = other.import_module(\"anything\")\n",
        )),
        [
            (RULE_IMPORT, (1, 15), (1, 22)),
            (RULE_IMPORT, (2, 28), (2, 41))
        ]
    );
}

#[test]
fn relative_imports_are_reported() {
    assert_only(
        "from . import util\n",
        RULE_IMPORT,
        (0, 5),
        (0, 6),
        "relative import `from . import util`",
    );
    assert_only(
        "from ..pkg import x\n",
        RULE_IMPORT,
        (0, 5),
        (0, 10),
        "relative import",
    );
    assert_only(
        "from importlib import import_module\nm = import_module(\".sub\")\n",
        RULE_IMPORT,
        (1, 18),
        (1, 24),
        "relative import `.sub`",
    );
}

#[test]
fn optional_imports_are_not_findings() {
    assert_clean(concat!(
        "try:\n    import certifi\nexcept ImportError:\n    certifi = None\n",
        "try:\n    from simplejson import loads\nexcept (ValueError, ModuleNotFoundError):\n    pass\n",
        "try:\n    if x:\n        import ujson\nexcept builtins.ImportError:\n    pass\n",
        "try:\n    import orjson\nexcept:\n    pass\n",
    ));
}

#[test]
fn imports_outside_a_protecting_try_are_findings() {
    assert_eq!(
        spans(concat!(
            "try:\n    import ujson\nexcept Exception:\n    pass\n",
            "try:\n    def later():\n        import yaml\nexcept ImportError:\n    pass\n",
            "try:\n    pass\nexcept ImportError:\n    import requests\n",
            "try:\n    pass\nexcept ImportError:\n    pass\nelse:\n    import toml\n",
        )),
        [
            (RULE_IMPORT, (1, 11), (1, 16)),
            (RULE_IMPORT, (6, 15), (6, 19)),
            (RULE_IMPORT, (12, 11), (12, 19)),
            (RULE_IMPORT, (18, 11), (18, 15)),
        ]
    );
}

#[test]
fn the_standard_library_imports_of_the_program_are_fine() {
    assert_clean(concat!(
        "from __future__ import annotations\n",
        "import json, os, ssl, sys, time, urllib.request, urllib.error, http.client\n",
        "import base64, secrets, socket, hashlib, _thread, os.path as p\n",
        "from urllib.parse import urlencode, quote\n",
        "from http import HTTPStatus\n",
    ));
}

#[test]
fn the_lists_hold_top_level_names_only_and_know_the_removals() {
    for (version, list) in stdlib::LISTS {
        let names: Vec<&str> = list.lines().collect();
        assert!(names.len() > 250, "{version}: {} names", names.len());
        assert!(
            names.windows(2).all(|w| w[0] < w[1]),
            "{version} is not sorted and unique"
        );
        for name in &names {
            let identifier = name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            assert!(identifier && !name.is_empty(), "{version}: {name:?}");
        }
        for always in [
            "__future__",
            "_thread",
            "json",
            "os",
            "urllib",
            "http",
            "ssl",
        ] {
            assert!(names.contains(&always), "{version} lacks {always}");
        }
        assert!(!names.contains(&"requests") && !names.contains(&"test"));
    }
    assert_eq!(stdlib::missing_from("cgi"), ["3.13", "3.14"]);
    assert_eq!(stdlib::missing_from("tomllib"), ["3.9", "3.10"]);
    assert_eq!(
        stdlib::missing_from("parser"),
        ["3.10", "3.11", "3.12", "3.13", "3.14"]
    );
    assert!(stdlib::missing_from("asyncio").is_empty());
    // Whole lines only: a name's prefix, suffix or middle is not a module.
    for part in ["o", "s", "asyn", "syncio", "ncio", "asyncio\n", "", "\n"] {
        assert_eq!(
            stdlib::missing_from(part).len(),
            stdlib::VERSION_COUNT,
            "{part:?}"
        );
    }
    for (version, list) in stdlib::LISTS {
        let (first, last) = (list.lines().next().unwrap(), list.lines().last().unwrap());
        assert!(
            stdlib::holds(list, first) && stdlib::holds(list, last),
            "{version}"
        );
    }
    assert_eq!(stdlib::describe(&["3.9", "3.11", "3.12"]), "3.9, 3.11-3.12");
}

// ---------------------------------------------------------------- runtime-forbidden-method

#[test]
fn put_is_reported_at_the_literal() {
    assert_eq!(
        spans(concat!(
            "api(\"PUT\", f\"/api/v1/namespaces/{ns}/secrets/{name}\", body)\n",
            "req = urllib.request.Request(url, data=b, method=\"put\")\n",
            "req.get_method = lambda: 'Put'\n",
            "conn.putrequest(\"PUT\", path)\n",
            "conn.request(method=\"PUT\", url=path)\n",
        )),
        [
            (RULE_METHOD, (0, 4), (0, 9)),
            (RULE_METHOD, (1, 49), (1, 54)),
            (RULE_METHOD, (2, 25), (2, 30)),
            (RULE_METHOD, (3, 16), (3, 21)),
            (RULE_METHOD, (4, 20), (4, 25)),
        ]
    );
    assert!(only("m = \"PUT\"\n").message.contains("update"));
    // Not a method: longer strings that contain the word.
    assert_clean("a = \"PUTS\"\nb = \"output\"\nc = \"put it there\"\n");
}

#[test]
fn watch_requests_are_reported_at_the_string() {
    assert_eq!(
        spans(concat!(
            "api(\"GET\", f\"/api/v1/namespaces/{ns}/secrets?watch=true\")\n",
            "url = base + \"&watch=1\"\n",
            "q = \"watch=true&resourceVersion=5\"\n",
            "api(\"GET\", f\"/api/v1/watch/namespaces/{ns}/secrets/{name}\")\n",
            "u = f\"{API}/apis/external-secrets.io/v1/watch/externalsecrets\"\n",
            "s = urllib.parse.urlencode({\"watch\": \"1\", \"limit\": 5})\n",
            "t = urlencode([(\"watch\", \"true\")])\n",
            "v = urlencode(dict(watch=1))\n",
        )),
        [
            (RULE_METHOD, (0, 11), (0, 56)),
            (RULE_METHOD, (1, 13), (1, 23)),
            (RULE_METHOD, (2, 4), (2, 34)),
            (RULE_METHOD, (3, 11), (3, 58)),
            (RULE_METHOD, (4, 4), (4, 62)),
            (RULE_METHOD, (5, 28), (5, 35)),
            (RULE_METHOD, (6, 16), (6, 23)),
            (RULE_METHOD, (7, 19), (7, 24)),
        ]
    );
    assert!(
        only("api(\"GET\", f\"/api/v1/namespaces/{ns}/secrets?watch=1\")\n")
            .message
            .contains("`watch` query parameter")
    );
}

#[test]
fn list_requests_are_reported_at_the_path() {
    assert_eq!(
        spans(concat!(
            "api(\"GET\", f\"/api/v1/namespaces/{ns}/secrets\")\n",
            "api(\"GET\", f\"/api/v1/namespaces/{ns}/pods?limit=5\")\n",
            "conn.request(\"GET\", \"/api/v1/namespaces/\" + ns + \"/configmaps\")\n",
            "api(\"GET\", f\"{API}/apis/external-secrets.io/v1beta1/namespaces/{ns}/externalsecrets\")\n",
            "api(\"GET\", f\"{base}/passwords\")\n",
            "urllib.request.urlopen(API + \"/api/v1/namespaces/\" + ns + \"/secrets\")\n",
            "api(\"GET\", \"/api/v1/namespaces\")\n",
            "api(\"get\", \"/apis/apps/v1/deployments\")\n",
        )),
        [
            (RULE_METHOD, (0, 11), (0, 45)),
            (RULE_METHOD, (1, 11), (1, 50)),
            (RULE_METHOD, (2, 20), (2, 62)),
            (RULE_METHOD, (3, 11), (3, 84)),
            (RULE_METHOD, (4, 11), (4, 30)),
            (RULE_METHOD, (5, 23), (5, 68)),
            (RULE_METHOD, (6, 11), (6, 31)),
            (RULE_METHOD, (7, 11), (7, 38)),
        ]
    );
    assert_eq!(
        only("api(\"GET\", f\"/api/v1/namespaces/{ns}/secrets\")\n").message,
        "GET on the collection `/api/v1/namespaces/{ns}/secrets` lists secrets, which the credentials Role forbids"
    );
}

#[test]
fn selectors_are_list_parameters() {
    assert_eq!(
        spans(concat!(
            "api(\"GET\", f\"/api/v1/namespaces/{ns}/secrets/{n}?fieldSelector=x\")\n",
            "q = \"?labelSelector=app%3Dx\"\n",
            "r = urlencode({\"labelSelector\": sel})\n",
        )),
        [
            (RULE_METHOD, (0, 11), (0, 65)),
            (RULE_METHOD, (1, 4), (1, 28)),
            (RULE_METHOD, (2, 15), (2, 30)),
        ]
    );
}

#[test]
fn paths_are_followed_through_single_assignments_and_formatting() {
    let script = concat!(
        "u = f\"{API}/api/v1/namespaces/{NS}/secrets\"\n",
        "r = urllib.request.Request(u, headers=h)\n",
        "def f(ns):\n",
        "    path = \"/api/v1/namespaces/%s/pods\" % ns\n",
        "    conn.request(\"GET\", path)\n",
        "    p2 = \"/api/v1/namespaces/{}/passwords\".format(ns)\n",
        "    api(method=\"DELETE\", path=p2)\n",
        "    verb = \"GET\"\n",
        "    api(verb, f\"/api/v1/namespaces/{ns}/configmaps\")\n",
    );
    assert_eq!(
        spans(script),
        [
            (RULE_METHOD, (1, 27), (1, 28)),
            (RULE_METHOD, (4, 24), (4, 28)),
            (RULE_METHOD, (6, 30), (6, 32)),
            (RULE_METHOD, (8, 14), (8, 51)),
        ]
    );
    let messages: Vec<String> = check_script(script)
        .into_iter()
        .map(|f| f.message)
        .collect();
    assert!(
        messages[1].contains("`/api/v1/namespaces/%s/pods`"),
        "{}",
        messages[1]
    );
    assert!(messages[2].contains("deletecollection"), "{}", messages[2]);
}

#[test]
fn delete_on_a_collection_is_reported() {
    assert_only(
        "api(\"DELETE\", f\"/apis/generators.external-secrets.io/v1alpha1/namespaces/{ns}/passwords\")\n",
        RULE_METHOD,
        (0, 14),
        (0, 88),
        "deletecollection",
    );
}

#[test]
fn allowed_requests_are_not_findings() {
    assert_clean(concat!(
        "import urllib.request\n",
        "api(\"POST\", f\"/api/v1/namespaces/{ns}/secrets\", body)\n",
        "api(\"GET\", f\"/api/v1/namespaces/{ns}/secrets/{name}\")\n",
        "api(\"PATCH\", f\"/api/v1/namespaces/{ns}/secrets/{name}\", ops)\n",
        "api(\"DELETE\", f\"/apis/external-secrets.io/v1beta1/namespaces/{ns}/externalsecrets/{name}\", {\"propagationPolicy\": \"Orphan\"})\n",
        "api(\"GET\", f\"/api/v1/namespaces/{ns}/pods/{pod}\")\n",
        "api(\"GET\", f\"/api/v1/namespaces/{ns}/{plural}\")\n",
        "api(\"GET\", \"/readyz\")\n",
        "urllib.request.urlopen(f\"{API}/api/v1/namespaces/{ns}/secrets\", data=body)\n",
        "urllib.request.Request(f\"{API}/api/v1/namespaces/{ns}/secrets\", body)\n",
        "urllib.request.urlopen(request, timeout=30)\n",
        "def call(method, path):\n",
        "    return urllib.request.Request(API + path, method=method)\n",
        "def again(path):\n",
        "    api(\"GET\", path)\n",
        "def looped(names):\n",
        "    for path in names:\n",
        "        api(\"GET\", path)\n",
        "def doc():\n",
        "    \"\"\"Never sends ?watch=true or labelSelector=x.\"\"\"\n",
        "path = \"/api/v1/namespaces/x/secrets\"\n",
        "path = path + \"/one\"\n",
        "api(\"GET\", path)\n",
        "q = urlencode({\"propagationPolicy\": \"Orphan\"})\n",
    ));
}

// ---------------------------------------------------------------- output, cache, robustness

#[test]
fn findings_of_all_rules_come_sorted_by_position() {
    let script = concat!(
        "api(\"GET\", f\"/api/v1/namespaces/{ns}/secrets\")\n",
        "import requests\n",
        "x = \"PUT\"\n",
        "print \"x\"\n",
    );
    let rules: Vec<(&str, usize)> = check_script(script)
        .iter()
        .map(|f| (f.rule, f.start_line))
        .collect();
    assert_eq!(
        rules,
        [
            (RULE_METHOD, 0),
            (RULE_IMPORT, 1),
            (RULE_METHOD, 2),
            (RULE_SYNTAX, 3)
        ]
    );
}

#[test]
fn results_are_cached_by_content_and_shared_across_threads() {
    let script = format!("{CLEAN}\nimport cache_probe_{}\n", std::process::id());
    let first = check_script(&script);
    assert!(lock_cache().contains_key(script.as_str()));
    let results: Vec<Vec<ScriptFinding>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|_| scope.spawn(|| check_script(&script)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    assert_eq!(first.len(), 1);
    assert!(results.iter().all(|r| *r == first));
}

#[test]
fn the_cache_stays_bounded() {
    for i in 0..CACHE_ENTRIES + 10 {
        check_script(&format!("x = {i}  # bound probe\n"));
    }
    assert!(lock_cache().len() <= CACHE_ENTRIES);
    let big = format!("{CLEAN}\n# {}\n", "x".repeat(CACHE_BYTES / 17));
    for i in 0..30 {
        check_script(&format!("{big}# {i}\n"));
    }
    assert!(lock_cache().keys().map(|k| k.len()).sum::<usize>() <= CACHE_BYTES);
}

/// Deterministic pseudo-random bytes (xorshift), so a failure can be reproduced.
fn junk(len: usize) -> String {
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let bytes: Vec<u8> = (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Generous: unoptimized builds on a shared 2-core machine. The point is that it ends.
const BOUND: Duration = Duration::from_secs(90);

#[test]
fn binary_junk_is_a_syntax_finding_not_a_panic() {
    let started = Instant::now();
    let found = analyse(&junk(200_000));
    assert!(started.elapsed() < BOUND);
    assert!(found.iter().any(|f| f.rule == RULE_SYNTAX));
    let every_byte: Vec<u8> = (0..=255u8).cycle().take(4096).collect();
    let found = analyse(&String::from_utf8_lossy(&every_byte));
    assert_eq!(found.iter().filter(|f| f.rule == RULE_SYNTAX).count(), 1);
}

#[test]
fn a_five_megabyte_script_is_checked_in_bounded_time() {
    let big = CLEAN.repeat(5 * 1024 * 1024 / CLEAN.len() + 1);
    assert!(big.len() >= 5 * 1024 * 1024);
    let started = Instant::now();
    assert!(analyse(&big).is_empty());
    assert!(started.elapsed() < BOUND, "{:?}", started.elapsed());
}

#[test]
fn ten_thousand_nested_brackets_do_not_exhaust_the_stack() {
    let started = Instant::now();
    // Balanced or not, CPython refuses the 201st bracket open at once, and so does credlint.
    let too_deep = [(RULE_SYNTAX, (0, 204), (0, 205))];
    let balanced = format!("x = {}1{}\n", "(".repeat(10_000), ")".repeat(10_000));
    let found = analyse(&balanced);
    assert_eq!(spans_of(&found), too_deep, "{found:#?}");
    let open = format!("x = {}1\n", "[".repeat(10_000));
    assert_eq!(spans_of(&analyse(&open)), too_deep);
    let mixed = format!("f({})\n", "[{(".repeat(3_334));
    assert_eq!(analyse(&mixed).len(), 1);
    let deep_calls = format!("x = {}0{}\n", "f(".repeat(10_000), ")".repeat(10_000));
    assert_eq!(
        spans_of(&analyse(&deep_calls)),
        [(RULE_SYNTAX, (0, 4 + 2 * 200 + 1), (0, 4 + 2 * 200 + 2))]
    );
    let deep_plus = format!("x = \"/a\"{}\n", " + \"/b\"".repeat(10_000));
    assert!(analyse(&deep_plus).is_empty());
    assert!(started.elapsed() < BOUND, "{:?}", started.elapsed());
}

fn spans_of(found: &[ScriptFinding]) -> Vec<(&'static str, Pos, Pos)> {
    found
        .iter()
        .map(|f| {
            (
                f.rule,
                (f.start_line, f.start_byte_col),
                (f.end_line, f.end_byte_col),
            )
        })
        .collect()
}

#[test]
fn a_script_over_the_size_limit_is_one_finding_without_parsing() {
    let huge = "#".repeat(MAX_SCRIPT_BYTES + 1);
    let started = Instant::now();
    let found = analyse(&huge);
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(spans_of(&found), [(RULE_SYNTAX, (0, 0), (0, 0))]);
    assert!(found[0].message.contains("not checked"));
}

#[test]
fn empty_and_blank_scripts_are_clean() {
    assert_clean("");
    assert_clean("\n\n   \n# only a comment\n");
    assert_clean("\u{feff}import os\n");
}

/// A script another thread claimed and never finished is analysed by the thread that asks.
#[test]
fn a_script_another_thread_never_finished_is_analysed_by_the_one_that_asks() {
    let script = "import requests\n# claimed by a thread that never finishes\n";
    claim(script);
    let found = check_script(script);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].rule, RULE_IMPORT);
    assert!(is_known(script));
}

/// What the local python3 says of `script`: `None` when it compiles, else its error's text;
/// `Err` when there is no python3.
fn cpython_verdict(script: &str) -> Result<Option<String>, ()> {
    use std::io::Write;
    let mut child = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys\ntry:\n    compile(sys.stdin.read(), 'create.py', 'exec')\nexcept SyntaxError as e:\n    print(e.lineno, e.msg)\n",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|_| ())?;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let out = child.wait_with_output().map_err(|_| ())?;
    assert!(out.status.success());
    let said = String::from_utf8_lossy(&out.stdout).trim().to_string();
    Ok((!said.is_empty()).then_some(said))
}

/// Brackets nested and blocks indented up to and past CPython's tokenizer limits (200 open
/// brackets, 100 indentation levels): `runtime-syntax` exactly where the local python3 refuses
/// the script, at the line it names. Skips, saying so, without python3 (required in CI).
#[test]
fn nesting_is_refused_where_cpython_refuses_it() {
    let mut scripts = Vec::new();
    for n in [150, 199, 200, 201, 260] {
        // Mixed kinds, so the count is of all brackets at once.
        let third = n / 3;
        let open = "[".repeat(third) + &"{".repeat(third) + &"(".repeat(n - 2 * third);
        let close = ")".repeat(n - 2 * third) + &"}".repeat(third) + &"]".repeat(third);
        scripts.push(format!("import sys\nx = {open}1{close}\nprint(x)\n"));
    }
    for n in [98, 99, 100, 101] {
        let mut s = String::from("import sys\nx = 1\n");
        for i in 0..n {
            s.push_str(&" ".repeat(i));
            // One-line suites add no level.
            s.push_str("if x:\n");
            s.push_str(&" ".repeat(i + 1));
            s.push_str("if x: pass\n");
        }
        s.push_str(&" ".repeat(n));
        s.push_str("print(x)\n");
        scripts.push(s);
    }
    let mut refused = 0;
    for script in &scripts {
        let cpython = match cpython_verdict(script) {
            Ok(verdict) => verdict,
            Err(()) => {
                if std::env::var_os("CREDLINT_REQUIRE_PYTHON").is_some_and(|v| v == "1") {
                    panic!("no python3, and CREDLINT_REQUIRE_PYTHON=1 is set");
                }
                eprintln!("\nSKIPPED: no python3 to compare nesting limits with\n");
                return;
            }
        };
        let ours: Vec<ScriptFinding> = check_script(script)
            .into_iter()
            .filter(|f| f.rule == RULE_SYNTAX)
            .collect();
        let depth = script.lines().count();
        match cpython {
            None => assert!(ours.is_empty(), "{depth} lines: {ours:#?}"),
            Some(said) => {
                refused += 1;
                assert_eq!(ours.len(), 1, "{depth} lines: python3 says {said}");
                let (line, _) = said.split_once(' ').unwrap();
                assert_eq!(
                    (ours[0].start_line + 1).to_string(),
                    line,
                    "{depth} lines: python3 says {said}, credlint {}",
                    ours[0].message
                );
                let words = if said.contains("parentheses") {
                    "too many nested parentheses"
                } else {
                    "too many levels of indentation"
                };
                assert!(said.contains(words), "{said}");
                assert!(ours[0].message.contains(words), "{}", ours[0].message);
            }
        }
    }
    assert_eq!(refused, 4, "201 and 260 brackets, 100 and 101 levels");
}
