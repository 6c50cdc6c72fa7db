//! Cluster partition: the master of the lock key's slot is cut off from
//! the rest of the cluster, but not from client-A, who takes the lock
//! there. `cluster-node-timeout` decides both sides: the cut-off master
//! stops taking writes once it has heard from no majority of masters for
//! that long (`cluster_state:fail`), and the majority calls it failed and
//! promotes its replica after about as long, plus an election. Between the
//! cut and the first, the old master still grants locks; after the second,
//! the new one does. One item is for sale.
//!
//! 1. A cluster (see `topology/cluster.rs`); client-A knows it by master1
//!    alone (it is on master1's side; on Docker it talks to master1
//!    directly, see `ClusterTopology::url_on_side_of`).
//! 2. The partition: the cluster bus between master1 and every other
//!    node, and master1's replication to replica1, drop everything both
//!    ways (on Docker, master1 refuses its replica and is disconnected
//!    from the run's network). Clients still reach every node.
//! 3. client-A takes the lock on master1 at once, well inside the node
//!    timeout, and reads the stock (1). On Docker "at once" means without
//!    waiting for the engine's answer to the disconnect, which can come
//!    later than the node timeout on a busy machine; replica1 is refused
//!    either way.
//! 4. The harness waits until master1 refuses writes (`cluster_state:fail`:
//!    it counts no majority of masters) and measures how long after the cut
//!    that was: the window in which it still granted locks.
//! 5. The majority promotes replica1 (`+fail`, `+promoted`); client-B,
//!    who knows the cluster by the five other nodes, takes the lock there:
//!    TWO HOLDERS. B buys the item.
//! 6. client-A finishes its purchase on the stock it read.
//! 7. The cut heals: master1 hears of the newer epoch for its slots and
//!    becomes a replica of replica1 (`+demoted`); it resyncs, and A's lock
//!    key is gone from it.
//!
//! Facts: `slot`, `a_acquired`, `b_acquired`, `old_master_kept_lock`
//! (after the heal), each 1 or 0 but the slot, and
//! `ms_until_writes_refused`.

use std::time::{Duration, Instant};

use lockcore::{Description, StageEntry};

use super::steps::{
    a_asks_the_cut_off_master, a_releases_late, b_buys_while_a_finishes, not_on_a_cluster,
};
use super::{Recorded, Run, ScenarioEnv};
use crate::error::{HarnessError, Result};
use crate::topology::replicated::wait_demoted;

/// Items for sale: one, so a second order is an oversell.
const STOCK: i64 = 1;
/// The master of the lock key's slot among the run's nodes.
const MASTER: usize = 0;
/// Its replica.
const REPLICA: usize = 1;
/// The majority's side of the cut.
const MAJORITY: [usize; 5] = [1, 2, 3, 4, 5];
/// How long a cut-off master may take to refuse writes: it does after the
/// node timeout (half a second) without a majority; far more here.
const REFUSES_WITHIN: Duration = Duration::from_secs(10);
/// How long the old master may take to follow the new one after the heal.
const DEMOTED_WITHIN: Duration = Duration::from_secs(30);
/// How often the old master's state is asked meanwhile.
const POLL: Duration = Duration::from_millis(10);

pub(super) fn not_applicable(stage: &Description) -> Option<&'static str> {
    super::ensemble::redis_only(
        stage,
        "ZooKeeper: no Redis Cluster; a member cut off from the majority serves no writes",
    )
    .or_else(|| not_on_a_cluster(stage))
}

