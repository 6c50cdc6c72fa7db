//! Colour on a terminal, as cargo and most command-line tools do it: only
//! when stdout is a terminal, and never when `NO_COLOR` is set to anything
//! (<https://no-color.org>). Piped or redirected output stays plain text.

use std::io::IsTerminal;

/// How a piece of a table is painted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paint {
    /// Nothing went wrong: green.
    Good,
    /// The lock said no, safely: cyan.
    Refused,
    /// An observer fired: red.
    Bad,
    /// Not applicable, nothing to see: dim.
    Quiet,
    /// Not what was expected, or could not run: bold yellow on the mark.
    Alarm,
}

/// Whether to colour what goes to stdout.
pub fn colour_wanted() -> bool {
    let no_colour = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    !no_colour && std::io::stdout().is_terminal()
}

/// `text` painted as `paint` when `colour`, unchanged otherwise. Pad
/// before painting: the escape codes take no room on screen but count in
/// `format!`'s widths.
pub fn paint(text: &str, paint: Paint, colour: bool) -> String {
    if !colour {
        return text.to_owned();
    }
    let code = match paint {
        Paint::Good => "32",
        Paint::Refused => "36",
        Paint::Bad => "31",
        Paint::Quiet => "2",
        Paint::Alarm => "1;33",
    };
    format!("\x1b[{code}m{text}\x1b[0m")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_has_no_escape_codes_and_colour_wraps_the_text() {
        assert_eq!(paint("ok", Paint::Good, false), "ok");
        let painted = paint("ok", Paint::Good, true);
        assert!(painted.starts_with("\x1b[32m") && painted.ends_with("\x1b[0m"));
        assert!(painted.contains("ok"));
    }
}
