//! `lockstages list`.

use harness::SCENARIOS;

use crate::stages::STAGES;

/// Prints the stages and the scenarios.
pub fn print() {
    println!("Stages:");
    for stage in STAGES {
        let d = stage.description;
        println!("  {:<7} {}", d.name, d.title);
        println!(
            "          take: {}   give back: {}",
            d.acquire_commands, d.release_commands
        );
    }
    println!("\nScenarios:");
    for scenario in SCENARIOS {
        println!("  {:<28} {}", scenario.name, scenario.title);
    }
    println!("\nRun one: cargo run --release -- run stage4 get-del-race");
}
