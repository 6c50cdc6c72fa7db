//! The contract every stage of the course implements.
//!
//! Each stage crate (`stage1` … `stage8`) is a lesson with its own natural API
//! (`try_lock`, `unlock`, `lock`). To run the *same* scenario against *every*
//! stage, the harness needs one shape to drive them all; that shape lives here:
//!
//! - [`DistributedLock`]: try once, acquire with a wait limit, release and say
//!   what was deleted, describe yourself;
//! - [`FaultPoints`]: the named places where a stage lets a test pause it or
//!   crash it, so that races from the articles happen on purpose, every time;
//! - [`LockConfig`]: TTL, retry interval, watchdog timeout, drift factor, with
//!   the articles' defaults;
//! - [`LockError`]: the one error type.
//!
//! This crate starts no Redis server and knows nothing of the harness.

mod config;
mod connect;
mod contract;
mod error;
mod fault;

pub use config::{LockConfig, MAX_EXPIRY, check_expiry, deadline_after};
pub use connect::{
    CLUSTER_SCHEME, Connection, Heard, ReplyLog, SENTINEL_SCHEME, SeenReply, cluster_nodes,
    cluster_url, connect, connect_blocking, connect_subscriber, connect_with_log, resolve,
    sentinel_url,
};
pub use contract::{
    Acquired, ClientSetup, ConnectFuture, Description, DistributedLock, Home, LostSignal, Release,
    StageEntry, Store,
};
pub use error::LockError;
pub use fault::{FaultPoints, Hook, Point, Reaction};
