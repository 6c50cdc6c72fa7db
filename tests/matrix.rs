//! The whole matrix, run for real: every stage against every scenario on
//! its own servers (Redis; a ZooKeeper ensemble for stage 9), each cell asserted against the expected matrix.

use std::process::Command;

#[test]
fn every_cell_of_the_matrix_is_what_the_expected_matrix_says() {
    let out = std::env::temp_dir().join(format!("lockstages-matrix-test-{}", std::process::id()));
    let output = Command::new(env!("CARGO_BIN_EXE_lockstages"))
        .args(["matrix", "--json", "--out"])
        .arg(&out)
        .output()
        .expect("the CLI runs");
    let _ = std::fs::remove_dir_all(&out);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON ({e}); stderr:\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let cells = report["cells"].as_array().expect("cells");
    let scenarios = harness::SCENARIOS.len();
    assert_eq!(
        cells.len(),
        10 * scenarios,
        "stage0..stage9 x {scenarios} scenarios"
    );
    let differing: Vec<String> = cells
        .iter()
        .filter(|cell| cell["matches"] != true)
        .map(|cell| {
            format!(
                "{} x {}: got {} ({}), expected {}",
                cell["stage"], cell["scenario"], cell["result"], cell["reason"], cell["expected"]
            )
        })
        .collect();
    assert!(
        differing.is_empty(),
        "cells that differ:\n{}",
        differing.join("\n")
    );
    assert_eq!(
        output.status.code(),
        Some(0),
        "exit code 0 when every cell matches"
    );
}

#[test]
fn zero_jobs_is_refused_with_exit_2_before_anything_runs() {
    let output = Command::new(env!("CARGO_BIN_EXE_lockstages"))
        .args(["matrix", "--jobs", "0"])
        .output()
        .expect("the CLI runs");
    assert_eq!(output.status.code(), Some(2));
    let error = String::from_utf8_lossy(&output.stderr);
    assert!(error.contains("--jobs 0"), "{error}");
}
