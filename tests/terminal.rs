//! The text report on a real terminal: the binary runs under a pseudo-terminal (python3's `pty`
//! and `termios`, with the window size set), so its own checks of standard output decide the
//! colour and the width, as they do for a user, not a flag the test passes.
//!
//! Where python3 (or its `pty` module) is missing the tests print `SKIPPED` and pass; with
//! `CREDLINT_REQUIRE_PTY=1` (set by `.ci/run`) they fail instead.

mod common;

use common::{root, skip_unless_required, stderr};
use std::process::{Command, Output, Stdio};

const DEMO: &str = "fixtures/demo/broken.yaml";

/// A message of the demo that is 101 characters long with its `  × ` prefix.
const LONG_MESSAGE: &str = "  × Role grants `list`. The credentials Role may only create, get, patch and delete (ADR-072 point 5).";

/// Runs argv[3:] with its standard output on a new pseudo-terminal of argv[1] rows and argv[2]
/// columns, copies what it wrote to this standard output and exits with its code. Reading the
/// master side ends with EIO (Linux) or an empty read once the child closed the terminal.
const UNDER_PTY: &str = r#"
import fcntl, os, struct, subprocess, sys, termios
rows, cols = int(sys.argv[1]), int(sys.argv[2])
master, slave = os.openpty()
fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
child = subprocess.Popen(sys.argv[3:], stdin=subprocess.DEVNULL, stdout=slave)
os.close(slave)
out = bytearray()
while True:
    try:
        chunk = os.read(master, 65536)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
code = child.wait()
sys.stdout.buffer.write(bytes(out))
sys.stdout.flush()
sys.exit(code)
"#;

