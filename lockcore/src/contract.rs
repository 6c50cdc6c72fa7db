//! The shape every stage takes so the harness can drive any of them.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::watch;

use crate::{Connection, FaultPoints, LockConfig, LockError, Point, ReplyLog};

/// What a stage says about itself, for listings, timelines and the book.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Description {
    /// 0 to 10 (a lock library's row: a number of its own).
    pub stage: u8,
    /// The package name: `stage1` … `stage10`.
    pub name: &'static str,
    /// One line: what this stage adds.
    pub title: &'static str,
    /// The Redis commands sent to take the lock.
    pub acquire_commands: &'static str,
    /// The Redis commands sent to give it back.
    pub release_commands: &'static str,
    /// Whether the same client may take the lock again while holding it.
    pub reentrant: bool,
    /// How many independent Redis masters the lock needs (Redlock: 5).
    pub nodes: usize,
    /// The fault points the stage's own code reaches, in order.
    pub fault_points: &'static [Point],
    /// Where the lock keeps its state, and what it makes of the key and
    /// the TTL it is given.
    pub home: Home,
}

/// The kind of server a lock keeps its state in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Store {
    /// Redis nodes: one, or `nodes` independent masters.
    Redis,
    /// A ZooKeeper ensemble (stage 9, kazoo).
    ZooKeeper,
    /// An etcd cluster (stage 10).
    Etcd,
}

/// Where a lock lives and how it names and times what it keeps there.
///
/// The stages keep their lock at exactly the key they are given, for
/// exactly the TTL. A library we only call may not: pottery keeps its
/// Redlock at `redlock:<key>`, python-redis-lock takes whole seconds. The
/// harness reads these to watch the right key and to run a story at a TTL
/// the lock can take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Home {
    /// The servers the lock lives on.
    pub store: Store,
    /// What the lock puts before the key it is given, on the servers.
    pub key_prefix: &'static str,
    /// The shortest TTL the lock can be given (zero: any); a story with a
    /// shorter one runs at this one, its other times scaled with it.
    pub shortest_ttl: Duration,
}

impl Home {
    /// A lock on Redis that keeps its key as given, for any TTL.
    pub const REDIS: Home = Home {
        store: Store::Redis,
        key_prefix: "",
        shortest_ttl: Duration::ZERO,
    };
    /// A lock in a ZooKeeper ensemble.
    pub const ZOOKEEPER: Home = Home {
        store: Store::ZooKeeper,
        ..Home::REDIS
    };
    /// A lock in an etcd cluster.
    pub const ETCD: Home = Home {
        store: Store::Etcd,
        ..Home::REDIS
    };

    /// Whether the lock lives in a consensus store (ZooKeeper, etcd).
    pub fn on_consensus_store(&self) -> bool {
        self.store != Store::Redis
    }
}

/// Proof of a successful acquisition, handed back on release.
#[derive(Debug, Clone)]
pub struct Acquired {
    /// The value written under the lock key: `"1"` in the early stages, a
    /// unique id from stage 4 on.
    pub value: String,
    /// Stage 8: the fencing token to show the protected resource.
    pub fencing_token: Option<u64>,
    /// Stage 7: how long the lock can be trusted, counted from acquisition.
    pub validity: Option<Duration>,
    /// Stage 6: fires when a renewal finds the lock gone.
    pub lost: Option<LostSignal>,
}

impl Acquired {
    /// An acquisition that carries only the value written.
    pub fn with_value(value: impl Into<String>) -> Self {
        Self {
            value: value.into(),
            fencing_token: None,
            validity: None,
            lost: None,
        }
    }
}

/// Tells a holder that its lock is gone (a renewal found the key missing or
/// someone else's, or could not reach Redis), so business code can stop.
#[derive(Debug, Clone)]
pub struct LostSignal(watch::Receiver<bool>);

