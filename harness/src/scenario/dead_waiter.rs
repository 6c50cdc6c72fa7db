//! Dead waiter: client-A holds the lock; client-B, a process of its own,
//! asks for it and is killed with `kill -9` while it waits; client-C asks
//! after B. Then A releases. How long does C wait for a lock nobody holds?
//!
//! A lock that lets any waiter in (stages 1–7) gives it to C at C's next
//! try, or at the unlock message. A lock that hands over in order (stage
//! 6's fair variant) gives it to the head of its queue, B, who is dead: C
//! waits until B's place in line times out (the waiter timeout), and no
//! longer. `handover_ms` is that wait, from A's release to C's grant.

use std::time::{Duration, Instant};

use lockcore::{Description, StageEntry};

use super::{Recorded, Run, ScenarioEnv};
use crate::error::{HarnessError, Result};

pub(super) fn not_applicable(stage: &Description) -> Option<&'static str> {
    if super::ensemble::on_consensus_store(stage) {
        // Not told yet: a dead waiter's sequential node (etcd: its key)
        // stays in line until its session (lease) expires, so the next
        // waiter waits one session timeout.
        return super::ensemble::redis_only(
            stage,
            "ZooKeeper: a dead waiter's node leaves the line with its session; not yet a story here",
        );
    }
    (stage.stage == 0).then_some("no lock to wait for")
}

/// The TTL of a lock taken without a watchdog, here: client-A holds the
/// lock through the whole story, a process spawned and killed included,
/// and its lock must not expire under it (on a busy machine spawning the
/// waiter's process alone can outlast the usual 300 ms). Ten times the
/// usual, as in `contention`. The watchdog timeout stays the run's, so the
/// fair variant's waiter timeout, the bound this story measures, does not
/// change.
const HOLD_TTL: Duration = Duration::from_secs(3);

pub(super) async fn run(stage: StageEntry, env: ScenarioEnv) -> Result<Recorded> {
    let mut run = Run::start(stage, env, 1).await?;
    run.factory.config.ttl = run.factory.config.ttl.max(HOLD_TTL);
    let patience = run.env.timing.patience();
    let mut holder = run.holder_holding_the_lock("client-A").await?;

    // B asks for as long as the story lasts; it dies waiting.
    let mut waiter = run
        .factory
        .spawn_holder(&run.env.launcher, "client-B")
        .await?;
    waiter.start_waiting(patience * 10)?;
    run.wait_until_asked("client-B", patience * 10).await?;

    let late = run.client("client-C").await?;
    run.factory.history.asking(late.name(), patience);
    let granted_at = async {
        let held = late.acquire(patience).await?;
        Ok::<_, HarnessError>(held.map(|held| (held, Instant::now())))
    };
    let story = async {
        // C is behind B once the server has seen C ask.
        run.wait_until_asked("client-C", patience * 10).await?;
        waiter.kill()?;
        let released = holder.release().await?.answered()?;
        Ok::<_, HarnessError>((released, Instant::now()))
    };
    let (granted, released) = tokio::join!(granted_at, story);
    let (_, released_at) = released?;
    let granted = granted?;
    let handover = granted
        .as_ref()
        .map(|(_, at)| at.saturating_duration_since(released_at));
    match handover {
        Some(waited) => run.narrate(format!(
            "client-C got the lock {}ms after client-A's release",
            waited.as_millis()
        )),
        None => run.narrate("client-C never got the lock"),
    }
    run.facts.insert(
        "handover_ms",
        handover.map_or(-1, |waited| {
            i64::try_from(waited.as_millis()).unwrap_or(i64::MAX)
        }),
    );
    run.facts
        .insert("late_waiter_acquired", i64::from(granted.is_some()));
    if let Some((held, _)) = granted {
        late.buy_one(&held, run.env.timing.business).await?;
        late.release(&held).await?.answered()?;
    }
    run.record().await
}
