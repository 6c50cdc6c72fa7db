//! Eviction: the lock node is also a cache. It runs with a memory limit
//! (`maxmemory`) and a `volatile-lru` policy, a common setup for a Redis
//! that serves both; when the cache's entries fill its memory, Redis makes
//! room by evicting keys that have a TTL, and a lock key has one. One item
//! is for sale.
//!
//! 1. The harness gives the lock node (the first one, on Redlock) a memory
//!    limit a little above what it uses, and the `volatile-lru` policy.
//! 2. client-A takes the lock, reads the stock (1) and stops inside. Its
//!    lock lives long (a rival's TTL, [`Run::rival`]): only an eviction can
//!    take the key within the story.
//! 3. The harness writes cache entries (keys of its own, without a TTL)
//!    until Redis refuses one (`OOM`). Before that, Redis has evicted the
//!    lock key if it could: the only key with a TTL, so the only one
//!    `volatile-lru` may pick. A lock key without a TTL cannot be evicted,
//!    and then only the cache breaks. Then the burst passes: the entries
//!    are deleted.
//! 4. client-B asks for the lock for the patience window. Where the key was
//!    evicted, B gets in while A is inside, buys the item and releases.
//! 5. A wakes up, finishes on the stock it read, and releases.
//!
//! Redis's own record says what happened: the keyspace event `evicted`
//! for the lock key (the key record counts it as the key's end, as an
//! expiry), and `evicted_keys` in `INFO stats`. The judge reads the
//! history as for every story. Never on a reader's own server: the story
//! must not evict a reader's keys.
//!
//! Facts: `lock_key_evicted` and `b_acquired`, each 1 or 0, and
//! `evicted_keys`, Redis's own count.

use lockcore::{Description, StageEntry};

use super::steps::slow_inside;
use super::{Recorded, Run, ScenarioEnv};
use crate::error::{HarnessError, Result};

/// Items for sale: one, so any second order is an oversell.
const STOCK: i64 = 1;
/// How far above what the node uses its memory limit is set.
const HEADROOM: u64 = 1024 * 1024;
/// One cache entry: `SETRANGE` pads a new key to this many bytes, so the
/// command the record shows stays one short line.
const ENTRY_BYTES: u64 = 128 * 1024;
/// Cache entries written at most: eight times what the headroom holds.
const MOST_ENTRIES: u64 = 8 * HEADROOM / ENTRY_BYTES;
/// The eviction policy: only keys with a TTL may go.
const POLICY: &str = "volatile-lru";

pub(super) fn not_applicable(stage: &Description) -> Option<&'static str> {
    if stage.stage == 0 {
        Some("no lock key to evict")
    } else {
        super::ensemble::redis_only(
            stage,
            "ZooKeeper: it evicts nothing; a lock node lives until its session ends",
        )
    }
}

