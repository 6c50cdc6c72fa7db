//! The lock libraries that are rows of the matrix, beside the stages: each
//! one file here (its adapter to the holder protocol, or the command that
//! runs one) and one line in [`LIBRARIES`].
//!
//! A library's row is a command ([`crate::rows`]): every client of its
//! stories is a holder process. The libraries written in Rust run in this
//! program's hidden subcommand, `lockstages holder --library <name>`.

mod rslock;

use std::process::ExitCode;

use harness::holder::Launcher;
use harness::holder::remote::row_description;

use crate::rows::Row;

/// One library row.
#[derive(Debug, Clone, Copy)]
pub struct Library {
    /// The row's name (`rslock`).
    pub name: &'static str,
    /// The version the row runs, pinned where it is installed.
    pub version: &'static str,
    /// One line: what it is.
    pub title: &'static str,
    /// Serves the protocol on stdin and stdout (`holder --library`).
    pub serve: fn() -> ExitCode,
}

/// Every library row, in the order the matrix shows them.
pub const LIBRARIES: &[Library] = &[rslock::LIBRARY];

/// The library called `name`.
pub fn find(name: &str) -> Option<Library> {
    LIBRARIES.iter().copied().find(|l| l.name == name)
}

/// `rslock, …` for error messages.
pub fn names() -> String {
    LIBRARIES
        .iter()
        .map(|l| l.name)
        .collect::<Vec<_>>()
        .join(", ")
}

impl Library {
    /// The row: this program's `holder --library <name>`, as a command.
    pub fn row(self) -> Row {
        let exe = std::env::current_exe().unwrap_or_else(|_| "lockstages".into());
        let launcher = Launcher::program(
            exe,
            vec!["holder".into(), "--library".into(), self.name.into()],
        );
        Row::command(row_description(self.name, self.title), launcher)
    }
}
