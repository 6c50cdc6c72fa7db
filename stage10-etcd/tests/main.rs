//! Stage 10's tests, one test binary: `cargo test` runs a package's test binaries
//! one after another and the tests inside one binary side by side, and
//! these mostly wait on real servers (TTLs, elections, failovers), so one
//! binary lets the waits overlap. Each file is one story or one subject;
//! `cargo test -p stage10 <file>::` runs one file's tests. A new file is
//! listed here (the package turns off `autotests`).

// The kill tests start this binary again as a holder process.
harness::holder_entry!(stage10::STAGE);

mod cancelled_wait;
mod common;
mod deadline;
mod ensemble;
mod failed_release;
mod killed_holder;
mod lease_lost;
mod partition;
mod paused_holder;
mod recipe;
mod tasks;
