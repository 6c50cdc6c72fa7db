//! The scaffolding every scenario shares: nodes, watchers, the history, and
//! the final reckoning. A run starts its lock nodes on a topology
//! ([`crate::topology`]), keeps and watches them, and lends them to the
//! faults ([`LockNodes`]).

use std::collections::BTreeMap;
use std::time::Duration;

use lockcore::{Acquired, ClientSetup, Description, LockConfig, StageEntry};

use super::{Outcome, Recorded, ScenarioEnv};
use crate::client::{Client, ClientFactory};
use crate::error::{HarnessError, Result};
use crate::fault::link::ReplicationLink;
use crate::fault::node::{self, LockNodes, Proxies};
use crate::history::{History, What};
use crate::holder::HolderProcess;
use crate::observe::{NodeWatcher, Timeline};
use crate::server::ensemble::Ensemble;
use crate::server::{Node, external};
use crate::topology::cluster::ClusterTopology;
use crate::topology::replicated::Replicated;
use crate::topology::sentinel::{SentinelTopology, Wiring};
use crate::topology::{self, redlock};
use crate::workload::Database;

/// One scenario run in progress.
pub struct Run {
    /// The stage under test.
    pub stage: StageEntry,
    /// Where and how.
    pub env: ScenarioEnv,
    /// The lock's nodes: one, or one per Redlock master.
    pub nodes: Vec<Node>,
    /// The database node, never faulted (taken only when the run is
    /// dropped).
    db: Option<Node>,
    /// Makes clients of the stage against these nodes.
    pub factory: ClientFactory,
    /// The factory's history told in words.
    timeline: Timeline,
    /// Numbers the scenario measured.
    pub facts: BTreeMap<&'static str, i64>,
    harness_db: Database,
    /// `watchers[i]` watches `nodes[i]`; the last one, the database. On a
    /// reader's server, `watchers[0]` watches it, lock and database at once.
    watchers: Vec<Option<NodeWatcher>>,
    /// On a reader's own server: deletes the run's keys when the run ends.
    _cleanup: Option<KeyCleanup>,
    /// Stages 9 and 10's lock: a ZooKeeper ensemble or an etcd cluster
    /// instead of `nodes`.
    pub ensemble: Option<Box<dyn Ensemble>>,
    /// The lock's key on the servers: the key clients are given, after
    /// whatever the lock puts before it (pottery's `redlock:`).
    lock_key: String,
}

/// Deletes every key under `prefix` on the server at `url` when dropped,
/// however the run ends.
struct KeyCleanup {
    url: String,
    prefix: String,
}

impl Drop for KeyCleanup {
    fn drop(&mut self) {
        // The run's keys, and those that carry a run key as their hash tag
        // (stage 8's `{lock:stock}:fencing`).
        let url = self.url.clone();
        let patterns = [format!("{}*", self.prefix), format!("{{{}*", self.prefix)];
        // Its own thread and runtime: a destructor cannot await.
        let _ = std::thread::spawn(move || -> Result<()> {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            runtime.block_on(async move {
                let mut conn = lockcore::connect(&url, "harness-cleanup").await?;
                for pattern in &patterns {
                    let keys: Vec<String> = {
                        let mut iter: redis::AsyncIter<String> = redis::cmd("SCAN")
                            .cursor_arg(0)
                            .arg("MATCH")
                            .arg(pattern)
                            .clone()
                            .iter_async(&mut conn)
                            .await?;
                        let mut keys = Vec::new();
                        while let Some(key) = futures_util::StreamExt::next(&mut iter).await {
                            keys.push(key?);
                        }
                        keys
                    };
                    if !keys.is_empty() {
                        redis::cmd("DEL")
                            .arg(&keys)
                            .query_async::<()>(&mut conn)
                            .await?;
                    }
                }
                Ok(())
            })
        })
        .join();
    }
}

/// The TTL of a [`Run::rival`]'s locks: ten times the usual 300 ms, longer
/// than any story's steps take on a loaded machine.
pub const RIVAL_TTL: Duration = Duration::from_secs(3);

