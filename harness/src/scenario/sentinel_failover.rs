//! Sentinel failover: the advice "one Redis plus Sentinel is enough", put
//! to the test. The master dies after granting the lock and before its
//! replicas have it; the Sentinels, not the harness, agree that it is down
//! and promote a replica; a second client asks the Sentinels for the
//! master and takes the lock. One item is for sale.
//!
//! 1. A master, two replicas in sync, three Sentinels (see
//!    `sentinel_topology.rs`). Replication is held back, as it is for a
//!    moment after every write.
//! 2. client-A asks the Sentinels for the master, takes the lock there and
//!    reads the stock (1).
//! 3. The master is killed with `kill -9`.
//! 4. The harness waits: the Sentinels call the master down (`+sdown`),
//!    agree (`+odown`), elect a leader, and promote a replica
//!    (`+switch-master`).
//! 5. client-B asks the Sentinels for the master, now the promoted replica,
//!    which never saw A's lock: B gets it and buys the item.
//! 6. client-A, still believing it holds the lock, finishes its purchase.
//!
//! Facts: `lock_on_new_master` (1 when the promoted replica had A's lock
//! key) and `b_acquired`, each 1 or 0.

use lockcore::StageEntry;

use super::{Outcome, Run, ScenarioEnv};
use crate::error::{HarnessError, Result};

/// Items for sale: one, so a second order is an oversell.
const STOCK: i64 = 1;
/// The master's place among the run's lock nodes.
const MASTER: usize = 0;

pub(super) use super::failover::not_applicable;

pub(super) async fn run(stage: StageEntry, env: ScenarioEnv) -> Result<Outcome> {
    let (mut run, mut sentinels) = Run::start_with_sentinels(stage, env, STOCK, &[]).await?;
    let timing = run.env.timing;
    let a = run.client("client-A").await?;

    // 1. Replication is held back.
    sentinels.hold_replication();
    run.narrate("replication held back: from now on nothing the master sends reaches a replica");

    // 2. A takes the lock on the master the Sentinels named.
    let held_a = a
        .acquire(timing.patience())
        .await?
        .ok_or_else(|| HarnessError::Unsupported("client-A could not take a free lock".into()))?;
    let read_a = a.read_stock().await?;

    // 3. The master dies with the only copy of A's lock.
    run.unwatch(MASTER).await?;
    run.nodes[MASTER].kill().await?;
    run.narrate("master KILLED with kill -9: client-A's lock was never replicated");

    // 4. The Sentinels decide.
    run.narrate("the harness waits for the Sentinels to fail over");
    let new_master = sentinels.wait_for_switch().await?;
    // Reconfiguring a server, a Sentinel also closes its clients' connections
    // (CLIENT KILL TYPE normal), the harness's MONITOR among them.
    for replica in MASTER + 1..run.nodes.len() {
        run.watch_again(replica).await?;
    }
    let promoted = run
        .nodes
        .iter()
        .position(|node| node.addr().to_string() == new_master)
        .ok_or_else(|| {
            HarnessError::Unsupported(format!(
                "the Sentinels promoted {new_master}, not a replica of this run"
            ))
        })?;
    let lock_survived = run.lock_key_exists(promoted).await?;
    run.facts
        .insert("lock_on_new_master", i64::from(lock_survived));
    run.narrate(format!(
        "the Sentinels promoted {}; it {} the lock key",
        run.nodes[promoted].label(),
        if lock_survived {
            "has"
        } else {
            "does NOT have"
        }
    ));

    // 5. B asks the Sentinels for the master.
    let b = run.client("client-B").await?;
    let held_b = b.acquire(timing.patience()).await?;
    run.facts.insert("b_acquired", i64::from(held_b.is_some()));
    if let Some(held_b) = &held_b {
        run.narrate(
            "TWO HOLDERS: client-A (granted by the dead master) and client-B (by the one the Sentinels promoted)",
        );
        b.buy_one(held_b, timing.business).await?;
    }

    // 6. A never learned that its lock is gone.
    run.narrate("client-A, still believing it holds the lock, finishes its purchase");
    a.sell(read_a, &held_a).await?;
    if let Err(e) = a.release(&held_a).await {
        run.narrate(format!(
            "client-A's release cannot reach the dead master: {e}"
        ));
    }
    if let Some(held_b) = held_b {
        // A refusal is already in the timeline.
        let _ = b.release(&held_b).await?;
    }
    sentinels.stop_watching();
    run.finish().await
}
