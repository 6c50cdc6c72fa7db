//! # Stage 3 — `SET key 1 NX PX ttl`: the lock and its expiry in one command
//!
//! Stage 2 took the lock with `SETNX` and gave it an expiry with a second
//! command; a holder that died between the two left a key with no expiry and
//! deadlocked everyone. Since Redis 2.6.12, `SET` takes options that do both
//! at once: `NX` writes only if the key is absent (what `SETNX` did) and
//! `PX ms` (or `EX s`) sets the expiry in the same write. Redis runs one
//! command at a time, so no client, and no crash, can come between the two
//! halves. This is still how a lock is taken on a single Redis node today.
//!
//! What it fixes: there is no moment at which the key exists without an
//! expiry. A holder that crashes at any point, even right after the reply,
//! costs the others at most one TTL (`tests/crash_before_expire.rs`,
//! `tests/killed_holder.rs`).
//!
//! What it still breaks: the release. The TTL is a guess; when the business
//! outlasts it, the key expires under a holder that is still working, the
//! next client takes the lock, and the slow holder's `DEL` deletes that new
//! holder's key. A third client walks in while the second is still inside
//! (`tests/slow_business.rs`). Every holder writes the same value, so
//! nothing tells a holder's key from another's. Stage 4 writes a unique
//! value and checks it before deleting.

use std::time::Duration;

use async_trait::async_trait;
use lockcore::{
    Acquired, ClientSetup, ConnectFuture, Connection, Description, DistributedLock, FaultPoints,
    LockConfig, LockError, Point, Release, StageEntry,
};
use tokio::time::{Instant, sleep};

/// What this stage is, for listings and the harness.
pub const DESCRIPTION: Description = Description {
    stage: 3,
    name: "stage3",
    title: "SET key 1 NX PX ttl: the lock and its expiry in one command",
    acquire_commands: "SET key 1 NX PX ttl",
    release_commands: "DEL key",
    reentrant: false,
    nodes: 1,
    fault_points: &[Point::AfterAcquire],
    home: lockcore::Home::REDIS,
};

/// The value stage 3 writes: still the same for every holder.
pub const LOCK_VALUE: &str = "1";

/// A key written together with its expiry, in one command.
pub struct SetNxPxLock {
    conn: Connection,
    config: LockConfig,
    faults: FaultPoints,
}

impl SetNxPxLock {
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
    /// Tries once to take the lock. `SET … NX` answers `OK` when it wrote
    /// the key and nil when the key was already there. The articles write
    /// `EX 30` (seconds); the course's TTLs are milliseconds, hence `PX`.
    pub async fn try_lock(&self) -> Result<bool, LockError> {
        let reply: Option<String> = redis::cmd("SET")
            .arg(&self.config.key)
            .arg(LOCK_VALUE)
            .arg("NX")
            .arg("PX")
            .arg(self.config.ttl_ms())
            .query_async(&mut self.conn.clone())
            .await?;
        let taken = reply.is_some();
        if taken {
            // The key already carries its expiry: a holder that dies here
            // costs the others at most one TTL.
            self.faults.reached(Point::AfterAcquire).await?;
        }
        Ok(taken)
    }
    // ANCHOR_END: try_lock

    // ANCHOR: lock
    /// Takes the lock, retrying every `retry_interval`, for at most `wait`.
    /// `false` when time ran out. Unchanged since stage 1.
    pub async fn lock(&self, wait: Duration) -> Result<bool, LockError> {
        let deadline = Instant::now() + wait;
        loop {
            if self.try_lock().await? {
                return Ok(true);
            }
            if Instant::now() + self.config.retry_interval > deadline {
                return Ok(false);
            }
            sleep(self.config.retry_interval).await;
        }
    }
    // ANCHOR_END: lock

    // ANCHOR: unlock
    /// Gives the lock back by deleting the key. `true` when a key was
    /// deleted, whether or not it was still ours: after an expiry it may
    /// belong to the next holder, and `DEL` cannot tell.
    pub async fn unlock(&self) -> Result<bool, LockError> {
        let deleted: u32 = redis::cmd("DEL")
            .arg(&self.config.key)
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(deleted == 1)
    }
    // ANCHOR_END: unlock
}

// The harness drives every stage through one contract. This adapter is all
// stage 3 needs for it; the lesson is above.
#[async_trait]
impl DistributedLock for SetNxPxLock {
    fn describe(&self) -> Description {
        DESCRIPTION
    }

    async fn try_acquire(&self) -> Result<Option<Acquired>, LockError> {
        Ok(self
            .try_lock()
            .await?
            .then(|| Acquired::with_value(LOCK_VALUE)))
    }

    async fn acquire(&self, wait: Duration) -> Result<Option<Acquired>, LockError> {
        Ok(self
            .lock(wait)
            .await?
            .then(|| Acquired::with_value(LOCK_VALUE)))
    }

    async fn release(&self, _held: &Acquired) -> Result<Release, LockError> {
        Ok(if self.unlock().await? {
            Release::Deleted
        } else {
            Release::NothingDeleted
        })
    }
}

/// Stage 3 as the harness and the CLI see it.
pub const STAGE: StageEntry = StageEntry {
    description: DESCRIPTION,
    connect,
};

fn connect(setup: ClientSetup) -> ConnectFuture {
    Box::pin(async move {
        let lock: Box<dyn DistributedLock> = Box::new(SetNxPxLock::connect(setup).await?);
        Ok(lock)
    })
}
