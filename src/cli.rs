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
        /// `stage0` (no lock) to `stage10`, or just the number; a library
        /// (`lockstages list`); or, with `--holder-cmd`, your row's name.
        stage: String,
        /// A scenario name, as `lockstages list` shows.
        scenario: String,
        /// Print the run as a Mermaid sequence diagram instead of the
        /// timeline (the title and verdict go to stderr).
        #[arg(long)]
        diagram: bool,
        /// Print every line the run recorded: nothing folded (a client's
        /// retries, rounds and commands to several nodes are each a line).
        #[arg(long, conflicts_with = "diagram")]
        every_line: bool,
        /// Also write a self-contained page (diagram, timeline, verdict).
        #[arg(long, value_name = "FILE")]
        html: Option<std::path::PathBuf>,
        /// How the resource checks the fencing tokens of stages 8 to 10:
        /// `reads-and-writes` (the fix, the default), `write-only` (the
        /// lesson: try it with `stale-write-first`) or `none` (no check:
        /// try stage 9 or 10 with `gc-pause`).
        #[arg(long, default_value = "reads-and-writes", value_name = "MODE")]
        fencing: String,
        /// The resource charges each purchase's request id once (idempotent
        /// business): try it with `duplicate-request`, and with `gc-pause`
        /// to see what it does not fix.
        #[arg(long)]
        request_ids: bool,
        /// The purchase of `release-before-commit` commits its transaction
        /// before it releases the lock (the fix) instead of after.
        #[arg(long)]
        release_after_commit: bool,
        /// Run your own lock as the row: a command that speaks the holder
        /// protocol (the book's "Bring your own lock"); every client of the
        /// story is a process running it. `<STAGE>` is then its name.
        #[arg(long, value_name = "COMMAND")]
        holder_cmd: Option<String>,
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
        /// How many cells run at once (and besides, as many consensus-store
        /// cells, and a third more Sentinel cells and a third more Redis
        /// Cluster cells: they mostly wait). Default: 3 on processes, 2 on
        /// Docker.
        #[arg(long)]
        jobs: Option<usize>,
        /// Also write the matrix as pages into this folder: index.html and
        /// one page per cell with its diagram and timeline.
        #[arg(long, value_name = "DIR")]
        html: Option<std::path::PathBuf>,
        /// Rows besides the stages.
        #[command(flatten)]
        rows: RowOptions,
    },
    /// Runs every story the book shows and writes its timelines and
    /// diagrams into book/src/generated/.
    BookAssets {
        /// Write nothing: check that every committed file is what the
        /// current format makes of its recorded run, and that every chapter
        /// shows the runs it names.
        #[arg(long)]
        check: bool,
        /// Run nothing: write the timelines and diagrams again from the
        /// recorded runs, in the current format.
        #[arg(long, conflicts_with = "check")]
        render_only: bool,
        /// Run only this one (repeatable): `stage4-get-del-race`. The other
        /// runs, and the chapters' sentences about them, stay as they are.
        #[arg(long, value_name = "STAGE-SCENARIO")]
        only: Vec<String>,
        /// The book's source folder.
        #[arg(long, default_value = "book/src")]
        book: std::path::PathBuf,
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
    /// Random fault schedules against several clients, judged by checkers
    /// that read only the recorded history (Jepsen-style). Exits 1 when
    /// `--check-matrix` disagrees with the expected matrix.
    Explore(crate::commands::explore::Args),
    /// Internal: a lock holder process, driven over stdin by a scenario.
    #[command(hide = true)]
    Holder {
        /// The stage whose lock the holder takes.
        #[arg(long, required_unless_present = "library", conflicts_with = "library")]
        stage: Option<String>,
        /// The library whose lock the holder takes (one of the library rows).
        #[arg(long)]
        library: Option<String>,
    },
}

/// Rows besides the stages, for `matrix` and `explore`.
#[derive(Debug, Clone, clap::Args)]
pub struct RowOptions {
    /// Add your own lock as a row: a command that speaks the holder
    /// protocol (the book's "Bring your own lock"). It has no expected
    /// row: its cells are shown, not compared, and only a cell that could
    /// not run is a failure. Alone (no `--stage`), it is the only row.
    #[arg(long, value_name = "COMMAND", requires = "name")]
    pub holder_cmd: Option<String>,
    /// The name of the `--holder-cmd` row.
    #[arg(long, requires = "holder_cmd")]
    pub name: Option<String>,
    /// Add a lock library's row (repeatable), or `all`: see
    /// `lockstages list`. Alone (no `--stage`), only library rows run.
    #[arg(long = "library", value_name = "NAME")]
    pub libraries: Vec<String>,
}
