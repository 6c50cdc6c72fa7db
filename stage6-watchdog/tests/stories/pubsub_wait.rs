//! The story of `tests/pubsub_wait.rs`: a waiter sleeps on the lock's
//! channel and wakes on the unlock message, however long the holder keeps
//! it waiting.
//!
//! One story, two readers: the test asserts on what [`pubsub_wait`]
//! returns, and `lockstages book-assets` includes this same file (by
//! `#[path]`) to record the run the book shows as `stage6-pubsub-wait`. It
//! lives beside the tests, not in the stage's `src/`, because it drives the
//! lock with the harness, and a stage's `src/` depends on nothing of the
//! harness.

use std::time::Duration;

use harness::scenario::{Outcome, Run, ScenarioEnv, Timing};
use harness::{HarnessError, Result};
use lockcore::Release;
use tokio::time::{Instant, sleep};

/// Long, so that the waiter's other wake-up (the holder's PTTL running out)
/// cannot come first: only the unlock message can wake it.
pub const WATCHDOG: Duration = Duration::from_secs(10);
/// How long the holder keeps the waiter waiting: sixty retry intervals of a
/// polling lock (5 ms in tests).
pub const HOLD: Duration = Duration::from_millis(300);

/// What the run did, for the test to judge.
pub struct PubsubWait {
    /// What the observers saw.
    pub outcome: Outcome,
    /// client-A's release: it must delete the lock (and publish).
    pub release: Release,
    /// From client-A sending its release to client-B holding the lock.
    pub woke_after_sent: Duration,
    /// From client-A having its release's answer to client-B holding the lock.
    pub woke_after_answered: Duration,
}

/// client-A holds the lock; client-B waits for it (and subscribes);
/// client-A keeps it [`HOLD`] longer, then releases; client-B takes it
/// and releases it.
pub async fn pubsub_wait(mut env: ScenarioEnv) -> Result<PubsubWait> {
    env.timing = Timing {
        ttl: WATCHDOG,
        ..Timing::default()
    };
    let run = Run::start(stage6::STAGE, env, 1).await?;
    let holder = run.client("client-A").await?;
    let waiter = run.client("client-B").await?;
    let channel = stage6::channel_name(&run.factory.config.key);
    let mut admin = lockcore::connect(&run.nodes[0].url(), "harness").await?;

    let held = holder
        .acquire(Duration::ZERO)
        .await?
        .ok_or_else(|| HarnessError::StoryNotTold("client-A could not take a free lock".into()))?;
    let (waited, released) = tokio::join!(
        async {
            let held = waiter.acquire(WATCHDOG).await;
            (held, Instant::now())
        },
        async {
            // Synchronise on the waiter's SUBSCRIBE, then keep it waiting.
            let subscribing = Instant::now();
            loop {
                let (_, subscribers): (String, u32) = redis::cmd("PUBSUB")
                    .arg("NUMSUB")
                    .arg(&channel)
                    .query_async(&mut admin)
                    .await?;
                if subscribers == 1 {
                    break;
                }
                if subscribing.elapsed() > Duration::from_secs(10) {
                    return Err(HarnessError::StoryNotTold(
                        "client-B never subscribed".into(),
                    ));
                }
                sleep(Duration::from_millis(2)).await;
            }
            sleep(HOLD).await;
            let sent = Instant::now();
            let release = holder.release(&held).await?.answered()?;
            Ok::<_, HarnessError>((release, sent, Instant::now()))
        },
    );
    let (release, sent, answered) = released?;
    let (waited, woke_at) = waited;
    let next_held = waited?.ok_or_else(|| {
        HarnessError::StoryNotTold("client-B did not get the released lock".into())
    })?;
    waiter.release(&next_held).await?.answered()?;

    Ok(PubsubWait {
        outcome: run.finish().await?,
        release,
        woke_after_sent: woke_at.saturating_duration_since(sent),
        woke_after_answered: woke_at.saturating_duration_since(answered),
    })
}
