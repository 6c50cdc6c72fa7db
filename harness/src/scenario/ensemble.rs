//! Stories on a consensus store: stage 9 keeps its lock in a ZooKeeper
//! ensemble, not on Redis nodes. Its runs start a real three-member
//! ensemble for the lock (and the usual Redis "database" node for the
//! stock), and the stories that fault a Redis topology say why they do not
//! apply.

use std::time::Duration;

use lockcore::{Description, StageEntry};

use super::{Run, ScenarioEnv};
use crate::error::Result;
use crate::server::zookeeper::ZkEnsemble;

/// The stages whose lock lives in a ZooKeeper ensemble.
pub const ZOOKEEPER_STAGES: &[&str] = &["stage9"];

/// The shortest session a run gives a ZooKeeper client. Shorter sessions
/// work (the ensemble allows 200 ms) but a loaded machine that stalls a
/// JVM or a client for a few hundred milliseconds would expire a living
/// holder's session, which is not the story being told.
pub const SHORTEST_SESSION: Duration = Duration::from_secs(2);

/// Whether `stage` keeps its lock in a ZooKeeper ensemble.
pub fn on_zookeeper(stage: &Description) -> bool {
    ZOOKEEPER_STAGES.contains(&stage.name)
}

/// `Some(reason)` when `stage` is a ZooKeeper stage: for the stories that
/// need a Redis topology (a master, a replica, Sentinels, a proxy in front
/// of a Redis node).
pub(super) fn redis_only(stage: &Description, reason: &'static str) -> Option<&'static str> {
    on_zookeeper(stage).then_some(reason)
}

/// Starts a run of a ZooKeeper stage: the ensemble, the database node, and
/// the session timeout in the TTL's place (at least [`SHORTEST_SESSION`]).
pub(super) async fn start_run(stage: StageEntry, mut env: ScenarioEnv, stock: i64) -> Result<Run> {
    env.timing.ttl = env.timing.ttl.max(SHORTEST_SESSION);
    let ensemble = ZkEnsemble::start(3).await?;
    let mut run = Run::start_on(stage, env, stock, Vec::new()).await?;
    run.factory.lock_urls = ensemble.urls();
    run.narrate(format!(
        "the lock: a 3-member ZooKeeper ensemble ({}), data on {}; the TTL is the session timeout",
        ensemble.connect_string(),
        ensemble.storage()
    ));
    run.ensemble = Some(ensemble);
    Ok(run)
}
