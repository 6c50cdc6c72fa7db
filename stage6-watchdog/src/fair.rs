//! # Stage 6, fair: waiters take the lock in the order they asked
//!
//! The plain stage 6 lock is not fair. A release publishes one unlock
//! message; every client listening wakes one of its waiters, and they all
//! race for the lock with the client that just released it, which is
//! usually first (it is already running). Under steady contention the same
//! client takes the lock again and again, and the others burn commands
//! losing.
//!
//! Redisson's answer is `RedissonFairLock`. This module rebuilds it with
//! the same three keys, so a reader recognises them in `redis-cli`:
//!
//! - **the lock hash**, `{name}`, exactly as in stage 6: owner field, hold
//!   count, watchdog lease;
//! - **the queue**, `redisson_lock_queue:{name}`, a list of owners in the
//!   order they asked;
//! - **the waiters' deadlines**, `redisson_lock_timeout:{name}`, a sorted
//!   set scoring a waiter with the server time (ms) after which it counts
//!   as gone.
//!
//! The rule: *a waiting client never takes the lock; the release gives it.*
//! Whoever asks while others wait joins the tail, the client that just
//! released included. The release pops the head of the queue, writes the
//! head's owner into the hash, and names the head's request on its
//! client's own channel, `redisson_lock__channel:{name}:<client-uuid>`.
//! Nobody else wakes, and the head sends nothing to take the lock: the
//! message is the grant, when it can be trusted (below). (Redisson's head
//! takes the lock itself when woken, and uses one channel per waiting
//! thread; one channel per client needs one subscription for the client's
//! whole life.)
//!
//! ## When a message can be trusted
//!
//! A message tells of the past: the lock was handed over at some moment
//! the head does not know. Two things make it safe to act on without
//! asking the server again:
//!
//! - **Every request has a name of its own**, the owner and a number,
//!   `<client-uuid>:task-7#41`, in the queue, in the deadlines and in the
//!   message. A message left over from an earlier request of the same
//!   owner names a request that is over, and wakes nobody. (When messages
//!   named owners, the explorer found a client let in on such a message
//!   beside the holder the server had chosen.)
//! - **A hand-over leaves the lock a waiter timeout**, and it happened
//!   after the request was sent. A head named within a third of a waiter
//!   timeout of asking has two thirds of one left at least, by its own
//!   clock, and its watchdog renews the lock a third of a waiter timeout
//!   after the request. A message that comes later (a busy or frozen
//!   client, a slow link) is only a reason to ask: the refresh script
//!   answers, and its claim gives the lock the whole lease.
//!
//! ## What a dead waiter costs
//!
//! A queue has a failure the plain lock has not: the head may be dead. A
//! waiter killed with `kill -9`, or frozen, is still in the list, and the
//! release may hand it the lock. So every hand-over gives a short lease,
//! the **waiter timeout**: a sixth of the watchdog timeout, the ratio of
//! Redisson's defaults (its `threadWaitTime`, 5 s, against a 30 s
//! watchdog). A live head's watchdog renews it in time (above); a dead or
//! frozen head's lock expires, and the next waiter to look (every waiter
//! looks at least every third of the waiter timeout) hands it on.
//!
//! A waiter that looks and is still not named renews its deadline in the
//! sorted set; one that stops looking lets it pass. Every look first drops
//! the heads of the line whose deadline has passed, as Redisson's acquire
//! does (Redisson's release does it too; here the release is the script of
//! every hand-over, and stays short). So a waiter gone for longer than a
//! waiter timeout, with someone behind it looking, has left the line before
//! the lock reaches it, and costs nothing. The one the release still meets
//! died within about a waiter timeout before it, or before it ever looked
//! (it has no deadline to judge it by): it costs the queue one waiter
//! timeout, plus up to a third of it, and no more, which is what the
//! `dead-waiter` scenario measures (its waiter dies a moment before the
//! release). The price is paid by a live waiter that misses its looks for
//! a whole waiter timeout (a stalled process): it is dropped too, and
//! rejoins at the tail at its next look. A frozen waiter that thaws finds
//! its message too old to trust, asks, and is told the lock is not its own.
//!
//! ## When a command fails
//!
//! A failed command leaves the client unsure of what the server did, and
//! each path settles the doubt towards the lock going back to the line:
//!
//! - **A release that fails** (a timeout, a busy server) still stops the
//!   owner's watchdog, as stage 6's and Redisson's unlocks do. Whether the
//!   release ran is unknown; a watchdog left running would keep the lock
//!   for the life of the process under a caller that believes it gave it
//!   back, where a release that never ran costs one lease at most.
//! - **A wait that fails** leaves the queue, and if the release had handed
//!   it the lock meanwhile (the leave script answers so), gives the lock on
//!   at once, to the next in line. The caller is told the wait failed and
//!   will never unlock; kept, the lock would stand unowned for a whole
//!   lease. A wait that is dropped (its future cancelled) does the same in
//!   the background.
//! - **A reentrant acquire** restarts the owner's watchdog if it had
//!   stopped: one failed renewal stops it (and fires the lost signal), yet
//!   the lock may still be ours, and the acquire has just given it a whole
//!   lease that nothing else would renew.
//!
//! ## What it costs, what it buys
//!
//! In order: the lock changes hands at almost every release. Cheap: a
//! contended hand-over costs the release script (`EVALSHA`, `HDEL`,
//! `LPOP`, `HSET`, `PEXPIRE`, `PUBLISH`) and the next request's `RPUSH`,
//! sent bare when the client's last request had to wait: seven commands,
//! where the plain lock wakes every client to lose a try. What it costs: the lock always travels to another
//! process, a message later, instead of being taken again at once by the
//! client that had it; a dead head stalls everyone behind it for a waiter
//! timeout; and fairness is only as good as the queue, which is one more
//! key on the one master.
//!
//! Everything else is stage 6: reentrance, the watchdog, the lost-lock
//! signal, and the failures it does not fix (a frozen holder, a failover).