/// The least watchdog timeout of a [`Run::living_holder`].
pub const LIVING_WATCHDOG: Duration = Duration::from_secs(1);

impl Run {
    /// Starts the database node and as many lock nodes as the stage needs,
    /// watched into a fresh timeline, with `stock` items for sale.
    pub async fn start(stage: StageEntry, env: ScenarioEnv, stock: i64) -> Result<Self> {
        let env = env.for_new_run();
        if super::ensemble::on_consensus_store(&stage.description) {
            return super::ensemble::start_run(stage, env, stock).await;
        }
        let backend = env.backend.clone();
        let nodes = async { Ok(((), redlock::start(&backend, stage.description.nodes).await?)) };
        Ok(Self::start_beside(stage, env, stock, nodes).await?.0)
    }

    /// Like [`Run::start`], on a master and one replica of it
    /// ([`Replicated`]): `nodes[0]` (`master`) and `nodes[1]` (`replica`),
    /// in sync. Clients of the stage talk to the master. Keep the link for
    /// as long as the run.
    pub(crate) async fn start_replicated(
        stage: StageEntry,
        env: ScenarioEnv,
        stock: i64,
    ) -> Result<(Self, ReplicationLink)> {
        one_lock_node(&stage.description, "a master and its replica")?;
        let env = env.for_new_run();
        let backend = env.backend.clone();
        let nodes = async {
            let Replicated {
                master,
                replica,
                link,
            } = Replicated::start(&backend).await?;
            Ok((link, vec![master, replica]))
        };
        let (run, link) = Self::start_beside(stage, env, stock, nodes).await?;
        run.narrate("the replica is in sync with the master (master_link_status:up)");
        Ok((run, link))
    }

    /// Like [`Run::start`], on a master (`nodes[0]`), two replicas
    /// (`nodes[1]`, `nodes[2]`) and three Sentinels, wired as `wiring` says
    /// ([`SentinelTopology`]), with `master_args` on the servers' command
    /// lines. The stage's clients find the master through the Sentinels;
    /// the lock's TTL is at least the [`topology::LEASE`].
    pub(crate) async fn start_with_sentinels(
        stage: StageEntry,
        env: ScenarioEnv,
        stock: i64,
        master_args: &[&str],
        wiring: Wiring,
    ) -> Result<(Self, SentinelTopology)> {
        one_lock_node(&stage.description, "a master with Sentinels")?;
        let mut env = env.for_new_run();
        env.timing.ttl = env.timing.ttl.max(topology::LEASE);
        let backend = env.backend.clone();
        let nodes = SentinelTopology::start(&backend, master_args, wiring);
        let (mut run, mut sentinels) = Self::start_beside(stage, env, stock, nodes).await?;
        sentinels.watch(&run.nodes[0], run.timeline()).await?;
        run.factory.lock_urls = vec![sentinels.url()];
        Ok((run, sentinels))
    }

    /// Like [`Run::start`], on a Redis Cluster of three masters and three
    /// replicas ([`ClusterTopology`]; `nodes[0]` serves the lock key's
    /// slot, `nodes[1]` replicates it). The stage's clients know the
    /// cluster by all its nodes; the lock's TTL is at least the
    /// [`topology::LEASE`].
    pub(crate) async fn start_with_cluster(
        stage: StageEntry,
        env: ScenarioEnv,
        stock: i64,
    ) -> Result<(Self, ClusterTopology)> {
        one_lock_node(&stage.description, "one cluster")?;
        let mut env = env.for_new_run();
        env.timing.ttl = env.timing.ttl.max(topology::LEASE);
        let backend = env.backend.clone();
        let nodes = ClusterTopology::start(&backend);
        let (mut run, mut cluster) = Self::start_beside(stage, env, stock, nodes).await?;
        cluster
            .watch(&run.nodes, run.timeline(), &run.lock_key)
            .await?;
        run.factory.lock_urls = vec![cluster.url()];
        Ok((run, cluster))
    }

