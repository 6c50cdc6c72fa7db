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
//! 3. the lock is ours when at least N/2+1 masters said OK *and* time is left:
//!    validity = TTL − time spent asking − a margin for clock drift
//!    (TTL × drift factor + 2 ms). Only for that long may we trust it;
//! 4. otherwise give back whatever we got, on every master (a master whose
//!    answer was lost may still have written our key), wait a random while so
//!    that clients that collided do not collide again in step, and retry;
//! 5. release with the stage 5 compare-and-delete script, on every master.
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

use std::future::Future;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::future::join_all;
use lockcore::{
    Acquired, ClientSetup, ConnectFuture, Connection, Description, DistributedLock, FaultPoints,
    LockConfig, LockError, Point, Release, StageEntry,
};
use redis::RedisResult;
use tokio::sync::Mutex;
use tokio::time::{Instant, sleep, timeout};
use uuid::Uuid;

/// How many masters the course runs Redlock on.
pub const NODES: usize = 5;

/// What this stage is, for listings and the harness.
pub const DESCRIPTION: Description = Description {
    stage: 7,
    name: "stage7",
    title: "Redlock: SET NX PX on N independent masters, trusted on a majority",
    acquire_commands: "SET key uuid NX PX ttl on every master at once; a majority and time left",
    release_commands: "EVAL compare-and-delete on every master",
    reentrant: false,
    nodes: NODES,
    fault_points: &[Point::AfterAcquire],
};

// ANCHOR: scripts
// Sent with EVAL, script and all: one round trip on every master, even on
// one that restarted and forgot its script cache (EVALSHA would first be
// told NOSCRIPT, and a second round trip may not fit in the timeout).

/// Deletes the key only if it still holds our value (stage 5's script).
const RELEASE: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
";

/// Gives the key a fresh TTL only if it still holds our value.
const EXTEND: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
";
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
    config.ttl.mul_f64(config.drift_factor) + Duration::from_millis(2)
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
}

impl Master {
    fn new(url: &str, setup: &ClientSetup) -> Self {
        Self {
            url: url.to_owned(),
            setup: setup.clone(),
            conn: Mutex::new(None),
        }
    }

    // ANCHOR: ask
    /// Sends one request, giving the master `within` to answer, connecting
    /// first if need be. Whatever goes wrong (refused, reset, silence, an
    /// error reply) is `None`: a master that did not say yes said no.
    async fn ask<T, F, Fut>(&self, within: Duration, request: F) -> Option<T>
    where
        F: FnOnce(Connection) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
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
        timeout(within, attempt).await.ok().flatten()
    }
    // ANCHOR_END: ask

    async fn connection(&self) -> Result<Connection, LockError> {
        let mut slot = self.conn.lock().await;
        if let Some(conn) = slot.as_ref() {
            return Ok(conn.clone());
        }
        let conn = self.setup.connect(&self.url).await?;
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

/// Redlock over N independent masters.
pub struct Redlock {
    masters: Vec<Master>,
    config: LockConfig,
    faults: FaultPoints,
}

impl Redlock {
    /// One client of the masters at `setup.urls`. Masters that cannot be
    /// reached now are not an error: they may be back by the first acquire.
    pub async fn connect(setup: ClientSetup) -> Result<Self, LockError> {
        setup.config.validate()?;
        if setup.urls.is_empty() {
            return Err(LockError::Config(
                "Redlock needs at least one Redis URL".into(),
            ));
        }
        let masters: Vec<Master> = setup
            .urls
            .iter()
            .map(|url| Master::new(url, &setup))
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
    /// Tries once: asks every master at once and counts the yeses.
    pub async fn try_lock(&self) -> Result<Option<Lease>, LockError> {
        let value = Uuid::new_v4().to_string();
        let started = Instant::now();
        let votes = join_all(
            self.masters
                .iter()
                .map(|master| self.set_nx_px(master, &value)),
        )
        .await;
        let yes = votes.into_iter().filter(|&said_yes| said_yes).count();

        if yes >= self.quorum() {
            // A majority said yes. A client that stalls here (a GC pause, a
            // slow last answer) finds its validity used up just below.
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

    async fn set_nx_px(&self, master: &Master, value: &str) -> bool {
        let key = &self.config.key;
        let ttl_ms = self.config.ttl_ms();
        let answer = master
            .ask(node_timeout(self.config.ttl), |mut conn| async move {
                redis::cmd("SET")
                    .arg(key)
                    .arg(value)
                    .arg("NX")
                    .arg("PX")
                    .arg(ttl_ms)
                    .query_async::<Option<String>>(&mut conn)
                    .await
            })
            .await;
        matches!(answer, Some(Some(ok)) if ok == "OK")
    }

    // ANCHOR: lock
    /// Takes the lock, retrying after a random pause, for at most `wait`.
    pub async fn lock(&self, wait: Duration) -> Result<Option<Lease>, LockError> {
        let deadline = Instant::now() + wait;
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
    /// Gives the lock back on every master. Returns on how many our key was
    /// still there to delete.
    pub async fn unlock(&self, lease: &Lease) -> usize {
        self.release_everywhere(&lease.value).await
    }

    async fn release_everywhere(&self, value: &str) -> usize {
        let key = &self.config.key;
        let within = node_timeout(self.config.ttl);
        let deleted = join_all(self.masters.iter().map(|master| {
            master.ask(within, |mut conn| async move {
                redis::cmd("EVAL")
                    .arg(RELEASE)
                    .arg(1)
                    .arg(key)
                    .arg(value)
                    .query_async::<i64>(&mut conn)
                    .await
            })
        }))
        .await;
        deleted.into_iter().filter(|&d| d == Some(1)).count()
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
            master.ask(within, |mut conn| async move {
                redis::cmd("EVAL")
                    .arg(EXTEND)
                    .arg(1)
                    .arg(key)
                    .arg(value)
                    .arg(ttl_ms)
                    .query_async::<i64>(&mut conn)
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
    /// give back. Fewer means it had already slipped away (expired, or a
    /// master forgot it) and someone else may hold it now.
    async fn release(&self, held: &Acquired) -> Result<Release, LockError> {
        let lease = Lease {
            value: held.value.clone(),
            validity: held.validity.unwrap_or_default(),
        };
        let deleted = self.unlock(&lease).await;
        Ok(if deleted >= self.quorum() {
            Release::Deleted
        } else {
            Release::NothingDeleted
        })
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

    #[test]
    fn the_retry_delay_stays_within_half_to_one_and_a_half_intervals() {
        let retry = Duration::from_millis(100);
        for _ in 0..200 {
            let delay = retry_delay(retry);
            assert!(delay >= retry / 2 && delay < retry * 3 / 2, "{delay:?}");
        }
    }
}
