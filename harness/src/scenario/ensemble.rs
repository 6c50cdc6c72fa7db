//! Stories on a consensus store: stage 9 keeps its lock in a ZooKeeper
//! ensemble and stage 10 in an etcd cluster, not on Redis nodes. Their runs
//! start a real three-member cluster for the lock (and the usual Redis
//! "database" node for the stock), and the stories that fault a Redis
//! topology say why they do not apply.

use std::time::Duration;

use lockcore::{Description, StageEntry};

use super::{Run, ScenarioEnv};
use crate::error::Result;
use crate::server::ensemble::Ensemble;
use crate::server::etcd::EtcdCluster;
use crate::server::zookeeper::ZkEnsemble;

/// The shortest session (ZooKeeper) or lease (etcd) a run gives a client.
/// ZooKeeper allows 200 ms and etcd 2 s (its shortest lease with a 1 s
/// election timeout), but a loaded machine that stalls a JVM or a client
/// for a few hundred milliseconds would expire a living holder's session,
/// which is not the story being told.
pub const SHORTEST_SESSION: Duration = Duration::from_secs(2);

/// The shortest TTL of a story in which a holder's store elects a new
/// leader while the holder holds (see `leader_killed.rs`): its session
/// pings or lease renewals go unanswered meanwhile, and an etcd client
/// gives its lease up once a whole TTL passes unanswered.
pub const ELECTION_TTL: Duration = Duration::from_secs(6);

pub use lockcore::Store;

/// The consensus store `stage` keeps its lock in; `None` for Redis.
pub fn store_of(stage: &Description) -> Option<Store> {
    Some(stage.home.store).filter(|store| *store != Store::Redis)
}

/// Whether `stage` keeps its lock in a consensus store (ZooKeeper, etcd).
pub fn on_consensus_store(stage: &Description) -> bool {
    stage.home.on_consensus_store()
}

/// `Some(reason)` when `stage` keeps its lock in a consensus store: for the
/// stories that need a Redis topology (a master, a replica, Sentinels, a
/// proxy in front of a Redis node). `reason` is ZooKeeper's; etcd's is its
/// counterpart in [`ETCD_REASONS`].
pub(super) fn redis_only(stage: &Description, reason: &'static str) -> Option<&'static str> {
    match store_of(stage)? {
        Store::Redis => None,
        Store::ZooKeeper => Some(reason),
        Store::Etcd => Some(etcd_reason(reason)),
    }
}

/// Each ZooKeeper reason for `n/a` and etcd's counterpart.
pub const ETCD_REASONS: &[(&str, &str)] = &[
    (
        "ZooKeeper: a lock that is not reentrant waits behind its own node, and no observer of the ensemble's nodes tells that wait from a deadlock yet",
        "etcd: a lock that is not reentrant waits behind its own key, and no observer of the cluster's keys tells that wait from a deadlock yet",
    ),
    (
        "ZooKeeper: it evicts nothing; a lock node lives until its session ends",
        "etcd: it evicts nothing; a lock key lives until its lease ends",
    ),
    (
        "ZooKeeper: the release deletes our own node by its path; no GET to race, no expiry while the session lives",
        "etcd: the release deletes our own key if its create revision is ours, in one transaction; no GET to race, no expiry while the lease is kept alive",
    ),
    (
        "ZooKeeper: no master and replica; its leader killed is the leader-killed column",
        "etcd: no master and replica; its leader killed is the leader-killed column",
    ),
    (
        "ZooKeeper: a write is in a majority's fsynced log before it is acknowledged; no member restarts empty",
        "etcd: a write is in a majority's fsynced Raft log before it is acknowledged; no member restarts empty",
    ),
    (
        "ZooKeeper: no key TTL to cut; sessions are timed on the servers' monotonic clocks",
        "etcd: no key TTL to cut; leases are timed on the leader's monotonic clock",
    ),
    (
        "ZooKeeper: the delaying proxy stands in front of Redis nodes; none is built for the ensemble yet",
        "etcd: the delaying proxy stands in front of Redis nodes; none is built for the cluster yet",
    ),
    (
        "ZooKeeper: no observer of the ensemble's nodes yet, so the deadlock of a skipped release (the node lives with the session) cannot be judged",
        "etcd: no observer of the cluster's keys yet, so the deadlock of a skipped release (the key lives with the lease) cannot be judged",
    ),
    (
        "ZooKeeper: no Sentinels; the ensemble elects its own leader",
        "etcd: no Sentinels; the cluster elects its own leader (Raft)",
    ),
    (
        "ZooKeeper: no Sentinels; a member cut off from the majority serves no writes",
        "etcd: no Sentinels; a member cut off from the majority serves no writes",
    ),
    (
        "ZooKeeper: a dead waiter's node leaves the line with its session; not yet a story here",
        "etcd: a dead waiter's key leaves the line with its lease; not yet a story here",
    ),
    (
        "ZooKeeper: no Redis Cluster; the ensemble elects its own leader",
        "etcd: no Redis Cluster; the cluster elects its own leader (Raft)",
    ),
    (
        "ZooKeeper: no Redis Cluster; a member cut off from the majority serves no writes",
        "etcd: no Redis Cluster; a member cut off from the majority serves no writes",
    ),
    (
        "ZooKeeper: its queue is ordered by sequence number, but no record of the order its requests arrived in is kept here yet",
        "etcd: its queue is ordered by create revision, but no record of the order its requests arrived in is kept here yet",
    ),
];

/// What etcd says where ZooKeeper says `reason` (a story added for the
/// ZooKeeper stage alone falls back to a plain one).
fn etcd_reason(reason: &str) -> &'static str {
    ETCD_REASONS
        .iter()
        .find(|(zk, _)| *zk == reason)
        .map_or(ETCD_NEEDS_REDIS, |(_, etcd)| etcd)
}

