//! A world for stage 9's stories: a real three-member ZooKeeper ensemble
//! for the lock, a Redis "database" node for the stock (never faulted),
//! the harness's history (told in its timeline), and its judge at the end.

#![allow(dead_code)] // each test file uses its own part

pub mod relay;

use std::time::Duration;

use harness::client::{Client, ClientFactory};
use harness::history::{History, Recorded, What};
use harness::holder::{HolderProcess, Launcher};
use harness::observe::Timeline;
use harness::scenario::Outcome;
use harness::server::ensemble::Ensemble;
use harness::server::zookeeper::ZkEnsemble;
use harness::server::{Backend, Node};
use harness::workload::{Database, Fencing};
use lockcore::{ClientSetup, FaultPoints, LockConfig};
use stage9::ZkLock;
use tokio::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard, Semaphore, SemaphorePermit};
use tokio::time::Instant;
use zookeeper_client::Client as ZkClient;

/// Sessions of two seconds: pings every ~670 ms, so a loaded machine does
/// not expire a live session by accident, and a story still takes seconds.
pub const SESSION: Duration = Duration::from_secs(2);

/// How long a rival waits: three session timeouts, so a session that does
/// expire always frees the lock well within it.
pub fn patience() -> Duration {
    SESSION * 3
}

/// Stories take turns on the machine: side by side as a rule, alone when
/// the story times an election. Each starts three JVMs; six stories at once
/// on two cores kept a leader election (0.4 s on a quiet machine) from
/// finishing within the two-second session, and client-A's session expired.
static TURNS: RwLock<()> = RwLock::const_new(());

/// How many stories run side by side: each world is three JVMs, and a
/// dozen worlds starting at once on two cores starve the sessions of the
/// ones already running.
static SIDE_BY_SIDE: Semaphore = Semaphore::const_new(3);

/// A story's turn, held until its world is gone.
enum Turn {
    Beside(RwLockReadGuard<'static, ()>, SemaphorePermit<'static>),
    Alone(RwLockWriteGuard<'static, ()>),
}

/// One story in progress.
pub struct World {
    pub ensemble: ZkEnsemble,
    pub db: Node,
    pub factory: ClientFactory,
    harness_db: Database,
    initial_stock: i64,
    /// Last, so that it is given back once the ensemble is stopped.
    _turn: Turn,
}

impl World {
    /// Starts the ensemble and the database, with `stock` items, the
    /// resource checking tokens as `fencing` says.
    pub async fn start(stock: i64, fencing: Fencing) -> World {
        let beside = TURNS.read().await;
        let room = SIDE_BY_SIDE.acquire().await.expect("never closed");
        Self::start_in(Turn::Beside(beside, room), stock, fencing).await
    }

    /// [`World::start`], with no other story running meanwhile: for a story
    /// whose margins are the ensemble's own timings (an election).
    pub async fn start_alone(stock: i64, fencing: Fencing) -> World {
        Self::start_in(Turn::Alone(TURNS.write().await), stock, fencing).await
    }

