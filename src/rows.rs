//! The rows of the matrix. A row is either a stage of the course
//! (`stages.rs`: its lock runs in this process) or a command that speaks
//! the holder protocol (`harness::holder::protocol`): a lock library's
//! adapter (`libraries/`) or a reader's own lock (`--holder-cmd`). Every
//! client of a command's row is a holder process running that command.

use std::path::Path;

use harness::ScenarioEnv;
use harness::holder::Launcher;
use harness::holder::remote::{COMMAND_ROW, row_description, row_entry};
use harness::server::Backend;
use harness::workload::Fencing;
use lockcore::StageEntry;

use crate::{Failure, libraries, stages};

/// One row: what the cells of the matrix run.
#[derive(Debug, Clone)]
pub struct Row {
    /// The stage, or the command's description (its `connect` unused).
    pub entry: StageEntry,
    /// `Some` for a row that is a command.
    pub command: Option<Launcher>,
}

impl Row {
    /// A stage's row.
    pub fn stage(entry: StageEntry) -> Self {
        Self {
            entry,
            command: None,
        }
    }

    /// The row of a reader's own lock: `command_line` (`--holder-cmd`),
    /// called `name` (`--name`). Bad input (an empty or taken name, an
    /// unclosed quote, a program that is not there) is an error saying so.
    pub fn holder_command(name: &str, command_line: &str) -> Result<Self, Failure> {
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(Failure::bad_input(format!(
                "--name `{name}`: a row's name is one word, such as my-lock"
            )));
        }
        if stages::find(name).is_some() || libraries::find(name).is_some() {
            return Err(Failure::bad_input(format!(
                "--name `{name}` is already a row of the matrix; choose another"
            )));
        }
        let launcher = Launcher::parse(command_line)
            .map_err(|e| Failure::bad_input(format!("--holder-cmd: {e}")))?;
        check_program(launcher.program_path(), command_line)?;
        // The name lives as long as the command: the row's description
        // holds it as the stages' hold theirs.
        let name: &'static str = Box::leak(name.to_owned().into_boxed_str());
        let title = Box::leak(format!("your lock: {command_line}").into_boxed_str());
        Ok(Self::command(row_description(name, title), launcher))
    }

    /// The row of a command described by `description`.
    pub fn command(description: lockcore::Description, launcher: Launcher) -> Self {
        Self {
            entry: row_entry(description),
            command: Some(launcher),
        }
    }

    /// The row's name.
    pub fn name(&self) -> &'static str {
        self.entry.description.name
    }

    /// The environment a story of this row runs in.
    pub fn env(&self, backend: Backend, fencing: Fencing) -> Result<ScenarioEnv, Failure> {
        Ok(match &self.command {
            None => ScenarioEnv::new(
                backend,
                crate::commands::stage_launcher(&self.entry)?,
                fencing,
            ),
            Some(command) => ScenarioEnv::new(backend, command.clone(), fencing)
                .with_holder_command(command.clone()),
        })
    }
}

/// Whether a row's description is a command's.
pub fn is_command(entry: &StageEntry) -> bool {
    entry.description.stage == COMMAND_ROW
}

/// The stage or library called `name` (`stage4`, `4`, `rslock`).
pub fn find(name: &str) -> Option<Row> {
    stages::find(name)
        .map(Row::stage)
        .or_else(|| libraries::find(name).map(|library| library.row()))
}

/// Fails, naming the command, when its program is not there to run: once,
/// before any cell, rather than in every cell.
fn check_program(program: &Path, command_line: &str) -> Result<(), Failure> {
    let found = if program.components().count() > 1 {
        program.is_file()
    } else {
        std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
    };
    if found {
        Ok(())
    } else {
        Err(Failure::bad_input(format!(
            "--holder-cmd `{command_line}`: there is no program `{}` to run{}",
            program.display(),
            if program.components().count() > 1 {
                ""
            } else {
                " on the PATH"
            }
        )))
    }
}
