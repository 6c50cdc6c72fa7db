//! # Stage 6 — a Redisson-style lock: reentrant hash, watchdog, pub/sub wait
//!
//! Stage 5 is correct on release, but its TTL is a guess. Guess short and
//! the lock expires under a holder that is still working; guess long and a
//! dead holder blocks everyone for that long. Redisson, the Java client most
//! teams reach for, stops guessing. This stage rebuilds its `RLock` with the
//! same keys and scripts, so what you see in `redis-cli` is what a Redisson
//! user sees:
//!
//! - **A hash, not a string.** The key is the lock's name; each field is an
//!   owner, `<client-uuid>:<task-id>`, and its value counts that owner's
//!   holds. The same owner may take the lock again (reentrance) and must
//!   give it back as many times.
//! - **A watchdog.** Taken without a lease, the lock lives for
//!   `watchdog_timeout` (30 s by default) and a background task renews it
//!   every third of that (10 s) for as long as the owner holds it. A holder
//!   that dies stops renewing, so its lock expires within one timeout. Taken
//!   *with* a lease, the lock is not renewed: it expires when the lease does,
//!   finished or not.
//! - **Waiting on pub/sub.** A waiter sleeps until the holder's unlock
//!   message, or until the holder's lock would have expired, whichever comes
//!   first. No sleep-and-retry loop. As in Redisson, a client listens to a
//!   lock's channel once, on one subscriber connection shared by all its
//!   waiting tasks, and each unlock message wakes *one* of them: a release
//!   frees the lock for one owner, so waking every waiter would only send
//!   the others back to sleep after a wasted try.
//!
//! ## Which Redisson, and where this stage departs from it
//!
//! The keys, the scripts' effects, the channel name, the unlock message and
//! the numbers (30 s watchdog, renewed every 10 s) are those of Redisson 3.x,
//! checked against its current sources (`RedissonLock`, `RedissonBaseLock`
//! and its `renewal` package). What a reader sees in `redis-cli` is what a
//! Redisson user sees, with these differences, each on purpose:
//!
//! - **No unlock latch.** Since 3.24.1, Redisson's unlock also writes a
//!   short-lived `redisson_unlock_latch:{name}:<request-id>` key, so that an
//!   unlock *retried* after a timeout answers what the first attempt did.
//!   This stage never retries an unlock, so it has nothing to remember.
//! - **One watchdog per owner.** Redisson runs one renewal timer per client
//!   and renews each lock name once per round, for the first of its owning
//!   threads. Here each owner (task) has its own watchdog: more renewals
//!   when several tasks hold one lock, but each hold has its own lost
//!   signal, and the code reads top to bottom.
//! - **A lost lock is announced.** When a renewal finds the lock gone,
//!   Redisson stops renewing, silently; when a renewal fails with an error,
//!   it logs and tries again (recent versions can also call a configured
//!   failure listener). Here the watchdog stops in both cases and fires the
//!   [`LostSignal`] in [`Acquired::lost`], so the business can stop instead
//!   of carrying on unprotected, as node-redlock's `AbortSignal` and
//!   redis-semaphore's `onLockLost` do.
//! - **Like Redisson,** an unlock stops the owner's renewal whatever its
//!   outcome (deleted, not the owner, or an error), except when holds
//!   remain.
//!
//! What it fixes: slow business (the watchdog keeps the lock as long as the
//! holder lives, `tests/slow_business.rs`), a holder killed with `kill -9`
//! (its lock expires one watchdog timeout later, `tests/killed_holder.rs`),
//! and a client asking for a lock it already holds (`tests/reentrant.rs`).
//!
//! What it still breaks: the watchdog lives in the holder's process. A
//! stop-the-world pause (a long GC, SIGSTOP, a VM migration) freezes it along
//! with the business; the lock expires, someone else takes it, and the
//! holder wakes up believing it still holds it (`tests/gc_pause.rs`). The
//! lost signal fires, but only after the pause, and nothing forces the
//! business to look at it before its next write. And one Redis master is one
//! copy: a failover can lose the lock. Stage 7 spreads it over independent
//! nodes; stage 8 makes the protected resource refuse stale writers.
//!
//! ## Who is "the owner"?
//!
//! Redisson's owner is a JVM thread. Async Rust has no such thread: one task
//! hops between worker threads at every `.await`, and one thread runs many
//! tasks. The unit that stays put for a whole critical section is the tokio
//! **task**, so the owner field is `<client-uuid>:task-<id>`, with the id
//! from [`tokio::task::try_id`]. A future that runs outside any task (the
//! body of `#[tokio::main]` or `#[tokio::test]`, driven by `block_on`) never
//! leaves its thread, so there the owner is `<client-uuid>:thread-<n>`.
//!
//! Two consequences, as with threads in Java: futures joined inside one task
//! (`join!`, `join_all`) are *one* owner and reenter each other's holds;
//! give independent work its own task, or its own `RLock`, to make it a
//! separate owner. And `unlock` must come from the task that locked.

