//! The command line.

use clap::{Parser, Subcommand};

/// Redis distributed locks, stage by stage, against every fault.
#[derive(Debug, Parser)]
#[command(name = "lockstages", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Lists the stages and the scenarios.
    List,
    /// Runs one scenario against one stage and prints its timeline and verdict.
    Run {
        /// `stage0` (no lock) to `stage8`, or just the number.
        stage: String,
        /// A scenario name, as `lockstages list` shows.
        scenario: String,
    },
    /// Runs every scenario against every stage and compares each cell with
    /// the expected matrix. Exits 1, listing the cells, when any differs.
    Matrix {
        /// Only these stages (repeatable): `stage4` or `4`.
        #[arg(long = "stage")]
        stages: Vec<String>,
        /// Only these scenarios (repeatable).
        #[arg(long = "scenario")]
        scenarios: Vec<String>,
        /// Print the matrix as JSON on stdout instead of the table.
        #[arg(long)]
        json: bool,
        /// Where to write matrix.md and matrix.json.
        #[arg(long, default_value = "target/matrix")]
        out: std::path::PathBuf,
        /// How many cells run at once.
        #[arg(long, default_value_t = crate::matrix::DEFAULT_JOBS)]
        jobs: usize,
    },
    /// Interview questions, each answered by live runs: predict first, then
    /// watch. Without a number, lists them (and, on a terminal, asks which).
    Interview {
        /// The question's number, as the list shows it.
        number: Option<String>,
        /// Ask for nothing: run straight through (for CI and for reading).
        #[arg(long)]
        no_input: bool,
        /// Print the book's interview questions as Markdown instead.
        #[arg(long, hide = true)]
        markdown: bool,
    },
    /// Internal: a lock holder process, driven over stdin by a scenario.
    #[command(hide = true)]
    Holder {
        /// The stage whose lock the holder takes.
        #[arg(long)]
        stage: String,
    },
}
