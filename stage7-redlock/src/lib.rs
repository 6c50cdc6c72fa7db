//! # Stage 7 — Redlock: a majority of independent masters
//!
//! Every lock so far lives on one Redis server. When that server dies, or
//! fails over to a replica that never received the key, the lock is simply
//! gone and a second client takes it. Redlock, proposed by Redis's author,
//! spreads the lock over N masters that know nothing of each other (usually
//! five, no replication between them) and trusts a *majority*:
//!
//! 1. pick one unique value and note the time;
//! 2. ask every master at once for `SET key value NX PX ttl`, each with a
//!    timeout far below the TTL, so a dead or cut-off master costs a few
//!    milliseconds and counts as a no;
//! 3. the lock is ours as soon as N/2+1 masters said OK *and* time is left:
//!    validity = TTL − time spent asking − a margin for clock drift
//!    (TTL × drift factor + 2 ms). Only for that long may we trust it. The
//!    time spent runs from before the first request until the majority's
//!    last yes: that is when the lock began to exist, so counting to there
//!    is exact. The masters still to answer are not waited for;
//! 4. otherwise give back whatever we got, on every master (a master whose
//!    answer was lost may still have written our key), wait a random while so
//!    that clients that collided do not collide again in step, and retry;
//! 5. release with the stage 5 compare-and-delete script, on every master,
//!    and say truly what happened: deleted on a majority, "not ours" on a
//!    majority (the lock had slipped away), or *unconfirmed*: too many
//!    masters could not be reached to tell, and they may keep the key until
//!    it expires.
//!
//! The masters that answer after the majority still get our `SET` (their
//! answers are read in the background), so the key lands on as many masters
//! as before. A late key is ours and harmless: every request to a master
//! waits its turn behind the ones made before it (`Turns`), so the
//! release reaches that master after our `SET`, even when the vote was
//! still connecting when the release was made, and deletes it; and if the
//! holder never releases, it expires with its TTL like the others.
//!
//! What it fixes: losing one machine. Any minority of masters may be dead or
//! unreachable and the lock still works, and still excludes
//! (`tests/node_loss.rs`). When too few are left it says no, quickly and
//! cleanly, instead of granting half a lock.
//!
//! What it still breaks: it is a lock made of clocks. A master that restarts
//! without persistence forgets the key it granted, and one whose clock jumps
//! forward lets it expire early; either way a second client can win a
//! majority while the first still trusts its validity
//! (`tests/restart_and_clock.rs`). And nothing in it can stop a holder that
//! froze (a GC pause) and woke up after its validity, still believing it
//! holds the lock (`tests/gc_pause.rs`). Stage 8 adds what can.

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt;
use futures_util::future::join_all;
use futures_util::stream::FuturesUnordered;
use lockcore::{
    Acquired, ClientSetup, ConnectFuture, Connection, Description, DistributedLock, FaultPoints,
    LockConfig, LockError, Point, Release, StageEntry,
};
use redis::{RedisResult, Script};
use tokio::sync::{Mutex, watch};
use tokio::time::{Instant, sleep, timeout};
use uuid::Uuid;

/// How many masters the course runs Redlock on.
pub const NODES: usize = 5;

/// What this stage is, for listings and the harness.
pub const DESCRIPTION: Description = Description {
    stage: 7,
    name: "stage7",
    title: "Redlock: SET NX PX on N independent masters, trusted on a majority",
    acquire_commands: "SET key uuid NX PX ttl on every master at once; done at a majority's yes \
                       with time left",
    release_commands: "EVALSHA compare-and-delete on every master",
    reentrant: false,
    nodes: NODES,
    fault_points: &[Point::AfterAcquire],
    home: lockcore::Home::REDIS,
};

// ANCHOR: scripts
// Sent as EVALSHA: only the script's hash travels. Each new connection to a
// master first loads both scripts (`SCRIPT LOAD`, as part of connecting), so
// the hash is known there before any request needs it: a master loses its
// script cache only by restarting, and a restart breaks the connection. A
// NOSCRIPT answer would cost a second round trip, which may not fit in the
// per-master timeout when that master is slow.

/// Deletes the key only if it still holds our value (stage 5's script).
const RELEASE_LUA: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
";