pub mod fair;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use lockcore::{
    Acquired, ClientSetup, ConnectFuture, Connection, Description, DistributedLock, FaultPoints,
    Heard, LockConfig, LockError, LostSignal, Point, Release, StageEntry,
};
use redis::{RedisResult, Script};
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep, timeout};
use uuid::Uuid;

/// What this stage is, for listings and the harness.
pub const DESCRIPTION: Description = Description {
    stage: 6,
    name: "stage6",
    title: "Redisson-style: reentrant hash, watchdog renewal, pub/sub wait",
    acquire_commands: "EVALSHA acquire (PTTL, HINCRBY field 1 + PEXPIRE | HEXISTS); SUBSCRIBE to wait; \
                       EVALSHA renew (HEXISTS, PEXPIRE) every watchdog/3",
    release_commands: "EVALSHA release (HINCRBY field -1, PEXPIRE | DEL, PUBLISH 0)",
    reentrant: true,
    nodes: 1,
    fault_points: &[Point::AfterAcquire],
    home: lockcore::Home::REDIS,
};

/// What a release publishes on the lock's channel (Redisson's
/// `LockPubSub.UNLOCK_MESSAGE`).
pub const UNLOCK_MESSAGE: &str = "0";

// ANCHOR: acquire_script
/// Takes the lock, or takes it once more. Returns nil on success (the hash
/// did not exist, or this owner's field was already in it); otherwise the
/// holder's remaining time in milliseconds, so a waiter knows how long it
/// may sleep at most.
///
/// Redisson asks `EXISTS` first and `PTTL` last. `PTTL` first answers both
/// questions at once (-2: no such key), so a waiter that loses pays three
/// commands (`EVALSHA`, `PTTL`, `HEXISTS`) instead of four; the effects
/// are the same.
///
/// `KEYS[1]` the lock name, `ARGV[1]` the lease in ms, `ARGV[2]` the owner.
pub const ACQUIRE_SCRIPT: &str = r"
local pttl = redis.call('pttl', KEYS[1])
if pttl == -2 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return pttl
";
// ANCHOR_END: acquire_script

// ANCHOR: release_script
/// Gives back one hold. Returns nil when the owner holds nothing (the lock
/// expired, or was never ours): the caller turns that into
/// [`LockError::NotOwner`], never into a quiet success. Otherwise it returns
/// the holds left: above zero the lock stays, with a fresh lease; at zero
/// the key is deleted and waiters are told on the channel.
///
/// Redisson's script answers 0 (still held) or 1 (deleted); answering the
/// count instead costs nothing and lets `unlock` say how many holds remain.
///
/// `KEYS[1]` the lock name, `KEYS[2]` its channel, `ARGV[1]` the unlock
/// message, `ARGV[2]` the lease in ms, `ARGV[3]` the owner.
pub const RELEASE_SCRIPT: &str = r"
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
  return nil
end
local left = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if left > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return left
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], ARGV[1])
return 0
";
// ANCHOR_END: release_script

// ANCHOR: renew_script
/// The watchdog's renewal: extend the lock only while this owner still has
/// a field in it. 1 renewed, 0 gone (expired, deleted, or someone else's).
///
/// `KEYS[1]` the lock name, `ARGV[1]` the watchdog timeout in ms,
/// `ARGV[2]` the owner.
pub const RENEW_SCRIPT: &str = r"
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('pexpire', KEYS[1], ARGV[1])
  return 1
end
return 0
";
// ANCHOR_END: renew_script

/// Deletes the lock whoever holds it, and tells the waiters. 1 if there was
/// a lock to delete.
pub const FORCE_UNLOCK_SCRIPT: &str = r"
if redis.call('del', KEYS[1]) == 1 then
  redis.call('publish', KEYS[2], ARGV[1])
  return 1
end
return 0
";

