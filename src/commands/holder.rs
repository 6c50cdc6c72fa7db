//! `lockstages holder --stage <stage>`: the body of a holder process.

use std::process::ExitCode;

use crate::stages;

/// Serves a scenario's requests on stdin with a client of `stage`.
pub fn serve(stage: &str) -> ExitCode {
    match stages::find(stage) {
        Some(stage) => {
            harness::holder::serve_from_env(&[stage]);
            ExitCode::SUCCESS
        }
        None => {
            eprintln!(
                "error: unknown stage `{stage}`; the stages are {}",
                stages::names()
            );
            ExitCode::from(2)
        }
    }
}
