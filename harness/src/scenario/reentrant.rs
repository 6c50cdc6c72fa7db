//! Reentrant: a client that holds the lock asks for it again, as code does
//! when a locked method calls another method that takes the same lock.
//!
//! Three things can happen, and the observers tell them apart from what the
//! lock node recorded, not from how long the second request took:
//!
//! - a reentrant lock (stage 6) says yes at once and counts the holds: the
//!   key never went away, and the first release gives back one hold;
//! - a lock whose key has a TTL cannot tell its holder from a stranger, so
//!   the holder waits for itself until its own key expires, then takes the
//!   lock anew: SELF-BLOCKED, with the time waited (`self_wait_ms`). Its
//!   outer section lost its protection on the way;
//! - stage 1's key never expires, so the holder waits the whole patience
//!   window for a key that stays: DEADLOCK.

use lockcore::{Description, Release, StageEntry};
use tokio::time::Instant;

use super::{Recorded, Run, ScenarioEnv};
use crate::client::Released;
use crate::error::Result;

pub(super) fn not_applicable(stage: &Description) -> Option<&'static str> {
    if stage.stage == 0 {
        return Some("no lock");
    }
    if stage.reentrant {
        return None;
    }
    // A lock that is not reentrant waits behind its own node: the judge
    // would need the ensemble's record of who holds the node, as it has
    // the keyspace's on Redis, to tell that wait from a deadlock.
    super::ensemble::redis_only(
        stage,
        "ZooKeeper: a lock that is not reentrant waits behind its own node, and no observer of the ensemble's nodes tells that wait from a deadlock yet",
    )
}

pub(super) async fn run(stage: StageEntry, env: ScenarioEnv) -> Result<Recorded> {
    let mut run = Run::start(stage, env, 1).await?;
    let timing = run.env.timing;
    let client = run.client("client-A").await?;
    let first = client.acquire_free(timing.patience()).await?;
    run.narrate("client-A holds the lock and asks for it again");
    let asked = Instant::now();
    let second = run.probe_for_deadlock(&client).await?;
    let self_wait = i64::try_from(asked.elapsed().as_millis()).unwrap_or(i64::MAX);
    run.facts.insert("self_wait_ms", self_wait);

    let inner = match &second {
        Some(second) => {
            client.buy_one(second, timing.business).await?;
            release_tolerating_loss(&client, second).await?
        }
        None => None,
    };
    run.facts.insert(
        "reentered",
        i64::from(matches!(inner, Some(Release::StillHeld(_)))),
    );
    release_tolerating_loss(&client, &first).await?;
    run.record().await
}

/// Releases `held`; a hold that had already expired is an answer here
/// (`None`), not a failure of the scenario.
async fn release_tolerating_loss(
    client: &crate::client::Client,
    held: &lockcore::Acquired,
) -> Result<Option<Release>> {
    Ok(match client.release(held).await? {
        Released::Answered(release) => Some(release),
        Released::NotOwner => None,
    })
}
