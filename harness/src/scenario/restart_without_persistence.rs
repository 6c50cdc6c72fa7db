//! Restart without persistence: a lock node that granted the lock is killed
//! and comes back empty, having forgotten it.
//!
//! On one node, client-A holds the lock and has read the stock when the
//! node restarts; client-B finds the lock free, buys, and then A, still
//! believing it holds the lock, sells the same item again.
//!
//! On Redlock, client-A holds exactly three of five masters (two are cut
//! off from it while it acquires). One of its three restarts empty; B finds
//! that one and the two A never had free: three of five, a majority of its
//! own, while A's validity still runs. Two holders.
//!
//! The remedy antirez proposes is a *delayed* restart: keep the node down
//! for longer than the TTL, so every lock it had granted has expired
//! everywhere before it votes again. [`run_with_restart_delay`] tells that
//! story too; the tests compare the two.

use std::time::Duration;

use lockcore::{Description, StageEntry};
use tokio::time::{Instant, sleep_until};

use super::steps::{contend_while_held, hold_bare_majority, node_fault_ttl, release_after_fault};
use super::{Recorded, Run, ScenarioEnv};
use crate::error::{HarnessError, Result};
use crate::fault::node::LockNodes;

/// The node that restarts: one of the holder's.
const VICTIM: usize = 0;

pub(super) fn not_applicable(stage: &Description) -> Option<&'static str> {
    let consensus = "ZooKeeper: a write is in a majority's fsynced log before it is acknowledged; no member restarts empty";
    super::ensemble::redis_only(stage, consensus)
        .or_else(|| (stage.stage == 0).then_some("no lock for a node to forget"))
}

pub(super) async fn run(stage: StageEntry, mut env: ScenarioEnv) -> Result<Recorded> {
    env.timing.ttl = node_fault_ttl(&stage.description, env.timing.ttl);
    run_with_restart_delay(stage, env, Duration::ZERO).await
}

/// The story with the node kept down for `down_for` before it restarts:
/// zero is the plain restart, more than the TTL is antirez's delayed
/// restart. A delay needs several nodes: one node that is down is no lock.
pub async fn run_with_restart_delay(
    stage: StageEntry,
    env: ScenarioEnv,
    down_for: Duration,
) -> Result<Recorded> {
    if !down_for.is_zero() && stage.description.nodes < 2 {
        return Err(HarnessError::Unsupported(format!(
            "a delayed restart needs several nodes; {} has one, and while it is down there is no lock",
            stage.description.name
        )));
    }
    let mut run = Run::start(stage, env, 1).await?;
    let timing = run.env.timing;
    let proxies = run.put_proxies().await?;
    let holder = run.client("client-A").await?;
    let (held, valid_until) = hold_bare_majority(&mut run, &proxies, &holder).await?;
    let read = holder.read_stock(&held).await?;

    run.kill_node(VICTIM).await?;
    let killed_at = Instant::now();
    if down_for.is_zero() {
        run.restart_node(VICTIM, &proxies).await?;
    } else {
        run.narrate(format!(
            "the node stays down for {}ms before it restarts (a delayed restart)",
            down_for.as_millis()
        ));
    }

    contend_while_held(&mut run, "client-B", valid_until).await?;

    // A finishes its purchase, sure that it still holds the lock.
    holder.sell(read, &held).await?;
    release_after_fault(&run, &holder, &held).await?;

    if !down_for.is_zero() {
        sleep_until(killed_at + down_for).await;
        run.restart_node(VICTIM, &proxies).await?;
        let later = run.client("client-C").await?;
        match later.acquire(timing.patience()).await? {
            Some(held) => {
                run.narrate("after the delayed restart the lock is available again");
                later.buy_one(&held, timing.business).await?;
                later.release(&held).await?.answered()?;
            }
            None => run.narrate("client-C could not take the lock after the restart"),
        }
    }
    run.record().await
}
