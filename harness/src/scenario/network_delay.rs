//! Network delay: every reply to client-A comes three TTLs late. Its
//! requests reach the nodes at once, so its commands *run*; only the
//! answers are slow.
//!
//! On Redlock, no master answers within the per-node timeout, so client-A
//! has no majority and is refused. Had it waited for the answers, its
//! validity would have been used up long before they came. It then releases
//! on every master, including those that never answered: they did write
//! its key. The run checks that every key was deleted, not left to expire,
//! and that client-B, whose network is fine, gets the lock at once.
//!
//! On one node, the client library gives up first: redis-rs times a reply
//! out after 500 ms by default, so client-A is told its lock command
//! failed, although it ran. What is left is the key it wrote. From stage 3
//! on it carries a TTL and frees itself; stage 1's never expires, nor does
//! stage 2's, whose `EXPIRE` waited for the lost `SETNX` reply and was never
//! sent: nobody gets the lock again. client-B, who takes the lock once the
//! key has expired, stays inside until client-A has its answer: a client
//! library that waits longer for a reply (redis-py waits 5 s) hears "OK"
//! for a key that expired long ago, and its holder sells beside client-B.

use std::time::Duration;

use lockcore::{Description, LockError, StageEntry};
use tokio::sync::watch;
use tokio::time::{Instant, sleep};

use super::steps::release_after_fault;
use super::{Recorded, Run, ScenarioEnv};
use crate::error::{HarnessError, Result};
use crate::fault::node::Proxies;
use crate::history::fault_kind::Kind;
use crate::topology::redlock;

pub(super) fn not_applicable(stage: &Description) -> Option<&'static str> {
    let consensus = "ZooKeeper: the delaying proxy stands in front of Redis nodes; none is built for the ensemble yet";
    super::ensemble::redis_only(stage, consensus)
        .or_else(|| (stage.stage == 0).then_some("no lock command whose reply could be late"))
}

