//! Scenarios: one fault story each, runnable against any stage.
//!
//! A scenario builds its topology on real Redis servers, drives clients of
//! the stage under test through the story (synchronised on fault points and
//! Redis events, never on luck), and returns what it recorded
//! ([`Recorded`]: the history, and the facts it measured). It never judges:
//! [`Scenario::play`] hands the record to [`crate::check`], whose
//! [`Outcome`] is the verdict beside the record.

mod arrival_order;
mod business_error;
mod clock_jump;
mod cluster_failover;
mod cluster_partition;
mod contention;
mod crash_before_expire;
mod dead_waiter;
mod duplicate_request;
pub mod ensemble;
mod eviction;
mod failover;
mod gc_pause;
mod get_del_race;
mod killed_holder;
mod leader_killed;
mod minority_partition;
mod network_delay;
mod reentrant;
mod release_before_commit;
mod restart_without_persistence;
mod run;
mod sentinel_failover;
mod slow_business;
mod split_brain;
mod stale_write_first;
mod steps;
mod stop;

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lockcore::{Description, StageEntry};

pub use restart_without_persistence::run_with_restart_delay;
pub use run::Run;
pub use steps::client_name;

pub use crate::check::Outcome;
use crate::error::Result;
pub use crate::history::Recorded;
use crate::holder::Launcher;
use crate::observe::Timeline;
use crate::server::Backend;
use crate::server::shared_zookeeper::SharedZooKeeper;
use crate::workload::{Fencing, ReleaseOrder, RequestIds};

/// The future a scenario returns.
pub type ScenarioFuture = Pin<Box<dyn Future<Output = Result<Recorded>> + Send>>;

/// One fault story.
#[derive(Clone, Copy)]
pub struct Scenario {
    /// `killed-holder`, `slow-business`…: the CLI's and the matrix's name.
    pub name: &'static str,
    /// One line: what happens.
    pub title: &'static str,
    /// `Some(reason)` when the story makes no sense for a stage.
    pub not_applicable: fn(&Description) -> Option<&'static str>,
    /// Tells the story against a stage, and returns what was recorded.
    pub record: fn(StageEntry, ScenarioEnv) -> ScenarioFuture,
}

impl Scenario {
    /// Tells the story against `stage` and hands the record to the judge
    /// ([`Outcome::judged`]): the one way to a verdict.
    pub async fn play(&self, stage: StageEntry, env: ScenarioEnv) -> Result<Outcome> {
        (self.record)(stage, env).await.map(Outcome::judged)
    }
}

impl std::fmt::Debug for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Scenario").field(&self.name).finish()
    }
}

/// The stories every stage can be told.
fn always(_: &Description) -> Option<&'static str> {
    None
}

/// An entry of [`SCENARIOS`]: the story `$story::run` tells (given
/// `$variant` where one story is told several ways), for the stages
/// `$story::not_applicable` leaves.
macro_rules! story {
    ($name:literal, $story:ident $(($variant:expr))?, $title:literal) => {
        Scenario {
            name: $name,
            title: $title,
            not_applicable: $story::not_applicable,
            record: |stage, env| Box::pin($story::run(stage, env $(, $variant)?)),
        }
    };
}

