//! # Stage 1 — `SETNX` to take the lock, `DEL` to give it back
//!
//! The simplest lock Redis can give: a key that exists while someone holds
//! the lock. `SETNX key value` ("SET if Not eXists") writes the key only when
//! it is absent and answers 1, or answers 0 when someone was first. Redis runs
//! commands one at a time, so of all the clients that race for the key,
//! exactly one gets the 1. Giving the lock back is deleting the key.
//!
//! What it fixes: overselling. Eight clients that read the stock, think, and
//! write it back no longer trample each other (`tests/contention.rs`).
//!
//! What it still breaks: the key has no expiry. A holder that dies between
//! `SETNX` and `DEL` (a crash, `kill -9`, an OOM kill, a power cut) leaves the
//! key behind for ever, and every other client waits for ever: a deadlock
//! (`tests/killed_holder.rs`). Stage 2 adds an expiry.

use std::time::Duration;

use async_trait::async_trait;
use lockcore::{
    Acquired, ClientSetup, ConnectFuture, Connection, Description, DistributedLock, FaultPoints,
    LockConfig, LockError, Point, Release, StageEntry,
};
use tokio::time::{Instant, sleep};

/// What this stage is, for listings and the harness.
pub const DESCRIPTION: Description = Description {
    stage: 1,
    name: "stage1",
    title: "SETNX to take the lock, DEL to give it back",
    acquire_commands: "SETNX key 1",
    release_commands: "DEL key",
    reentrant: false,
    nodes: 1,
    fault_points: &[Point::AfterSetnx],
    home: lockcore::Home::REDIS,
};

/// The value stage 1 writes. Every holder writes the same one: the lock only
/// says "someone holds me", never who.
pub const LOCK_VALUE: &str = "1";

/// A lock that is nothing but a key that exists.
pub struct SetnxLock {
    conn: Connection,
    config: LockConfig,
    faults: FaultPoints,
}

impl SetnxLock {
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
    /// Tries once to take the lock.
    pub async fn try_lock(&self) -> Result<bool, LockError> {
        let taken: bool = redis::cmd("SETNX")
            .arg(&self.config.key)
            .arg(LOCK_VALUE)
            .query_async(&mut self.conn.clone())
            .await?;
        if taken {
            // From here until DEL the key has no expiry. A holder that dies
            // now, or anywhere in its business, leaves the key for ever.
            self.faults.reached(Point::AfterSetnx).await?;
        }
        Ok(taken)
    }
    // ANCHOR_END: try_lock

    // ANCHOR: lock
    /// Takes the lock, retrying every `retry_interval` (the articles sleep
    /// 100 ms and try again), for at most `wait`. `false` when time ran out.
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
    /// deleted. Whose key it was, `DEL` neither knows nor checks.
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
// stage 1 needs for it; the lesson is above.
#[async_trait]
impl DistributedLock for SetnxLock {
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

/// Stage 1 as the harness and the CLI see it.
pub const STAGE: StageEntry = StageEntry {
    description: DESCRIPTION,
    connect,
};

fn connect(setup: ClientSetup) -> ConnectFuture {
    Box::pin(async move {
        let lock: Box<dyn DistributedLock> = Box::new(SetnxLock::connect(setup).await?);
        Ok(lock)
    })
}
