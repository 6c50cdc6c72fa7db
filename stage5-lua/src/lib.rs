//! # Stage 5 — a unique value; compare-and-delete in one Lua script
//!
//! Stage 4 compares before it deletes, but with two commands: between the
//! `GET` that matched and the `DEL`, the key can expire and become someone
//! else's, and the `DEL` removes their lock. Stage 5 sends the comparison and
//! the deletion to Redis as one Lua script. Redis runs a script from start to
//! finish with no other client's command in between, so the key the script
//! compares is the key it deletes.
//!
//! The script is sent the way production clients send scripts: `EVALSHA`
//! with the script's SHA1, so the script text crosses the network once per
//! server rather than on every release; and when the server answers
//! `NOSCRIPT` (it has never seen the script, or it restarted, or a replica
//! was promoted), `EVAL` with the full text, which also caches it.
//!
//! What it fixes: the `GET`/`DEL` race. A release that starts after the key
//! expired and was taken by someone else deletes nothing, however long it is
//! paused on the way (`tests/get_del_race.rs`). Acquisition and release are
//! now each atomic: this is the lock most articles end with.
//!
//! What it still breaks: the lock can still expire under a holder that is
//! still working. A release that deletes nothing comes too late to help: the
//! next holder has been working alongside it, both read the same stock, and
//! both sell (`tests/slow_business.rs`). And a lock written to a master that
//! dies before its replica has the write is simply gone after the failover:
//! two clients hold it (`tests/failover.rs`). Stage 6 renews the lock while
//! its holder works.

use std::time::Duration;

use async_trait::async_trait;
use lockcore::{
    Acquired, ClientSetup, ConnectFuture, Connection, Description, DistributedLock, FaultPoints,
    LockConfig, LockError, Point, Release, StageEntry,
};
use redis::{ErrorKind, ServerErrorKind};
use tokio::time::{Instant, sleep};
use uuid::Uuid;

/// What this stage is, for listings and the harness.
pub const DESCRIPTION: Description = Description {
    stage: 5,
    name: "stage5",
    title: "a unique value; compare-and-delete in one Lua script",
    acquire_commands: "SET key <uuid> NX PX ttl",
    release_commands: "EVALSHA <sha1> 1 key <uuid> (EVAL on NOSCRIPT)",
    reentrant: false,
    nodes: 1,
    fault_points: &[Point::AfterAcquire],
    home: lockcore::Home::REDIS,
};

// ANCHOR: script
/// The release, as one script: delete the key only if it still holds our
/// token. Returns 1 when it deleted the key, 0 when the key was gone or
/// someone else's.
pub const RELEASE_SCRIPT: &str = r"if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('DEL', KEYS[1])
else
    return 0
end";
// ANCHOR_END: script

/// A lock with a unique value per acquisition, released by a script.
pub struct ScriptLock {
    conn: Connection,
    config: LockConfig,
    faults: FaultPoints,
    /// The SHA1 of [`RELEASE_SCRIPT`] in hex: the name `EVALSHA` knows it by.
    release_sha: String,
}

impl ScriptLock {
    /// Connects one client to the Redis server at `setup.urls[0]`.
    pub async fn connect(setup: ClientSetup) -> Result<Self, LockError> {
        setup.config.validate()?;
        let url = setup
            .urls
            .first()
            .ok_or_else(|| LockError::Config("no Redis URL given".into()))?;
        let conn = setup.connect(url).await?;
        // Redis names a script by the SHA1 of its text, so the client can
        // compute the name itself, without asking the server.
        let release_sha = redis::Script::new(RELEASE_SCRIPT).get_hash().to_owned();
        Ok(Self {
            conn,
            config: setup.config,
            faults: setup.faults,
            release_sha,
        })
    }

