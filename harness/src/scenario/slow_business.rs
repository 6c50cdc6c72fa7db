//! Slow business: the holder's work outlasts the lock's TTL while the holder
//! stays alive. One item is for sale.
//!
//! 1. client-A takes the lock, reads the stock (1) and stops inside its
//!    critical section: its business has become slow.
//! 2. client-B asks for the lock for three TTLs (the patience window). A
//!    lock that expires under its living holder lets B in; a lock without
//!    an expiry, or one a watchdog keeps renewing, keeps B out, and A's
//!    slow business harms nobody.
//! 3. If B got in, B reads the stock (still 1), sells it, and stops just
//!    before its release: B is still inside.
//! 4. A wakes up and finishes on the stock it read long ago (a second order
//!    for one item unless a fencing token stops the stale write), then
//!    releases. A plain `DEL` deletes B's lock here.
//! 5. client-C tries once. If A's release deleted B's key, C gets in while
//!    B is still inside.
//! 6. B releases.
//!
//! Every step waits on a fault-point gate or an acquire's result, never on
//! a sleep. Two margins remain, both wide: the patience window is three
//! TTLs, so a lock that expires lets B in well within it; and B's key must
//! still be alive when A's release arrives, which takes B's sale and A's
//! last write (two business times, 40 ms by default, and a few round trips)
//! out of a 300 ms TTL.
//!
//! Facts, each 1 or 0: `b_acquired` (the lock expired under A); and only
//! when B got in, `a_write_rejected` (the resource refused A's stale
//! write), `a_release_deleted`, `b_key_survived_a_release` (the lock key
//! still exists after A's release) and `c_acquired` (C got in while B was
//! inside).

use std::future::Future;
use std::pin::{Pin, pin};

use lockcore::{Description, Point, Release, StageEntry};

use super::{Outcome, Run, ScenarioEnv};
use crate::error::{HarnessError, Result};
use crate::fault::Gate;
use crate::workload::Sale;

/// Items for sale: one, so any second order is an oversell.
const STOCK: i64 = 1;
/// What `PTTL` answers for a key that does not exist.
const KEY_ABSENT: i64 = -2;

pub(super) fn not_applicable(_stage: &Description) -> Option<&'static str> {
    None
}

pub(super) async fn run(stage: StageEntry, env: ScenarioEnv) -> Result<Outcome> {
    let mut run = Run::start(stage, env, STOCK).await?;
    let timing = run.env.timing;
    let a = run.client("client-A").await?;
    let b = run.client("client-B").await?;
    let c = run.client("client-C").await?;

    // 1. A takes the lock, reads the stock, and stops inside.
    let held_a = a
        .acquire(timing.patience())
        .await?
        .ok_or_else(|| HarnessError::Unsupported("client-A could not take a free lock".into()))?;
    let a_slow = a.faults().pause_at(Point::InCriticalSection);
    let mut a_purchase = pin!(a.buy_one(&held_a, timing.business));
    until_paused(a_purchase.as_mut(), &a_slow, "client-A").await?;
    run.narrate(format!(
        "client-A's business is slow: it stays inside while client-B waits up to {}ms",
        timing.patience().as_millis()
    ));

    // 2. B waits for the lock as long as the run's patience.
    let Some(held_b) = b.acquire(timing.patience()).await? else {
        // The lock held: A finishes in peace, then B buys what is left.
        run.facts.insert("b_acquired", 0);
        run.narrate("client-B never got in while client-A worked: client-A finishes");
        a_slow.open();
        a_purchase.await?;
        a.release(&held_a).await??;
        let held_b = b.acquire(timing.patience()).await?.ok_or_else(|| {
            HarnessError::Unsupported("client-B could not take a free lock".into())
        })?;
        b.buy_one(&held_b, timing.business).await?;
        b.release(&held_b).await??;
        return run.finish().await;
    };
    run.facts.insert("b_acquired", 1);

    // 3. B buys and stops just before its release, still inside.
    let b_inside = b.faults().pause_at(Point::BeforeRelease);
    let mut b_purchase = pin!(async {
        b.buy_one(&held_b, timing.business).await?;
        b.release(&held_b).await
    });
    until_paused(b_purchase.as_mut(), &b_inside, "client-B").await?;

    // 4. A wakes up, writes what it computed from its old read, releases.
    run.narrate("client-A's business finally ends");
    a_slow.open();
    let a_sale = a_purchase.await?;
    run.facts.insert(
        "a_write_rejected",
        i64::from(matches!(a_sale, Sale::Rejected { .. })),
    );
    let a_release = a.release(&held_a).await?;
    run.facts.insert(
        "a_release_deleted",
        i64::from(matches!(a_release, Ok(Release::Deleted))),
    );
    let survived = run.lock_pttl().await? != KEY_ABSENT;
    run.narrate(format!(
        "after client-A's release the lock key {}",
        if survived { "still exists" } else { "is gone" }
    ));
    run.facts
        .insert("b_key_survived_a_release", i64::from(survived));

    // 5. C tries once, while B is still inside.
    let held_c = c.try_acquire().await?;
    run.facts.insert("c_acquired", i64::from(held_c.is_some()));
    if let Some(held_c) = held_c {
        c.buy_one(&held_c, timing.business).await?;
        c.release(&held_c).await??;
    }

    // 6. B releases.
    b_inside.open();
    b_purchase.await??;
    run.finish().await
}

/// Drives `work` until its client stops at `gate`. A client that finishes
/// without reaching the gate means the story went wrong: say so.
pub(super) async fn until_paused<T>(
    work: Pin<&mut impl Future<Output = Result<T>>>,
    gate: &Gate,
    who: &str,
) -> Result<()> {
    tokio::select! {
        () = gate.arrived() => Ok(()),
        done = work => {
            done?;
            Err(HarnessError::Unsupported(format!("{who} finished without reaching its fault point")))
        }
    }
}
