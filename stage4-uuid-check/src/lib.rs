//! # Stage 4 — a unique value per acquisition; `GET`, compare, `DEL`
//!
//! Up to stage 3 every holder writes the same value, so a release cannot tell
//! its own lock from the next holder's: when the business outlives the TTL,
//! the key expires, someone else takes the lock, and the late holder's `DEL`
//! removes *their* key. Stage 4 gives every acquisition a value nobody else
//! will ever write, a random UUID, and makes the release look before it
//! deletes: `GET` the key, compare it with our UUID, and `DEL` only if they
//! match.
//!
//! What it fixes: a holder whose lock has already expired and been taken by
//! someone else no longer deletes that lock in the ordinary case. Its `GET`
//! sees a foreign UUID, and it goes away without sending `DEL`
//! (`tests/slow_business.rs`).
//!
//! What it still breaks: `GET`, compare and `DEL` are three steps, and two of
//! them are separate commands. Between the `GET` that matched and the `DEL`,
//! other clients' commands run. If our key expires in that window (a GC
//! pause, a slow network, a scheduler that looks away) and someone else takes
//! the lock, the `DEL` that follows removes their lock, because `DEL` does
//! not look at values. The window is small, so in production this is rare;
//! the harness pauses the client right there and makes it happen every time
//! (`tests/get_del_race.rs`). And nothing here helps a holder whose business
//! outlives its TTL: it keeps working while the next holder works too.
//! Stage 5 closes the `GET`/`DEL` window with a Lua script.

use std::time::Duration;

use async_trait::async_trait;
use lockcore::{
    Acquired, ClientSetup, ConnectFuture, Connection, Description, DistributedLock, FaultPoints,
    LockConfig, LockError, Point, Release, StageEntry,
};
use tokio::time::{Instant, sleep};
use uuid::Uuid;

/// What this stage is, for listings and the harness.
pub const DESCRIPTION: Description = Description {
    stage: 4,
    name: "stage4",
    title: "a unique value per acquisition; GET, compare, DEL",
    acquire_commands: "SET key <uuid> NX PX ttl",
    release_commands: "GET key, compare, DEL key",
    reentrant: false,
    nodes: 1,
    fault_points: &[Point::AfterAcquire, Point::BetweenGetAndDel],
    home: lockcore::Home::REDIS,
};

/// A lock whose value says which acquisition took it.
pub struct UuidLock {
    conn: Connection,
    config: LockConfig,
    faults: FaultPoints,
}

impl UuidLock {
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
    /// Tries once to take the lock. On success, returns the token that was
    /// written under the key: keep it, it is the only way to release.
    pub async fn try_lock(&self) -> Result<Option<String>, LockError> {
        let token = new_token();
        Ok(self.set_if_absent(&token).await?.then_some(token))
    }

    /// Writes `token` under the key if nobody holds the lock, with the TTL.
    async fn set_if_absent(&self, token: &str) -> Result<bool, LockError> {
        // Stage 3's atomic SET, with our token instead of "1". The reply is
        // OK when the key was written, nil when someone holds it.
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
    /// Gives the lock back if it is still ours. `true` when our `DEL`
    /// removed a key.
    pub async fn unlock(&self, token: &str) -> Result<bool, LockError> {
        let mut conn = self.conn.clone();
        let current: Option<String> = redis::cmd("GET")
            .arg(&self.config.key)
            .query_async(&mut conn)
            .await?;
        if current.as_deref() != Some(token) {
            // Expired, or already someone else's: not ours to delete.
            return Ok(false);
        }
        // The key was ours when GET ran. Nothing keeps it ours now: it can
        // expire, and another client can take the lock, before DEL arrives.
        self.faults.reached(Point::BetweenGetAndDel).await?;
        // DEL does not compare. Whatever key is there now, it goes.
        let deleted: u32 = redis::cmd("DEL")
            .arg(&self.config.key)
            .query_async(&mut conn)
            .await?;
        Ok(deleted == 1)
    }
    // ANCHOR_END: unlock
}

// ANCHOR: token
/// A value nobody else will ever write: a random (version 4) UUID.
fn new_token() -> String {
    // A fresh UUID for every acquisition: not one per client, so that
    // even the same client never mistakes an old acquisition for a new
    // one.
    Uuid::new_v4().to_string()
}
// ANCHOR_END: token

// The harness drives every stage through one contract. This adapter is all
// stage 4 needs for it; the lesson is above.
#[async_trait]
impl DistributedLock for UuidLock {
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

/// Stage 4 as the harness and the CLI see it.
pub const STAGE: StageEntry = StageEntry {
    description: DESCRIPTION,
    connect,
};

fn connect(setup: ClientSetup) -> ConnectFuture {
    Box::pin(async move {
        let lock: Box<dyn DistributedLock> = Box::new(UuidLock::connect(setup).await?);
        Ok(lock)
    })
}