    /// Like [`Run::start`], on lock nodes the scenario started itself (a
    /// master and its replica): clients use the first
    /// `description.nodes` of them, and every one is watched.
    pub async fn start_on(
        stage: StageEntry,
        env: ScenarioEnv,
        stock: i64,
        nodes: Vec<Node>,
    ) -> Result<Self> {
        let db = Node::start(&env.backend, "db", &[]).await?;
        Self::start_with_db(stage, env, stock, nodes, db).await
    }

    /// Starts the database node while `lock_nodes` starts the lock's (a
    /// topology, and what it hands back beside its nodes), then the run on
    /// them. At once: on Docker each node is a container, a few hundred
    /// milliseconds apiece when started one after another (the database,
    /// which only the clients reach, may be a plain spare).
    async fn start_beside<T>(
        stage: StageEntry,
        env: ScenarioEnv,
        stock: i64,
        lock_nodes: impl std::future::Future<Output = Result<(T, Vec<Node>)>>,
    ) -> Result<(Self, T)> {
        let ((topology, nodes), db) =
            tokio::try_join!(lock_nodes, Node::start(&env.backend, "db", &[]))?;
        let run = Self::start_with_db(stage, env, stock, nodes, db).await?;
        Ok((run, topology))
    }

    /// Like [`Run::start_on`], with the database node started too.
    pub(crate) async fn start_with_db(
        stage: StageEntry,
        mut env: ScenarioEnv,
        stock: i64,
        nodes: Vec<Node>,
        db: Node,
    ) -> Result<Self> {
        env.timing = env.timing.for_stage(&stage.description);
        let history = History::new();
        let timeline = Timeline::of(&history);
        env.recorder.keep(&timeline);
        let mut config = LockConfig {
            watchdog_timeout: env.timing.ttl,
            ..LockConfig::with_ttl(env.timing.ttl)
        };
        // On a reader's own server every key of the run has a prefix of its
        // own, and the run deletes them at its end.
        let cleanup = env.backend.external().map(|server| {
            let prefix = external::run_prefix();
            config.key = format!("{prefix}{}", config.key);
            KeyCleanup {
                url: server.url().to_owned(),
                prefix,
            }
        });
        let mut watchers = Vec::new();
        match &cleanup {
            // A reader's server is the lock and the database at once: one
            // watcher, for the run's keys alone.
            Some(KeyCleanup { url, prefix }) => {
                watchers.push(Some(
                    NodeWatcher::start_on_readers_server(url, external::LABEL, &timeline, prefix)
                        .await?,
                ));
                watchers.extend(nodes.iter().map(|_| None));
            }
            None => {
                for node in nodes.iter().chain([&db]) {
                    watchers.push(Some(
                        NodeWatcher::start(&node.url(), node.label(), &timeline).await?,
                    ));
                }
            }
        }
        let harness_db = Database::connect(
            &ClientSetup::new(vec![], "harness", config.clone()),
            &db.url(),
        )
        .await?
        .with_request_ids(env.request_ids);
        harness_db.reset(stock).await?;
        let factory = ClientFactory {
            stage,
            lock_urls: nodes
                .iter()
                .take(stage.description.nodes)
                .map(Node::url)
                .collect(),
            db_url: db.url(),
            config,
            history,
            fencing: env.fencing,
            request_ids: env.request_ids,
            holder_command: env.holder_command.clone(),
        };
        factory.history.push(
            "harness",
            What::Setup {
                stage: stage.description.name.to_owned(),
                ttl: env.timing.ttl,
                stock,
                lock_nodes: nodes.iter().map(|n| n.label().to_owned()).collect(),
                fencing: env.fencing.label(),
                // A reader's server's watcher records keys without the
                // run's prefix.
                lock_key: format!(
                    "{}{}",
                    stage.description.home.key_prefix,
                    cleanup
                        .as_ref()
                        .and_then(|c| factory.config.key.strip_prefix(&c.prefix))
                        .unwrap_or(&factory.config.key)
                ),
            },
        );
        timeline.record(
            "harness",
            format!(
                "{} ({}): TTL {}ms, stock {stock}",
                stage.description.name,
                env_label(&env),
                env.timing.ttl.as_millis()
            ),
        );
        if let Some(KeyCleanup { prefix, .. }) = &cleanup {
            timeline.record(
                "harness",
                format!("the run's keys are under {prefix} on your server (shown without it)"),
            );
        }
        Ok(Self {
            lock_key: format!(
                "{}{}",
                stage.description.home.key_prefix, factory.config.key
            ),
            stage,
            env,
            nodes,
            db: Some(db),
            factory,
            timeline,
            facts: BTreeMap::from([("initial_stock", stock)]),
            harness_db,
            watchers,
            _cleanup: cleanup,
            ensemble: None,
        })
    }

