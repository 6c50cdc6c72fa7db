//! Stage 6's tests, one test binary: `cargo test` runs a package's test binaries
//! one after another and the tests inside one binary side by side, and
//! these mostly wait on real servers (TTLs, elections, failovers), so one
//! binary lets the waits overlap. Each file is one story or one subject;
//! `cargo test -p stage6 <file>::` runs one file's tests. A new file is
//! listed here (the package turns off `autotests`).

// The kill tests start this binary again as a holder process.
harness::holder_entry!(stage6::STAGE, stage6::fair::STAGE);

mod bounds;
mod business_error;
mod failover;
mod fair;
mod fair_failures;
mod gc_pause;
mod interleavings;
mod killed_holder;
mod lease;
mod pubsub_wait;
mod reentrant;
mod shared_subscription;
mod slow_business;
mod watchdog_stops;