/// Gives the key a fresh TTL only if it still holds our value.
const EXTEND_LUA: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
";

static RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(RELEASE_LUA));
static EXTEND: LazyLock<Script> = LazyLock::new(|| Script::new(EXTEND_LUA));
// ANCHOR_END: scripts

// ANCHOR: timing
/// How long one master may take to answer: a tenth of the TTL, and never
/// more than 50 ms (the Redis docs suggest 5–50 ms for a 10 s TTL). A healthy
/// master answers in well under a millisecond; the timeout only bounds how
/// much of the validity a dead or unreachable master may eat.
pub fn node_timeout(ttl: Duration) -> Duration {
    (ttl / 10).min(Duration::from_millis(50))
}

/// The part of the TTL set aside because the masters' clocks do not tick at
/// exactly the same rate: TTL × drift factor, plus 2 ms.
pub fn drift_allowance(config: &LockConfig) -> Duration {
    config.drift_allowance()
}

/// How long a lock taken after `elapsed` of asking may be trusted:
/// TTL − elapsed − drift allowance, or `None` when nothing is left.
pub fn validity(config: &LockConfig, elapsed: Duration) -> Option<Duration> {
    config
        .ttl
        .checked_sub(elapsed)
        .and_then(|left| left.checked_sub(drift_allowance(config)))
        .filter(|left| !left.is_zero())
}
// ANCHOR_END: timing

/// One independent master. Its connection is made on first use and made
/// again after it broke (the master was killed or restarted), so a master
/// that comes back is used again.
struct Master {
    url: String,
    /// How this client connects (its name, and a test's reply log).
    setup: ClientSetup,
    conn: Mutex<Option<Connection>>,
    /// The order this client's requests reach this master in.
    turns: Arc<Turns>,
}

// ANCHOR: turns
/// The order one client's requests to one master go out in: the order they
/// were made. Each request takes a ticket when it is made, waits for its
/// turn, and hands the turn on once it has its answer, gave up waiting, or
/// was dropped.
///
/// Why: a vote that is still connecting holds no place on the connection
/// yet. Without turns, a release made after it could reach the master
/// first, find nothing to delete, and let the vote's `SET` land after it: a
/// key of ours left to expire, its TTL starting at that late `SET`. With
/// turns the release waits for the vote (at most one per-master timeout), and
/// a request given up on is either already on the connection, ahead of the
/// release, or never sent.
#[derive(Debug)]
struct Turns {
    next: AtomicU64,
    serving: watch::Sender<Serving>,
}

/// Whose turn it is, and the tickets already done that are not yet reached
/// (a request dropped before its turn).
#[derive(Debug, Default)]
struct Serving {
    now: u64,
    done: BTreeSet<u64>,
}

/// One request's place in a master's order; dropping it hands the turn on.
struct Ticket {
    turns: Arc<Turns>,
    number: u64,
}

impl Turns {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            next: AtomicU64::new(0),
            serving: watch::Sender::new(Serving::default()),
        })
    }

    /// A place in line, taken when the request is made.
    fn ticket(self: &Arc<Self>) -> Ticket {
        Ticket {
            turns: Arc::clone(self),
            number: self.next.fetch_add(1, Ordering::SeqCst),
        }
    }
}

impl Ticket {
    /// Waits until every request made before this one is done.
    async fn turn(&self) {
        let mut serving = self.turns.serving.subscribe();
        // The sender lives as long as `self.turns`: this cannot fail.
        let _ = serving.wait_for(|serving| serving.now == self.number).await;
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.turns.serving.send_modify(|serving| {
            serving.done.insert(self.number);
            while serving.done.remove(&serving.now) {
                serving.now += 1;
            }
        });
    }
}
// ANCHOR_END: turns

/// What one master said to a request: its answer, or that it could not be
/// reached (refused, reset, silence, an error reply).
type Heard<T> = Option<T>;

impl Master {
    fn new(url: &str, setup: &ClientSetup) -> Self {
        Self {
            url: url.to_owned(),
            setup: setup.clone(),
            conn: Mutex::new(None),
            turns: Turns::new(),
        }
    }

    /// A place in this master's line, for a request made now.
    fn ticket(&self) -> Ticket {
        self.turns.ticket()
    }