mod scripts;
mod wake;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use lockcore::{
    Acquired, ClientSetup, ConnectFuture, Description, DistributedLock, FaultPoints, LockConfig,
    LockError, LostSignal, Point, Release, StageEntry,
};
use redis::ScriptInvocation;
use tokio::time::{Instant, sleep, sleep_until, timeout};
use uuid::Uuid;

use crate::Watchdog;
use scripts::{ENQUEUE, LEAVE, REENTER, REFRESH, RELEASE, RENEW, UNWIND};
pub use scripts::{ENQUEUE_SCRIPT, REFRESH_SCRIPT, RELEASE_SCRIPT};
use wake::{Bell, Wakes};

/// What the fair variant is, for listings and the harness.
pub const DESCRIPTION: Description = Description {
    stage: 6,
    name: "stage6-fair",
    title: "Redisson's fair lock: stage 6 with a queue; a release hands the lock to the head",
    acquire_commands: "EVALSHA enqueue (RPUSH | HSET + PEXPIRE if free); SUBSCRIBE to the \
                       client's channel once; named by the release soon enough: nothing more; \
                       else (or every waiter timeout/3) EVALSHA refresh (HEXISTS: ours? then \
                       PEXPIRE lease, else LPOP heads past their deadline, ZADD deadline); \
                       EVALSHA renew",
    release_commands: "EVALSHA release (HDEL, LPOP head, HSET head, PEXPIRE waiter timeout, PUBLISH to it)",
    reentrant: true,
    nodes: 1,
    fault_points: &[Point::AfterAcquire],
    home: lockcore::Home::REDIS,
};

/// The queue of waiters, as Redisson names it.
pub fn queue_name(lock_name: &str) -> String {
    format!("redisson_lock_queue:{{{lock_name}}}")
}

/// The waiters' deadlines, as Redisson names them.
pub fn timeout_name(lock_name: &str) -> String {
    format!("redisson_lock_timeout:{{{lock_name}}}")
}

/// The channel a client's waiters are named on: stage 6's channel name,
/// then the client's UUID.
pub fn client_channel(lock_name: &str, client: &Uuid) -> String {
    format!("{}:{client}", crate::channel_name(lock_name))
}