// Sent as EVALSHA; redis-rs loads a script the server has not seen yet.
static ACQUIRE: LazyLock<Script> = LazyLock::new(|| Script::new(ACQUIRE_SCRIPT));
static RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(RELEASE_SCRIPT));
static RENEW: LazyLock<Script> = LazyLock::new(|| Script::new(RENEW_SCRIPT));
static FORCE_UNLOCK: LazyLock<Script> = LazyLock::new(|| Script::new(FORCE_UNLOCK_SCRIPT));

/// The channel a lock's releases are announced on, as Redisson names it.
pub fn channel_name(lock_name: &str) -> String {
    format!("redisson_lock__channel:{{{lock_name}}}")
}

// ANCHOR: owner
/// The task asking, as the second half of an owner field: `task-<id>`
/// inside a tokio task, `thread-<n>` for a future driven by `block_on`
/// (which never leaves its thread).
pub fn current_task() -> String {
    match tokio::task::try_id() {
        Some(id) => format!("task-{id}"),
        None => {
            let id = format!("{:?}", std::thread::current().id());
            format!(
                "thread-{}",
                id.trim_start_matches("ThreadId(").trim_end_matches(')')
            )
        }
    }
}
// ANCHOR_END: owner

/// One client's handle on one lock: Redisson's `RLock`.
pub struct RLock {
    conn: Connection,
    /// How this client connects: its subscriber connection is opened the
    /// same way as `conn` (named, to the same URL, watched by tests).
    setup: ClientSetup,
    /// The unlock messages, heard once for all of this client's waiters.
    unlocks: Unlocks,
    config: LockConfig,
    channel: String,
    client_id: Uuid,
    faults: FaultPoints,
    /// What this client knows about its owners' holds: the lease to renew
    /// with on a partial unlock, and the watchdog, if one runs.
    holds: Mutex<HashMap<String, LocalHold>>,
}

struct LocalHold {
    lease: Duration,
    watchdog: Option<Watchdog>,
    /// How many times this owner has taken the lock so far: a release
    /// compares it before and after to learn whether the owner took the
    /// lock again while the release was on its way.
    acquisitions: u64,
    /// Releases of this owner sent and not yet answered.
    releasing: u32,
}

