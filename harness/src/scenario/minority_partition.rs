//! Minority partition: client-A holds the lock through the cluster's
//! leader alone, and a partition cuts the two of them off from the other
//! two members and from client-B. Redis's split brain let the cut-off
//! master go on renewing client-A's lock while a promoted replica granted
//! it to client-B: two holders, each with a lock its server said was valid.
//! A consensus store's minority commits nothing: client-A's renewals (or
//! pings) go unanswered, the majority elects a leader, and the lock passes
//! to client-B only once client-A's lease (session) has expired. The
//! question is whether client-A learns it before client-B is let in.
//!
//! client-A is a careful holder: it watches its lock's lost signal and
//! stops its business, without writing, as soon as it fires (Go's
//! `session.Done()`, Curator's connection-state listener). Both clients
//! give the lock up by their own clocks: etcd's a TTL after its last
//! answered renewal, stage 9's ZooKeeper client 7/5 of a session timeout
//! after its last answer (it expires the session on its own behalf when it
//! cannot reconnect). The majority can expire the session or lease only a
//! whole TTL after it has elected a leader, so client-A stops first and
//! there is one holder at a time. A client that waited for the store's
//! word instead would still be inside when client-B is let in: the store
//! can say "expired" only once the partition heals.
//!
//! The partition is modelled by its effect: the leader is frozen with
//! SIGSTOP. Nothing from its side of the cut reaches the majority, and
//! nothing client-A sends is answered, which is all either side sees of a
//! real cut (a real one would let the isolated member answer "no leader"
//! errors instead of silence; neither commits anything). The harness has no
//! proxy between the members to cut for real.
//!
//! Facts: `b_acquired` and `a_told_first` (client-A's lost signal had
//! fired when client-B got the lock), each 1 or 0.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use lockcore::{Description, StageEntry};

use super::{Recorded, Run, ScenarioEnv};
use crate::error::{HarnessError, Result};

pub(super) fn not_applicable(stage: &Description) -> Option<&'static str> {
    (!super::ensemble::on_consensus_store(stage))
        .then_some("Redis: a master cut off with its client is the split-brain columns' story")
}

pub(super) async fn run(stage: StageEntry, mut env: ScenarioEnv) -> Result<Recorded> {
    // etcd: as long as in leader-killed, so that the majority elects before
    // it expires anything. ZooKeeper keeps the shortest session: client-A
    // cannot reach the majority anyway, and its client expires the session
    // by its own clock 7/5 of a timeout after its last answer (2.8 s),
    // while the majority lets client-B in only a whole timeout after it
    // has elected (2 s of silence, an election, then 2 s: 4.5 s or more).
    // With the 6 s of etcd's stories the two came within milliseconds of
    // each other (8.4 s and 8.5 s), and the cell's verdict was a coin toss.
    if super::ensemble::store_of(&stage.description) == Some(super::ensemble::Store::Etcd) {
        env.timing.ttl = env.timing.ttl.max(super::ensemble::ELECTION_TTL);
    }
    let mut run = Run::start(stage, env, 1).await?;
    let patience = run.env.timing.patience();
    let timeline = run.timeline().clone();
    let cluster = run
        .ensemble
        .as_ref()
        .ok_or_else(|| HarnessError::Bug("no consensus cluster in this run".into()))?;
    let leader = cluster.leader(patience).await?;
    let cut = cluster.label(leader);
    let mut majority = cluster.urls();
    let minority = vec![majority.remove(leader)];
    let a = run.factory.client_at("client-A", minority).await?;
    let b = run.factory.client_at("client-B", majority).await?;
    let held = a.acquire_free(patience).await?;
    let read = a.read_stock(&held).await?;

    // client-A watches its lost signal, and stops when it fires.
    let gave_up = Arc::new(AtomicBool::new(false));
    let careful = held.lost.clone().map(|mut lost| {
        let (history, gave_up) = (run.factory.history.clone(), gave_up.clone());
        tokio::spawn(async move {
            lost.lost().await;
            gave_up.store(true, Ordering::SeqCst);
            history.left(
                "client-A",
                "its lock-lost signal fired: it stops without writing",
            );
        })
    });

    cluster.pause(leader)?;
    timeline.record(
        "harness",
        format!(
            "PARTITION: {cut}, the leader, and client-A cut off from the other members and \
             client-B (modelled: {cut} frozen with SIGSTOP)"
        ),
    );
    let elected = cluster.leader(patience * 5).await?;
    timeline.record(
        "harness",
        format!("{} elected leader by the majority", cluster.label(elected)),
    );
    run.narrate(format!(
        "client-B asks for up to {}ms",
        patience.as_millis()
    ));
    let rival = b.acquire(patience).await?;
    let told_first = gave_up.load(Ordering::SeqCst);
    run.facts.insert("b_acquired", i64::from(rival.is_some()));
    run.facts.insert("a_told_first", i64::from(told_first));
    if let Some(rival) = &rival {
        b.buy_one(rival, run.env.timing.business).await?;
        b.release(rival).await?;
    }

    if let Some(cluster) = run.ensemble.as_ref() {
        cluster.resume(leader)?;
    }
    run.narrate(format!("the partition heals: {cut} thawed with SIGCONT"));
    // A holder that gave up has nothing to release: its lease (session)
    // is gone. One never told finishes the purchase it started.
    if !gave_up.load(Ordering::SeqCst) {
        a.sell(read, &held).await?;
        if let Err(e) = a.release(&held).await {
            run.narrate(format!(
                "client-A's release failed after the partition: {e}"
            ));
        }
    }
    if let Some(careful) = careful {
        careful.abort();
    }
    run.record().await
}