    /// The timeline of this run: its history told in words.
    pub fn timeline(&self) -> &Timeline {
        &self.timeline
    }

    /// The lock's key on the servers.
    pub fn lock_key(&self) -> &str {
        &self.lock_key
    }

    /// The one record of this run.
    pub fn history(&self) -> &History {
        &self.factory.history
    }

    /// Says something in the timeline as the harness.
    pub fn narrate(&self, text: impl Into<String>) {
        self.timeline().record("harness", text);
    }

    /// Connects a client of the stage called `name`.
    pub async fn client(&self, name: &str) -> Result<Client> {
        self.factory.client(name).await
    }

    /// Connects a client called `name` whose locks live at least
    /// [`RIVAL_TTL`]: the rival that takes over an expired lock in a story
    /// whose verdict needs that rival's key still there when the old
    /// holder acts again (its late write, its late `DEL`). With the usual
    /// 300 ms the rival's key raced the story's own steps, and a slow
    /// machine lost the race: once 883 ms passed from the rival's grant to
    /// the old holder's release, which then found nothing to delete. The
    /// old holder's lock, whose expiry the story is about, keeps the usual
    /// TTL.
    pub async fn rival(&mut self, name: &str) -> Result<Client> {
        self.client_configured(name, |config| config.ttl = config.ttl.max(RIVAL_TTL))
            .await
    }

    /// Connects a client called `name` whose watchdog (stage 6's, and its
    /// fair variant's) leases at least [`LIVING_WATCHDOG`], renewed every
    /// third of it: the living holder of a story whose verdict needs its
    /// watchdog to keep the lock through a rival's whole window. A rival
    /// still sees it renew within that window (three TTLs, 900 ms). With the
    /// usual 300 ms lease, renewed every 100 ms, a process descheduled for
    /// 200 ms on a loaded machine lost the lock under its living holder
    /// (once, nothing of a run ran for 444 ms); now it takes 667 ms. A stage
    /// without a watchdog keeps its TTL: its expiry is what these stories
    /// are about.
    pub async fn living_holder(&mut self, name: &str) -> Result<Client> {
        self.client_configured(name, |config| {
            config.watchdog_timeout = config.watchdog_timeout.max(LIVING_WATCHDOG);
        })
        .await
    }

    /// Connects a client called `name` whose lock configuration is the
    /// run's with `adjust` applied; the run's own stays as it was.
    pub async fn client_configured(
        &mut self,
        name: &str,
        adjust: impl FnOnce(&mut LockConfig),
    ) -> Result<Client> {
        let usual = self.factory.config.clone();
        adjust(&mut self.factory.config);
        let client = self.factory.client(name).await;
        self.factory.config = usual;
        client
    }

    /// Stops watching lock node `index` once its `MONITOR` has shown all it
    /// saw. Call it before killing the node for good: a dead node cannot
    /// answer the final flush.
    pub async fn unwatch(&mut self, index: usize) -> Result<()> {
        if let Some(mut watcher) = self.watchers.get_mut(index).and_then(Option::take) {
            watcher.flush().await?;
        }
        Ok(())
    }