/// The waiter timeout: a sixth of the watchdog timeout (Redisson: 5 s of
/// 30 s), at least 3 ms.
pub fn waiter_timeout(config: &LockConfig) -> Duration {
    (config.watchdog_timeout / 6).max(Duration::from_millis(3))
}

/// One client's handle on one fair lock: Redisson's `RedissonFairLock`.
pub struct FairLock {
    conn: lockcore::Connection,
    setup: ClientSetup,
    config: LockConfig,
    queue: String,
    timeouts: String,
    channel: String,
    client_id: Uuid,
    waiter_timeout: Duration,
    faults: FaultPoints,
    /// This client's waiters, each woken by its request's name.
    wakes: Wakes,
    /// The number of this client's next request.
    requests: AtomicU64,
    /// Whether this client's last request had to wait in line.
    contended: AtomicBool,
    /// What this client holds: per owner, its count and its watchdog.
    holds: Arc<Mutex<HashMap<String, Hold>>>,
}

struct Hold {
    count: u32,
    watchdog: Watchdog,
}

impl FairLock {
    /// Connects one client to the Redis server at `setup.urls[0]`.
    pub async fn connect(setup: ClientSetup) -> Result<Self, LockError> {
        setup.config.validate()?;
        let url = setup
            .urls
            .first()
            .ok_or_else(|| LockError::Config("no Redis URL given".into()))?;
        let conn = setup.connect(url).await?;
        let client_id = Uuid::new_v4();
        let key = &setup.config.key;
        Ok(Self {
            conn,
            queue: queue_name(key),
            timeouts: timeout_name(key),
            channel: crate::channel_name(key),
            wakes: Wakes::new(client_channel(key, &client_id)),
            waiter_timeout: waiter_timeout(&setup.config),
            config: setup.config.clone(),
            client_id,
            faults: setup.faults.clone(),
            requests: AtomicU64::new(1),
            contended: AtomicBool::new(false),
            holds: Arc::default(),
            setup,
        })
    }

    /// The owner field of the task calling: `<client-uuid>:<task>`.
    pub fn current_owner(&self) -> String {
        format!("{}:{}", self.client_id, crate::current_task())
    }

    /// How long a hand-over waits for a waiter that does not take it up.
    pub fn waiter_timeout(&self) -> Duration {
        self.waiter_timeout
    }

    // ANCHOR: fair_try_lock
    /// Takes the lock for the current task, waiting in line at most `wait`;
    /// `None` when the wait ran out (this task then leaves the queue). The
    /// watchdog keeps the lock until [`FairLock::unlock`].
    pub async fn try_lock(&self, wait: Duration) -> Result<Option<Acquired>, LockError> {
        let owner = self.current_owner();
        // A wait too long for the clock is refused, never a panic.
        let deadline = lockcore::deadline_after(wait)?;
        if self.holds().contains_key(&owner) {
            // Reentrance, decided by what this client knows it holds: a
            // holder must not queue behind its own lock.
            let asked = Instant::now();
            if self.reenter(&owner).await? {
                return self.took(owner, asked).await.map(Some);
            }
            self.holds().remove(&owner); // the lock was lost meanwhile
        }
        // This request's own name in the queue and in the messages.
        let number = self.requests.fetch_add(1, Ordering::Relaxed);
        let request = format!("{owner}#{number}");
        // Hung before the first try: a hand-over named after it is kept.
        let bell = self.wakes.register(&request);
        let mut in_line = InLine {
            lock: self,
            owner: &owner,
            request: &request,
            settled: false,
        };
        let since = match self.wait_in_line(&owner, &request, &bell, deadline).await {
            Ok(Some(since)) => Some(since),
            // Gave up: leave the queue, unless the lock was handed to us
            // in the meantime.
            Ok(None) => {
                let asked = Instant::now();
                let ours = self.leave(&owner, &request).await;
                in_line.settled = ours.is_ok();
                ours?.then_some(asked)
            }
            // Failed: leave the queue, and give on at once a lock handed
            // to us in the meantime, which the caller, told of a failure,
            // will never unlock.
            Err(e) => {
                in_line.settled = self.give_up(&owner, &request).await.is_ok();
                return Err(e);
            }
        };
        in_line.settled = true;
        drop(in_line);
        match since {
            Some(since) => self.took(owner, since).await.map(Some),
            None => Ok(None),
        }
    }
    // ANCHOR_END: fair_try_lock

