//! The harness's error type.

use lockcore::LockError;

/// What can stop a scenario from running (as opposed to what it observes).
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// No way to get a Redis server on this machine.
    #[error("{0}")]
    NoRedis(String),
    /// No way to start ZooKeeper (stage 9) here: no Java, or no server jar.
    #[error("{0}")]
    NoZooKeeper(String),
    /// No way to start etcd (stage 10) here: no `etcd` binary.
    #[error("{0}")]
    NoEtcd(String),
    /// A server (redis-server, a ZooKeeper or etcd member) would not
    /// start or answer.
    #[error("a server did not start or answer: {0}")]
    ServerStart(String),
    /// The Docker engine refused or failed an operation.
    #[error("docker: {0}")]
    Docker(String),
    /// A Redis command from the harness itself failed.
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    /// The lock under test failed in a way the scenario did not plan for.
    #[error("lock: {0}")]
    Lock(#[from] LockError),
    /// A holder process misbehaved.
    #[error("holder process: {0}")]
    Holder(String),
    /// Operating-system trouble (spawning, signals, files).
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    /// The story cannot be told on these servers (it faults a node of a
    /// reader's own server, say): the matrix shows `n/a` with the reason.
    #[error("n/a: {0}")]
    NotApplicable(&'static str),
    /// A scenario was asked of a stage or topology it cannot run on.
    #[error("{0}")]
    Unsupported(String),
    /// A server's own record could not be read: the `MONITOR` connection
    /// failed, closed or fell silent (the server itself may be fine).
    #[error("MONITOR: {0}")]
    Monitor(String),
    /// The servers did not reach the shape the story needs in time (a
    /// replica in sync, Sentinels that know each other, a promotion).
    #[error("topology: {0}")]
    Topology(String),
    /// The story's own premise did not happen (a free lock could not be
    /// taken, a fault point was never reached): the run says nothing about
    /// the lock.
    #[error("the story could not be told: {0}")]
    StoryNotTold(String),
    /// A node index past the run's nodes: a bug in the scenario.
    #[error("there is no lock node {0}")]
    NoNode(usize),
    /// The harness broke one of its own rules (a story run without the
    /// servers it starts, an answer its own resource never gives): a bug
    /// in the harness, not a finding about the lock.
    #[error("harness bug: {0}")]
    Bug(String),
    /// The explorer gave up: trial after trial could not even start.
    #[error("{tried} trials in a row could not run; the last: {last}")]
    TrialsFailed {
        /// How many in a row.
        tried: u32,
        /// Why the last one could not.
        last: Box<HarnessError>,
    },
}

/// Results in the harness.
pub type Result<T, E = HarnessError> = std::result::Result<T, E>;