    /// Watches lock node `index` again after a restart (its old `MONITOR`
    /// connection died with the old process; [`Run::unwatch`] it first).
    pub async fn watch_again(&mut self, index: usize) -> Result<()> {
        if let (Some(node), Some(slot)) = (self.nodes.get(index), self.watchers.get_mut(index)) {
            *slot = Some(NodeWatcher::start(&node.url(), node.label(), &self.timeline).await?);
        }
        Ok(())
    }

    /// `PTTL` of the lock key on the first node: -2 gone, -1 no expiry.
    /// On ZooKeeper and etcd there is no PTTL: the node (the key) lives
    /// until its session (lease) expires, so the answer is the session
    /// timeout (the lease's TTL), at most.
    pub async fn lock_pttl(&self) -> Result<i64> {
        if super::ensemble::on_consensus_store(&self.stage.description) {
            return Ok(i64::try_from(self.factory.config.ttl.as_millis()).unwrap_or(i64::MAX));
        }
        let mut conn = lockcore::connect(&self.nodes[0].url(), "harness").await?;
        Ok(redis::cmd("PTTL")
            .arg(&self.lock_key)
            .query_async(&mut conn)
            .await?)
    }

    /// Puts a proxy in front of every lock node. Clients made from now on
    /// (holder processes too) reach the nodes through them.
    pub async fn put_proxies(&mut self) -> Result<Proxies> {
        if super::ensemble::on_consensus_store(&self.stage.description) {
            // ZooKeeper and etcd members are not Redis nodes: no proxy (yet).
            return Ok(Proxies::none());
        }
        let (proxies, mut urls) = node::put_proxies(&self.nodes, self.timeline()).await?;
        urls.truncate(self.factory.lock_urls.len());
        self.factory.lock_urls = urls;
        Ok(proxies)
    }

    /// Lets `client` ask for the lock for the whole patience window, as the
    /// history records: if nobody gets in while the key stays, the judge
    /// calls it a deadlock. Returns what it got.
    pub async fn probe_for_deadlock(&mut self, client: &Client) -> Result<Option<Acquired>> {
        let patience = self.env.timing.patience();
        self.factory.history.asking(client.name(), patience);
        client.acquire(patience).await
    }

    /// The survivor's story after a holder died: it tries for the whole
    /// patience window ([`Run::probe_for_deadlock`]) and, if it gets the
    /// lock, buys one item and gives the lock back. `true` if it got in.
    pub async fn survivor_buys(&mut self, survivor: &Client) -> Result<bool> {
        let Some(held) = self.probe_for_deadlock(survivor).await? else {
            return Ok(false);
        };
        survivor.buy_one(&held, self.env.timing.business).await?;
        survivor.release(&held).await?.answered()?;
        Ok(true)
    }

    /// Starts a holder process called `name` that takes the (free) lock.
    pub async fn holder_holding_the_lock(&self, name: &str) -> Result<HolderProcess> {
        let mut holder = self.factory.spawn_holder(&self.env.launcher, name).await?;
        if holder.acquire(self.env.timing.patience()).await? {
            Ok(holder)
        } else {
            Err(HarnessError::Holder(format!(
                "{name} could not take a free lock"
            )))
        }
    }

    /// Reckons up: waits for every node's `MONITOR` to catch up, then adds
    /// the final read of the database to the history. The record goes to
    /// the judge as it is; nothing here decides.
    pub async fn record(mut self) -> Result<Recorded> {
        for watcher in self.watchers.iter_mut().flatten() {
            watcher.flush().await?;
        }
        // The orders themselves, not only their number: the judge counts
        // the charges of each request id. Only a resource that checks ids
        // writes refused duplicates, so only then are they read.
        let placed = self.harness_db.order_entries().await?;
        let orders = i64::try_from(placed.len()).unwrap_or(i64::MAX);
        let refused = if self.harness_db.checks_request_ids() {
            self.harness_db.refused_duplicates().await?
        } else {
            Vec::new()
        };
        let stock_left = self.harness_db.read_stock(None).await?;
        self.facts.insert("orders", orders);
        self.facts.insert("stock_left", stock_left);
        self.factory.history.push(
            "harness",
            What::Final {
                orders,
                stock_left,
                placed,
                refused,
            },
        );
        Ok(Recorded {
            history: self.factory.history.clone(),
            facts: std::mem::take(&mut self.facts),
        })
    }