    // ANCHOR: ask
    /// Sends one request when its `ticket`'s turn comes, giving the master
    /// `within` to answer, connecting first if need be. Whatever goes wrong
    /// (refused, reset, silence, an error reply) is `None`: for a vote, a
    /// master that did not say yes said no; for a release, that master is
    /// unreachable and may still hold the key.
    async fn ask<T, F, Fut>(&self, ticket: Ticket, within: Duration, request: F) -> Heard<T>
    where
        F: FnOnce(Connection) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        // Not bounded by `within`: every request before ours is bounded by
        // its own, and a release that gave up here would never be sent.
        ticket.turn().await;
        let attempt = async {
            let conn = self.connection().await.ok()?;
            match request(conn).await {
                Ok(answer) => Some(answer),
                Err(e) => {
                    if e.is_unrecoverable_error() || e.is_connection_dropped() {
                        // Reconnect next time. A mere timeout keeps the
                        // connection: the late answer is simply dropped.
                        *self.conn.lock().await = None;
                    }
                    None
                }
            }
        };
        let heard = timeout(within, attempt).await.ok().flatten();
        drop(ticket); // the next request's turn
        heard
    }
    // ANCHOR_END: ask

    async fn connection(&self) -> Result<Connection, LockError> {
        let mut slot = self.conn.lock().await;
        if let Some(conn) = slot.as_ref() {
            return Ok(conn.clone());
        }
        let mut conn = self.setup.connect(&self.url).await?;
        redis::pipe()
            .cmd("SCRIPT")
            .arg("LOAD")
            .arg(RELEASE_LUA)
            .cmd("SCRIPT")
            .arg("LOAD")
            .arg(EXTEND_LUA)
            .exec_async(&mut conn)
            .await?;
        *slot = Some(conn.clone());
        Ok(conn)
    }
}

/// A lock granted by a majority of masters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The unique value written on every master that said yes.
    pub value: String,
    /// How long, from when the lock was granted, it may be trusted.
    pub validity: Duration,
}

/// What a release found on the masters, by URL.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unlocked {
    /// Our key was still there, and is now deleted.
    pub deleted: Vec<String>,
    /// The master answered that our key was not there: expired, forgotten
    /// (a restart), or someone else's.
    pub not_ours: Vec<String>,
    /// No answer in time, or an error: the master may still hold our key,
    /// until its TTL runs out.
    pub unreachable: Vec<String>,
    /// Answers not waited for, because a majority had already confirmed;
    /// those releases still go out.
    pub not_waited: usize,
}

impl Unlocked {
    /// The release as the contract names it: `Deleted` when a majority
    /// confirmed; `NothingDeleted` when too few could have (the lock had
    /// slipped away); `Unconfirmed` when the unreachable masters could have
    /// made the difference.
    pub fn outcome(&self, quorum: usize) -> Release {
        let count = |masters: &[String]| u32::try_from(masters.len()).unwrap_or(u32::MAX);
        if self.deleted.len() >= quorum {
            Release::Deleted
        } else if self.deleted.len() + self.unreachable.len() >= quorum {
            Release::Unconfirmed {
                deleted: count(&self.deleted),
                not_ours: count(&self.not_ours),
                unreachable: count(&self.unreachable),
            }
        } else {
            Release::NothingDeleted
        }
    }
}

/// Redlock over N independent masters.
pub struct Redlock {
    masters: Vec<Arc<Master>>,
    config: LockConfig,
    faults: FaultPoints,
}

impl Redlock {
    /// One client of the masters at `setup.urls`. Masters that cannot be
    /// reached now are not an error: they may be back by the first acquire.
    pub async fn connect(setup: ClientSetup) -> Result<Self, LockError> {
        setup.config.validate()?;
        // A TTL the drift allowance and the masters' answer time eat whole
        // would make every attempt a refusal: say so now instead. Asking
        // takes up to one per-master timeout, and never less than a
        // millisecond (`PX` counts whole ones, and so does a round trip).
        let asking = node_timeout(setup.config.ttl).max(Duration::from_millis(1));
        setup.config.validate_drift(asking)?;
        if setup.urls.is_empty() {
            return Err(LockError::Config(
                "Redlock needs at least one Redis URL".into(),
            ));
        }
        let masters: Vec<Arc<Master>> = setup
            .urls
            .iter()
            .map(|url| Arc::new(Master::new(url, &setup)))
            .collect();
        let within = node_timeout(setup.config.ttl);
        join_all(masters.iter().map(|m| timeout(within, m.connection()))).await;
        Ok(Self {
            masters,
            config: setup.config,
            faults: setup.faults,
        })
    }

