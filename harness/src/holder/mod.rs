//! A lock holder in a process of its own, so that it can be killed with
//! `kill -9` or frozen with SIGSTOP for real: its sockets, its timers and
//! its watchdog die or freeze with it, as they would in production.
//!
//! The parent hands the child its whole configuration as one JSON value
//! ([`HolderSpec`], in an environment variable), then drives it line by
//! line over stdin; the child answers on stdout with lines starting
//! `@holder `. [`protocol`] is the protocol written down once. A malformed
//! configuration, request or answer is an error, never a zero.
//!
//! The child is a stage's test binary run again
//! ([`holder_entry!`](crate::holder_entry)), the CLI's hidden `holder`
//! subcommand ([`holder_child`](crate::holder_child)), or any program that speaks the protocol: a
//! library's adapter, run as a row of the matrix ([`remote`]).
//!
//! - [`wire`]: the pipe to one process, with errors that name the command
//!   and the line;
//! - [`HolderProcess`]: a holder a story kills, freezes or stalls, its
//!   steps recorded in the run's history;
//! - [`remote`]: the lock and the business of a client whose every step
//!   is a request to a holder process (a `--holder-cmd` row).

pub mod handle;
pub mod launcher;
pub mod protocol;
pub mod remote;
pub mod wire;

pub use handle::HolderProcess;
pub use launcher::Launcher;
pub use protocol::{ANSWER_WITHIN, HolderSpec};

/// The timeline's line for a holder that started and answered `ping`
/// after `took` (a Python adapter loads its library for some 300 ms).
pub(crate) fn started_line(pid: u32, took: std::time::Duration) -> String {
    format!(
        "holder process started (pid {pid}), ready in {}ms",
        took.as_millis()
    )
}

/// Declares the `holder_process` entry point at the root of a stage's test
/// binary, so the kill tests can start that binary again as a holder
/// process of one of `stages` (the one the spec names). It is `#[ignore]`d:
/// it is a process body, not a test.
#[macro_export]
macro_rules! holder_entry {
    ($($stage:expr),+ $(,)?) => {
        #[test]
        #[ignore = "the body of the holder child process that the kill tests start; not a test"]
        fn holder_process() {
            $crate::holder_child::serve_from_env(&[$($stage),+]);
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_malformed_spec_is_an_error() {
        assert!(HolderSpec::from_json(r#"{"name": "client-A"}"#).is_err());
    }
}
