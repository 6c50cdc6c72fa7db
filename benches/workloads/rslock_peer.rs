//! `rslock`, the closest peer on crates.io, behind the course's contract, so
//! every workload runs it exactly as it runs the stages.
//!
//! Nothing of rslock's behaviour is changed: `acquire` is its own `lock`
//! (SET NX PX on every server at once, its own validity rule), retried by
//! rslock itself with its random delay; `release` is its own `unlock`
//! (EVALSHA compare-and-delete on every server).

use std::time::{Duration, Instant};

use async_trait::async_trait;
use lockcore::{Acquired, Description, DistributedLock, LockError, Release};
use redis::ErrorKind;
use rslock::{Lock, LockManager};

/// How rslock shows up in listings.
pub const DESCRIPTION: Description = Description {
    stage: 0,
    name: "rslock",
    title: "rslock 0.10 (Redlock; one node or five)",
    acquire_commands: "SET key random NX PX ttl on every server at once",
    release_commands: "EVALSHA compare-and-delete on every server",
    reentrant: false,
    nodes: 1,
    fault_points: &[],
    home: lockcore::Home::REDIS,
};

/// rslock's default number of tries per `lock` call.
const RSLOCK_TRIES: u32 = 3;

/// One rslock client of `urls`, locking `key` for `ttl`.
pub struct RslockPeer {
    manager: LockManager,
    key: Vec<u8>,
    ttl: Duration,
    retry_delay: Duration,
}

impl RslockPeer {
    /// A client that, while waiting, retries after a random delay below
    /// `retry_delay` (rslock's `set_retry`).
    pub fn new(urls: Vec<String>, key: &str, ttl: Duration, retry_delay: Duration) -> Self {
        Self {
            manager: LockManager::new(urls),
            key: key.as_bytes().to_vec(),
            ttl,
            retry_delay,
        }
    }

    async fn lock(&self, attempts: u32) -> Result<Option<Acquired>, LockError> {
        let mut manager = self.manager.clone();
        manager.set_retry(attempts, self.retry_delay);
        match manager.lock(self.key.as_slice(), self.ttl).await {
            Ok(lock) => {
                let mut held = Acquired::with_value(hex(&lock.val));
                held.validity = Some(Duration::from_millis(lock.validity_time as u64));
                Ok(Some(held))
            }
            Err(rslock::LockError::Unavailable | rslock::LockError::TtlExceeded) => Ok(None),
            Err(rslock::LockError::Redis(e)) => Err(LockError::Redis(e)),
            Err(other) => Err(LockError::Redis(redis::RedisError::from((
                ErrorKind::Io,
                "rslock",
                other.to_string(),
            )))),
        }
    }
}

#[async_trait]
impl DistributedLock for RslockPeer {
    fn describe(&self) -> Description {
        DESCRIPTION
    }

    async fn try_acquire(&self) -> Result<Option<Acquired>, LockError> {
        self.lock(1).await
    }

    /// rslock's own `acquire` loops on `lock` (three tries, a random delay
    /// below `retry_delay` between them) until it succeeds; this is the same
    /// loop, stopped once `wait` has passed.
    async fn acquire(&self, wait: Duration) -> Result<Option<Acquired>, LockError> {
        let deadline = Instant::now() + wait;
        loop {
            if let Some(held) = self.lock(RSLOCK_TRIES).await? {
                return Ok(Some(held));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
        }
    }

    /// rslock's unlock reports nothing: it is best effort on every server.
    async fn release(&self, held: &Acquired) -> Result<Release, LockError> {
        let lock = Lock {
            resource: self.key.clone(),
            val: unhex(&held.value),
            validity_time: 0,
            lock_manager: self.manager.clone(),
        };
        self.manager.unlock(&lock).await;
        Ok(Release::Deleted)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .filter_map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}