    /// N/2 + 1: how many masters must agree.
    pub fn quorum(&self) -> usize {
        self.masters.len() / 2 + 1
    }

    // ANCHOR: try_lock
    /// Tries once: asks every master at once and counts the yeses as they
    /// come, until a majority said yes or too many said no.
    pub async fn try_lock(&self) -> Result<Option<Lease>, LockError> {
        let value = Uuid::new_v4().to_string();
        let started = Instant::now();
        let votes = self
            .masters
            .iter()
            .map(|master| self.set_nx_px(master, &value));
        let yes = count_to_quorum(votes, self.quorum()).await;

        if yes >= self.quorum() {
            // A majority said yes: the lock exists from now on. A client that
            // stalls here (a GC pause) finds its validity used up just below.
            self.faults.reached(Point::AfterAcquire).await?;
            if let Some(validity) = validity(&self.config, started.elapsed()) {
                return Ok(Some(Lease { value, validity }));
            }
        }
        // Too few yeses, or too late: give back every key we may have
        // written, including on masters whose answer never came.
        self.release_everywhere(&value).await;
        Ok(None)
    }
    // ANCHOR_END: try_lock

    /// One master's vote: did it take our value? The future owns what it
    /// needs, so that it can finish after `try_lock` has stopped waiting.
    fn set_nx_px(&self, master: &Arc<Master>, value: &str) -> impl Future<Output = bool> + use<> {
        let master = Arc::clone(master);
        let key = self.config.key.clone();
        let value = value.to_owned();
        let ttl_ms = self.config.ttl_ms();
        let within = node_timeout(self.config.ttl);
        let ticket = master.ticket(); // our place in line: taken now
        async move {
            let answer = master
                .ask(ticket, within, |mut conn| async move {
                    redis::cmd("SET")
                        .arg(&key)
                        .arg(&value)
                        .arg("NX")
                        .arg("PX")
                        .arg(ttl_ms)
                        .query_async::<Option<String>>(&mut conn)
                        .await
                })
                .await;
            matches!(answer, Some(Some(ok)) if ok == "OK")
        }
    }

    // ANCHOR: lock
    /// Takes the lock, retrying after a random pause, for at most `wait`.
    pub async fn lock(&self, wait: Duration) -> Result<Option<Lease>, LockError> {
        let deadline = lockcore::deadline_after(wait)?;
        loop {
            if let Some(lease) = self.try_lock().await? {
                return Ok(Some(lease));
            }
            let pause = retry_delay(self.config.retry_interval);
            if Instant::now() + pause > deadline {
                return Ok(None);
            }
            sleep(pause).await;
        }
    }
    // ANCHOR_END: lock

    // ANCHOR: unlock
    /// Gives the lock back on every master and says what each one did:
    /// deleted our key, found none of ours, or could not be reached. Once a
    /// majority confirmed, the other answers are not waited for (those
    /// releases still go out, read in the background); short of that, every
    /// answer is awaited, each for at most one per-master timeout, so that
    /// an unreachable master is named, not mistaken for "not ours".
    pub async fn unlock(&self, lease: &Lease) -> Unlocked {
        let mut answers: FuturesUnordered<_> = self
            .masters
            .iter()
            .map(|master| self.delete_ours(master, &lease.value))
            .collect();
        let mut unlocked = Unlocked::default();
        while let Some((url, heard)) = answers.next().await {
            match heard {
                Some(true) => unlocked.deleted.push(url),
                Some(false) => unlocked.not_ours.push(url),
                None => unlocked.unreachable.push(url),
            }
            if unlocked.deleted.len() >= self.quorum() {
                break;
            }
        }
        unlocked.not_waited = answers.len();
        if !answers.is_empty() {
            tokio::spawn(answers.count());
        }
        unlocked
    }