    /// [`Run::record`], judged: for a test that tells a story of its own.
    pub async fn finish(self) -> Result<Outcome> {
        self.record().await.map(Outcome::judged)
    }

    /// Waits (at most `within`) until a lock node's `MONITOR` has shown
    /// `client` ask for the lock: a lock command of its, not a subscription
    /// or a connection's set-up. From then on it is in line, whatever the
    /// lock makes of lines.
    pub async fn wait_until_asked(&self, client: &str, within: Duration) -> Result<()> {
        const NOT_ASKING: [&str; 5] = ["SUBSCRIBE", "PSUBSCRIBE", "CLIENT", "PING", "HELLO"];
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let seen = self.timeline().events().iter().any(|event| {
                event.actor == client
                    && event
                        .node
                        .as_deref()
                        .is_some_and(|node| node != self.db_label())
                    && !NOT_ASKING.iter().any(|word| {
                        event
                            .text
                            .get(..word.len())
                            .is_some_and(|start| start.eq_ignore_ascii_case(word))
                    })
            });
            if seen {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(HarnessError::StoryNotTold(format!(
                    "the lock's server never saw {client} ask"
                )));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    fn lock_node_mut(&mut self, index: usize) -> Result<&mut Node> {
        self.nodes.get_mut(index).ok_or(HarnessError::NoNode(index))
    }

    /// The database node's label, for timelines.
    pub fn db_label(&self) -> &str {
        self.db.as_ref().map_or("db", Node::label)
    }

    /// Where the database node answers.
    pub fn db_url(&self) -> String {
        self.db.as_ref().map(Node::url).unwrap_or_default()
    }
}

impl LockNodes for Run {
    fn lock_nodes(&self) -> &[Node] {
        &self.nodes
    }

    fn lock_key(&self) -> &str {
        &self.lock_key
    }

    async fn kill_node(&mut self, index: usize) -> Result<()> {
        self.unwatch(index).await?;
        let timeline = self.timeline().clone();
        node::kill(self.lock_node_mut(index)?, &timeline).await
    }

    async fn restart_node(&mut self, index: usize, proxies: &Proxies) -> Result<()> {
        self.unwatch(index).await?;
        let timeline = self.timeline().clone();
        node::restart(self.lock_node_mut(index)?, proxies.get(index), &timeline).await?;
        self.watch_again(index).await
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        // The watchers first: a watcher whose connection closes connects
        // again, and a node may outlive the run as a spare (on Docker).
        self.watchers.clear();
        // The run's servers stop together (on Docker, a container's
        // removal is an engine round trip that holds its thread).
        let nodes = std::mem::take(&mut self.nodes);
        crate::server::stop_all(nodes.into_iter().chain(self.db.take()));
    }
}

/// A topology of roles (a master, its replicas) stands for one lock node:
/// `shape` cannot be the N independent masters of a stage that asks for
/// several (Redlock).
fn one_lock_node(stage: &Description, shape: &str) -> Result<()> {
    if stage.nodes == 1 {
        return Ok(());
    }
    Err(HarnessError::Unsupported(format!(
        "{} needs {} independent masters, not {shape}",
        stage.name, stage.nodes
    )))
}

fn env_label(env: &ScenarioEnv) -> String {
    let ids = match env.request_ids {
        crate::workload::RequestIds::Checked => ", request ids checked",
        crate::workload::RequestIds::Ignored => "",
    };
    let release = match env.release_order {
        crate::workload::ReleaseOrder::AfterCommit => ", release after the commit",
        crate::workload::ReleaseOrder::BeforeCommit => "",
    };
    format!("{} backend{ids}{release}", env.backend.label())
}
