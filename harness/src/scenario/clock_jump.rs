//! Clock jump: the clock of a node that granted the lock jumps forward
//! (an NTP step, an operator setting the time), so the key expires there
//! long before the holder expects.
//!
//! A Redis server's clock cannot be moved from outside the machine, so the
//! harness does to the key exactly what the jump would: it takes the jump
//! off the key's remaining TTL on that node (`PEXPIRE`). The timeline says
//! so where it happens.
//!
//! On one node, client-B then finds the lock free while client-A is inside
//! (stage 1's key has no TTL, so no clock can touch it). On Redlock, the
//! jump hits one of the three masters client-A holds; B takes that one and
//! the two A never had: a majority of its own, and two holders.

use lockcore::{Description, StageEntry};

use super::steps::{contend_while_held, hold_bare_majority, node_fault_ttl, release_after_fault};
use super::{Recorded, Run, ScenarioEnv};
use crate::error::Result;
use crate::fault::node::{self, LockNodes};

/// The node whose clock jumps: one of the holder's.
const VICTIM: usize = 0;

pub(super) fn not_applicable(stage: &Description) -> Option<&'static str> {
    let consensus =
        "ZooKeeper: no key TTL to cut; sessions are timed on the servers' monotonic clocks";
    super::ensemble::redis_only(stage, consensus)
        .or_else(|| (stage.stage == 0).then_some("no lock key for a clock to expire"))
}

pub(super) async fn run(stage: StageEntry, mut env: ScenarioEnv) -> Result<Recorded> {
    env.timing.ttl = node_fault_ttl(&stage.description, env.timing.ttl);
    let mut run = Run::start(stage, env, 1).await?;
    let timing = run.env.timing;
    let proxies = run.put_proxies().await?;
    let holder = run.client("client-A").await?;
    let (held, valid_until) = hold_bare_majority(&mut run, &proxies, &holder).await?;
    let read = holder.read_stock(&held).await?;

    let victim = run.lock_node(VICTIM)?;
    let (before, after) =
        node::jump_clock(victim, run.lock_key(), timing.ttl * 3, run.timeline()).await?;
    run.facts.insert("pttl_before_jump", before);
    run.facts.insert("pttl_after_jump", after);

    contend_while_held(&mut run, "client-B", valid_until).await?;

    // A finishes its purchase, sure that it still holds the lock.
    holder.sell(read, &held).await?;
    release_after_fault(&run, &holder, &held).await?;
    run.record().await
}
