//! Where a report is written decides how it looks: whether to colour it and how wide to wrap
//! it, from `--color`, the usual environment variables and the terminal. The decisions take the
//! environment as a function, so tests give their own.

/// `--color` (its values and their help are clap's, so the flag and the decision are one type).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// Colour on a terminal, unless NO_COLOR, CLICOLOR=0 or TERM=dumb say otherwise
    /// (CLICOLOR_FORCE or FORCE_COLOR force it).
    #[default]
    Auto,
    Always,
    Never,
}

/// Reads an environment variable; empty counts as unset, as the conventions below say.
fn set(env: &dyn Fn(&str) -> Option<String>, name: &str) -> Option<String> {
    env(name).filter(|v| !v.is_empty())
}

/// A variable that forces something on: set, and not `0` or `false`.
fn forces(env: &dyn Fn(&str) -> Option<String>, name: &str) -> bool {
    set(env, name).is_some_and(|v| v != "0" && !v.eq_ignore_ascii_case("false"))
}

/// The process environment, for [`color`] and [`width`].
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Whether to colour a report going to a terminal (`terminal`) or elsewhere.
///
/// In order: `--color always|never`; `NO_COLOR` set and non-empty turns colour off
/// (no-color.org); `CLICOLOR_FORCE` or `FORCE_COLOR` set to anything but `0`/`false` turns it
/// on wherever the report goes; `TERM=dumb` or `CLICOLOR=0` turns it off; otherwise colour
/// exactly on a terminal.
pub fn color(choice: ColorChoice, env: &dyn Fn(&str) -> Option<String>, terminal: bool) -> bool {
    match choice {
        ColorChoice::Always => return true,
        ColorChoice::Never => return false,
        ColorChoice::Auto => {}
    }
    if set(env, "NO_COLOR").is_some() {
        return false;
    }
    if forces(env, "CLICOLOR_FORCE") || forces(env, "FORCE_COLOR") {
        return true;
    }
    if set(env, "TERM").as_deref() == Some("dumb") || set(env, "CLICOLOR").as_deref() == Some("0") {
        return false;
    }
    terminal
}

/// The width a text report wraps at; `None`: no wrapping.
///
/// `COLUMNS` holding a positive number wins (a script or a narrow pane asks for a width); on a
/// terminal its width, or 80 where it cannot be read; into a pipe or a file nothing is wrapped,
/// so each message stays on one line for grep and CI logs.
pub fn width(
    env: &dyn Fn(&str) -> Option<String>,
    terminal: bool,
    terminal_columns: impl FnOnce() -> Option<usize>,
) -> Option<usize> {
    let columns = set(env, "COLUMNS").and_then(|c| c.trim().parse::<usize>().ok());
    if let Some(columns) = columns.filter(|&c| c > 0) {
        return Some(columns);
    }
    terminal.then(|| terminal_columns().filter(|&c| c > 0).unwrap_or(80))
}

/// The width of the terminal on standard output, when it can be read.
pub fn stdout_columns() -> Option<usize> {
    let (terminal_size::Width(columns), _) = terminal_size::terminal_size_of(std::io::stdout())?;
    (columns > 0).then_some(usize::from(columns))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn colour_follows_the_flag_then_the_conventions_then_the_terminal() {
        let auto = ColorChoice::Auto;
        assert!(color(auto, &env(&[]), true));
        assert!(!color(auto, &env(&[]), false));
        assert!(!color(auto, &env(&[("NO_COLOR", "1")]), true));
        assert!(
            color(auto, &env(&[("NO_COLOR", "")]), true),
            "empty NO_COLOR is unset"
        );
        assert!(color(auto, &env(&[("CLICOLOR_FORCE", "1")]), false));
        assert!(!color(auto, &env(&[("CLICOLOR_FORCE", "0")]), false));
        assert!(color(auto, &env(&[("FORCE_COLOR", "3")]), false));
        assert!(!color(auto, &env(&[("FORCE_COLOR", "false")]), false));
        assert!(
            !color(auto, &env(&[("NO_COLOR", "1"), ("FORCE_COLOR", "1")]), true),
            "NO_COLOR wins"
        );
        assert!(!color(auto, &env(&[("TERM", "dumb")]), true));
        assert!(!color(auto, &env(&[("CLICOLOR", "0")]), true));
        assert!(color(auto, &env(&[("CLICOLOR", "1")]), true));
        assert!(color(
            auto,
            &env(&[("TERM", "dumb"), ("FORCE_COLOR", "1")]),
            true
        ));
        assert!(color(
            ColorChoice::Always,
            &env(&[("NO_COLOR", "1")]),
            false
        ));
        assert!(!color(
            ColorChoice::Never,
            &env(&[("FORCE_COLOR", "1")]),
            true
        ));
    }

    #[test]
    fn width_is_columns_then_the_terminal_then_none() {
        assert_eq!(width(&env(&[("COLUMNS", "60")]), false, || None), Some(60));
        assert_eq!(
            width(&env(&[("COLUMNS", "60")]), true, || Some(120)),
            Some(60)
        );
        assert_eq!(width(&env(&[]), true, || Some(120)), Some(120));
        assert_eq!(width(&env(&[]), true, || None), Some(80));
        assert_eq!(width(&env(&[("COLUMNS", "wide")]), true, || None), Some(80));
        assert_eq!(width(&env(&[("COLUMNS", "0")]), false, || None), None);
        assert_eq!(
            width(&env(&[]), false, || Some(120)),
            None,
            "a pipe is not wrapped"
        );
    }
}
