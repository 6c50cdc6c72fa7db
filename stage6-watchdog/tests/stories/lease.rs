//! The story of `tests/lease.rs`: a lock taken with a lease is not renewed,
//! and a business longer than the lease shares the critical section.
//!
//! One story, two readers: the test asserts on what [`lease`] returns, and
//! `lockstages book-assets` includes this same file (by `#[path]`) to record
//! the run the book shows as `stage6-lease`. It lives beside the tests, not
//! in the stage's `src/`, because it drives the lock with the harness, and a
//! stage's `src/` depends on nothing of the harness.

use harness::scenario::{Outcome, Run, ScenarioEnv};
use harness::workload::{Database, Sale};
use harness::{HarnessError, Result};
use lockcore::{ClientSetup, LockError, Release};
use stage6::RLock;
use std::time::Duration;

/// What the lease run did, for the test to judge.
pub struct Lease {
    /// What the observers saw.
    pub outcome: Outcome,
    /// Whether client-A's lock came with a lost signal (something to fire it).
    pub watched: bool,
    /// client-A's late write, on the stock it read inside its lease.
    pub late_sale: Sale,
    /// client-A's unlock, long after its lease ran out.
    pub unlock: std::result::Result<Release, LockError>,
}

/// client-A takes the lock with a lease of one TTL and no watchdog; its
/// business lasts until client-B, who waits at most three leases, has come
/// and gone; then client-A sells on its stale read and unlocks.
pub async fn lease(env: ScenarioEnv) -> Result<Lease> {
    let timing = env.timing;
    let run = Run::start(stage6::STAGE, env, 1).await?;
    let history = run.history().clone();
    // client-A is an RLock of its own (the harness's clients take no
    // lease), its commands logged to the same timeline.
    let setup = ClientSetup {
        replies: Some(history.reply_log()),
        ..ClientSetup::new(
            run.factory.lock_urls.clone(),
            "client-A",
            run.factory.config.clone(),
        )
    };
    let leased_db = Database::connect(&setup, &run.db_url()).await?;
    let leased = RLock::connect(setup).await?;
    let next = run.client("client-B").await?;

    let held = leased
        .try_lock(Duration::ZERO, Some(timing.ttl))
        .await?
        .ok_or_else(|| HarnessError::StoryNotTold("client-A could not take a free lock".into()))?;
    let watched = held.lost.is_some();
    history.acquired("client-A", &held);
    let read = leased_db.read_stock(None).await?;

    // client-A's business is slow: nobody renews its lease meanwhile.
    let next_held = next
        .acquire(timing.patience())
        .await?
        .ok_or_else(|| HarnessError::StoryNotTold("the lease never ran out for client-B".into()))?;
    next.buy_one(&next_held, timing.business).await?;
    next.release(&next_held).await?.answered()?;

    let late_sale = leased_db.sell(read, None).await?;
    history.release_sent("client-A");
    let unlock = leased.unlock().await;

    Ok(Lease {
        outcome: run.finish().await?,
        watched,
        late_sale,
        unlock,
    })
}
