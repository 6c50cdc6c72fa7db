//! `lockstages`: every stage of a Redis distributed lock against every fault
//! the literature warns about, on real Redis servers.
//!
//! - `lockstages list`: the stages and the scenarios;
//! - `lockstages matrix`: every scenario against every stage, compared with
//!   the expected matrix;
//! - `lockstages run <stage> <scenario>`: one story, narrated as a timeline,
//!   with its verdict;
//! - `lockstages interview [<n>]`: interview questions answered by live
//!   runs, with a prediction first on a terminal;
//! - `lockstages matrix --holder-cmd <command> --name <row>`, `run <row>
//!   <scenario> --holder-cmd <command>`: your own lock as a row, a program
//!   that speaks the holder protocol; `--library` for the library rows;
//! - `lockstages holder --stage <stage>` or `--library <library>`:
//!   (internal) a lock holder process that the scenarios drive, kill or
//!   freeze.
//!
//! Exit codes: 0 done, 1 the run failed, 2 bad input.

mod cli;
mod commands;
mod interview;
mod libraries;
mod matrix;
mod render;
mod rows;
mod stages;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};

/// A failure with its exit code: 2 for bad input, 1 for everything else.
#[derive(Debug)]
pub struct Failure {
    code: u8,
    message: String,
}

impl Failure {
    /// The user asked for something that does not exist.
    pub fn bad_input(message: impl Into<String>) -> Self {
        Self {
            code: 2,
            message: message.into(),
        }
    }

    /// The run could not be done, or did not give what was expected.
    pub fn failed(message: impl Into<String>) -> Self {
        Self {
            code: 1,
            message: message.into(),
        }
    }
}

impl<E: std::fmt::Display> From<E> for Failure
where
    E: Into<harness::HarnessError>,
{
    fn from(error: E) -> Self {
        Self::failed(error.to_string())
    }
}

/// Waits for Ctrl-C, SIGTERM (`kill`, a CI runner's timeout) or SIGHUP (the
/// terminal closed): the signal's name and the exit status a shell gives a
/// process it killed (128 + the signal's number). Without this, SIGTERM and
/// SIGHUP would end the process at once, before the exit that removes the
/// run's data folders.
async fn interrupted() -> (&'static str, u8) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut hangup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        // No handler could be set: only Ctrl-C is caught.
        let _ = tokio::signal::ctrl_c().await;
        return ("interrupted", 130);
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => ("interrupted", 130),
        _ = term.recv() => ("terminated (SIGTERM)", 143),
        _ = hangup.recv() => ("hung up (SIGHUP)", 129),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::Holder { stage, library } = &cli.command {
        return commands::holder::serve(stage.as_deref(), library.as_deref());
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let result = runtime.block_on(async {
        tokio::select! {
            result = commands::dispatch(cli.command) => result,
            (signal, code) = interrupted() => {
                eprintln!("\n{signal}: stopping every server and holder this run started");
                // Cells run on tasks of their own, which the exit below
                // ends without their destructors. The harness's exit
                // handlers stop and wait for every process the run started
                // (harness::process::stop_all), then remove their data
                // folders; the Docker reaper removes the containers and
                // is waited for too.
                Err(Failure { code, message: String::new() })
            }
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            if !failure.message.is_empty() {
                eprintln!("error: {}", failure.message);
            }
            // Leave without running destructors of a half-done run: the
            // exit handlers stop and wait for its processes.
            std::process::exit(i32::from(failure.code));
        }
    }
}
