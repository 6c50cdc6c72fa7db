//! One module per subcommand.

pub mod explore;
pub mod holder;
mod list;
mod matrix;
mod run;

use harness::Scenario;
use lockcore::StageEntry;

use crate::cli::Command;
use crate::{Failure, stages};

/// Runs a subcommand that needs the async runtime.
pub async fn dispatch(command: Command) -> Result<(), Failure> {
    match command {
        Command::List => {
            list::print();
            Ok(())
        }
        Command::Run { stage, scenario } => {
            run::run(stage_named(&stage)?, scenario_named(&scenario)?).await
        }
        Command::Matrix {
            stages,
            scenarios,
            json,
            out,
            jobs,
        } => matrix::run(&stages, &scenarios, json, &out, jobs).await,
        Command::Explore(args) => explore::run(args).await,
        Command::Holder { .. } => unreachable!("the holder runs without the CLI's runtime"),
    }
}

/// The stage called `name`, or a clear error naming the choices.
pub fn stage_named(name: &str) -> Result<StageEntry, Failure> {
    stages::find(name).ok_or_else(|| {
        Failure::bad_input(format!(
            "unknown stage `{name}`; the stages are {}",
            stages::names()
        ))
    })
}

/// The scenario called `name`, or a clear error naming the choices.
pub fn scenario_named(name: &str) -> Result<&'static Scenario, Failure> {
    harness::scenario::find(name).ok_or_else(|| {
        let names: Vec<&str> = harness::SCENARIOS.iter().map(|s| s.name).collect();
        Failure::bad_input(format!(
            "unknown scenario `{name}`; the scenarios are {}",
            names.join(", ")
        ))
    })
}
