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
    /// Random fault schedules against several clients, judged by checkers
    /// that read only the recorded history (Jepsen-style). Exits 1 when
    /// `--check-matrix` disagrees with the expected matrix.
    Explore(crate::commands::explore::Args),
    /// Internal: a lock holder process, driven over stdin by a scenario.
    #[command(hide = true)]
    Holder {
        /// The stage whose lock the holder takes.
        #[arg(long)]
        stage: String,
    },
}
