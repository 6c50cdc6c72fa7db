//! Leader killed: the consensus store's own failure, where Redis's was the
//! failover. client-A holds the lock and has read the stock (1); the
//! cluster's leader is killed with `kill -9`; the two survivors elect a new
//! one. client-B then asks for three TTLs. A store that kept client-A's
//! lock through the election lets nobody in; client-A finishes its
//! purchase and releases, and client-B gets the lock afterwards and finds
//! the stock sold out. A store that lost the lock would let client-B in
//! while client-A still believes it holds it: OVERLAP, and an oversell.
//!
//! The TTL is at least 6 s here: while the survivors elect (1–2 s), the
//! holder's session pings or lease renewals go unanswered, and an etcd
//! client gives its lease up once a whole TTL passes unanswered. Its last
//! answered renewal was at most a third of the TTL before the kill, so 6 s
//! leaves it 4 s, three elections' worth.
//!
//! Facts: `b_acquired_while_a_held` (1 or 0) and `election_ms`, from the
//! kill to a new leader answering.

use lockcore::{Description, StageEntry};
use tokio::time::Instant;

use super::{Recorded, Run, ScenarioEnv};
use crate::error::{HarnessError, Result};

pub(super) fn not_applicable(stage: &Description) -> Option<&'static str> {
    (!super::ensemble::on_consensus_store(stage))
        .then_some("Redis elects no leader: a master's death is the failover columns' story")
}

pub(super) async fn run(stage: StageEntry, mut env: ScenarioEnv) -> Result<Recorded> {
    env.timing.ttl = env.timing.ttl.max(super::ensemble::ELECTION_TTL);
    let mut run = Run::start(stage, env, 1).await?;
    let patience = run.env.timing.patience();
    let a = run.client("client-A").await?;
    let held = a.acquire_free(patience).await?;
    let read = a.read_stock(&held).await?;

    // The story is told as it happens, while the cluster is in hand.
    let timeline = run.timeline().clone();
    let cluster = run
        .ensemble
        .as_mut()
        .ok_or_else(|| HarnessError::Bug("no consensus cluster in this run".into()))?;
    let leader = cluster.leader(patience).await?;
    let killed = cluster.label(leader);
    cluster.kill(leader);
    let at = Instant::now();
    timeline.record(
        "harness",
        format!("{killed}, the leader, KILLED with kill -9"),
    );
    // An election on a loaded machine may take several timeouts; the
    // story waits for it, however long, rather than judge without it.
    let elected = cluster.leader(patience * 5).await?;
    let elected = cluster.label(elected);
    let election_ms = i64::try_from(at.elapsed().as_millis()).unwrap_or(i64::MAX);
    timeline.record(
        "harness",
        format!("{elected} elected leader by the two survivors ({election_ms}ms after the kill)"),
    );
    run.facts.insert("election_ms", election_ms);

    let b = run.client("client-B").await?;
    run.narrate(format!(
        "client-B asks for up to {}ms while client-A holds",
        patience.as_millis()
    ));
    let rival = b.acquire(patience).await?;
    run.facts
        .insert("b_acquired_while_a_held", i64::from(rival.is_some()));
    if let Some(rival) = &rival {
        run.narrate("TWO HOLDERS: the election lost client-A's lock");
        b.buy_one(rival, run.env.timing.business).await?;
        b.release(rival).await?;
    }

    // client-A finishes its purchase and gives the lock back.
    a.sell(read, &held).await?;
    a.release(&held).await?;
    if rival.is_none() {
        let next = b.acquire_free(patience).await?;
        b.buy_one(&next, run.env.timing.business).await?;
        b.release(&next).await?.answered()?;
    }
    run.record().await
}
