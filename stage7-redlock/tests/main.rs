//! Stage 7's tests, one test binary: `cargo test` runs a package's test binaries
//! one after another and the tests inside one binary side by side, and
//! these mostly wait on real servers (TTLs, elections, failovers), so one
//! binary lets the waits overlap. Each file is one story or one subject;
//! `cargo test -p stage7 <file>::` runs one file's tests. A new file is
//! listed here (the package turns off `autotests`).

// The kill tests start this binary again as a holder process.
harness::holder_entry!(stage7::STAGE);

mod bounds;
mod extend;
mod gc_pause;
mod holder_config;
mod late_answers;
mod network_delay;
mod node_loss;
mod release_outcome;
mod restart_and_clock;