pub(super) async fn run(stage: StageEntry, env: ScenarioEnv) -> Result<Recorded> {
    let (mut run, mut cluster) = Run::start_with_cluster(stage, env, STOCK).await?;
    run.facts.insert("slot", i64::from(cluster.slot));
    // 1. A is on master1's side of what is about to happen, B on the other.
    let a = run
        .factory
        .client_at("client-A", vec![cluster.url_on_side_of(&run.nodes, MASTER)])
        .await?;

    // 2. The partition.
    let cut = cluster.cut_off(&run.nodes, MASTER, run.timeline()).await?;
    let cut_at = Instant::now();

    // 3. A asks master1 at once.
    let (held_a, read_a) = a_asks_the_cut_off_master(&mut run, &a, "master1").await?;
    cut.finished(run.timeline()).await?;

    // 4. How long master1 went on taking writes.
    wait_for_cluster_state(&run, MASTER, "fail", REFUSES_WITHIN).await?;
    let window = i64::try_from(cut_at.elapsed().as_millis()).unwrap_or(i64::MAX);
    run.facts.insert("ms_until_writes_refused", window);
    run.narrate(format!(
        "master1 hears from no majority of masters ({window}ms after the cut): cluster_state:fail, it refuses writes from now on"
    ));

    // 5. The majority decides; B asks it.
    run.narrate("the harness waits for the majority to fail over");
    cluster
        .wait_for_promotion(&run.nodes, REPLICA, &MAJORITY)
        .await?;
    let b = run
        .factory
        .client_at("client-B", vec![cluster.url_of(&MAJORITY)])
        .await?;
    let two_holders = "TWO HOLDERS: client-A (granted by the cut-off master1) and client-B (by replica1, which the majority promoted)";
    b_buys_while_a_finishes(&mut run, (&a, &held_a, read_a), &b, two_holders).await?;

    // 7. The heal, and the demotion of the old master.
    cluster.heal(&run.nodes, MASTER, run.timeline()).await?;
    wait_demoted(&run.nodes[MASTER], DEMOTED_WITHIN).await?;
    // A node back from the minority serves again once it has waited out
    // its rejoin delay (the node timeout): until then it answers even
    // reads with CLUSTERDOWN.
    wait_for_cluster_state(&run, MASTER, "ok", DEMOTED_WITHIN).await?;
    cluster.mark("old master in sync");
    // Unlike a Sentinel, the cluster closes no client's connection when it
    // demotes a master: the node's MONITOR watched all along.
    let kept = key_on_replica(&run, MASTER).await?;
    run.facts.insert("old_master_kept_lock", i64::from(kept));
    run.narrate(format!(
        "master1 is now a replica of replica1; its copy of client-A's lock is {}",
        if kept { "still there" } else { "GONE" }
    ));
    a_releases_late(&run, &a, &held_a).await;
    cluster.stop_watching(run.timeline());
    run.record().await
}

/// Waits until `nodes[index]` says `cluster_state:<state>`.
async fn wait_for_cluster_state(
    run: &Run,
    index: usize,
    state: &str,
    within: Duration,
) -> Result<()> {
    let node = &run.nodes[index];
    let wanted = format!("cluster_state:{state}");
    let mut conn = lockcore::connect(&node.url(), "harness").await?;
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let info: String = redis::cmd("CLUSTER")
            .arg("INFO")
            .query_async(&mut conn)
            .await?;
        if info.lines().any(|l| l.trim() == wanted) {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            // Its own view of the others says why: a node it still counts
            // as failing (`fail?`, `fail`) or a slot range it sees no one
            // serve.
            let view: String = redis::cmd("CLUSTER")
                .arg("NODES")
                .query_async(&mut conn)
                .await
                .unwrap_or_default();
            return Err(HarnessError::Topology(format!(
                "{} did not say {wanted} within {within:?}; its CLUSTER INFO:\n{}\nits CLUSTER NODES:\n{}",
                node.label(),
                info.trim(),
                view.trim()
            )));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Whether the lock key exists on `nodes[index]`, a replica: a cluster
/// replica answers reads only on a connection that said `READONLY`.
async fn key_on_replica(run: &Run, index: usize) -> Result<bool> {
    let mut conn = lockcore::connect(&run.nodes[index].url(), "harness").await?;
    redis::cmd("READONLY").query_async::<()>(&mut conn).await?;
    Ok(redis::cmd("EXISTS")
        .arg(run.lock_key())
        .query_async(&mut conn)
        .await?)
}
