//! Failover: the master grants a lock and dies before its replica has it;
//! the replica is promoted, and the lock is gone. One item is for sale.
//!
//! 1. A master and an asynchronous replica, in sync. Replication is then
//!    held back: what the master sends stays on the way, as it does for a
//!    moment after every write. In production that window is usually under
//!    a millisecond; here it stays open (see `topology/replicated.rs`).
//! 2. client-A takes the lock on the master and reads the stock (1).
//! 3. The master is killed with `kill -9`.
//! 4. The replica is promoted (`REPLICAOF NO ONE`).
//! 5. client-B, a client that finds the new master, asks for the lock. The
//!    new master never saw A's lock: B gets it, and buys the item.
//! 6. client-A, still believing it holds the lock, finishes its purchase on
//!    the stock it read: a second order for one item. Its release goes to
//!    the dead master.
//!
//! The database node is never faulted: what fails is the lock.
//!
//! Facts: `lock_on_new_master` (1 when the promoted replica had A's lock
//! key) and `b_acquired`, each 1 or 0.

use lockcore::{Description, StageEntry};

use super::steps::{Stale, a_stale_b_on_new_master, note_lock_on_new_master};
use super::{Recorded, Run, ScenarioEnv};
use crate::error::Result;
use crate::fault::node;

/// Items for sale: one, so a second order is an oversell.
const STOCK: i64 = 1;
/// The master's place among the run's lock nodes.
const MASTER: usize = 0;
/// The replica's.
const REPLICA: usize = 1;

/// Where the story does not apply: a consensus store has no replica to
/// promote, and a stage must keep its lock on one node to lose it there.
pub(super) fn not_applicable(stage: &Description) -> Option<&'static str> {
    let consensus =
        "ZooKeeper: no master and replica; its leader killed is the leader-killed column";
    super::ensemble::redis_only(stage, consensus).or_else(|| super::steps::not_on_replicas(stage))
}

pub(super) async fn run(stage: StageEntry, env: ScenarioEnv) -> Result<Recorded> {
    let (mut run, link) = Run::start_replicated(stage, env, STOCK).await?;
    let timing = run.env.timing;
    let a = run.client("client-A").await?;

    // 1. Replication is held back.
    link.hold();
    run.narrate("replication held back: from now on nothing the master sends reaches the replica");

    // 2. A takes the lock on the master and starts its business.
    let held_a = a.acquire_free(timing.patience()).await?;
    let read_a = a.read_stock(&held_a).await?;

    // 3. The master dies with the only copy of A's lock.
    run.unwatch(MASTER).await?;
    run.nodes[MASTER].kill().await?;
    run.narrate("master KILLED with kill -9: client-A's lock was never replicated");

    // 4. The replica takes over.
    run.narrate("promoting the replica: REPLICAOF NO ONE");
    node::promote(&run.nodes[REPLICA]).await?;
    note_lock_on_new_master(&mut run, REPLICA, "the new master").await?;

    // 5 and 6.
    let b = run
        .factory
        .client_at("client-B", vec![run.nodes[REPLICA].url()])
        .await?;
    a_stale_b_on_new_master(
        &mut run,
        Stale {
            a: &a,
            held_a: &held_a,
            read_a,
        },
        &b,
        "the new one",
    )
    .await?;
    let outcome = run.record().await;
    drop(link);
    outcome
}