/// A running watchdog task; dropping it stops the task. The fair variant
/// (`fair.rs`) keeps its holds' watchdogs in the same shape.
pub(crate) struct Watchdog {
    pub(crate) task: JoinHandle<()>,
    pub(crate) lost: LostSignal,
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl RLock {
    /// Connects one client to the Redis server at `setup.urls[0]`, with a
    /// fresh client UUID.
    pub async fn connect(setup: ClientSetup) -> Result<Self, LockError> {
        setup.config.validate()?;
        let url = setup
            .urls
            .first()
            .ok_or_else(|| LockError::Config("no Redis URL given".into()))?;
        let conn = setup.connect(url).await?;
        Ok(Self {
            conn,
            unlocks: Unlocks::default(),
            channel: channel_name(&setup.config.key),
            config: setup.config.clone(),
            client_id: Uuid::new_v4(),
            faults: setup.faults.clone(),
            holds: Mutex::default(),
            setup,
        })
    }

    /// The owner field of the task calling: `<client-uuid>:<task>`.
    pub fn current_owner(&self) -> String {
        format!("{}:{}", self.client_id, current_task())
    }

    // ANCHOR: try_lock
    /// Takes the lock for the current task, waiting at most `wait`; `None`
    /// when the wait ran out. With `lease: None` the watchdog keeps the lock
    /// alive until [`RLock::unlock`]; with `Some(lease)` the lock simply
    /// expires after `lease`, and nobody renews it.
    pub async fn try_lock(
        &self,
        wait: Duration,
        lease: Option<Duration>,
    ) -> Result<Option<Acquired>, LockError> {
        if let Some(lease) = lease {
            // PEXPIRE 0 would delete the lock the moment it is taken; one
            // Redis refuses would come after HINCRBY, which the script does
            // not undo, and leave a lock that never expires.
            lockcore::check_expiry("a lease", lease)?;
        }
        let deadline = lockcore::deadline_after(wait)?;
        self.acquire_until(Some(deadline), lease).await
    }

    /// Takes the lock for the current task, waiting as long as it takes,
    /// and keeps it alive with the watchdog until [`RLock::unlock`].
    pub async fn lock(&self) -> Result<Acquired, LockError> {
        loop {
            // With no deadline the wait ends only by taking the lock.
            if let Some(held) = self.acquire_until(None, None).await? {
                return Ok(held);
            }
        }
    }
    // ANCHOR_END: try_lock

    // ANCHOR: wait
    async fn acquire_until(
        &self,
        deadline: Option<Instant>,
        lease: Option<Duration>,
    ) -> Result<Option<Acquired>, LockError> {
        let owner = self.current_owner();
        // The fast path: the lock is free, or already ours.
        if self.attempt(&owner, lease).await?.is_none() {
            return self.took(owner, lease).await.map(Some);
        }
        if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
            return Ok(None);
        }
        // Someone else holds it. Count ourselves among the waiters and make
        // sure the client listens *before* trying again: a release that
        // lands between our failed try and the SUBSCRIBE would publish to
        // nobody, and we would sleep through it.
        let _waiting = self.unlocks.waiting();
        loop {
            self.listen().await?;
            let Some(holder_pttl) = self.attempt(&owner, lease).await? else {
                return self.took(owner, lease).await.map(Some);
            };
            // Sleep until an unlock message wakes us, or until the holder's
            // lock runs out on its own (a holder that died publishes
            // nothing), or until our own deadline: whichever comes first.
            // Then try once more.
            let mut nap = u64::try_from(holder_pttl).ok().map(Duration::from_millis);
            if let Some(deadline) = deadline {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Ok(None);
                }
                nap = Some(nap.map_or(left, |nap| nap.min(left)));
            }
            let woken = self.unlocks.signals.wake.notified();
            match nap {
                Some(nap) => {
                    let _ = timeout(nap, woken).await;
                }
                None => woken.await,
            }
        }
    }
    // ANCHOR_END: wait

    /// Runs the acquire script once: `None` when the lock is now ours,
    /// otherwise the holder's remaining PTTL.
    async fn attempt(
        &self,
        owner: &str,
        lease: Option<Duration>,
    ) -> Result<Option<i64>, LockError> {
        let lease = lease.unwrap_or(self.config.watchdog_timeout);
        let holder_pttl: Option<i64> = ACQUIRE
            .key(&self.config.key)
            .arg(millis(lease))
            .arg(owner)
            .invoke_async(&mut self.conn.clone())
            .await?;
        Ok(holder_pttl)
    }

    /// The lock is ours: start (or keep) the watchdog, then hand it out.
    async fn took(&self, owner: String, lease: Option<Duration>) -> Result<Acquired, LockError> {
        let lost = {
            let mut holds = self.holds();
            let hold = holds.entry(owner.clone()).or_insert(LocalHold {
                lease: self.config.watchdog_timeout,
                watchdog: None,
                acquisitions: 0,
                releasing: 0,
            });
            hold.acquisitions += 1;
            hold.lease = lease.unwrap_or(self.config.watchdog_timeout);
            // A reentrant hold keeps the running watchdog. A fresh one is
            // needed when there is none, when it stopped or saw the lock
            // gone, and when a release of ours is on its way: our script may
            // have run after that release deleted the hash, and the old
            // watchdog belongs to the hold it gave back.
            if lease.is_none()
                && (hold.releasing > 0
                    || hold
                        .watchdog
                        .as_ref()
                        .is_none_or(|dog| dog.task.is_finished() || dog.lost.is_lost()))
            {
                hold.watchdog = Some(self.start_watchdog(owner.clone()));
            }
            hold.watchdog.as_ref().map(|dog| dog.lost.clone())
        };
        // The lock is held and (without a lease) renewed from here on. A
        // crash now leaves it to expire one watchdog timeout later.
        self.faults.reached(Point::AfterAcquire).await?;
        Ok(Acquired {
            value: owner,
            fencing_token: None,
            validity: None,
            lost,
        })
    }

    // ANCHOR: listen
    /// Makes sure this client listens to the lock's channel: the first wait
    /// opens the subscriber connection and subscribes; later waits find it
    /// open. A connection that was lost is opened again.
    async fn listen(&self) -> Result<(), LockError> {
        let mut subscriber = self.unlocks.subscriber.lock().await;
        if subscriber.is_some() && !self.unlocks.signals.lost.load(Ordering::SeqCst) {
            return Ok(());
        }
        let signals = Arc::clone(&self.unlocks.signals);
        let channel = self.channel.clone();
        // The old connection is dead or absent: forget it first, so that a
        // failure below leaves nothing that looks like a live subscription,
        // and the next wait tries again instead of sleeping on a dead ear.
        *subscriber = None;
        let mut conn = self
            .setup
            .subscriber(self.url(), move |heard| signals.heard(&channel, heard))
            .await?;
        self.unlocks.signals.lost.store(false, Ordering::SeqCst);
        conn.subscribe(&self.channel).await?;
        *subscriber = Some(conn);
        Ok(())
    }
    // ANCHOR_END: listen

    fn url(&self) -> &str {
        // `connect` refused a setup without one.
        self.setup.urls.first().map_or("", String::as_str)
    }

    // ANCHOR: watchdog
    fn start_watchdog(&self, owner: String) -> Watchdog {
        let (fire, lost) = LostSignal::new();
        let mut conn = self.conn.clone();
        let key = self.config.key.clone();
        let timeout = self.config.watchdog_timeout;
        let faults = self.faults.clone();
        let task = tokio::spawn(async move {
            loop {
                sleep(timeout / 3).await;
                if faults.has_crashed() {
                    return; // a dead client renews nothing
                }
                let renewed: Result<i64, _> = RENEW
                    .key(&key)
                    .arg(millis(timeout))
                    .arg(&owner)
                    .invoke_async(&mut conn)
                    .await;
                if renewed.ok() != Some(1) {
                    // 0: our field is gone (the lock expired, or was forced
                    // open, and may be someone else's now). An error: Redis
                    // is out of reach and our lease is running out unrenewed.
                    // Either way the business is no longer protected.
                    fire.send_replace(true);
                    return;
                }
            }
        });
        Watchdog { task, lost }
    }
    // ANCHOR_END: watchdog

    // ANCHOR: unlock
    /// Gives back one hold of the current task. [`Release::StillHeld`] while
    /// holds remain, [`Release::Deleted`] when the last one went (the
    /// watchdog stops and waiters are woken), and [`LockError::NotOwner`]
    /// when this task holds nothing: its lock expired, or was never taken.
    pub async fn unlock(&self) -> Result<Release, LockError> {
        self.unlock_owner(&self.current_owner()).await
    }

    async fn unlock_owner(&self, owner: &str) -> Result<Release, LockError> {
        let (lease, seen) = match self.holds().get_mut(owner) {
            Some(hold) => {
                hold.releasing += 1;
                (hold.lease, Some(hold.acquisitions))
            }
            None => (self.config.watchdog_timeout, None),
        };
        let left: Result<Option<u32>, _> = RELEASE
            .key(&self.config.key)
            .key(&self.channel)
            .arg(UNLOCK_MESSAGE)
            .arg(millis(lease))
            .arg(owner)
            .invoke_async(&mut self.conn.clone())
            .await;
        self.after_release(owner, seen, &left);
        match left? {
            Some(0) => Ok(Release::Deleted),
            Some(left) => Ok(Release::StillHeld(left)),
            None => Err(LockError::NotOwner),
        }
    }

    /// The bookkeeping of a release that was answered `left`. Whatever the
    /// answer, except "still held", this owner's renewal stops, as in
    /// Redisson: deleted, the lock is gone; not ours, it was gone already;
    /// an error, nobody can tell, and a lock its owner tried to give back
    /// must not be kept alive by its watchdog (if the release was lost, the
    /// lock expires within one watchdog timeout).
    ///
    /// Unless the owner took the lock again while the release was on its
    /// way (`seen` acquisitions then, more now). Had that acquisition run
    /// before the release on the server, the release would have answered
    /// "still held"; so it ran after, on a fresh hash, and `took` gave it a
    /// fresh watchdog, which must go on renewing.
    fn after_release(&self, owner: &str, seen: Option<u64>, left: &RedisResult<Option<u32>>) {
        let mut holds = self.holds();
        let Some(hold) = holds.get_mut(owner) else {
            return;
        };
        hold.releasing = hold.releasing.saturating_sub(1);
        let still_held = matches!(left, Ok(Some(left)) if *left > 0);
        if !still_held && seen == Some(hold.acquisitions) {
            holds.remove(owner); // drops the watchdog: it stops
        }
    }
    // ANCHOR_END: unlock

    /// Deletes the lock whoever holds it, stops this client's watchdogs, and
    /// wakes the waiters. `true` if there was a lock. Other clients'
    /// watchdogs find their field gone and fire their lost signals.
    pub async fn force_unlock(&self) -> Result<bool, LockError> {
        self.holds().clear();
        let deleted: i64 = FORCE_UNLOCK
            .key(&self.config.key)
            .key(&self.channel)
            .arg(UNLOCK_MESSAGE)
            .invoke_async(&mut self.conn.clone())
            .await?;
        Ok(deleted == 1)
    }

    /// Whether the current task holds the lock (`HEXISTS name owner`).
    pub async fn is_held_by_current_task(&self) -> Result<bool, LockError> {
        let held: bool = redis::cmd("HEXISTS")
            .arg(&self.config.key)
            .arg(self.current_owner())
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(held)
    }

    /// How many times the current task holds the lock (0: not at all).
    pub async fn hold_count(&self) -> Result<u32, LockError> {
        let count: Option<u32> = redis::cmd("HGET")
            .arg(&self.config.key)
            .arg(self.current_owner())
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(count.unwrap_or(0))
    }

    /// Whether anyone holds the lock.
    pub async fn is_locked(&self) -> Result<bool, LockError> {
        let exists: bool = redis::cmd("EXISTS")
            .arg(&self.config.key)
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(exists)
    }

    /// How long the lock has left (`PTTL`), whoever holds it; `None` when
    /// nobody does.
    pub async fn remaining_ttl(&self) -> Result<Option<Duration>, LockError> {
        let pttl: i64 = redis::cmd("PTTL")
            .arg(&self.config.key)
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(u64::try_from(pttl).ok().map(Duration::from_millis))
    }

    fn holds(&self) -> MutexGuard<'_, HashMap<String, LocalHold>> {
        self.holds
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

