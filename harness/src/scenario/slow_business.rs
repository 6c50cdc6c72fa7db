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
//! a sleep. One margin remains, and it is wide: the patience window is three
//! TTLs, so a lock that expires lets B in well within it. B's key must
//! still be there when A's release arrives, after B's sale and A's last
//! write: B's locks live ten TTLs ([`Run::rival`]), which no slow machine
//! outruns (with the usual 300 ms one did: A's `DEL` found nothing).
//!
//! Facts, each 1 or 0: `b_acquired` (the lock expired under A); and only
//! when B got in, `a_write_rejected` (the resource refused A's stale
//! write), `a_release_deleted`, `b_key_survived_a_release` (the lock key
//! still exists after A's release) and `c_acquired` (C got in while B was
//! inside).

use lockcore::{Description, Point, Release, StageEntry};

use super::steps::slow_inside;
use super::stop::stop_at;
use super::{Recorded, Run, ScenarioEnv};
use crate::client::Released;
use crate::error::Result;
use crate::workload::Sale;

/// Items for sale: one, so any second order is an oversell.
const STOCK: i64 = 1;
/// What `PTTL` answers for a key that does not exist.
const KEY_ABSENT: i64 = -2;

pub(super) fn not_applicable(_stage: &Description) -> Option<&'static str> {
    None
}

pub(super) async fn run(stage: StageEntry, env: ScenarioEnv) -> Result<Recorded> {
    let mut run = Run::start(stage, env, STOCK).await?;
    let timing = run.env.timing;
    // A lives on: a watchdog must keep its lock through B's whole window.
    let a = run.living_holder("client-A").await?;
    // B's lock, if B gets in, must still be there at A's release (B's
    // sale, A's late write, two gates) for a plain DEL to delete it.
    let b = run.rival("client-B").await?;
    let c = run.client("client-C").await?;

    // 1. A takes the lock, reads the stock, and stops inside.
    let held_a = a.acquire_free(timing.patience()).await?;
    let a_slow = slow_inside(&run, &a, &held_a).await?;

    // 2. B waits for the lock as long as the run's patience.
    let Some(held_b) = b.acquire(timing.patience()).await? else {
        // The lock held: A finishes in peace, then B buys what is left.
        run.facts.insert("b_acquired", 0);
        run.narrate("client-B never got in while client-A worked: client-A finishes");
        a_slow.gate.open();
        a_slow.work.await?;
        a.release(&held_a).await?.answered()?;
        let held_b = b.acquire_free(timing.patience()).await?;
        b.buy_one(&held_b, timing.business).await?;
        b.release(&held_b).await?.answered()?;
        return run.record().await;
    };
    run.facts.insert("b_acquired", 1);

    // 3. B buys and stops just before its release, still inside.
    let b_inside = stop_at(&b, Point::BeforeRelease, async {
        b.buy_one(&held_b, timing.business).await?;
        b.release(&held_b).await
    })
    .await?;

    // 4. A wakes up, writes what it computed from its old read, releases.
    run.narrate("client-A's business finally ends");
    a_slow.gate.open();
    let a_sale = a_slow.work.await?;
    run.facts.insert(
        "a_write_rejected",
        i64::from(matches!(a_sale, Sale::Rejected { .. })),
    );
    let a_release = a.release(&held_a).await?;
    run.facts.insert(
        "a_release_deleted",
        i64::from(matches!(a_release, Released::Answered(Release::Deleted))),
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
        c.release(&held_c).await?.answered()?;
    }

    // 6. B releases.
    b_inside.gate.open();
    b_inside.work.await?.answered()?;
    run.record().await
}
