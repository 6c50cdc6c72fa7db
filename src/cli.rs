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
    /// Internal: a lock holder process, driven over stdin by a scenario.
    #[command(hide = true)]
    Holder {
        /// The stage whose lock the holder takes.
        #[arg(long)]
        stage: String,
    },
}