pub(super) async fn run(stage: StageEntry, env: ScenarioEnv) -> Result<Recorded> {
    if env.backend.external().is_some() {
        return Err(HarnessError::NotApplicable(
            "a reader's own server: the story would evict the reader's keys",
        ));
    }
    let mut run = Run::start(stage, env, STOCK).await?;
    let timing = run.env.timing;
    let mut node = lockcore::connect(&run.nodes[0].url(), "harness").await?;

    // 1. The node doubles as a cache.
    let used: u64 = memory_used(&mut node).await?;
    let limit = used + HEADROOM;
    config_set(&mut node, "maxmemory-policy", POLICY).await?;
    config_set(&mut node, "maxmemory", &limit.to_string()).await?;
    run.narrate(format!(
        "the node {} doubles as a cache: maxmemory {limit} bytes ({} KiB above what it uses), policy {POLICY}: when memory runs out, Redis evicts keys that have a TTL",
        run.nodes[0].label(),
        HEADROOM / 1024
    ));

    // 2. A takes the lock and stops inside.
    let a = run.rival("client-A").await?;
    let b = run.rival("client-B").await?;
    let held_a = a.acquire_free(timing.patience()).await?;
    let a_slow = slow_inside(&run, &a, &held_a).await?;

    // 3. The cache fills up.
    run.narrate(format!(
        "the cache fills up: the harness writes entries of {} KiB without a TTL",
        ENTRY_BYTES / 1024
    ));
    let key = run.lock_key().to_owned();
    // Every write may push memory over the limit; the next one finds it
    // over, and Redis evicts what the policy lets it before running it. A
    // lock key is tiny: once it is gone, or if it may not go, the node is
    // still over its limit and refuses the write (`OOM`).
    let mut written = 0;
    let mut refusal = None;
    while written < MOST_ENTRIES && refusal.is_none() {
        let entry = redis::cmd("SETRANGE")
            .arg(format!("cache:{written}"))
            .arg(ENTRY_BYTES - 1)
            .arg("x")
            .query_async::<i64>(&mut node)
            .await;
        match entry {
            Ok(_) => written += 1,
            Err(e) if e.code() == Some("OOM") => refusal = Some(e.to_string()),
            Err(e) => return Err(e.into()),
        }
    }
    let Some(refusal) = refusal else {
        return Err(HarnessError::StoryNotTold(format!(
            "{written} cache entries of {} KiB were never refused: the memory limit did not hold",
            ENTRY_BYTES / 1024
        )));
    };
    let exists: i64 = redis::cmd("EXISTS")
        .arg(&key)
        .query_async(&mut node)
        .await?;
    let evicted = exists == 0;
    let evicted_keys = stat(&mut node, "evicted_keys").await?;
    run.facts.insert("lock_key_evicted", i64::from(evicted));
    run.facts.insert("evicted_keys", evicted_keys);
    run.narrate(if evicted {
        format!(
            "Redis EVICTED {key} to make room (evicted_keys {evicted_keys}), then refused the next write: client-A is still inside"
        )
    } else {
        format!(
            "Redis REFUSED a cache write ({refusal}): the lock key has no TTL, so {POLICY} may not evict it, and the cache is what breaks"
        )
    });
    // The burst passes.
    let entries: Vec<String> = (0..written).map(|i| format!("cache:{i}")).collect();
    if !entries.is_empty() {
        redis::cmd("DEL")
            .arg(&entries)
            .query_async::<()>(&mut node)
            .await?;
    }
    run.narrate("the burst passes: the harness deletes its cache entries");

    // 4. B asks for the lock.
    let got_in = match run.probe_for_deadlock(&b).await? {
        Some(held_b) => {
            b.buy_one(&held_b, timing.business).await?;
            b.release(&held_b).await?.answered()?;
            true
        }
        None => false,
    };
    run.facts.insert("b_acquired", i64::from(got_in));

    // 5. A finishes on its old read and releases.
    run.narrate("client-A's business ends");
    a_slow.gate.open();
    a_slow.work.await?;
    a.release(&held_a).await?;
    if !got_in {
        // The lock held through the burst: B buys now, if anything is left.
        let held_b = b.acquire_free(timing.patience()).await?;
        b.buy_one(&held_b, timing.business).await?;
        b.release(&held_b).await?.answered()?;
    }
    run.record().await
}

async fn memory_used(node: &mut impl redis::aio::ConnectionLike) -> Result<u64> {
    let info: String = redis::cmd("INFO").arg("memory").query_async(node).await?;
    field(&info, "used_memory")
}

async fn stat(node: &mut impl redis::aio::ConnectionLike, name: &str) -> Result<i64> {
    let info: String = redis::cmd("INFO").arg("stats").query_async(node).await?;
    field(&info, name)
}

/// The number after `name:` in an `INFO` answer.
fn field<T: std::str::FromStr>(info: &str, name: &str) -> Result<T> {
    info.lines()
        .find_map(|line| line.trim().strip_prefix(name)?.strip_prefix(':'))
        .and_then(|value| value.parse().ok())
        .ok_or_else(|| HarnessError::StoryNotTold(format!("INFO has no number `{name}`")))
}

async fn config_set(
    node: &mut impl redis::aio::ConnectionLike,
    name: &str,
    value: &str,
) -> Result<()> {
    redis::cmd("CONFIG")
        .arg("SET")
        .arg(name)
        .arg(value)
        .query_async::<()>(node)
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_fields_are_read_by_their_whole_name() {
        let info = "# Stats\r\nevicted_keys_x:9\r\nevicted_keys:2\r\n";
        assert_eq!(field::<i64>(info, "evicted_keys").ok(), Some(2));
        assert!(field::<i64>(info, "expired_keys").is_err());
    }
}
