//! `lockstages run <stage> <scenario>`: one story, narrated.

use harness::holder::Launcher;
use harness::observe::Finding;
use harness::{Scenario, ScenarioEnv};
use lockcore::StageEntry;

use crate::Failure;

/// How the CLI starts holder processes: itself, with the hidden `holder`
/// subcommand.
pub fn launcher(stage: &StageEntry) -> Result<Launcher, Failure> {
    let exe = std::env::current_exe()
        .map_err(|e| Failure::failed(format!("cannot find this program: {e}")))?;
    Ok(Launcher::program(
        exe,
        vec![
            "holder".into(),
            "--stage".into(),
            stage.description.name.into(),
        ],
    ))
}

/// Runs `scenario` against `stage` and prints the timeline and the verdict.
pub async fn run(stage: StageEntry, scenario: &Scenario) -> Result<(), Failure> {
    let d = stage.description;
    println!("{} x {}: {}", d.name, scenario.name, scenario.title);
    println!("{}: {}\n", d.name, d.title);
    if let Some(reason) = (scenario.not_applicable)(&d) {
        println!("verdict: n/a ({reason})");
        return Ok(());
    }
    let env = ScenarioEnv::from_env(launcher(&stage)?)?;
    let outcome = (scenario.run)(stage, env).await?;
    print!("{}", outcome.timeline.render());
    println!("\nverdict: {}", outcome.verdict);
    for finding in Finding::ALL.into_iter().filter(|f| outcome.verdict.has(*f)) {
        println!("  {:<15} {}", finding.label(), finding.meaning());
    }
    Ok(())
}