/// Whether the pseudo-terminal can be had here; says why not (and fails in CI) when not.
fn pty_available() -> bool {
    let probe = Command::new("python3")
        .args(["-c", "import pty, termios, fcntl"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    match probe {
        Ok(status) if status.success() => true,
        Ok(_) => {
            skip_unless_required(
                "CREDLINT_REQUIRE_PTY",
                "python3 has no pty/termios module here",
            );
            false
        }
        Err(_) => {
            skip_unless_required("CREDLINT_REQUIRE_PTY", "python3 is not installed");
            false
        }
    }
}

/// `credlint ARGS` with standard output on a terminal of `cols` columns (0: a terminal that
/// does not know its width), in an environment of `TERM=xterm-256color` and `env`.
fn on_terminal(cols: u16, args: &[&str], env: &[(&str, &str)]) -> (Output, String) {
    let mut command = Command::new("python3");
    command
        .args(["-c", UNDER_PTY, "40", &cols.to_string()])
        .arg(env!("CARGO_BIN_EXE_credlint"))
        .args(args)
        .current_dir(root())
        .env("CREDLINT_CACHE_DIR", common::cache_dir());
    for name in common::LOOK {
        command.env_remove(name);
    }
    command.env("TERM", "xterm-256color");
    command.envs(env.iter().copied());
    let out = command.output().expect("python3 runs");
    // The terminal turns each line break into CR LF (onlcr).
    let text = String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n");
    (out, text)
}

/// `credlint ARGS` with standard output into a pipe.
fn piped(args: &[&str], env: &[(&str, &str)]) -> (Output, String) {
    let mut command = common::command();
    command.args(args);
    command.envs(env.iter().copied());
    let out = command.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    (out, text)
}

fn coloured(text: &str) -> bool {
    text.contains("\u{1b}[")
}

fn check<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    [&["check", "--no-config", DEMO][..], extra].concat()
}

#[test]
fn colour_is_on_at_a_terminal_unless_the_environment_or_the_flag_says_otherwise() {
    if !pty_available() {
        return;
    }
    let tty = |extra: &[&str], env: &[(&str, &str)]| {
        let (out, text) = on_terminal(120, &check(extra), env);
        assert_eq!(out.status.code(), Some(1), "{}{text}", stderr(&out));
        assert!(text.contains("role-forbidden-verb"), "{text}");
        coloured(&text)
    };
    assert!(tty(&[], &[]), "a terminal gets colour by default");
    assert!(!tty(&[], &[("NO_COLOR", "1")]), "NO_COLOR=1");
    assert!(tty(&[], &[("NO_COLOR", "")]), "an empty NO_COLOR is unset");
    assert!(!tty(&[], &[("CLICOLOR", "0")]), "CLICOLOR=0");
    assert!(tty(&[], &[("CLICOLOR", "1")]), "CLICOLOR=1");
    assert!(!tty(&[], &[("TERM", "dumb")]), "TERM=dumb");
    assert!(tty(&[], &[("TERM", "dumb"), ("FORCE_COLOR", "1")]));
    assert!(!tty(&["--color", "never"], &[]), "--color never");
    assert!(tty(&["--color", "always"], &[("NO_COLOR", "1")]));
    assert!(tty(&["--color", "auto"], &[]));

    let pipe = |extra: &[&str], env: &[(&str, &str)]| {
        let (out, text) = piped(&check(extra), env);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        coloured(&text)
    };
    assert!(!pipe(&[], &[]), "a pipe gets no colour");
    assert!(
        pipe(&[], &[("CLICOLOR_FORCE", "1")]),
        "CLICOLOR_FORCE forces it"
    );
    assert!(pipe(&[], &[("FORCE_COLOR", "1")]), "FORCE_COLOR forces it");
    assert!(!pipe(&[], &[("FORCE_COLOR", "0")]));
    assert!(pipe(&["--color", "always"], &[]));
}

/// A rule's header: its id and the address of its entry, which is not broken.
fn is_rule_header(line: &str) -> bool {
    let id = line.split(' ').next().unwrap_or_default();
    line == format!(
        "{id} ({}/blob/main/docs/rules.md#{id})",
        env!("CARGO_PKG_REPOSITORY")
    )
}

/// Lines that quote the source (and the labels under them) stand at their columns whole, as
/// do the rules' headers; the messages and help around them are what wraps.
fn widest_wrapped_line(text: &str) -> usize {
    text.lines()
        .filter(|line| {
            !(line.trim_start().starts_with(|c: char| c.is_ascii_digit())
                || line.contains('·')
                || line.contains("╭─[")
                || is_rule_header(line))
        })
        .map(|line| line.chars().count())
        .max()
        .unwrap_or(0)
}

#[test]
fn the_report_wraps_at_the_terminals_width_unless_columns_says_otherwise() {
    if !pty_available() {
        return;
    }
    let args = check(&["--color", "never"]);
    let (out, narrow) = on_terminal(60, &args, &[]);
    assert_eq!(out.status.code(), Some(1), "{}{narrow}", stderr(&out));
    assert!(narrow.contains("role-forbidden-verb"), "{narrow}");
    assert!(
        widest_wrapped_line(&narrow) <= 60,
        "a 60-column terminal: {narrow}"
    );
    assert!(!narrow.contains(LONG_MESSAGE), "{narrow}");

    let (_, wide) = on_terminal(200, &args, &[]);
    assert!(
        wide.contains(&format!("{LONG_MESSAGE}\n")),
        "a 200-column terminal keeps the message on one line: {wide}"
    );
    assert!(widest_wrapped_line(&wide) > 120, "{wide}");

    let (_, asked) = on_terminal(60, &args, &[("COLUMNS", "120")]);
    assert!(
        asked.contains(&format!("{LONG_MESSAGE}\n")),
        "COLUMNS=120 wins over the terminal's 60: {asked}"
    );
    let widest = widest_wrapped_line(&asked);
    assert!(widest > 60 && widest <= 120, "{widest}: {asked}");

    let (_, unknown) = on_terminal(0, &args, &[]);
    let widest = widest_wrapped_line(&unknown);
    assert!(
        widest > 60 && widest <= 80,
        "a terminal of unknown width gets 80 ({widest}): {unknown}"
    );

    let (_, pipe) = piped(&args, &[]);
    assert!(
        pipe.contains(&format!("{LONG_MESSAGE}\n")),
        "a pipe is not wrapped"
    );
}