// ANCHOR: unlocks
/// One client's ear on a lock's channel, shared by all its waiting tasks,
/// as Redisson's `LockPubSub` keeps one subscription per lock name.
#[derive(Default)]
struct Unlocks {
    /// The subscriber connection, opened by the first wait.
    subscriber: tokio::sync::Mutex<Option<Connection>>,
    /// What the connection's reader tells the waiters.
    signals: Arc<Signals>,
}

#[derive(Default)]
struct Signals {
    /// Woken once per unlock message: one waiter tries, the others sleep on.
    wake: Notify,
    /// How many of this client's tasks are waiting.
    waiting: AtomicUsize,
    /// The subscriber connection was lost: the next wait opens a new one.
    lost: AtomicBool,
}

impl Signals {
    /// Called by the subscriber connection's reader; must not block.
    fn heard(&self, channel: &str, heard: Heard) {
        match heard {
            Heard::Message {
                channel: from,
                payload,
            } if from == channel && payload == UNLOCK_MESSAGE => {
                // One release frees the lock for one owner: wake one waiter.
                // With nobody waiting there is nobody to wake (our own
                // release comes back to us too).
                if self.waiting.load(Ordering::SeqCst) > 0 {
                    self.wake.notify_one();
                }
            }
            Heard::Message { .. } => {}
            Heard::Disconnected => {
                // Every waiter wakes, listens again on a new connection, and
                // tries: a release may have gone unheard.
                self.lost.store(true, Ordering::SeqCst);
                self.wake.notify_waiters();
                self.wake.notify_one();
            }
        }
    }
}