/// etcd's reason for a story with no counterpart in [`ETCD_REASONS`].
pub const ETCD_NEEDS_REDIS: &str = "etcd: the story needs a Redis topology";

/// Starts a run of a consensus-store stage: its cluster and the database
/// node. The session timeout or lease TTL takes the TTL's place where
/// every run starts ([`super::Timing::for_stage`], in `Run::start_with_db`).
pub(super) async fn start_run(stage: StageEntry, env: ScenarioEnv, stock: i64) -> Result<Run> {
    if let (Some(Store::ZooKeeper), Some(shared)) =
        (store_of(&stage.description), env.shared_zookeeper.clone())
    {
        // A chroot of the matrix's shared ensemble, made before the run's
        // clients connect.
        let chroot = shared.chroot_for_run().await?;
        let mut run = Run::start_on(stage, env, stock, Vec::new()).await?;
        run.factory.lock_urls = chroot.urls;
        run.narrate(format!(
            "the lock: the matrix's shared 3-member ZooKeeper ensemble ({}), data on {}, \
             under this run's own chroot {}; the TTL is the session timeout",
            chroot.endpoints, chroot.storage, chroot.path
        ));
        return Ok(run);
    }
    let (cluster, group, ttl_is): (Box<dyn Ensemble>, _, _) = match store_of(&stage.description) {
        Some(Store::Etcd) => (
            Box::new(EtcdCluster::start(3).await?),
            "cluster",
            "the lease's TTL",
        ),
        _ => (
            Box::new(ZkEnsemble::start(3).await?),
            "ensemble",
            "the session timeout",
        ),
    };
    let mut run = Run::start_on(stage, env, stock, Vec::new()).await?;
    run.factory.lock_urls = cluster.urls();
    run.narrate(format!(
        "the lock: a 3-member {} {group} ({}), data on {}; the TTL is {ttl_is}",
        cluster.store(),
        cluster.endpoints(),
        cluster.storage()
    ));
    run.ensemble = Some(cluster);
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_zookeeper_reason_has_its_etcd_counterpart() {
        let base = crate::control::STAGE0.description;
        let stage9 = Description {
            name: "stage9",
            stage: 9,
            home: lockcore::Home::ZOOKEEPER,
            ..base
        };
        let stage10 = Description {
            name: "stage10",
            stage: 10,
            home: lockcore::Home::ETCD,
            ..base
        };
        for scenario in super::super::SCENARIOS {
            let Some(reason) = (scenario.not_applicable)(&stage9) else {
                continue;
            };
            if !reason.starts_with("ZooKeeper") {
                continue;
            }
            let etcd = (scenario.not_applicable)(&stage10).unwrap_or("applies");
            assert!(
                etcd.starts_with("etcd: ") && etcd != ETCD_NEEDS_REDIS,
                "{}: no etcd reason beside `{reason}` (etcd says `{etcd}`)",
                scenario.name
            );
        }
    }
}
