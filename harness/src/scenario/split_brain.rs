//! Split brain: a partition, not a crash. The master is cut off from its
//! replicas and its Sentinels, but not from every client: client-A, on the
//! master's side of the partition, still talks to it and takes the lock
//! there. The majority side promotes a replica, where client-B takes the
//! lock too. When the partition heals, the Sentinels demote the old master
//! and everything written there in the meantime, A's lock included, is
//! thrown away. One item is for sale.
//!
//! 1. A master, two replicas in sync, three Sentinels; client-A talks to
//!    the master directly (it is on the master's side).
//! 2. The partition: the master is cut off from all its peers, both ways.
//!    On the Docker backend it is disconnected from the run's network, the
//!    only way its replicas and Sentinels reach it (client-A reaches it over
//!    the run's clients' network); on the process backend the links its
//!    peers reach it through drop everything (see `topology/sentinel.rs`).
//! 3. client-A takes the lock on the old master and reads the stock (1).
//! 4. The Sentinels, unable to reach the master, agree that it is down and
//!    promote a replica (`+switch-master`).
//! 5. client-B asks the Sentinels for the master and takes the lock on the
//!    promoted replica: TWO HOLDERS. B buys the item.
//! 6. client-A finishes its purchase on the stock it read.
//! 7. The partition heals (on Docker: the master is connected to the run's
//!    network again, at the same address). The Sentinels find the old
//!    master claiming to be a master and demote it (`+convert-to-slave`);
//!    it resyncs from the new master and A's lock key disappears.
//!
//! With [`Mitigation::MinReplicas`] (`min-replicas-to-write 1`,
//! `min-replicas-max-lag 1`) the master refuses writes once it has heard
//! from no replica for a second: the harness waits until the master says so
//! (`min_slaves_good_slaves:0`) before A asks, and A is refused. What
//! stays open is that second: the fact `ms_until_writes_refused` measures
//! how long, after the cut, the cut-off master still took writes.
//!
//! Facts: `a_acquired`, `b_acquired`, `old_master_kept_lock` (after the
//! heal), each 1 or 0; with the mitigation, `ms_until_writes_refused`.

use std::time::{Duration, Instant};

use lockcore::{Description, StageEntry};

use super::steps::{a_asks_the_cut_off_master, a_releases_late, b_buys_while_a_finishes};
use super::{Recorded, Run, ScenarioEnv};
use crate::error::Result;
use crate::fault::node::LockNodes;
use crate::topology::replicated::{wait_demoted, wait_for_replication_info};
use crate::topology::sentinel::Wiring;

/// Items for sale: one, so a second order is an oversell.
const STOCK: i64 = 1;
/// The master's place among the run's lock nodes.
const MASTER: usize = 0;
/// How long the Sentinels may take to demote the old master after the heal:
/// they overrule a master that claims its old role after four hello periods
/// without news, and they learn its role from `INFO` (both periods are set
/// in `topology/sentinel.rs`; with Redis's defaults, 8 s and 10 s).
const DEMOTED_WITHIN: Duration = Duration::from_secs(60);
/// How long a cut-off master with `min-replicas-to-write` may take to notice
/// that it hears from no replica (its lag limit is one second).
const REFUSES_WITHIN: Duration = Duration::from_secs(10);

/// What the master is configured with against a split brain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mitigation {
    /// Nothing: Redis's defaults.
    None,
    /// `min-replicas-to-write 1` and `min-replicas-max-lag 1`.
    MinReplicas,
}

/// Where the story does not apply: a consensus store has no Sentinels,
/// and the plain failover's reasons hold here too.
pub(super) fn not_applicable(stage: &Description) -> Option<&'static str> {
    let reason = "ZooKeeper: no Sentinels; a member cut off from the majority serves no writes";
    super::ensemble::redis_only(stage, reason).or_else(|| super::steps::not_on_replicas(stage))
}

pub(super) async fn run(
    stage: StageEntry,
    env: ScenarioEnv,
    mitigation: Mitigation,
) -> Result<Recorded> {
    let master_args: &[&str] = match mitigation {
        Mitigation::None => &[],
        Mitigation::MinReplicas => &[
            "--min-replicas-to-write",
            "1",
            "--min-replicas-max-lag",
            "1",
        ],
    };
    let (mut run, mut sentinels) =
        Run::start_with_sentinels(stage, env, STOCK, master_args, Wiring::Partition).await?;
    // 1. A is on the master's side of what is about to happen.
    let master_url = run.nodes[MASTER].url();
    let a = run.factory.client_at("client-A", vec![master_url]).await?;

    // 2. The partition.
    sentinels
        .cut_master_off(&run.nodes[MASTER], run.timeline())
        .await?;
    let cut_at = Instant::now();
    run.narrate(
        "PARTITION: the master is cut off from both replicas and all three Sentinels; client-A, on its side, still reaches it",
    );
    if mitigation == Mitigation::MinReplicas {
        wait_for_replication_info(
            &run.nodes[MASTER],
            "min_slaves_good_slaves",
            "0",
            REFUSES_WITHIN,
        )
        .await?;
        let window = i64::try_from(cut_at.elapsed().as_millis()).unwrap_or(i64::MAX);
        run.facts.insert("ms_until_writes_refused", window);
        run.narrate(format!(
            "the old master counts no good replica any more ({window}ms after the cut): it refuses writes from now on"
        ));
    }

    // 3. A asks the old master.
    let (held_a, read_a) = a_asks_the_cut_off_master(&mut run, &a, "the old master").await?;

    // 4. The majority side decides.
    run.narrate("the harness waits for the Sentinels to fail over");
    sentinels.wait_for_switch().await?;
    // A Sentinel that reconfigures a server closes its clients' connections
    // (CLIENT KILL TYPE normal), the harness's MONITOR among them.
    for replica in MASTER + 1..run.nodes.len() {
        run.watch_again(replica).await?;
    }

    // 5. B asks the Sentinels for the master.
    let b = run.client("client-B").await?;
    let two_holders = "TWO HOLDERS: client-A (granted by the cut-off master) and client-B (by the one the Sentinels promoted)";
    b_buys_while_a_finishes(&mut run, (&a, &held_a, read_a), &b, two_holders).await?;

    // 7. The heal, and the demotion of the old master.
    sentinels.heal(&run.nodes[MASTER], run.timeline()).await?;
    run.narrate("the partition HEALS: the old master and its peers hear each other again");
    wait_demoted(&run.nodes[MASTER], DEMOTED_WITHIN).await?;
    sentinels.mark("old master in sync");
    run.watch_again(MASTER).await?;
    let kept = run.lock_key_exists(MASTER).await?;
    run.facts.insert("old_master_kept_lock", i64::from(kept));
    run.narrate(format!(
        "the old master is now a replica of the new one; its copy of client-A's lock is {}",
        if kept { "still there" } else { "GONE" }
    ));
    a_releases_late(&run, &a, &held_a).await;
    sentinels.stop_watching(run.timeline());
    run.record().await
}
