//! # Stage 8 — fencing tokens: the resource, not the lock, has the last word
//!
//! Every lock before this one can be outlived by its holder. A process that
//! froze in a GC pause, or whose business ran past the TTL, wakes up still
//! believing it holds the lock, and writes. No cleverness in the lock can
//! prevent that: the holder is not running while its lock expires, so it
//! cannot notice.
//!
//! The fix moves the last check to where the damage would happen. Each time
//! the lock is granted it hands out a *fencing token*, a number one higher
//! than the one before. The holder shows its token with every access to the
//! protected resource, which remembers the highest token it has seen and
//! refuses a write with anything lower. A holder that woke up late carries an old token; its write
//! bounces off, however sure it is that it holds the lock.
//!
//! Here the token comes from a counter next to the lock key: one Lua script
//! checks that the lock is free, increments the counter, and only then takes
//! the lock (`SET key value PX ttl`), so no two grants can share a number
//! and no grant can happen without one. The order matters: a Lua script is
//! not a transaction, and a command that fails midway stops the script
//! without undoing what ran before it. Drawing the token first means a
//! counter that cannot be incremented (it holds something that is not an
//! integer) stops the script *before* the lock is written: the client gets
//! an error and no lock (`tests/broken_counter.rs`). The other order would
//! grant the lock and then fail to number it. Release is stage 5's
//! compare-and-delete.
//!
//! What the resource must do with the token. A purchase reads the stock,
//! decides, then writes; the decision is taken on the read. So the token
//! must come with the read too, not only with the write. A resource that
//! checks writes alone is fooled when the stale holder writes *first*: the
//! old holder (token n) read the stock before it froze, the new holder
//! (token n+1) has read the same stock but not written yet, and the old
//! holder's write meets no higher token, so it is accepted; then the new
//! holder's write is accepted too. One item, two orders.
//!
//! The resource this project uses (`harness::workload::Fencing::ReadsAndWrites`)
//! therefore registers the token on every read: a read raises the highest
//! token seen, and a write with a token lower than the highest seen, by read
//! or by write, is refused. Once the new holder has read, nothing the old
//! one decided can land, whichever writes first. The other fix, a write
//! conditional on the version that was read (compare-and-set), was not
//! chosen: it is safe with no lock at all, so it would teach optimistic
//! concurrency instead of fencing, and it would refuse a holder's write for
//! any change, not for a stale grant. The price of ours: a read writes
//! (the highest token), so the resource must be able to store on every
//! access.
//!
//! What it fixes: the stale writer after a GC pause or slow business, in
//! both orders: the new holder writes first, or the stale one does; stock is
//! never oversold (`tests/stale_writer.rs`, which also shows the write-only
//! resource overselling when the stale write lands first).
//!
//! What it still needs, and still breaks: the resource must check tokens on
//! every access (our stock scripts in the harness do; a plain `GET`/`SET`
//! would not). And the tokens are only as good as the counter: if it lives
//! on a master that fails over before replicating, or restarts without
//! persistence, the counter goes back and tokens repeat (`tests/lost_counter.rs`). A counter that must never go
//! back belongs in a consensus store (ZooKeeper's zxid, etcd's revision).

use std::time::Duration;

use async_trait::async_trait;
use lockcore::{
    Acquired, ClientSetup, ConnectFuture, Connection, Description, DistributedLock, FaultPoints,
    LockConfig, LockError, Point, Release, StageEntry,
};
use redis::{ErrorKind, FromRedisValue, RedisResult, ServerErrorKind};
use tokio::time::{Instant, sleep};
use uuid::Uuid;

/// What this stage is, for listings and the harness.
pub const DESCRIPTION: Description = Description {
    stage: 8,
    name: "stage8",
    title: "fencing tokens: the lock numbers its grants, the resource refuses old numbers",
    acquire_commands: "EVAL (EXISTS key; INCR {key}:fencing; SET key uuid PX ttl) -> token",
    release_commands: "EVAL compare-and-delete",
    reentrant: false,
    nodes: 1,
    fault_points: &[Point::AfterAcquire],
    home: lockcore::Home::REDIS,
};

// ANCHOR: scripts
/// Takes the lock and draws the next token in one step: returns the token,
/// or nil when someone else holds the lock (and then draws nothing). The
/// token is drawn before the lock is written: if the `INCR` fails, the
/// script stops there and nothing is granted.
const ACQUIRE: &str = r"
if redis.call('EXISTS', KEYS[1]) == 1 then
  return false
end
local token = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return token
";

/// Deletes the key only if it still holds our value.
const RELEASE: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
";
// ANCHOR_END: scripts

