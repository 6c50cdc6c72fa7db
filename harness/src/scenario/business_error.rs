//! Business error: the business fails inside the critical section, and the
//! release, written as the last line of the business code, never runs. The
//! seeds' advice is "unlock in finally"; this is what forgetting it costs.
//!
//! 1. client-A takes the lock, reads the stock, and its payment step fails.
//!    Its code returns the error early (`?`), skipping the release. client-A
//!    stays alive, as a server process does after one failed request.
//! 2. client-B asks for the lock for the run's patience (three TTLs).
//!
//! What B meets depends on the stage: stage 1's key has no TTL and stays
//! forever; a key with a TTL makes B wait for it to run out; stage 6's
//! watchdog, still running in the living client-A, renews the lock for as
//! long as client-A lives, so B never gets in. The observers judge from the
//! lock node's record (a key that stayed for the whole window and nobody
//! acquiring is DEADLOCK).
//!
//! The fix, a guard that releases on every path (drop, error, panic), is
//! `harness::guard::LockGuard`; the stage tests show it.
//!
//! Facts: `b_acquired` (1 or 0). The timeline shows whether the key expired
//! before B's turn.

use lockcore::{Acquired, Description, StageEntry};

use super::{Recorded, Run, ScenarioEnv};
use crate::client::Client;
use crate::error::Result;

pub(super) fn not_applicable(stage: &Description) -> Option<&'static str> {
    let consensus = "ZooKeeper: no observer of the ensemble's nodes yet, so the deadlock of a skipped release (the node lives with the session) cannot be judged";
    super::ensemble::redis_only(stage, consensus)
        .or_else(|| (stage.stage == 0).then_some("no lock to leave behind"))
}

/// The payment step that fails.
fn charge_the_card() -> std::result::Result<(), &'static str> {
    Err("the payment service is down")
}

// ANCHOR: without_finally
/// One purchase as the buggy code has it: the release is the last line, so
/// the early return on a failed payment skips it.
async fn buy_without_finally(
    client: &Client,
    held: &Acquired,
) -> Result<std::result::Result<(), &'static str>> {
    client.read_stock(held).await?;
    if let Err(e) = charge_the_card() {
        return Ok(Err(e)); // `?` in real code: the release below never runs
    }
    client.release(held).await?.answered()?;
    Ok(Ok(()))
}
// ANCHOR_END: without_finally

pub(super) async fn run(stage: StageEntry, env: ScenarioEnv) -> Result<Recorded> {
    let mut run = Run::start(stage, env, 1).await?;
    let timing = run.env.timing;
    // A lives on: a watchdog must keep its lock through B's whole window.
    let a = run.living_holder("client-A").await?;
    let b = run.client("client-B").await?;

    // 1. A's business fails and its release is skipped.
    let held_a = a.acquire_free(timing.patience()).await?;
    if let Err(failure) = buy_without_finally(&a, &held_a).await? {
        run.factory.history.left(
            "client-A",
            &format!("business FAILED ({failure}): it returns early and its release is skipped"),
        );
    }

    // 2. B asks for the lock while client-A lives on.
    match run.probe_for_deadlock(&b).await? {
        Some(held_b) => {
            run.facts.insert("b_acquired", 1);
            b.buy_one(&held_b, timing.business).await?;
            b.release(&held_b).await?.answered()?;
        }
        None => {
            run.facts.insert("b_acquired", 0);
        }
    }
    drop(a); // client-A's process ends; a watchdog stops with it
    run.record().await
}
