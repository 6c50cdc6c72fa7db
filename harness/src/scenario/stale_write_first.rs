//! Stale write first: slow business again, in the other order. One item
//! is for sale.
//!
//! `slow-business` lets the new holder write before the stale one wakes
//! up. Here the stale holder's write lands first:
//!
//! 1. client-A takes the lock, reads the stock (1) and stops inside its
//!    critical section: its business has become slow.
//! 2. client-B asks for the lock for three TTLs (the patience window). A
//!    lock that expires under its living holder lets B in; one that does
//!    not, or that a watchdog renews, keeps B out, and A finishes in peace.
//! 3. If B got in, B reads the stock (still 1) and stops before its write.
//!    B's lock has ten TTLs to live, so that it is still there when A
//!    releases, however slow the machine.
//! 4. A wakes up and writes first, from the stock it read long ago, then
//!    releases.
//! 5. B writes, from the stock it read before A's write, and releases.
//!
//! Both writes were decided on a stock of 1. A resource that checks
//! fencing tokens on writes alone accepts A's (no higher token has been
//! written yet) and then B's: oversold, with fencing "on". A resource that
//! registers tokens on reads refuses A's write, since B's read showed a
//! higher token. Every step waits on a fault-point gate or an acquire's
//! result, never on a sleep.
//!
//! Facts, each 1 or 0: `b_acquired` (the lock expired under A), and when
//! B got in, `a_write_rejected` and `b_write_rejected`.

use lockcore::{Point, StageEntry};

use super::steps::slow_inside;
use super::stop::stop_at;
use super::{Recorded, Run, ScenarioEnv};
use crate::error::Result;
use crate::workload::Sale;

/// Items for sale: one, so any second order is an oversell.
const STOCK: i64 = 1;

/// Every stage can be told this story.
pub(super) use super::always as not_applicable;

pub(super) async fn run(stage: StageEntry, env: ScenarioEnv) -> Result<Recorded> {
    let mut run = Run::start(stage, env, STOCK).await?;
    let timing = run.env.timing;
    // A lives on: a watchdog must keep its lock through B's whole window.
    let a = run.living_holder("client-A").await?;

    // 1. A takes the lock, reads the stock, and stops inside.
    let held_a = a.acquire_free(timing.patience()).await?;
    let a_slow = slow_inside(&run, &a, &held_a).await?;

    // client-B's lock, if B gets in, must outlive what follows up to A's
    // release (A's write, two gates, two narrations).
    let b = run.rival("client-B").await?;

    // 2. B waits for the lock as long as the run's patience.
    let Some(held_b) = b.acquire(timing.patience()).await? else {
        run.facts.insert("b_acquired", 0);
        run.narrate("client-B never got in while client-A worked: client-A finishes");
        a_slow.gate.open();
        a_slow.work.await?;
        a.release(&held_a).await?.answered()?;
        return run.record().await;
    };
    run.facts.insert("b_acquired", 1);

    // 3. B reads the stock and stops before its write.
    let b_before_write = stop_at(
        &b,
        Point::InCriticalSection,
        b.buy_one(&held_b, timing.business),
    )
    .await?;

    // 4. A's write lands first.
    run.narrate("client-B has read the stock; client-A's business ends and it writes first");
    a_slow.gate.open();
    let a_sale = a_slow.work.await?;
    run.facts.insert("a_write_rejected", rejected(a_sale));
    // A refusal (A's lock is long gone) is already in the timeline.
    let _ = a.release(&held_a).await?;

    // 5. B writes, then releases.
    run.narrate("client-B writes, from the stock it read before client-A's write");
    b_before_write.gate.open();
    let b_sale = b_before_write.work.await?;
    run.facts.insert("b_write_rejected", rejected(b_sale));
    let _ = b.release(&held_b).await?;
    run.record().await
}

fn rejected(sale: Sale) -> i64 {
    i64::from(matches!(sale, Sale::Rejected { .. }))
}
