//! The matrix command's own behaviour. The whole matrix, every cell
//! asserted against the expected matrix, is run once, by CI (`.ci/run`, as
//! `cargo run --release -- matrix`, which exits 1 on a cell that differs),
//! not again here: each story also has its stage's tests, and
//! `tests/cli.rs` runs a small matrix end to end.

use std::process::Command;

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
