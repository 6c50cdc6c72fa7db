//! A world for stage 10's stories: the harness's own run on a real
//! three-member etcd cluster (started by `Run::start` for stage 10), a
//! Redis "database" node for the stock (never faulted), the history and
//! its timeline, and the judge at the end.

#![allow(dead_code)] // each test file uses its own part

use std::time::Duration;

use harness::holder::Launcher;
use harness::scenario::{Run, ScenarioEnv};
use harness::workload::Fencing;

/// Leases of two seconds, the shortest etcd grants with its default 1 s
/// election timeout: renewed every ~670 ms, so a loaded machine does not
/// expire a living lease by accident, and a story still takes seconds.
pub const LEASE: Duration = Duration::from_secs(2);

/// How long a rival waits: three lease TTLs, so a lease that does expire
/// always frees the lock well within it.
pub fn patience() -> Duration {
    LEASE * 3
}

/// Starts the cluster and the database with `stock` items, the resource
/// checking tokens as `fencing` says; holder processes are this test
/// binary (its `holder_entry!`).
pub async fn start(stock: i64, fencing: Fencing) -> Run {
    let mut env =
        ScenarioEnv::from_env(Launcher::this_test_binary()).unwrap_or_else(|e| panic!("{e}"));
    env.fencing = fencing;
    env.timing.ttl = LEASE;
    let run = Run::start(stage10::STAGE, env, stock)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    run.narrate(format!("the resource's fencing: {}", fencing.label()));
    run
}
