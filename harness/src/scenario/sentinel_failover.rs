//! Sentinel failover: the advice "one Redis plus Sentinel is enough", put
//! to the test. The master dies after granting the lock and before its
//! replicas have it; the Sentinels, not the harness, agree that it is down
//! and promote a replica; a second client asks the Sentinels for the
//! master and takes the lock. One item is for sale.
//!
//! 1. A master, two replicas in sync, three Sentinels (see
//!    `topology/sentinel.rs`). Replication is held back, as it is for a
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
//! With [`Confirm::Wait`], client-A confirms its lock as Redisson does:
//! `WAIT 1 <timeout>` after the lock write (sent again while it answers 0,
//! a second in all), and a lock no replica has acknowledged is given back. Held replication makes `WAIT` answer
//! 0, so A never enters. With [`Confirm::WaitOtherReplicaPromoted`] only
//! replica2 is held back: replica1 acknowledges, A enters, and then the
//! master and replica1 die together (one rack); the Sentinels promote
//! replica2, which never had the lock. `WAIT` counts acknowledgements; it
//! does not choose who is promoted.
//!
//! `WAIT` covers the writes of the connection that sends it, and the lock's
//! connection is inside the stage. So A's lock library writes a marker on a
//! connection of its own after the lock write, then waits for that: a
//! replica that has the marker has everything written before it, the lock
//! included.
//!
//! Facts: `lock_on_new_master` (1 when the promoted replica had A's lock
//! key) and `b_acquired`, each 1 or 0; with a confirmation,
//! `replicas_acknowledged` (what `WAIT` answered).

use lockcore::{Description, StageEntry};

use super::steps::{
    Stale, a_stale_b_on_new_master, b_buys_alone, note_lock_on_new_master, wait_for_replicas,
};
use super::{Recorded, Run, ScenarioEnv};
use crate::error::{HarnessError, Result};
use crate::topology::sentinel::{SentinelTopology, Wiring};

/// Items for sale: one, so a second order is an oversell.
const STOCK: i64 = 1;
/// The master's place among the run's lock nodes.
const MASTER: usize = 0;
/// The replica that, with [`Confirm::WaitOtherReplicaPromoted`], receives
/// the lock, acknowledges it, and dies with the master.
const ACKNOWLEDGING: usize = 1;

/// How client-A makes sure of its lock before it enters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Confirm {
    /// It does not: the lock write's `OK` is enough.
    Nothing,
    /// `WAIT 1`, with replication held back on every replica.
    Wait,
    /// `WAIT 1`, with one replica acknowledging, which then dies with the
    /// master.
    WaitOtherReplicaPromoted,
}

/// Where the story does not apply: a consensus store has no Sentinels,
/// and the plain failover's reasons hold here too.
pub(super) fn not_applicable(stage: &Description) -> Option<&'static str> {
    let reason = "ZooKeeper: no Sentinels; the ensemble elects its own leader";
    super::ensemble::redis_only(stage, reason).or_else(|| super::steps::not_on_replicas(stage))
}

pub(super) async fn run(stage: StageEntry, env: ScenarioEnv, confirm: Confirm) -> Result<Recorded> {
    let (mut run, mut sentinels) =
        Run::start_with_sentinels(stage, env, STOCK, &[], Wiring::Links).await?;
    let timing = run.env.timing;
    let a = run.client("client-A").await?;

    // 1. Replication is held back.
    if confirm == Confirm::WaitOtherReplicaPromoted {
        sentinels.hold_replication_except(ACKNOWLEDGING);
        run.narrate("replication held back to replica2; replica1 still receives everything");
    } else {
        sentinels.hold_replication();
        run.narrate(
            "replication held back: from now on nothing the master sends reaches a replica",
        );
    }

    // 2. A takes the lock on the master the Sentinels named.
    let held_a = a.acquire_free(timing.patience()).await?;
    if confirm != Confirm::Nothing {
        let acknowledged =
            wait_for_replicas(&run, &sentinels.url(), a.name(), "lockstages:confirm").await?;
        run.facts.insert("replicas_acknowledged", acknowledged);
        if acknowledged == 0 {
            run.narrate("no replica acknowledged client-A's lock: client-A gives it back and does not enter");
            let _ = a.release(&held_a).await?;
        } else {
            run.narrate(format!(
                "{acknowledged} replica(s) acknowledged client-A's lock: client-A enters"
            ));
        }
        if acknowledged == 0 {
            return finish_without_a(run, sentinels).await;
        }
    }
    let read_a = a.read_stock(&held_a).await?;

    // 3. The master dies with the only copy of A's lock. In the one-rack
    // story replica1 dies first: the Sentinels must never see the master
    // down while replica1 is still there to promote. On Docker a kill is a
    // call to the engine, and on a busy machine its answer came more than
    // the Sentinels' down-after (500 ms) later; killed the other way round,
    // replica1 was elected before its own kill landed.
    if confirm == Confirm::WaitOtherReplicaPromoted {
        run.unwatch(ACKNOWLEDGING).await?;
        run.nodes[ACKNOWLEDGING].kill().await?;
    }
    run.unwatch(MASTER).await?;
    run.nodes[MASTER].kill().await?;
    sentinels.mark("fault");
    if confirm == Confirm::WaitOtherReplicaPromoted {
        run.narrate("replica1 and the master KILLED together (one rack; replica1 first): the only replica left never had the lock");
    } else {
        run.narrate("master KILLED with kill -9: client-A's lock was never replicated");
    }

    // 4. The Sentinels decide.
    run.narrate("the harness waits for the Sentinels to fail over");
    let new_master = sentinels.wait_for_switch().await?;
    // Reconfiguring a server, a Sentinel also closes its clients' connections
    // (CLIENT KILL TYPE normal), the harness's MONITOR among them.
    for replica in MASTER + 1..run.nodes.len() {
        if confirm != Confirm::WaitOtherReplicaPromoted || replica != ACKNOWLEDGING {
            run.watch_again(replica).await?;
        }
    }
    let promoted = run
        .nodes
        .iter()
        .position(|node| node.addr().to_string() == new_master)
        .ok_or_else(|| {
            HarnessError::StoryNotTold(format!(
                "the Sentinels promoted {new_master}, not a replica of this run"
            ))
        })?;
    let subject = format!("the Sentinels promoted {}; it", run.nodes[promoted].label());
    note_lock_on_new_master(&mut run, promoted, &subject).await?;

    // 5 and 6: B asks the Sentinels for the master.
    let b = run.client("client-B").await?;
    let stale = Stale {
        a: &a,
        held_a: &held_a,
        read_a,
    };
    a_stale_b_on_new_master(&mut run, stale, &b, "the one the Sentinels promoted").await?;
    sentinels.stop_watching(run.timeline());
    run.record().await
}

/// The end of the story when client-A gave its lock back: the master dies
/// anyway, the Sentinels fail over, client-B takes the lock and buys.
async fn finish_without_a(mut run: Run, mut sentinels: SentinelTopology) -> Result<Recorded> {
    run.unwatch(MASTER).await?;
    run.nodes[MASTER].kill().await?;
    sentinels.mark("fault");
    run.narrate("master KILLED with kill -9");
    sentinels.wait_for_switch().await?;
    for replica in MASTER + 1..run.nodes.len() {
        run.watch_again(replica).await?;
    }
    b_buys_alone(&mut run).await?;
    sentinels.stop_watching(run.timeline());
    run.record().await
}
