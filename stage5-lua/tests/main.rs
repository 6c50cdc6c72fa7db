//! Stage 5's tests, one test binary: `cargo test` runs a package's test binaries
//! one after another and the tests inside one binary side by side, and
//! these mostly wait on real servers (TTLs, elections, failovers), so one
//! binary lets the waits overlap. Each file is one story or one subject;
//! `cargo test -p stage5 <file>::` runs one file's tests. A new file is
//! listed here (the package turns off `autotests`).

// The kill tests start this binary again as a holder process.
harness::holder_entry!(stage5::STAGE);

mod business_error;
mod cluster;
mod contention;
mod failover;
mod get_del_race;
mod idempotency;
mod sentinel;
mod slow_business;