    // ANCHOR: fair_wait
    /// When the lock became ours (no earlier than the instant returned),
    /// or `None` once `deadline` passed.
    async fn wait_in_line(
        &self,
        owner: &str,
        request: &str,
        bell: &Bell<'_>,
        deadline: Instant,
    ) -> Result<Option<Instant>, LockError> {
        let asked = Instant::now();
        // Whether a refresh wrote this request a deadline (the refresh
        // that claims the lock takes it away again).
        let mut has_deadline = false;
        if !self.contended.load(Ordering::Relaxed) {
            // The last request found the lock free: one script joins the
            // line and, if the line was empty and the lock free, takes it.
            if self.enqueue(owner, request).await? {
                return Ok(Some(asked)); // free, and nobody was waiting
            }
        } else if self.join(request).await? == 1 {
            // The last request had to wait, so this one is the script's
            // `RPUSH` alone, one command. Alone in line after all: the lock
            // may be free with nobody to hand it over, so look at once.
            if self.refresh(owner, request).await? {
                self.contended.store(false, Ordering::Relaxed);
                return Ok(Some(asked));
            }
            has_deadline = true;
        }
        self.contended.store(true, Ordering::Relaxed);
        // A hand-over to this request came after `asked` and left the lock
        // a waiter timeout at least: a message heard within a third of it
        // is the grant, with two thirds of a waiter timeout to spare.
        let trusted_until = asked + self.waiter_timeout / 3;
        let look = self.waiter_timeout / 3;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            if self.wakes.is_listening() {
                let _ = timeout(look.min(left), bell.rung()).await;
                if bell.named() && !has_deadline && Instant::now() < trusted_until {
                    return Ok(Some(asked));
                }
            } else {
                // The first wait of this client: subscribe, then look at
                // once, since a hand-over published before the SUBSCRIBE
                // reached nobody.
                self.wakes.listen(&self.setup, self.url()).await?;
            }
            // Named too late to trust, or a third of the waiter timeout
            // gone, or just subscribed: the server is asked.
            let asking = Instant::now();
            if self.refresh(owner, request).await? {
                return Ok(Some(asking));
            }
            has_deadline = true;
        }
    }
    // ANCHOR_END: fair_wait

    async fn enqueue(&self, owner: &str, request: &str) -> Result<bool, LockError> {
        let queued: Option<i64> = ENQUEUE
            .key(&self.config.key)
            .key(&self.queue)
            .key(&self.timeouts)
            .arg(millis(self.config.watchdog_timeout))
            .arg(owner)
            .arg(request)
            .invoke_async(&mut self.conn.clone())
            .await?;
        Ok(queued.is_none())
    }

    /// Joins the tail of the line; how many are in it now.
    async fn join(&self, request: &str) -> Result<u64, LockError> {
        let queued: u64 = redis::cmd("RPUSH")
            .arg(&self.queue)
            .arg(request)
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(queued)
    }

    async fn refresh(&self, owner: &str, request: &str) -> Result<bool, LockError> {
        let waiting: i64 = REFRESH
            .key(&self.config.key)
            .key(&self.queue)
            .key(&self.timeouts)
            .arg(millis(self.config.watchdog_timeout))
            .arg(owner)
            .arg(millis(self.waiter_timeout))
            .arg(&self.channel)
            .arg(request)
            .invoke_async(&mut self.conn.clone())
            .await?;
        Ok(waiting == 0)
    }

    /// Leaves the queue, and gives on a lock handed to this request
    /// meanwhile (to the next in line, as any release does).
    async fn give_up(&self, owner: &str, request: &str) -> Result<(), LockError> {
        give_up(
            self.conn.clone(),
            self.leave_script(owner, request),
            self.release_script(owner),
            &self.holds,
            owner,
        )
        .await
    }

    /// Leaves the queue; `true` if the lock was handed to us meanwhile.
    async fn leave(&self, owner: &str, request: &str) -> Result<bool, LockError> {
        let ours: i64 = self
            .leave_script(owner, request)
            .invoke_async(&mut self.conn.clone())
            .await?;
        Ok(ours == 1)
    }

    fn leave_script(&self, owner: &str, request: &str) -> ScriptInvocation<'static> {
        let mut leave = LEAVE.key(&self.config.key);
        leave
            .key(&self.queue)
            .key(&self.timeouts)
            .arg(owner)
            .arg(millis(self.config.watchdog_timeout))
            .arg(request);
        leave
    }

    fn release_script(&self, owner: &str) -> ScriptInvocation<'static> {
        let mut release = RELEASE.key(&self.config.key);
        release
            .key(&self.queue)
            .key(&self.timeouts)
            .arg(owner)
            .arg(millis(self.waiter_timeout))
            .arg(&self.channel);
        release
    }

    async fn reenter(&self, owner: &str) -> Result<bool, LockError> {
        let count: Option<u32> = REENTER
            .key(&self.config.key)
            .arg(millis(self.config.watchdog_timeout))
            .arg(owner)
            .invoke_async(&mut self.conn.clone())
            .await?;
        Ok(count.is_some())
    }

    /// The lock is ours, since `since` at least: count the hold, start the
    /// watchdog on the first.
    async fn took(&self, owner: String, since: Instant) -> Result<Acquired, LockError> {
        let lost = {
            let mut holds = self.holds();
            let hold = holds.entry(owner.clone()).or_insert_with(|| Hold {
                count: 0,
                watchdog: self.start_watchdog(owner.clone(), since),
            });
            // A reentrant hold keeps the running watchdog, unless one
            // failed renewal stopped it: this acquire has just given the
            // lock a whole lease, which nothing else would renew.
            if hold.watchdog.task.is_finished() || hold.watchdog.lost.is_lost() {
                hold.watchdog = self.start_watchdog(owner.clone(), since);
            }
            hold.count += 1;
            hold.watchdog.lost.clone()
        };
        self.faults.reached(Point::AfterAcquire).await?;
        Ok(Acquired {
            value: owner,
            fencing_token: None,
            validity: None,
            lost: Some(lost),
        })
    }

    // ANCHOR: fair_watchdog
    /// Stage 6's watchdog, with one change: its first renewal comes a third
    /// of the *waiter* timeout after `since`, the moment the request that
    /// won the lock was sent, since a lock handed over may live only that
    /// long until renewed. Later renewals come every third of the watchdog
    /// timeout, as in stage 6. A section shorter than that renews nothing.
    fn start_watchdog(&self, owner: String, since: Instant) -> Watchdog {
        let (fire, lost) = LostSignal::new();
        let mut conn = self.conn.clone();
        let key = self.config.key.clone();
        let lease = self.config.watchdog_timeout;
        let first = since + self.waiter_timeout.min(lease) / 3;
        let faults = self.faults.clone();
        let task = tokio::spawn(async move {
            sleep_until(first).await;
            loop {
                if faults.has_crashed() {
                    return;
                }
                let renewed: Result<i64, _> = RENEW
                    .key(&key)
                    .arg(millis(lease))
                    .arg(&owner)
                    .invoke_async(&mut conn)
                    .await;
                if renewed.ok() != Some(1) {
                    fire.send_replace(true);
                    return;
                }
                sleep(lease / 3).await;
            }
        });
        Watchdog { task, lost }
    }
    // ANCHOR_END: fair_watchdog

    /// Gives back one hold of the current task; at the last one the lock
    /// goes to the head of the queue.
    pub async fn unlock(&self) -> Result<Release, LockError> {
        self.unlock_owner(&self.current_owner()).await
    }

    async fn unlock_owner(&self, owner: &str) -> Result<Release, LockError> {
        let count = self.holds().get(owner).map_or(1, |hold| hold.count);
        if count > 1 {
            let left: Option<u32> = UNWIND
                .key(&self.config.key)
                .arg(millis(self.config.watchdog_timeout))
                .arg(owner)
                .invoke_async(&mut self.conn.clone())
                .await?;
            return match left {
                Some(left) if left > 0 => {
                    if let Some(hold) = self.holds().get_mut(owner) {
                        hold.count = left;
                    }
                    Ok(Release::StillHeld(left))
                }
                Some(_) => {
                    self.holds().remove(owner);
                    Ok(Release::Deleted)
                }
                None => {
                    self.holds().remove(owner);
                    Err(LockError::NotOwner)
                }
            };
        }
        let released: Result<Option<i64>, _> = self
            .release_script(owner)
            .invoke_async(&mut self.conn.clone())
            .await;
        // Whatever the answer, an error included, this owner's watchdog
        // stops: a release that never ran then costs one lease, not the
        // life of the process.
        self.holds().remove(owner);
        match released? {
            Some(_) => Ok(Release::Deleted),
            None => Err(LockError::NotOwner),
        }
    }

    /// The owners waiting in line, first first (`LRANGE` of the queue,
    /// without the requests' numbers).
    pub async fn queued(&self) -> Result<Vec<String>, LockError> {
        let queued: Vec<String> = redis::cmd("LRANGE")
            .arg(&self.queue)
            .arg(0)
            .arg(-1)
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(queued
            .into_iter()
            .map(|request| match request.rsplit_once('#') {
                Some((owner, _)) => owner.to_owned(),
                None => request,
            })
            .collect())
    }

    fn url(&self) -> &str {
        self.setup.urls.first().map_or("", String::as_str)
    }

    fn holds(&self) -> MutexGuard<'_, HashMap<String, Hold>> {
        lock_holds(&self.holds)
    }
}