    /// After a failed attempt: every master's answer is awaited, so that
    /// the next attempt finds no key of ours left behind.
    async fn release_everywhere(&self, value: &str) -> usize {
        let deletes = self
            .masters
            .iter()
            .map(|master| self.delete_ours(master, value));
        join_all(deletes)
            .await
            .into_iter()
            .filter(|(_, heard)| *heard == Some(true))
            .count()
    }

    /// One master's part of a release: its URL, and whether our key was
    /// there and deleted (`Some(true)`), not there (`Some(false)`), or the
    /// master could not be reached (`None`).
    fn delete_ours(
        &self,
        master: &Arc<Master>,
        value: &str,
    ) -> impl Future<Output = (String, Heard<bool>)> + use<> {
        let master = Arc::clone(master);
        let key = self.config.key.clone();
        let value = value.to_owned();
        let within = node_timeout(self.config.ttl);
        let ticket = master.ticket(); // behind every vote already made
        async move {
            let deleted = master
                .ask(ticket, within, |mut conn| async move {
                    RELEASE
                        .key(&key)
                        .arg(&value)
                        .invoke_async::<i64>(&mut conn)
                        .await
                })
                .await;
            (master.url.clone(), deleted.map(|deleted| deleted == 1))
        }
    }
    // ANCHOR_END: unlock

    // ANCHOR: extend
    /// Gives our keys a fresh TTL, under the same rule as taking the lock: a
    /// majority must still hold our value and time must be left. `None`
    /// means the lock is lost: stop working under it.
    pub async fn extend(&self, lease: &Lease) -> Result<Option<Lease>, LockError> {
        let key = &self.config.key;
        let value = lease.value.as_str();
        let ttl_ms = self.config.ttl_ms();
        let within = node_timeout(self.config.ttl);
        let started = Instant::now();
        let extended = join_all(self.masters.iter().map(|master| {
            master.ask(master.ticket(), within, |mut conn| async move {
                EXTEND
                    .key(key)
                    .arg(value)
                    .arg(ttl_ms)
                    .invoke_async::<i64>(&mut conn)
                    .await
            })
        }))
        .await;
        let yes = extended.into_iter().filter(|&e| e == Some(1)).count();
        let validity = validity(&self.config, started.elapsed());
        Ok(validity
            .filter(|_| yes >= self.quorum())
            .map(|validity| Lease {
                value: lease.value.clone(),
                validity,
            }))
    }
    // ANCHOR_END: extend
}

// ANCHOR: quorum
/// Counts `votes` (one per master, all asked at once) as they come, until
/// `quorum` of them said yes or so many said no that `quorum` is out of
/// reach, and returns the yeses.
///
/// The votes still out are not waited for, but not dropped either: a task
/// of their own reads their answers, so that their `SET`s still go out (a
/// request whose answer nobody awaits any more may never be sent) and our
/// key lands on as many masters as it can, exactly as if we had waited.
async fn count_to_quorum<V>(votes: impl Iterator<Item = V>, quorum: usize) -> usize
where
    V: Future<Output = bool> + Send + 'static,
{
    let mut votes: FuturesUnordered<V> = votes.collect();
    let mut noes_allowed = votes.len().saturating_sub(quorum);
    let mut yes = 0;
    while let Some(said_yes) = votes.next().await {
        if said_yes {
            yes += 1;
            if yes >= quorum {
                break;
            }
        } else if noes_allowed == 0 {
            break;
        } else {
            noes_allowed -= 1;
        }
    }
    if !votes.is_empty() {
        tokio::spawn(votes.count());
    }
    yes
}
// ANCHOR_END: quorum

/// A random pause between half and one and a half retry intervals, from the
/// random bits of a fresh UUID: clients that just collided spread out.
fn retry_delay(retry: Duration) -> Duration {
    let per_mille = u32::try_from(Uuid::new_v4().as_u128() % 1000).unwrap_or(500);
    retry / 2 + retry * per_mille / 1000
}

// The harness drives every stage through one contract. This adapter is all
// stage 7 needs for it; the lesson is above.
#[async_trait]
impl DistributedLock for Redlock {
    fn describe(&self) -> Description {
        DESCRIPTION
    }

    async fn try_acquire(&self) -> Result<Option<Acquired>, LockError> {
        Ok(self.try_lock().await?.map(into_acquired))
    }

    async fn acquire(&self, wait: Duration) -> Result<Option<Acquired>, LockError> {
        Ok(self.lock(wait).await?.map(into_acquired))
    }

