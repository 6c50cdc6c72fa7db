//! Reentrant: a client that holds the lock asks for it again, as code does
//! when a locked method calls another method that takes the same lock.
//!
//! A reentrant lock (stage 6) says yes at once and counts the holds: the
//! first release gives back one hold and the lock stays (`StillHeld`), the
//! second deletes it. A non-reentrant lock cannot tell its holder from a
//! stranger, so the holder waits for itself: a deadlock. Stage 1's key never
//! expires, so the wait lasts the whole patience window. Where the key has
//! a TTL the wait ends when the holder's own first hold expires, and the
//! "second" hold is really a new lock taken after the first was lost; the
//! scenario reports that as a deadlock too (broken only by the TTL), with
//! how long the holder waited for itself in `self_wait_ms`.
//!
//! Reentrance is proven by the lock's own answer, not by timing: the release
//! of the second hold must say the lock is still held.

use lockcore::{Description, LockError, Release, StageEntry};
use tokio::time::Instant;

use super::{Outcome, Run, ScenarioEnv};
use crate::error::{HarnessError, Result};
use crate::observe::Finding;

pub(super) fn not_applicable(stage: &Description) -> Option<&'static str> {
    (stage.stage == 0).then_some("no lock")
}

pub(super) async fn run(stage: StageEntry, env: ScenarioEnv) -> Result<Outcome> {
    let mut run = Run::start(stage, env, 1).await?;
    let timing = run.env.timing;
    let client = run.client("client-A").await?;
    let Some(first) = client.acquire(timing.patience()).await? else {
        return Err(HarnessError::Unsupported(
            "client-A could not take a free lock".into(),
        ));
    };
    run.narrate(format!(
        "client-A holds the lock and asks for it again, for up to {}ms",
        timing.patience().as_millis()
    ));
    let asked = Instant::now();
    let second = client.acquire(timing.patience()).await?;
    let self_wait = i64::try_from(asked.elapsed().as_millis()).unwrap_or(i64::MAX);
    run.facts.insert("self_wait_ms", self_wait);

    let reentered = match &second {
        Some(second) => {
            client.buy_one(second, timing.business).await?;
            let inner = release_tolerating_loss(&client, second).await?;
            matches!(inner, Some(Release::StillHeld(_)))
        }
        None => false,
    };
    let outer = release_tolerating_loss(&client, &first).await?;
    run.facts.insert("reentered", i64::from(reentered));

    if reentered {
        run.narrate(format!(
            "client-A reentered its own lock at once; the outer release said {outer:?}"
        ));
    } else if second.is_some() {
        run.narrate(format!(
            "DEADLOCK: client-A waited {self_wait}ms for its own lock, until its first hold expired; \
             the lock it got then was a new one, and its outer section had lost its protection"
        ));
        run.verdict.insert(Finding::Deadlock);
    } else {
        run.narrate(format!(
            "DEADLOCK: client-A waited {self_wait}ms for the lock it holds itself"
        ));
        run.verdict.insert(Finding::Deadlock);
    }
    run.finish().await
}

/// Releases `held`; a hold that had already expired is an answer here
/// (`None`), not a failure of the scenario.
async fn release_tolerating_loss(
    client: &crate::Client,
    held: &lockcore::Acquired,
) -> Result<Option<Release>> {
    match client.release(held).await? {
        Ok(release) => Ok(Some(release)),
        Err(LockError::NotOwner) => Ok(None),
        Err(other) => Err(HarnessError::Lock(other)),
    }
}
