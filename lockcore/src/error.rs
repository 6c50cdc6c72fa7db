//! The one error type of every stage.

use crate::Point;

/// What can go wrong when taking or giving back a lock.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Redis could not be reached, or answered with an error.
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    /// A test crashed this client at a fault point: it behaves as a dead
    /// process from here on and sends nothing more.
    #[error("crashed at fault point {0}")]
    Crashed(Point),
    /// An unlock by a client that does not hold the lock (Redisson throws
    /// `IllegalMonitorStateException` here).
    #[error("this client does not hold the lock, so it may not release it")]
    NotOwner,
    /// ZooKeeper (stage 9) could not be reached, or answered with an error.
    #[error("zookeeper: {0}")]
    ZooKeeper(String),
    /// etcd (stage 10) could not be reached, or answered with an error.
    #[error("etcd: {0}")]
    Etcd(String),
    /// A lock held by a holder process (a row that is a command) could not
    /// be driven: the process answered wrongly, late, or not at all. The
    /// text names the command and the line.
    #[error("holder process: {0}")]
    Holder(String),
    /// A lock that cannot take part in this story at all (a holder
    /// process answered `n/a`): the story is n/a for it, with this reason.
    #[error("n/a: {0}")]
    NotApplicable(&'static str),
    /// A setting no lock can honour.
    #[error("invalid configuration: {0}")]
    Config(String),
}
