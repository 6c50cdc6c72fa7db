//! `lockstages list`.

use harness::SCENARIOS;

use crate::libraries::LIBRARIES;
use crate::stages::STAGES;

/// Prints the stages and the scenarios.
pub fn print() {
    println!("Stages:");
    // Titles and the indented lines under them line up after the longest
    // stage name (`stage6-fair`), as the scenarios' do below.
    let width = STAGES
        .iter()
        .map(|s| s.description.name.len())
        .max()
        .unwrap_or(0);
    let indent = " ".repeat(width + 3);
    for stage in STAGES {
        let d = stage.description;
        println!("  {:<width$} {}", d.name, d.title);
        println!("{indent}take:      {}", d.acquire_commands);
        println!("{indent}give back: {}", d.release_commands);
        if !d.fault_points.is_empty() {
            let points: Vec<&str> = d.fault_points.iter().map(|p| p.name()).collect();
            println!("{indent}fault points: {}", points.join(", "));
        }
    }
    println!("\nLibraries (rows whose clients are holder processes; see --library):");
    let width = LIBRARIES.iter().map(|l| l.name.len()).max().unwrap_or(0);
    for library in LIBRARIES {
        println!(
            "  {:<width$} {} {}",
            library.name, library.version, library.title
        );
    }
    if LIBRARIES.is_empty() {
        println!("  (none yet)");
    }
    println!(
        "  and your own: matrix --holder-cmd \"<command>\" --name <row> (book: Bring your own lock)"
    );
    println!("\nScenarios:");
    // The titles line up after the longest name, whatever it is.
    let width = SCENARIOS.iter().map(|s| s.name.len()).max().unwrap_or(0);
    for scenario in SCENARIOS {
        println!("  {:<width$}  {}", scenario.name, scenario.title);
    }
    println!("\nRun one: cargo run --release -- run stage4 get-del-race");
}
