//! `lockstages list`.

use harness::SCENARIOS;

use crate::stages::STAGES;

/// Prints the stages and the scenarios.
pub fn print() {
    println!("Stages:");
    for stage in STAGES {
        let d = stage.description;
        println!("  {:<7} {}", d.name, d.title);
        println!("          take:      {}", d.acquire_commands);
        println!("          give back: {}", d.release_commands);
        if !d.fault_points.is_empty() {
            let points: Vec<&str> = d.fault_points.iter().map(|p| p.name()).collect();
            println!("          fault points: {}", points.join(", "));
        }
    }
    println!("\nScenarios:");
    // The titles line up after the longest name, whatever it is.
    let width = SCENARIOS.iter().map(|s| s.name.len()).max().unwrap_or(0);
    for scenario in SCENARIOS {
        println!("  {:<width$}  {}", scenario.name, scenario.title);
    }
    println!("\nRun one: cargo run --release -- run stage4 get-del-race");
}