fn lock_holds(holds: &Mutex<HashMap<String, Hold>>) -> MutexGuard<'_, HashMap<String, Hold>> {
    holds
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A request in line. Dropped before it is settled (the future waiting was
/// dropped, by a `timeout` around it, say), it leaves the queue in the
/// background, and gives back a lock handed to it meanwhile, which would
/// otherwise hold the queue up for a waiter timeout.
struct InLine<'a> {
    lock: &'a FairLock,
    owner: &'a str,
    request: &'a str,
    settled: bool,
}

impl Drop for InLine<'_> {
    fn drop(&mut self) {
        if self.settled || self.lock.faults.has_crashed() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let leave = self.lock.leave_script(self.owner, self.request);
        let release = self.lock.release_script(self.owner);
        let conn = self.lock.conn.clone();
        let holds = Arc::clone(&self.lock.holds);
        let owner = self.owner.to_owned();
        runtime.spawn(async move {
            let _ = give_up(conn, leave, release, &holds, &owner).await;
        });
    }
}

/// Leaves the queue (`leave`); if the lock was handed to the request
/// meanwhile, gives it on (`release`), unless the owner holds the lock
/// itself, by another request.
async fn give_up(
    mut conn: lockcore::Connection,
    leave: ScriptInvocation<'static>,
    release: ScriptInvocation<'static>,
    holds: &Mutex<HashMap<String, Hold>>,
    owner: &str,
) -> Result<(), LockError> {
    let handed: i64 = leave.invoke_async(&mut conn).await?;
    if handed == 1 && !lock_holds(holds).contains_key(owner) {
        let _: Option<i64> = release.invoke_async(&mut conn).await?;
    }
    Ok(())
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

// The harness's contract, as for stage 6: `acquire` waits in line with the
// watchdog on; `release` gives back the hold named in the `Acquired`.
#[async_trait]
impl DistributedLock for FairLock {
    fn describe(&self) -> Description {
        DESCRIPTION
    }

    async fn try_acquire(&self) -> Result<Option<Acquired>, LockError> {
        self.try_lock(Duration::ZERO).await
    }

    async fn acquire(&self, wait: Duration) -> Result<Option<Acquired>, LockError> {
        self.try_lock(wait).await
    }

    async fn release(&self, held: &Acquired) -> Result<Release, LockError> {
        self.unlock_owner(&held.value).await
    }
}

/// The fair variant as the harness and the CLI see it: a row of its own.
pub const STAGE: StageEntry = StageEntry {
    description: DESCRIPTION,
    connect,
};

fn connect(setup: ClientSetup) -> ConnectFuture {
    Box::pin(async move {
        let lock: Box<dyn DistributedLock> = Box::new(FairLock::connect(setup).await?);
        Ok(lock)
    })
}
