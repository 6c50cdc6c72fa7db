//! GET/DEL race: the lock expires while its holder is giving it back, after
//! the holder made sure the key was its own and before the key is deleted.
//! Two items are for sale.
//!
//! 1. client-A takes the lock and buys one item. Its business is over.
//! 2. A releases and is stopped on the way: between its `GET` and its `DEL`
//!    when the stage's release has that gap (stage 4 lists the fault point
//!    `between-get-and-del`), otherwise just before its release is sent
//!    (`before-release`, which every client reaches). Either way the history
//!    closes A's critical section first: only A's release is late.
//! 3. While A is stopped, client-B asks for the lock for the run's patience
//!    (three TTLs). A lock that expires under the stopped release lets B in;
//!    a lock without an expiry, or one a watchdog keeps renewing, keeps B
//!    out until A's release goes on.
//! 4. A's release goes on, and the lock key is looked at: does it still
//!    hold B's value?
//! 5. If B got in, B buys the other item and releases.
//!
//! Where A stops is the last moment before its release's final command, on
//! every stage: for stage 4 that is between its `GET` and its `DEL`; for
//! stage 5 and later, whose release is one script, just before the script.
//! Each stage is stopped as late as its own release allows, so the
//! comparison is fair: stage 5 is not spared a gap it has.
//!
//! The scenario judges nothing. Whether A's release deleted B's key is read
//! by the observers from the lock node's own record (`MONITOR` and keyspace
//! notifications): a `DEL` by client-A of a key client-B had written.
//!
//! Facts: `b_acquired` and `a_release_deleted` (1 or 0), and when B got in,
//! `b_lock_survived`: 1 when the lock key still holds B's value after A's
//! release.

use lockcore::{Description, Point, Release, StageEntry};

use super::stop::stop_at;
use super::{Recorded, Run, ScenarioEnv};
use crate::client::Released;
use crate::error::Result;
use crate::topology::redlock;

/// Items for sale: one for A, one for B.
const STOCK: i64 = 2;

pub(super) fn not_applicable(stage: &Description) -> Option<&'static str> {
    let consensus = "ZooKeeper: the release deletes our own node by its path; no GET to race, no expiry while the session lives";
    super::ensemble::redis_only(stage, consensus)
        .or_else(|| (stage.stage == 0).then_some("no lock, so no release to race"))
}

/// Where A's release is stopped: the last moment before its final command
/// (inside it, if the stage's release has a gap there).
fn stop_point(stage: &Description) -> Point {
    if stage.fault_points.contains(&Point::BetweenGetAndDel) {
        Point::BetweenGetAndDel
    } else {
        Point::BeforeRelease
    }
}

pub(super) async fn run(stage: StageEntry, env: ScenarioEnv) -> Result<Recorded> {
    let mut run = Run::start(stage, env, STOCK).await?;
    let timing = run.env.timing;
    let a = run.client("client-A").await?;
    // B's lock, if B gets in, must still be there when A's held-back
    // release goes on, whatever the machine's speed.
    let b = run.rival("client-B").await?;

    // 1. A takes the lock and does its business.
    let held_a = a.acquire_free(timing.patience()).await?;
    a.buy_one(&held_a, timing.business).await?;

    // 2. A's release is stopped on its way.
    let point = stop_point(&stage.description);
    let held_back = stop_at(&a, point, a.leave_then_release(&held_a)).await?;

    // 3. B tries while A's release waits.
    run.narrate(format!(
        "client-A's release is held at {point}; client-B tries to acquire for up to {}ms",
        timing.patience().as_millis()
    ));
    let held_b = b.acquire(timing.patience()).await?;
    run.facts.insert("b_acquired", i64::from(held_b.is_some()));
    run.narrate(if held_b.is_some() {
        "client-B holds the lock: client-A's release goes on"
    } else {
        "client-B never got in: client-A's release goes on"
    });

    // 4. A's release goes on.
    held_back.gate.open();
    let a_deleted = matches!(held_back.work.await?, Released::Answered(Release::Deleted));
    run.facts.insert("a_release_deleted", i64::from(a_deleted));

    // 5. What became of B's lock, and B's turn.
    if let Some(held_b) = held_b {
        let survived = redlock::majority_holds(&run.nodes, run.lock_key(), &held_b.value).await?;
        run.facts.insert("b_lock_survived", i64::from(survived));
        run.narrate(format!(
            "after client-A's release, client-B's lock {}",
            if survived {
                "is still there"
            } else {
                "is GONE"
            }
        ));
        b.buy_one(&held_b, timing.business).await?;
        // A refusal (B's lock is gone) is already in the timeline.
        let _ = b.release(&held_b).await?;
    }
    run.record().await
}
