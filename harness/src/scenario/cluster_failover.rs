//! Cluster failover: the other half of the advice "Sentinel or Cluster is
//! enough", put to the test. The master that serves the lock key's slot
//! dies after granting the lock and before its replica has it; the cluster,
//! not the harness, finds it down and promotes the replica; a second
//! client, whose cluster client now finds the slot on the promoted
//! replica, takes the lock. One item is for sale.
//!
//! 1. A cluster of three masters and three replicas (see
//!    `topology/cluster.rs`); master1 serves the lock key's slot. What
//!    master1 sends replica1 is held back, as it is for a moment after
//!    every write (on Docker, master1 refuses its replica instead).
//! 2. client-A takes the lock (its cluster client sends it to master1) and
//!    reads the stock (1).
//! 3. master1 is killed with `kill -9`.
//! 4. The harness waits: master2 finds master1 silent (`+pfail`), the
//!    masters agree (`+fail`), replica1 wins an election among the masters
//!    and serves the slot (`+promoted`).
//! 5. client-B, a new client of the cluster, asks for the lock: the slot's
//!    master is now replica1, which never saw A's lock. B gets it and buys.
//! 6. client-A, still believing it holds the lock, finishes its purchase,
//!    and gives the lock back: its cluster client follows the slot to the
//!    new master, where the lock is B's.
//!
//! With [`Confirm::Wait`], client-A confirms its lock with `WAIT 1` as in
//! the Sentinel story (`sentinel_failover.rs`): a marker written in the
//! lock key's slot (so on the lock's master) on a connection of its own to
//! that master, then `WAIT 1` for it. The replica's stream is held, `WAIT`
//! answers 0, and A gives its lock back without entering.
//!
//! Facts: `slot` (the lock key's), `lock_on_new_master` and `b_acquired`,
//! each 1 or 0; with a confirmation, `replicas_acknowledged`.

use lockcore::{Description, StageEntry};

use super::steps::{
    Stale, a_stale_b_on_new_master, b_buys_alone, not_on_a_cluster, note_lock_on_new_master,
    wait_for_replicas,
};
use super::{Recorded, Run, ScenarioEnv};
use crate::error::Result;
use crate::topology::cluster::ClusterTopology;

/// Items for sale: one, so a second order is an oversell.
const STOCK: i64 = 1;
/// The master of the lock key's slot among the run's nodes.
const MASTER: usize = 0;
/// Its replica.
const REPLICA: usize = 1;
/// The nodes that survive the master: those asked whether the replica
/// now serves the slot.
const SURVIVORS: [usize; 5] = [1, 2, 3, 4, 5];

/// How client-A makes sure of its lock before it enters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Confirm {
    /// It does not: the lock write's `OK` is enough.
    Nothing,
    /// `WAIT 1` on the lock's master.
    Wait,
}

/// Where the cluster stories do not apply.
pub(super) fn not_applicable(stage: &Description) -> Option<&'static str> {
    super::ensemble::redis_only(
        stage,
        "ZooKeeper: no Redis Cluster; the ensemble elects its own leader",
    )
    .or_else(|| not_on_a_cluster(stage))
}

pub(super) async fn run(stage: StageEntry, env: ScenarioEnv, confirm: Confirm) -> Result<Recorded> {
    let (mut run, mut cluster) = Run::start_with_cluster(stage, env, STOCK).await?;
    run.facts.insert("slot", i64::from(cluster.slot));
    let timing = run.env.timing;
    let a = run.client("client-A").await?;

    // 1. Replication is held back.
    cluster
        .hold_replication(&run.nodes, MASTER, run.timeline())
        .await?;

    // 2. A takes the lock; its cluster client sends it to master1.
    let held_a = a.acquire_free(timing.patience()).await?;
    if confirm == Confirm::Wait {
        let marker = format!("{{{}}}:confirm", run.lock_key());
        let master = cluster.client_url(MASTER);
        let acknowledged = wait_for_replicas(&run, &master, a.name(), &marker).await?;
        run.facts.insert("replicas_acknowledged", acknowledged);
        if acknowledged == 0 {
            run.narrate("no replica acknowledged client-A's lock: client-A gives it back and does not enter");
            let _ = a.release(&held_a).await?;
            return finish_without_a(run, cluster).await;
        }
        run.narrate(format!(
            "{acknowledged} replica(s) acknowledged client-A's lock: client-A enters"
        ));
    }
    let read_a = a.read_stock(&held_a).await?;

    // 3. The master dies with the only copy of A's lock.
    kill_master(&mut run, &cluster).await?;
    run.narrate(format!(
        "master1 KILLED with kill -9: client-A's lock (slot {}) was never replicated",
        cluster.slot
    ));

    // 4. The cluster decides.
    run.narrate("the harness waits for the cluster to fail over");
    cluster
        .wait_for_promotion(&run.nodes, REPLICA, &SURVIVORS)
        .await?;
    note_lock_on_new_master(
        &mut run,
        REPLICA,
        "the cluster promoted replica1, which now serves the slot; it",
    )
    .await?;

    // 5 and 6: B is a new client of the cluster.
    let b = run.client("client-B").await?;
    let stale = Stale {
        a: &a,
        held_a: &held_a,
        read_a,
    };
    a_stale_b_on_new_master(&mut run, stale, &b, "replica1, which the cluster promoted").await?;
    cluster.stop_watching(run.timeline());
    run.record().await
}

/// Kills master1 for good, once its `MONITOR` has shown all it saw.
async fn kill_master(run: &mut Run, cluster: &ClusterTopology) -> Result<()> {
    run.unwatch(MASTER).await?;
    run.nodes[MASTER].kill().await?;
    cluster.mark("fault");
    Ok(())
}

/// The end of the story when client-A gave its lock back: the master dies
/// anyway, the cluster fails over, client-B takes the lock and buys.
async fn finish_without_a(mut run: Run, mut cluster: ClusterTopology) -> Result<Recorded> {
    kill_master(&mut run, &cluster).await?;
    run.narrate("master1 KILLED with kill -9");
    cluster
        .wait_for_promotion(&run.nodes, REPLICA, &SURVIVORS)
        .await?;
    b_buys_alone(&mut run).await?;
    cluster.stop_watching(run.timeline());
    run.record().await
}