    // ANCHOR: try_lock
    /// Tries once to take the lock. On success, returns the token that was
    /// written under the key: keep it, it is the only way to release.
    pub async fn try_lock(&self) -> Result<Option<String>, LockError> {
        let token = new_token();
        Ok(self.set_if_absent(&token).await?.then_some(token))
    }

    /// Writes `token` under the key if nobody holds the lock, with the TTL.
    async fn set_if_absent(&self, token: &str) -> Result<bool, LockError> {
        let reply: Option<String> = redis::cmd("SET")
            .arg(&self.config.key)
            .arg(token)
            .arg("NX")
            .arg("PX")
            .arg(self.config.ttl_ms())
            .query_async(&mut self.conn.clone())
            .await?;
        if reply.is_none() {
            return Ok(false);
        }
        self.faults.reached(Point::AfterAcquire).await?;
        Ok(true)
    }
    // ANCHOR_END: try_lock

    // ANCHOR: lock
    /// Takes the lock, retrying every `retry_interval`, for at most `wait`.
    /// `None` when time ran out.
    pub async fn lock(&self, wait: Duration) -> Result<Option<String>, LockError> {
        // One token for the whole wait: every try asks for the same
        // acquisition.
        let token = new_token();
        let deadline = Instant::now() + wait;
        loop {
            if self.set_if_absent(&token).await? {
                return Ok(Some(token));
            }
            if Instant::now() + self.config.retry_interval > deadline {
                return Ok(None);
            }
            sleep(self.config.retry_interval).await;
        }
    }
    // ANCHOR_END: lock

    // ANCHOR: unlock
    /// Gives the lock back if it is still ours, in one atomic step. `true`
    /// when the script deleted our key.
    pub async fn unlock(&self, token: &str) -> Result<bool, LockError> {
        let mut conn = self.conn.clone();
        // First by name: cheap, and the usual case once the server has
        // seen the script.
        let by_sha: Result<i64, redis::RedisError> = redis::cmd("EVALSHA")
            .arg(&self.release_sha)
            .arg(1)
            .arg(&self.config.key)
            .arg(token)
            .query_async(&mut conn)
            .await;
        let deleted = match by_sha {
            Ok(deleted) => deleted,
            // This server does not know the script (new, restarted, or a
            // freshly promoted replica): send the whole text. EVAL runs it
            // and caches it, so the next EVALSHA finds it.
            Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                redis::cmd("EVAL")
                    .arg(RELEASE_SCRIPT)
                    .arg(1)
                    .arg(&self.config.key)
                    .arg(token)
                    .query_async(&mut conn)
                    .await?
            }
            Err(e) => return Err(e.into()),
        };
        Ok(deleted == 1)
    }
    // ANCHOR_END: unlock
}

/// A value nobody else will ever write: a random (version 4) UUID.
fn new_token() -> String {
    Uuid::new_v4().to_string()
}

// The harness drives every stage through one contract. This adapter is all
// stage 5 needs for it; the lesson is above.
#[async_trait]
impl DistributedLock for ScriptLock {
    fn describe(&self) -> Description {
        DESCRIPTION
    }

    async fn try_acquire(&self) -> Result<Option<Acquired>, LockError> {
        Ok(self.try_lock().await?.map(Acquired::with_value))
    }

    async fn acquire(&self, wait: Duration) -> Result<Option<Acquired>, LockError> {
        Ok(self.lock(wait).await?.map(Acquired::with_value))
    }

    async fn release(&self, held: &Acquired) -> Result<Release, LockError> {
        Ok(if self.unlock(&held.value).await? {
            Release::Deleted
        } else {
            Release::NothingDeleted
        })
    }
}

/// Stage 5 as the harness and the CLI see it.
pub const STAGE: StageEntry = StageEntry {
    description: DESCRIPTION,
    connect,
};

fn connect(setup: ClientSetup) -> ConnectFuture {
    Box::pin(async move {
        let lock: Box<dyn DistributedLock> = Box::new(ScriptLock::connect(setup).await?);
        Ok(lock)
    })
}
