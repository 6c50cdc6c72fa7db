//! # Stage 2 — `SETNX`, then `EXPIRE`
//!
//! Stage 1's lock was a key with no expiry: a holder that died before its
//! `DEL` left the key behind for ever. The obvious patch, and the one the
//! articles show next, is to give the key a time to live right after taking
//! it. If the holder dies, Redis deletes the key when the TTL runs out and
//! the next client gets in.
//!
//! The patch is a second command. `SETNX key 1` takes the lock, then
//! `EXPIRE key 30` (here `PEXPIRE`, see [`ExpiringLock::try_lock`]) starts
//! the clock. Between the two replies the key exists with no expiry, exactly
//! as in stage 1.
//!
//! What it fixes: a holder killed *after* `EXPIRE` costs the others one TTL,
//! not for ever (`tests/killed_holder.rs`).
//!
//! What it still breaks:
//! - a holder that dies *between* `SETNX` and `EXPIRE` leaves a key with no
//!   expiry, and everyone deadlocks as in stage 1. Two commands are never
//!   atomic, however close together they are sent
//!   (`tests/crash_before_expire.rs`). Stage 3 sets the value and the expiry
//!   in one command.
//! - the TTL is a guess. When the business takes longer, the key expires
//!   under a holder that is still working, the next client takes the lock,
//!   and the slow holder's `DEL` then deletes the *new* holder's key, which
//!   lets a third client in while the second is still inside
//!   (`tests/slow_business.rs`). Every holder writes the same value, so `DEL`
//!   cannot tell whose key it is deleting.

use std::time::Duration;

use async_trait::async_trait;
use lockcore::{
    Acquired, ClientSetup, ConnectFuture, Connection, Description, DistributedLock, FaultPoints,
    LockConfig, LockError, Point, Release, StageEntry,
};
use tokio::time::{Instant, sleep};

/// What this stage is, for listings and the harness.
pub const DESCRIPTION: Description = Description {
    stage: 2,
    name: "stage2",
    title: "SETNX, then EXPIRE as a second command",
    acquire_commands: "SETNX key 1; PEXPIRE key ttl",
    release_commands: "DEL key",
    reentrant: false,
    nodes: 1,
    fault_points: &[Point::AfterSetnx, Point::AfterExpire],
    home: lockcore::Home::REDIS,
};

/// The value stage 2 writes. Still the same for every holder: the lock says
/// "someone holds me", never who.
pub const LOCK_VALUE: &str = "1";

/// A key that exists while the lock is held, and expires on its own.
pub struct ExpiringLock {
    conn: Connection,
    config: LockConfig,
    faults: FaultPoints,
}

impl ExpiringLock {
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
    /// Tries once to take the lock: `SETNX`, then set the expiry.
    ///
    /// The articles send `EXPIRE key 30`, which counts in seconds. This
    /// course runs its scenarios with TTLs of a few hundred milliseconds, so
    /// it sends `PEXPIRE` with the TTL in milliseconds. The two commands do
    /// the same thing; only the unit differs.
    pub async fn try_lock(&self) -> Result<bool, LockError> {
        let taken: bool = redis::cmd("SETNX")
            .arg(&self.config.key)
            .arg(LOCK_VALUE)
            .query_async(&mut self.conn.clone())
            .await?;
        if !taken {
            return Ok(false);
        }
        // The window: the key is ours, and it has no expiry yet. A holder
        // that dies here leaves it for ever, exactly as in stage 1.
        self.faults.reached(Point::AfterSetnx).await?;

        // If this command fails (Redis unreachable, a timeout), the key also
        // stays without expiry. Only one command that does both can close
        // the window; that is stage 3.
        redis::cmd("PEXPIRE")
            .arg(&self.config.key)
            .arg(self.config.ttl_ms())
            .query_async::<()>(&mut self.conn.clone())
            .await?;
        // From here, a holder that dies costs the others at most one TTL.
        self.faults.reached(Point::AfterExpire).await?;
        Ok(true)
    }
    // ANCHOR_END: try_lock

    // ANCHOR: lock
    /// Takes the lock, retrying every `retry_interval`, for at most `wait`.
    /// `false` when time ran out. Unchanged from stage 1.
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
    /// deleted. If our key expired while we worked, the key there now may be
    /// someone else's, and `DEL` deletes it all the same.
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
// stage 2 needs for it; the lesson is above.
#[async_trait]
impl DistributedLock for ExpiringLock {
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

/// Stage 2 as the harness and the CLI see it.
pub const STAGE: StageEntry = StageEntry {
    description: DESCRIPTION,
    connect,
};

fn connect(setup: ClientSetup) -> ConnectFuture {
    Box::pin(async move {
        let lock: Box<dyn DistributedLock> = Box::new(ExpiringLock::connect(setup).await?);
        Ok(lock)
    })
}