/// Every scenario, in the matrix's column order.
pub const SCENARIOS: &[Scenario] = &[
    story!("contention", contention, "8 clients buy 10 items at once"),
    story!(
        "killed-holder",
        killed_holder,
        "the holder process is killed with kill -9 inside the critical section"
    ),
    story!(
        "crash-before-expire",
        crash_before_expire,
        "the holder crashes right after its first lock command"
    ),
    story!(
        "slow-business",
        slow_business,
        "the holder keeps working while a rival waits up to three TTLs for the lock"
    ),
    story!(
        "get-del-race",
        get_del_race,
        "the holder's release stalls (between GET and DEL where there is one) while the lock expires"
    ),
    story!(
        "gc-pause",
        gc_pause,
        "the holder process is frozen (SIGSTOP) while a rival waits up to three TTLs, then thawed"
    ),
    story!(
        "failover",
        failover,
        "the master dies before the lock reaches its replica; the replica is promoted"
    ),
    story!(
        "restart-without-persistence",
        restart_without_persistence,
        "a node that granted the lock restarts empty"
    ),
    story!(
        "clock-jump",
        clock_jump,
        "a node's clock jumps forward, so the lock expires early there"
    ),
    story!(
        "reentrant",
        reentrant,
        "the holder asks for the lock it already holds"
    ),
    story!(
        "network-delay",
        network_delay,
        "replies are delayed until the lock's validity is used up"
    ),
    story!(
        "stale-write-first",
        stale_write_first,
        "the holder's business outlives the lock; the new holder reads, then the stale holder writes first"
    ),
    story!(
        "business-error",
        business_error,
        "the business fails inside the critical section and the release is skipped"
    ),
    story!(
        "sentinel-failover",
        sentinel_failover(sentinel_failover::Confirm::Nothing),
        "the master dies before its replicas have the lock; the Sentinels promote one"
    ),
    story!(
        "split-brain",
        split_brain(split_brain::Mitigation::None),
        "a partition cuts the master off from its replicas and Sentinels, but not from client-A"
    ),
    story!(
        "split-brain-min-replicas",
        split_brain(split_brain::Mitigation::MinReplicas),
        "the same partition, with min-replicas-to-write 1 and min-replicas-max-lag 1 on the master"
    ),
    story!(
        "sentinel-failover-wait",
        sentinel_failover(sentinel_failover::Confirm::Wait),
        "the Sentinel failover, with client-A confirming its lock by WAIT 1 (as Redisson does)"
    ),
    story!(
        "sentinel-failover-wait-other-replica",
        sentinel_failover(sentinel_failover::Confirm::WaitOtherReplicaPromoted),
        "WAIT 1 is answered by one replica, which dies with the master; the other is promoted"
    ),
    story!(
        "dead-waiter",
        dead_waiter,
        "a waiter is killed with kill -9 while it waits; the holder releases; how long does the next waiter wait?"
    ),
    story!(
        "leader-killed",
        leader_killed,
        "the consensus store's leader is killed with kill -9 while client-A holds the lock"
    ),
    story!(
        "minority-partition",
        minority_partition,
        "a partition leaves client-A with the leader alone, a minority; client-B asks the majority"
    ),
    story!(
        "cluster-failover",
        cluster_failover(cluster_failover::Confirm::Nothing),
        "the master of the lock's slot dies before its replica has the lock; the cluster promotes the replica"
    ),
    story!(
        "cluster-failover-wait",
        cluster_failover(cluster_failover::Confirm::Wait),
        "the cluster failover, with client-A confirming its lock by WAIT 1 on the slot's master"
    ),
    story!(
        "cluster-partition",
        cluster_partition,
        "the master of the lock's slot is cut off from the other nodes, not from client-A; cluster-node-timeout decides"
    ),
    story!(
        "duplicate-request",
        duplicate_request,
        "client-A is slow to charge request-1; the gateway times out and retries request-1 at client-B"
    ),
    story!(
        "arrival-order",
        arrival_order,
        "four waiters line up one at a time; each client that releases asks again at once"
    ),
    story!(
        "release-before-commit",
        release_before_commit,
        "client-A releases the lock inside its transaction, before the commit"
    ),
    story!(
        "eviction",
        eviction,
        "the lock node doubles as a cache (maxmemory, volatile-lru) and fills up while client-A holds"
    ),
];

/// Finds a scenario by name.
pub fn find(name: &str) -> Option<&'static Scenario> {
    SCENARIOS.iter().find(|s| s.name == name)
}

/// Times every scenario uses. Each fault is at least 3x the time it must
/// outlast, so no result depends on scheduling luck.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// The lock's TTL (and stage 6's watchdog timeout).
    pub ttl: Duration,
    /// How long one purchase thinks between reading and writing the stock.
    pub business: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Self {
            ttl: Duration::from_millis(300),
            business: Duration::from_millis(20),
        }
    }
}

impl Timing {
    /// How long a client waits before the run declares a deadlock: three
    /// TTLs, so a lock that does expire is always taken well within it.
    pub fn patience(&self) -> Duration {
        self.ttl * 3
    }

    /// The times a run of `stage` uses: these, with the TTL raised to the
    /// shortest the lock can take (python-redis-lock's whole second); on a
    /// consensus store, the session timeout or the lease's TTL, at least
    /// [`ensemble::SHORTEST_SESSION`]. The stories time their steps from
    /// the TTL, so their other times scale with it.
    pub fn for_stage(self, stage: &Description) -> Self {
        let shortest = if stage.home.on_consensus_store() {
            stage.home.shortest_ttl.max(ensemble::SHORTEST_SESSION)
        } else {
            stage.home.shortest_ttl
        };
        Self {
            ttl: self.ttl.max(shortest),
            ..self
        }
    }
}

