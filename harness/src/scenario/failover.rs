//! Failover: the master grants a lock and dies before its replica has it;
//! the replica is promoted, and the lock is gone. One item is for sale.
//!
//! 1. A master and an asynchronous replica, in sync. Replication is then
//!    held back: what the master sends stays on the way, as it does for a
//!    moment after every write. In production that window is usually under
//!    a millisecond; here it stays open (see `replicated.rs`).
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

use lockcore::{Acquired, Description, StageEntry};

use super::{Recorded, Run, ScenarioEnv};
use crate::client::Client;
use crate::error::Result;

/// Items for sale: one, so a second order is an oversell.
const STOCK: i64 = 1;
/// The master's place among the run's lock nodes.
const MASTER: usize = 0;
/// The replica's.
const REPLICA: usize = 1;

pub(super) fn not_applicable(stage: &Description) -> Option<&'static str> {
    if stage.stage == 0 {
        Some("no lock to lose")
    } else if stage.nodes > 1 {
        Some("Redlock uses independent masters, no replicas")
    } else {
        None
    }
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
    run.promote(REPLICA).await?;
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

/// Whether `nodes[promoted]`, now the master, had client-A's lock key: the
/// fact `lock_on_new_master`, and a line saying it of `subject`.
pub(super) async fn note_lock_on_new_master(
    run: &mut Run,
    promoted: usize,
    subject: &str,
) -> Result<()> {
    let lock_survived = run.lock_key_exists(promoted).await?;
    run.facts
        .insert("lock_on_new_master", i64::from(lock_survived));
    let has = if lock_survived {
        "has"
    } else {
        "does NOT have"
    };
    run.narrate(format!("{subject} {has} the lock key"));
    Ok(())
}

/// client-A after its master died: it still believes it holds the lock,
/// and has read the stock.
pub(super) struct Stale<'a> {
    pub a: &'a Client,
    pub held_a: &'a Acquired,
    pub read_a: i64,
}

/// The end of every failover story: client-B asks the new master (granted
/// by `granted_by`) for the lock and buys, then client-A, who never
/// learned its lock is gone, finishes its purchase on the stock it read
/// and releases towards the dead master.
pub(super) async fn a_stale_b_on_new_master(
    run: &mut Run,
    stale: Stale<'_>,
    b: &Client,
    granted_by: &str,
) -> Result<()> {
    let timing = run.env.timing;
    // 5. B finds the new master.
    let held_b = b.acquire(timing.patience()).await?;
    run.facts.insert("b_acquired", i64::from(held_b.is_some()));
    if let Some(held_b) = &held_b {
        run.narrate(format!(
            "TWO HOLDERS: client-A (granted by the dead master) and client-B (by {granted_by})"
        ));
        b.buy_one(held_b, timing.business).await?;
    }

    // 6. A never learned that its lock is gone.
    run.narrate("client-A, still believing it holds the lock, finishes its purchase");
    stale.a.sell(stale.read_a, stale.held_a).await?;
    if let Err(e) = stale.a.release(stale.held_a).await {
        run.narrate(format!(
            "client-A's release cannot reach the dead master: {e}"
        ));
    }
    if let Some(held_b) = held_b {
        // A refusal is already in the timeline.
        let _ = b.release(&held_b).await?;
    }
    Ok(())
}