impl Unlocks {
    /// Counts a task among the waiters until the guard is dropped.
    fn waiting(&self) -> Waiting<'_> {
        self.signals.waiting.fetch_add(1, Ordering::SeqCst);
        Waiting(&self.signals)
    }
}

struct Waiting<'a>(&'a Signals);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::SeqCst);
    }
}
// ANCHOR_END: unlocks

// The harness drives every stage through one contract. This adapter is all
// stage 6 needs for it; the lesson is above. `acquire` is Redisson's
// `tryLock(wait)` with no lease, so the watchdog runs. `release` gives back
// the hold named in the `Acquired` it is handed, whichever task calls.
#[async_trait]
impl DistributedLock for RLock {
    fn describe(&self) -> Description {
        DESCRIPTION
    }

    async fn try_acquire(&self) -> Result<Option<Acquired>, LockError> {
        self.try_lock(Duration::ZERO, None).await
    }

    async fn acquire(&self, wait: Duration) -> Result<Option<Acquired>, LockError> {
        self.try_lock(wait, None).await
    }

    async fn release(&self, held: &Acquired) -> Result<Release, LockError> {
        self.unlock_owner(&held.value).await
    }
}

/// Stage 6 as the harness and the CLI see it.
pub const STAGE: StageEntry = StageEntry {
    description: DESCRIPTION,
    connect,
};

fn connect(setup: ClientSetup) -> ConnectFuture {
    Box::pin(async move {
        let lock: Box<dyn DistributedLock> = Box::new(RLock::connect(setup).await?);
        Ok(lock)
    })
}