    /// `Deleted` when our key was still on a majority: the lock was ours to
    /// give back. `NothingDeleted` when too few masters had it to make a
    /// majority: it had already slipped away (expired, or a master forgot
    /// it) and someone else may hold it now. `Unconfirmed` when masters that
    /// could not be reached might have made the difference.
    async fn release(&self, held: &Acquired) -> Result<Release, LockError> {
        let lease = Lease {
            value: held.value.clone(),
            validity: held.validity.unwrap_or_default(),
        };
        Ok(self.unlock(&lease).await.outcome(self.quorum()))
    }
}

fn into_acquired(lease: Lease) -> Acquired {
    let mut held = Acquired::with_value(lease.value);
    held.validity = Some(lease.validity);
    held
}

/// Stage 7 as the harness and the CLI see it.
pub const STAGE: StageEntry = StageEntry {
    description: DESCRIPTION,
    connect,
};

fn connect(setup: ClientSetup) -> ConnectFuture {
    Box::pin(async move {
        let lock: Box<dyn DistributedLock> = Box::new(Redlock::connect(setup).await?);
        Ok(lock)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validity_takes_the_time_spent_and_the_drift_off_the_ttl() {
        let config = LockConfig::with_ttl(Duration::from_millis(1000));
        // 1000 − 100 − (1000 × 0.01 + 2) = 888
        assert_eq!(
            validity(&config, Duration::from_millis(100)),
            Some(Duration::from_millis(888))
        );
        assert_eq!(validity(&config, Duration::from_millis(988)), None);
        assert_eq!(validity(&config, Duration::from_secs(5)), None);
    }

    #[test]
    fn a_master_gets_far_less_than_the_ttl_to_answer() {
        assert_eq!(
            node_timeout(Duration::from_millis(300)),
            Duration::from_millis(30)
        );
        assert_eq!(
            node_timeout(Duration::from_secs(30)),
            Duration::from_millis(50)
        );
    }

    /// Five votes: some answered at once, the rest never.
    type Vote = std::pin::Pin<Box<dyn Future<Output = bool> + Send>>;

    fn votes(answered: &[bool]) -> Vec<Vote> {
        let mut votes: Vec<Vote> = answered
            .iter()
            .map(|&yes| Box::pin(std::future::ready(yes)) as _)
            .collect();
        while votes.len() < NODES {
            votes.push(Box::pin(std::future::pending()));
        }
        votes
    }

    #[tokio::test]
    async fn a_majority_of_yeses_is_enough_the_others_are_not_waited_for() {
        // Two masters never answer; if they were waited for, this would hang.
        assert_eq!(
            count_to_quorum(votes(&[true, true, true]).into_iter(), 3).await,
            3
        );
        assert_eq!(
            count_to_quorum(votes(&[false, true, true, true]).into_iter(), 3).await,
            3
        );
    }

    #[tokio::test]
    async fn three_noes_of_five_end_the_count_without_the_others() {
        assert_eq!(
            count_to_quorum(votes(&[false, true, false, false]).into_iter(), 3).await,
            1
        );
    }

    #[tokio::test]
    async fn a_request_waits_for_every_request_made_before_it() {
        let turns = Turns::new();
        let vote = turns.ticket();
        let release = turns.ticket();
        let later = turns.ticket();
        // The vote's turn is now; the release's comes only once the vote is
        // done, however long that takes.
        vote.turn().await;
        let mut release_turn = Box::pin(release.turn());
        assert!(
            futures_util::poll!(release_turn.as_mut()).is_pending(),
            "the release went before the vote it was made after"
        );
        // A request dropped before its turn (a caller gave up) blocks nobody.
        drop(later);
        drop(vote);
        release_turn.await;
        drop(release);
        let next = turns.ticket();
        let mut next_turn = Box::pin(next.turn());
        assert!(futures_util::poll!(next_turn.as_mut()).is_ready());
    }

    #[test]
    fn the_retry_delay_stays_within_half_to_one_and_a_half_intervals() {
        let retry = Duration::from_millis(100);
        for _ in 0..200 {
            let delay = retry_delay(retry);
            assert!(delay >= retry / 2 && delay < retry * 3 / 2, "{delay:?}");
        }
    }
}