pub(super) async fn run(stage: StageEntry, env: ScenarioEnv) -> Result<Recorded> {
    if stage.description.nodes > 1 {
        on_redlock(stage, env).await
    } else {
        on_one_node(stage, env).await
    }
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// Counts the lock nodes holding the lock key, again and again, until
/// `done(count)` or until `within` has passed. Returns the last count.
async fn wait_for_lock_keys(
    run: &Run,
    done: impl Fn(usize) -> bool,
    within: Duration,
) -> Result<usize> {
    let deadline = Instant::now() + within;
    loop {
        let holding = redlock::nodes_holding(&run.nodes, run.lock_key()).await?;
        if done(holding) || Instant::now() > deadline {
            return Ok(holding);
        }
        sleep(Duration::from_millis(5)).await;
    }
}

/// From now on every reply to client-A comes three TTLs late.
fn delay_replies_to_a(run: &Run, proxies: &Proxies) {
    let delay = run.env.timing.ttl * 3;
    proxies.delay_replies("client-A", delay);
    let what = format!("every reply to it is delayed {}ms", delay.as_millis());
    run.history().fault_began("client-A", Kind::Delay, &what);
}

async fn on_redlock(stage: StageEntry, env: ScenarioEnv) -> Result<Recorded> {
    let mut run = Run::start(stage, env, 1).await?;
    let timing = run.env.timing;
    let proxies = run.put_proxies().await?;
    let asker = run.client("client-A").await?;
    delay_replies_to_a(&run, &proxies);

    let started = Instant::now();
    let answer = asker.try_acquire().await?;
    run.facts.insert("acquire_ms", millis(started.elapsed()));
    match &answer {
        None => {
            run.narrate(format!(
                "client-A was told no after {}ms: no master answered in time, and answers {}ms \
                 late would have left no validity",
                started.elapsed().as_millis(),
                (timing.ttl * 3).as_millis()
            ));
        }
        Some(held) => {
            run.narrate("client-A was granted the lock although every answer came late");
            asker.release(held).await?.answered()?;
        }
    }
    let left = wait_for_lock_keys(&run, |holding| holding == 0, timing.patience()).await?;
    run.facts
        .insert("lock_keys_left", i64::try_from(left).unwrap_or(-1));
    proxies.heal("client-A");
    run.history().fault_ended("client-A", Kind::Delay);

    let other = run.client("client-B").await?;
    let started = Instant::now();
    if let Some(held) = other.acquire(timing.patience()).await? {
        run.facts
            .insert("contender_wait_ms", millis(started.elapsed()));
        other.buy_one(&held, timing.business).await?;
        other.release(&held).await?.answered()?;
    }

    let expired = format!("expired {} ", run.lock_key());
    let mut outcome = run.record().await?;
    let expiries = outcome
        .history
        .lines()
        .iter()
        .filter(|e| e.text.starts_with(&expired))
        .count();
    outcome
        .facts
        .insert("lock_keys_expired", i64::try_from(expiries).unwrap_or(-1));
    Ok(outcome)
}

async fn on_one_node(stage: StageEntry, env: ScenarioEnv) -> Result<Recorded> {
    let mut run = Run::start(stage, env, 1).await?;
    let timing = run.env.timing;
    let proxies = run.put_proxies().await?;
    let asker = run.client("client-A").await?;
    // client-B stays inside until client-A has its answer: its lock must
    // outlive that wait (three TTLs and more), as a rival's does.
    let other = run.rival("client-B").await?;
    // Once with a healthy network: connections open, scripts cached.
    if let Some(held) = asker.acquire(timing.patience()).await? {
        asker.release(&held).await?.answered()?;
    }
    delay_replies_to_a(&run, &proxies);

    let (answered, mut heard) = watch::channel(false);
    let ask = async {
        let asked = asker.try_acquire().await;
        let _ = answered.send(true);
        asked
    };
    let contend = async {
        // Room for two delayed replies before the lock command: a library
        // may ask the node something first (python-redis-lock reads the
        // key before it sets it).
        let holding =
            wait_for_lock_keys(&run, |holding| holding > 0, timing.patience() * 3).await?;
        if holding == 0 {
            return Err(HarnessError::StoryNotTold(
                "client-A's lock command never reached the node".into(),
            ));
        }
        run.narrate("client-A's lock command ran on the node; its reply is on its way, slowly");
        let Some(held) = run.probe_for_deadlock(&other).await? else {
            return Ok(None);
        };
        let read = other.read_stock(&held).await?;
        // Inside, client-B waits for client-A's answer: a grant that comes
        // late lands while client-B holds the lock.
        let _ = heard.wait_for(|answered| *answered).await;
        Ok(Some((held, read)))
    };
    let (asked, contended) = tokio::join!(ask, contend);
    let inside_b = contended?;
    // A late holder reads while client-B is still inside: both read the
    // same stock. Then client-B sells and leaves, then client-A.
    let late = match asked {
        Ok(Some(held)) => {
            run.narrate("client-A got its reply late and believes it holds the lock");
            run.facts.insert("late_holder", 1);
            let read = asker.read_stock(&held).await?;
            Some((held, read))
        }
        Ok(None) => {
            run.narrate("client-A was told the lock is taken");
            None
        }
        Err(HarnessError::Lock(LockError::Redis(e))) => {
            run.facts.insert("late_holder", 0);
            run.narrate(format!(
                "client-A gave up waiting for its reply ({e}): it thinks it failed, yet its lock \
                 command ran"
            ));
            None
        }
        Err(other) => return Err(other),
    };
    if let Some((held_b, read_b)) = &inside_b {
        other.sell(*read_b, held_b).await?;
        other.release(held_b).await?.answered()?;
    }
    if let Some((held, read)) = &late {
        asker.sell(*read, held).await?;
        release_after_fault(&run, &asker, held).await?;
    }
    proxies.heal("client-A");
    run.history().fault_ended("client-A", Kind::Delay);
    run.record().await
}
