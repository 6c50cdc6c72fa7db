//! `lockstages holder --stage <stage>` or `--library <library>`: the body
//! of a holder process.

use std::process::ExitCode;

use crate::{libraries, stages};

/// Serves a scenario's requests on stdin with a client of `stage`, or of
/// `library`.
pub fn serve(stage: Option<&str>, library: Option<&str>) -> ExitCode {
    if let Some(name) = library {
        return match libraries::find(name).map(|library| library.runs) {
            Some(libraries::Runs::InProcess(serve)) => serve(),
            // A library with an adapter of its own is not served here.
            Some(libraries::Runs::Python(_)) | None => {
                eprintln!(
                    "error: unknown library `{name}`; the libraries are {}",
                    libraries::names()
                );
                ExitCode::from(2)
            }
        };
    }
    let stage = stage.unwrap_or_default();
    match stages::find(stage) {
        Some(stage) => {
            harness::holder_child::serve_from_env(&[stage]);
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