impl LostSignal {
    /// A signal and the sender that fires it.
    pub fn new() -> (watch::Sender<bool>, Self) {
        let (tx, rx) = watch::channel(false);
        (tx, Self(rx))
    }

    /// Whether the lock has been lost.
    pub fn is_lost(&self) -> bool {
        *self.0.borrow()
    }

    /// Waits until the lock is lost (forever, if it never is).
    pub async fn lost(&mut self) {
        if self.0.wait_for(|lost| *lost).await.is_err() {
            // The sender is gone without firing: the lock was released normally.
            std::future::pending::<()>().await;
        }
    }
}

/// What a release did on the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    /// The lock key was deleted. Stages that compare values know the key was
    /// theirs; stages 1–3 only know that *a* key went.
    Deleted,
    /// Nothing was deleted: the key had expired or belonged to someone else.
    NothingDeleted,
    /// A reentrant lock gave back one hold and is still held this many times.
    StillHeld(u32),
    /// Stage 7: fewer than a majority of masters confirmed the delete, and
    /// some could not be reached (no answer in time, or an error). Those may
    /// still hold the key until it expires, so nobody can say whether the
    /// lock was still ours: unlike [`Release::NothingDeleted`], this is no
    /// sign that it had slipped away.
    Unconfirmed {
        /// Masters where our key was still there, and is now deleted.
        deleted: u32,
        /// Masters that answered that our key was not there.
        not_ours: u32,
        /// Masters that could not be reached.
        unreachable: u32,
    },
}

/// The contract: what the harness needs from every stage.
#[async_trait]
pub trait DistributedLock: Send + Sync {
    /// Which stage this is.
    fn describe(&self) -> Description;

    /// Tries once. `None` when someone else holds the lock.
    async fn try_acquire(&self) -> Result<Option<Acquired>, LockError>;

    /// Tries until it succeeds or `wait` has passed (`None`).
    async fn acquire(&self, wait: Duration) -> Result<Option<Acquired>, LockError>;

    /// Gives the lock back and reports what was deleted.
    async fn release(&self, held: &Acquired) -> Result<Release, LockError>;
}

/// Everything a stage needs to make one client.
#[derive(Clone)]
pub struct ClientSetup {
    /// Redis URLs: one, or one per independent master (Redlock).
    pub urls: Vec<String>,
    /// The client's name, set with `CLIENT SETNAME`: `client-A`, …
    pub name: String,
    /// TTL and friends.
    pub config: LockConfig,
    /// Where a test may pause or crash this client.
    pub faults: FaultPoints,
    /// Where a test watches the client's replies (timelines); `None` in
    /// production.
    pub replies: Option<ReplyLog>,
}

impl std::fmt::Debug for ClientSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientSetup")
            .field("urls", &self.urls)
            .field("name", &self.name)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl ClientSetup {
    /// A client called `name` of the lock on `urls`, with no test hooks.
    pub fn new(urls: Vec<String>, name: &str, config: LockConfig) -> Self {
        Self {
            urls,
            name: name.to_owned(),
            config,
            faults: FaultPoints::none(),
            replies: None,
        }
    }

    /// Opens this client's connection to `url`: named, and watched when a
    /// test asked to.
    pub async fn connect(&self, url: &str) -> Result<Connection, LockError> {
        crate::connect_with_log(url, &self.name, self.replies.clone()).await
    }
}

/// The future a stage's `connect` returns.
pub type ConnectFuture =
    Pin<Box<dyn Future<Output = Result<Box<dyn DistributedLock>, LockError>> + Send>>;

/// A stage as the harness and the CLI see it: its description and how to
/// make a client of it.
#[derive(Clone, Copy)]
pub struct StageEntry {
    /// What the stage is.
    pub description: Description,
    /// Makes one client of this stage.
    pub connect: fn(ClientSetup) -> ConnectFuture,
}

impl std::fmt::Debug for StageEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("StageEntry")
            .field(&self.description.name)
            .finish()
    }
}