/// Where and how scenarios run.
#[derive(Debug, Clone)]
pub struct ScenarioEnv {
    /// Where Redis nodes run.
    pub backend: Backend,
    /// How to start a holder process.
    pub launcher: Launcher,
    /// TTLs and business time.
    pub timing: Timing,
    /// How stage 8's resource checks fencing tokens.
    pub fencing: Fencing,
    /// Whether the resource de-duplicates purchases by request id
    /// (`--request-ids`); the matrix runs without.
    pub request_ids: RequestIds,
    /// When a purchase made in a transaction releases the lock, against
    /// its commit (`--release-after-commit`); only the
    /// `release-before-commit` story makes its purchase in one.
    pub release_order: ReleaseOrder,
    /// Keeps the timeline of the run started last, so that a story that
    /// stops on an error still shows how far it got.
    pub recorder: FlightRecorder,
    /// A ZooKeeper ensemble that stage 9's run takes a chroot of instead
    /// of starting its own: the matrix shares one among the cells whose
    /// story leaves the ensemble alone. `None`: the run starts its own.
    pub shared_zookeeper: Option<Arc<SharedZooKeeper>>,
    /// `Some` on a row that is a command (`--holder-cmd`, a library's
    /// adapter): every client of the story is a holder process running it
    /// ([`crate::holder::remote`]), and so is every holder the story kills
    /// or freezes (`launcher` is the same command).
    pub holder_command: Option<Launcher>,
}

/// The timeline of the run a scenario started last, held outside the run:
/// when the story fails half-way, the run is gone but what it recorded
/// until then is not. Clones share it.
#[derive(Debug, Clone, Default)]
pub struct FlightRecorder(Arc<Mutex<Option<Timeline>>>);

impl FlightRecorder {
    /// A recorder of its own (an environment's clones share theirs).
    pub fn new() -> Self {
        Self::default()
    }

    /// What the run started last recorded so far, if a run started.
    pub fn timeline(&self) -> Option<Timeline> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub(crate) fn keep(&self, timeline: &Timeline) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(timeline.clone());
    }
}

impl ScenarioEnv {
    /// The same environment for a new run: on Docker, a network of its own.
    pub fn for_new_run(self) -> Self {
        Self {
            backend: self.backend.for_new_run(),
            ..self
        }
    }

    /// The one way to make an environment: nodes on `backend`, holder
    /// processes started by `launcher`, stage 8's resource checking tokens
    /// as `fencing`, the default timing.
    pub fn new(backend: Backend, launcher: Launcher, fencing: Fencing) -> Self {
        Self {
            backend,
            launcher,
            timing: Timing::default(),
            fencing,
            request_ids: RequestIds::default(),
            release_order: ReleaseOrder::default(),
            recorder: FlightRecorder::new(),
            shared_zookeeper: None,
            holder_command: None,
        }
    }

    /// The same environment for a row that is `command`: every client, and
    /// every holder process, runs it.
    #[must_use]
    pub fn with_holder_command(self, command: Launcher) -> Self {
        Self {
            launcher: command.clone(),
            holder_command: Some(command),
            ..self
        }
    }

    /// The same environment, with the resource de-duplicating request ids
    /// as `request_ids` says.
    #[must_use]
    pub fn with_request_ids(self, request_ids: RequestIds) -> Self {
        Self {
            request_ids,
            ..self
        }
    }

    /// The same environment, with a transaction's purchase releasing the
    /// lock as `release_order` says.
    #[must_use]
    pub fn with_release_order(self, release_order: ReleaseOrder) -> Self {
        Self {
            release_order,
            ..self
        }
    }

    /// [`ScenarioEnv::new`] on the environment's backend
    /// ([`Backend::from_env`]), with the fixed resource.
    pub fn from_env(launcher: Launcher) -> Result<Self> {
        Ok(Self::new(
            Backend::from_env()?,
            launcher,
            Fencing::default(),
        ))
    }
}

/// Runs scenario `name` against `stage` from a test: holders are this test
/// binary's `holder_process` entry point. Panics, with the reason, when the
/// scenario cannot run at all (no Redis, unknown name).
pub async fn run_in_test(name: &str, stage: StageEntry) -> Outcome {
    run_in_test_with(name, stage, |_| {}).await
}

/// Like [`run_in_test`], in an environment `adjust` changes first (for
/// example stage 8's resource: `env.fencing = Fencing::WriteOnly`).
pub async fn run_in_test_with(
    name: &str,
    stage: StageEntry,
    adjust: impl FnOnce(&mut ScenarioEnv),
) -> Outcome {
    let scenario = find(name).unwrap_or_else(|| panic!("no scenario named `{name}`"));
    let mut env =
        ScenarioEnv::from_env(Launcher::this_test_binary()).unwrap_or_else(|e| panic!("{e}"));
    adjust(&mut env);
    match scenario.play(stage, env).await {
        Ok(outcome) => {
            println!("{}", outcome.timeline.render());
            outcome
        }
        Err(e) => panic!(
            "scenario {name} on {} could not run: {e}",
            stage.description.name
        ),
    }
}
