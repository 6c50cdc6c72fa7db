//! The lock libraries that are rows of the matrix, beside the stages: each
//! one file here (what the library does, read in its code, and its rows)
//! and one line a row in [`LIBRARIES`].
//!
//! A library's row is a command ([`crate::rows`]): every client of its
//! stories is a holder process. A library written in Rust runs in this
//! program's hidden subcommand, `lockstages holder --library <name>`; one
//! written in Python runs in its adapter under `adapters/python/`, in a
//! virtual environment made from pinned versions the first time a row
//! needs it.

mod kazoo;
mod pottery;
mod python_redis_lock;
mod redis_py;
mod rslock;

use std::path::PathBuf;
use std::process::ExitCode;

use harness::holder::Launcher;
use harness::holder::remote::row_description;
use lockcore::{Description, Home};

use crate::rows::Row;

/// One library row.
#[derive(Debug, Clone, Copy)]
pub struct Library {
    /// The row's name (`rslock`).
    pub name: &'static str,
    /// The version the row runs, pinned where it is installed.
    pub version: &'static str,
    /// One line: what it is, configured how.
    pub title: &'static str,
    /// How many Redis masters it is given (pottery's Redlock: 5).
    pub nodes: usize,
    /// Where it keeps its lock, under which key, for how short a TTL.
    pub home: Home,
    /// What runs it.
    pub runs: Runs,
}

/// What runs a library's holder.
#[derive(Debug, Clone, Copy)]
pub enum Runs {
    /// This program, which serves the protocol on stdin and stdout with
    /// this function (`holder --library <name>`).
    InProcess(fn() -> ExitCode),
    /// `adapters/python/holder` with these arguments (the adapter, then
    /// its options).
    Python(&'static [&'static str]),
}

/// Every library row, in the order the matrix shows them.
pub const LIBRARIES: &[Library] = &[
    redis_py::LIBRARY,
    redis_py::NO_TIMEOUT,
    python_redis_lock::LIBRARY,
    python_redis_lock::AUTO_RENEWAL,
    python_redis_lock::NO_EXPIRE,
    pottery::LIBRARY,
    kazoo::LIBRARY,
    rslock::LIBRARY,
];

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
    /// The row: the command that runs the library's holder.
    pub fn row(self) -> Row {
        let launcher = match self.runs {
            Runs::InProcess(_) => Launcher::program(
                std::env::current_exe().unwrap_or_else(|_| "lockstages".into()),
                vec!["holder".into(), "--library".into(), self.name.into()],
            ),
            Runs::Python(args) => Launcher::program(
                python_holder(),
                args.iter().map(|a| (*a).to_owned()).collect(),
            ),
        };
        Row::command(self.description(), launcher)
    }

    /// The row's description: a command's, on the library's nodes and home.
    pub fn description(self) -> Description {
        Description {
            nodes: self.nodes,
            home: self.home,
            ..row_description(self.name, self.title)
        }
    }
}

/// The Python adapters' launcher, in this checkout: it makes their
/// virtual environment when there is none, and answers the protocol's
/// error line saying why when it cannot.
fn python_holder() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("adapters/python/holder")
}
