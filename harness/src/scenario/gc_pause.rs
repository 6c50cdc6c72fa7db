//! GC pause: a real holder process takes the lock, reads the stock, and is
//! frozen with SIGSTOP, as a stop-the-world garbage collection would freeze
//! it: its business, its timers and its watchdog all stop at once. While it
//! is frozen a second client tries to buy. When the pause ends the holder
//! carries on from where it was, with the stock it read before the pause.
//!
//! The pause lasts until the second client has bought and released, or has
//! waited its whole patience window (three TTLs) in vain: it ends on that
//! event, not on a timer. A lock whose TTL ran out during the pause let the
//! second client in, and the holder's stale write then oversells; stage 8's
//! fencing token makes the resource refuse that write. Afterwards the
//! holder is asked whether its lost-lock signal fired (stage 6's watchdog
//! notices the loss at its first renewal after the thaw).
//!
//! Facts: `rival_acquired` (client-B got the lock during the pause) and
//! `lost_signal_fired` (the holder's lost-lock signal fired after the thaw),
//! each 1 or 0.

use lockcore::{Description, StageEntry};

use super::{Recorded, Run, ScenarioEnv};
use crate::error::{HarnessError, Result};

pub(super) fn not_applicable(_stage: &Description) -> Option<&'static str> {
    None
}

pub(super) async fn run(stage: StageEntry, env: ScenarioEnv) -> Result<Recorded> {
    let mut run = Run::start(stage, env, 1).await?;
    let timing = run.env.timing;
    let mut holder = run.holder_holding_the_lock("client-A").await?;
    let read = holder.read_stock().await?;
    // The holder works for one TTL before the pause strikes: long enough for
    // a watchdog to renew its lock three times. A stage without a watchdog
    // has no lost signal to wait on, so it answers at once and its lock
    // keeps the TTL it had. Either way the lock must still be held here, or
    // the pause would prove nothing.
    if holder.wait_lost(timing.ttl).await? {
        return Err(HarnessError::Holder(
            "client-A lost its lock before the pause".into(),
        ));
    }
    holder.freeze()?;

    let rival = run.client("client-B").await?;
    run.narrate(format!(
        "client-B tries to acquire for up to {}ms",
        timing.patience().as_millis()
    ));
    match rival.acquire(timing.patience()).await? {
        Some(held) => {
            run.narrate("TWO HOLDERS: frozen client-A still believes it holds the lock, and client-B got it");
            rival.buy_one(&held, timing.business).await?;
            rival.release(&held).await?.answered()?;
            run.facts.insert("rival_acquired", 1);
        }
        None => {
            run.narrate("client-B gave up: the frozen holder's lock never let it in");
            run.facts.insert("rival_acquired", 0);
        }
    }

    holder.thaw()?;
    // The holder does not know it was frozen: it finishes the purchase it
    // started, from the stock it read before the pause.
    holder.sell(read).await?;
    // A watchdog renews every third of the TTL; a whole TTL is three chances.
    let lost = holder.wait_lost(timing.ttl).await?;
    run.facts.insert("lost_signal_fired", i64::from(lost));
    // Its lock may be gone by now: a refusal is part of the story.
    holder.release().await?;
    run.record().await
}