/// Runs `script` on the node that serves `keys`: by its SHA1 (`EVALSHA`;
/// on `NOSCRIPT`, `SCRIPT LOAD` and `EVALSHA` again, as redis-rs does), and
/// if the node still has not got it, with `EVAL` and the whole text, which
/// always works. On a Redis Cluster in the middle of a failover, the
/// `SCRIPT LOAD` can reach the masters before the replica taking over the
/// key's slot is one of them, and the second `EVALSHA` is refused too
/// (seen in a whole matrix: stage8 x cluster-failover-wait).
async fn run_script<T: FromRedisValue>(
    conn: &Connection,
    script: &str,
    keys: &[&str],
    args: &[&str],
) -> RedisResult<T> {
    let by_sha = redis::Script::new(script);
    let mut invocation = by_sha.prepare_invoke();
    for key in keys {
        invocation.key(*key);
    }
    for arg in args {
        invocation.arg(*arg);
    }
    match invocation.invoke_async(&mut conn.clone()).await {
        Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
            redis::cmd("EVAL")
                .arg(script)
                .arg(keys.len())
                .arg(keys)
                .arg(args)
                .query_async(&mut conn.clone())
                .await
        }
        answer => answer,
    }
}

/// Where the token counter lives: next to the lock key, and in its hash
/// slot. A script may only touch keys of one slot on a Redis Cluster (one
/// master serves each slot), so the counter's name carries the lock key as
/// its hash tag (`{lock:stock}:fencing`), as Redisson names a lock's
/// companion keys; a lock key that has a tag of its own keeps it.
pub fn counter_key(lock_key: &str) -> String {
    if lock_key.contains('{') {
        format!("{lock_key}:fencing")
    } else {
        format!("{{{lock_key}}}:fencing")
    }
}

/// A granted lock: our value, and the token to show the resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fenced {
    /// The unique value under the lock key.
    pub value: String,
    /// One higher than any token granted before, on this counter.
    pub token: u64,
}

/// A lock that numbers its grants.
pub struct FencedLock {
    conn: Connection,
    config: LockConfig,
    faults: FaultPoints,
}

impl FencedLock {
    /// Connects one client to the Redis server at `setup.urls[0]`.
    pub async fn connect(setup: ClientSetup) -> Result<Self, LockError> {
        setup.config.validate()?;
        let url = setup
            .urls
            .first()
            .ok_or_else(|| LockError::Config("no Redis URL given".into()))?;
        let conn = setup.connect(url).await?;
        Ok(Self {
            conn,
            config: setup.config,
            faults: setup.faults,
        })
    }

    // ANCHOR: try_lock
    /// Tries once. On success, the token to present with every write.
    pub async fn try_lock(&self) -> Result<Option<Fenced>, LockError> {
        let value = Uuid::new_v4().to_string();
        let counter = counter_key(&self.config.key);
        let ttl_ms = self.config.ttl_ms().to_string();
        let token: Option<u64> = run_script(
            &self.conn,
            ACQUIRE,
            &[&self.config.key, &counter],
            &[&value, &ttl_ms],
        )
        .await?;
        let Some(token) = token else {
            return Ok(None);
        };
        self.faults.reached(Point::AfterAcquire).await?;
        Ok(Some(Fenced { value, token }))
    }
    // ANCHOR_END: try_lock

    /// Takes the lock, retrying every `retry_interval`, for at most `wait`.
    pub async fn lock(&self, wait: Duration) -> Result<Option<Fenced>, LockError> {
        let deadline = lockcore::deadline_after(wait)?;
        loop {
            if let Some(fenced) = self.try_lock().await? {
                return Ok(Some(fenced));
            }
            if Instant::now() + self.config.retry_interval > deadline {
                return Ok(None);
            }
            sleep(self.config.retry_interval).await;
        }
    }

    /// Gives the lock back if it is still ours. `true` when our key was
    /// deleted.
    pub async fn unlock(&self, fenced: &Fenced) -> Result<bool, LockError> {
        let deleted: i64 =
            run_script(&self.conn, RELEASE, &[&self.config.key], &[&fenced.value]).await?;
        Ok(deleted == 1)
    }
}

// The harness drives every stage through one contract. This adapter is all
// stage 8 needs for it; the lesson is above.
#[async_trait]
impl DistributedLock for FencedLock {
    fn describe(&self) -> Description {
        DESCRIPTION
    }

    async fn try_acquire(&self) -> Result<Option<Acquired>, LockError> {
        Ok(self.try_lock().await?.map(into_acquired))
    }

    async fn acquire(&self, wait: Duration) -> Result<Option<Acquired>, LockError> {
        Ok(self.lock(wait).await?.map(into_acquired))
    }

    async fn release(&self, held: &Acquired) -> Result<Release, LockError> {
        let fenced = Fenced {
            value: held.value.clone(),
            token: held.fencing_token.unwrap_or(0),
        };
        Ok(if self.unlock(&fenced).await? {
            Release::Deleted
        } else {
            Release::NothingDeleted
        })
    }
}

fn into_acquired(fenced: Fenced) -> Acquired {
    let mut held = Acquired::with_value(fenced.value);
    held.fencing_token = Some(fenced.token);
    held
}

/// Stage 8 as the harness and the CLI see it.
pub const STAGE: StageEntry = StageEntry {
    description: DESCRIPTION,
    connect,
};

fn connect(setup: ClientSetup) -> ConnectFuture {
    Box::pin(async move {
        let lock: Box<dyn DistributedLock> = Box::new(FencedLock::connect(setup).await?);
        Ok(lock)
    })
}