    async fn start_in(turn: Turn, stock: i64, fencing: Fencing) -> World {
        let ensemble = ZkEnsemble::start(3).await.unwrap_or_else(|e| panic!("{e}"));
        let backend = Backend::from_env().unwrap_or_else(|e| panic!("{e}"));
        let db = Node::start(&backend, "db", &[])
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let config = LockConfig {
            // A key of its own per story: stories do not share an ensemble,
            // but the name shows in the node paths of the timeline.
            ..LockConfig::with_ttl(SESSION)
        };
        let harness_db = Database::connect(
            &ClientSetup::new(vec![], "harness", config.clone()),
            &db.url(),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
        harness_db.reset(stock).await.unwrap();
        let factory = ClientFactory {
            stage: stage9::STAGE,
            lock_urls: ensemble.urls(),
            db_url: db.url(),
            config,
            history: History::new(),
            fencing,
            request_ids: Default::default(),
            holder_command: None,
        };
        factory.history.push(
            "harness",
            What::Setup {
                stage: "stage9".into(),
                ttl: SESSION,
                stock,
                lock_nodes: Vec::new(),
                fencing: fencing.label(),
                lock_key: factory.config.key.clone(),
            },
        );
        let world = World {
            ensemble,
            db,
            factory,
            harness_db,
            initial_stock: stock,
            _turn: turn,
        };
        world.narrate(format!(
            "stage9 on a 3-member ZooKeeper ensemble (data: {}), session timeout {}ms, \
             stock {stock}, resource fencing: {}",
            world.ensemble.storage(),
            SESSION.as_millis(),
            fencing.label()
        ));
        world
    }

    pub fn timeline(&self) -> Timeline {
        Timeline::of(&self.factory.history)
    }

    pub fn narrate(&self, text: impl Into<String>) {
        self.timeline().record("harness", text);
    }

    /// An in-process client.
    pub async fn client(&self, name: &str) -> Client {
        self.factory
            .client(name)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    /// A stage 9 lock of its own (its natural API, not the harness's
    /// client), on the members `urls` name, with `faults` as its hooks.
    pub async fn zk_lock_at(&self, name: &str, urls: Vec<String>, faults: FaultPoints) -> ZkLock {
        let setup = ClientSetup {
            urls,
            name: name.to_owned(),
            config: self.factory.config.clone(),
            faults,
            replies: None,
        };
        ZkLock::connect(setup)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    /// A stage 9 lock on the ensemble itself, with no hooks.
    pub async fn zk_lock(&self, name: &str) -> ZkLock {
        self.zk_lock_at(name, self.ensemble.urls(), FaultPoints::none())
            .await
    }

    /// Relays in front of the members, for faults to one client's link.
    pub async fn relays(&self) -> relay::Relays {
        relay::Relays::start(&self.ensemble.urls()).await
    }

    /// The lock's path in the ensemble: its queue lives under it.
    pub fn lock_path(&self) -> String {
        format!("{}/{}", stage9::ROOT, self.factory.config.key)
    }

    /// A plain ZooKeeper client of the ensemble, to look at the queue as an
    /// operator would.
    pub async fn observer(&self) -> ZkClient {
        ZkClient::connector()
            .with_session_timeout(SESSION * 5)
            .connect(&self.ensemble.connect_string())
            .await
            .unwrap()
    }

    /// A holder in a process of its own (this test binary again) that has
    /// taken the free lock.
    pub async fn holder_holding_the_lock(&self, name: &str) -> HolderProcess {
        let mut holder = self
            .factory
            .spawn_holder(&Launcher::this_test_binary(), name)
            .await
            .unwrap();
        assert!(
            holder.acquire(patience()).await.unwrap(),
            "{name} could not take a free lock"
        );
        holder
    }

    /// The judge's verdict on what the history and the database recorded
    /// (ZooKeeper has no MONITOR: the clients' side and the stock judge).
    pub async fn finish(self) -> Outcome {
        let placed = self.harness_db.order_entries().await.unwrap();
        let orders = i64::try_from(placed.len()).unwrap();
        let stock_left = self.harness_db.read_stock(None).await.unwrap();
        let history = self.factory.history.clone();
        history.push(
            "harness",
            What::Final {
                orders,
                stock_left,
                placed,
                refused: Vec::new(),
            },
        );
        let facts = [("orders", orders), ("initial_stock", self.initial_stock)];
        let outcome = Outcome::judged(Recorded {
            history,
            facts: facts.into(),
        });
        println!("{}", outcome.timeline.render());
        outcome
    }
}

/// Waits, on the ensemble's own watch, until the lock's queue (`path`'s
/// children, sorted) satisfies `wanted`; panics after `within`, saying
/// what the queue was.
pub async fn queue_until(
    observer: &ZkClient,
    path: &str,
    within: Duration,
    wanted: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    let deadline = Instant::now() + within;
    loop {
        let (mut queue, _, watch) = observer.get_and_watch_children(path).await.unwrap();
        queue.sort_by_key(|node| node.rsplit_once("-lock-").map(|(_, n)| n.to_owned()));
        if wanted(&queue) {
            return queue;
        }
        if tokio::time::timeout_at(deadline, watch.changed())
            .await
            .is_err()
        {
            panic!("the queue was still {queue:?} after {within:?}");
        }
    }
}
