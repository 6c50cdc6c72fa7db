//! The Sentinel topology: one master, two replicas, three Sentinels that
//! watch the master and, when they agree that it is down, promote a
//! replica themselves. The harness never promotes anything here.
//!
//! Clients find the master through the Sentinels (a `redis+sentinel://`
//! URL, see `lockcore::resolve`), as a production client configured with
//! Sentinel does.
//!
//! Timeouts are short but safe: a Sentinel calls the master subjectively
//! down after [`DOWN_AFTER`] without an answer (several of its pings, on a
//! loaded machine too), so a failover takes a second or two.
//!
//! Each replica follows the master through a [`ReplicationLink`], and the
//! Sentinels watch it through one more, so a story can hold replication
//! back (keeping open the window in which the master has granted a lock its
//! replicas have not seen), or cut the master off from all its peers: a
//! partition. Clients on the master's side of it talk to the master
//! directly.

use std::time::Duration;

use lockcore::StageEntry;
use tokio::sync::watch;
use tokio::time::{Instant, sleep};

use super::replicated::{ReplicationLink, wait_in_sync};
use super::{Run, ScenarioEnv};
use crate::error::{HarnessError, Result};
use crate::observe::{SentinelWatcher, wait_for_switch};
use crate::server::Node;

/// The name the Sentinels know the master by.
pub(crate) const SERVICE: &str = "lockmaster";
/// Sentinels that must agree the master is down before a failover.
const QUORUM: usize = 2;
/// How long a master may stay silent before the first Sentinel calls it
/// down; each next Sentinel waits [`DOWN_AFTER_STEP`] longer.
const DOWN_AFTER: Duration = Duration::from_millis(1000);
/// Staggered timeouts make it unlikely that all three Sentinels ask for
/// votes at once and split them one each: a split election is retried
/// only after twice [`FAILOVER_TIMEOUT`].
const DOWN_AFTER_STEP: Duration = Duration::from_millis(250);
/// Sentinel's `failover-timeout`: how long an election or a failover step
/// may take, and (doubled) how long before a failed one is tried again. It
/// is also how long a Sentinel tolerates a replica that follows its master
/// at another address (here, its relay) before "fixing" it, which the
/// stories never give it: they fault the master within a second.
const FAILOVER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a failover may take, a split election and its retry included.
const SWITCH_WITHIN: Duration = Duration::from_secs(60);
/// How long the Sentinels may take to find each other and the replicas.
const SETTLE_WITHIN: Duration = Duration::from_secs(30);
/// The lock's TTL on this topology: the articles' default, far longer than
/// a failover here (a few seconds) or the demotion after a partition heals
/// (about fifteen), so that a lock lost is lost to the failover and never
/// to its expiry.
const LEASE: Duration = Duration::from_secs(30);
/// How often the Sentinels' state is asked while they settle.
const POLL: Duration = Duration::from_millis(50);

/// The Sentinels of a run, their watchers, and the replication links.
/// Keep it for as long as the run.
pub(crate) struct SentinelTopology {
    /// Declared (so dropped) before the Sentinels: they stop reporting first.
    watchers: Vec<SentinelWatcher>,
    sentinels: Vec<Node>,
    switches: watch::Receiver<Option<String>>,
    /// The replicas' links to the master.
    links: Vec<ReplicationLink>,
    /// The Sentinels' link to the master.
    sentinel_link: ReplicationLink,
}

impl SentinelTopology {
    /// The URL clients use: the master, as the Sentinels name it.
    pub(crate) fn url(&self) -> String {
        let addrs: Vec<String> = self
            .sentinels
            .iter()
            .map(|s| s.addr().to_string())
            .collect();
        lockcore::sentinel_url(&addrs, SERVICE)
    }

    /// Holds replication back on every replica's link.
    pub(crate) fn hold_replication(&self) {
        for link in &self.links {
            link.hold();
        }
    }

    /// Holds replication back on every replica's link but `index`'s
    /// (`nodes[index]`, 1 or 2).
    pub(crate) fn hold_replication_except(&self, index: usize) {
        for (i, link) in self.links.iter().enumerate() {
            if i + 1 != index {
                link.hold();
            }
        }
    }

    /// Cuts the master off from its replicas and the Sentinels, both ways.
    pub(crate) fn cut_master_off(&self) {
        for link in self.links.iter().chain([&self.sentinel_link]) {
            link.cut();
        }
    }

    /// Heals the partition.
    pub(crate) fn heal(&self) {
        for link in self.links.iter().chain([&self.sentinel_link]) {
            link.heal();
        }
    }

    /// Stops recording what the Sentinels say (before the run's reckoning,
    /// so that its verdict is the timeline's last word).
    pub(crate) fn stop_watching(&mut self) {
        self.watchers.clear();
    }

    /// Waits until the Sentinels announce a new master (`+switch-master`);
    /// returns its `host:port`.
    pub(crate) async fn wait_for_switch(&mut self) -> Result<String> {
        wait_for_switch(&mut self.switches, SWITCH_WITHIN).await
    }
}

impl Run {
    /// Starts a master (`nodes[0]`), two replicas that follow it through
    /// replication links (`nodes[1]`, `nodes[2]`, in sync), three Sentinels
    /// that know the master, both replicas and each other, then the rest of
    /// [`Run::start`]. The stage's clients find the master through the
    /// Sentinels. `master_args` go on the master's command line (and the
    /// replicas', which may become masters).
    pub(crate) async fn start_with_sentinels(
        stage: StageEntry,
        env: ScenarioEnv,
        stock: i64,
        master_args: &[&str],
    ) -> Result<(Self, SentinelTopology)> {
        if stage.description.nodes != 1 {
            return Err(HarnessError::Unsupported(format!(
                "{} needs {} independent masters, not a master with Sentinels",
                stage.description.name, stage.description.nodes
            )));
        }
        let mut env = env.for_new_run();
        env.timing.ttl = env.timing.ttl.max(LEASE);
        // No wait before a full sync: the replicas are all there.
        let args: Vec<&str> = ["--repl-diskless-sync-delay", "0"]
            .into_iter()
            .chain(master_args.iter().copied())
            .collect();
        let master = Node::start(&env.backend, "master", &args).await?;
        let mut nodes = vec![master];
        let mut links = Vec::new();
        for i in 1..=2 {
            let link = ReplicationLink::start(&nodes[0]).await?;
            let replica = Node::start(&env.backend, &format!("replica{i}"), &args).await?;
            follow(&replica, &link).await?;
            wait_in_sync(&replica).await?;
            nodes.push(replica);
            links.push(link);
        }
        let sentinel_link = ReplicationLink::start(&nodes[0]).await?;
        let (master_host, master_port) = (sentinel_link.addr.ip(), sentinel_link.addr.port());
        let mut sentinels = Vec::new();
        for i in 1..=3 {
            let down_after = DOWN_AFTER + DOWN_AFTER_STEP * (i - 1);
            // ANCHOR: sentinel_config
            let config = format!(
                "sentinel monitor {SERVICE} {master_host} {master_port} {QUORUM}\n\
                 sentinel down-after-milliseconds {SERVICE} {}\n\
                 sentinel failover-timeout {SERVICE} {}\n\
                 sentinel parallel-syncs {SERVICE} 2\n",
                down_after.as_millis(),
                FAILOVER_TIMEOUT.as_millis(),
            );
            // ANCHOR_END: sentinel_config
            let label = format!("sentinel{i}");
            sentinels.push(Node::start_sentinel(&env.backend, &label, &config).await?);
        }
        for sentinel in &sentinels {
            wait_until_settled(sentinel, sentinels.len() - 1, nodes.len() - 1).await?;
        }
        let mut run = Self::start_on(stage, env, stock, nodes).await?;
        let (switch_tx, switches) = watch::channel(None);
        let mut watchers = Vec::new();
        for sentinel in &sentinels {
            watchers.push(
                SentinelWatcher::start(
                    &sentinel.url(),
                    sentinel.label(),
                    run.timeline(),
                    switch_tx.clone(),
                )
                .await?,
            );
        }
        let topology = SentinelTopology {
            watchers,
            sentinels,
            switches,
            links,
            sentinel_link,
        };
        // The Sentinels name the master by its link's address.
        let master_label = run.nodes[0].label().to_owned();
        run.timeline().name_node(
            &format!("redis://{}", topology.sentinel_link.addr),
            &master_label,
        );
        run.factory.lock_urls = vec![topology.url()];
        run.narrate(format!(
            "3 Sentinels watch the master (quorum {QUORUM}, down after {}ms or a little more); both replicas are in sync; clients find the master through the Sentinels",
            DOWN_AFTER.as_millis()
        ));
        Ok((run, topology))
    }
}

/// Makes `replica` follow the master through `link`, announcing its own
/// address (the master sees the link's address, not the replica's).
async fn follow(replica: &Node, link: &ReplicationLink) -> Result<()> {
    let mut conn = lockcore::connect(&replica.url(), "harness").await?;
    let (own_host, _) = replica.host_port();
    redis::cmd("CONFIG")
        .arg("SET")
        .arg("replica-announce-ip")
        .arg(own_host)
        .query_async::<()>(&mut conn)
        .await?;
    redis::cmd("REPLICAOF")
        .arg(link.addr.ip().to_string())
        .arg(link.addr.port())
        .query_async::<()>(&mut conn)
        .await?;
    Ok(())
}

/// Waits until `sentinel` knows `peers` other Sentinels and `replicas`
/// replicas: only then can it reach a quorum and promote.
async fn wait_until_settled(sentinel: &Node, peers: usize, replicas: usize) -> Result<()> {
    let mut conn = lockcore::connect(&sentinel.url(), "harness").await?;
    let deadline = Instant::now() + SETTLE_WITHIN;
    loop {
        let known_peers: Vec<redis::Value> = redis::cmd("SENTINEL")
            .arg("SENTINELS")
            .arg(SERVICE)
            .query_async(&mut conn)
            .await?;
        let known_replicas: Vec<redis::Value> = redis::cmd("SENTINEL")
            .arg("REPLICAS")
            .arg(SERVICE)
            .query_async(&mut conn)
            .await?;
        if known_peers.len() >= peers && known_replicas.len() >= replicas {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(HarnessError::ServerStart(format!(
                "{} knew {} Sentinels and {} replicas after {SETTLE_WITHIN:?}, not {peers} and {replicas}",
                sentinel.label(),
                known_peers.len(),
                known_replicas.len()
            )));
        }
        sleep(POLL).await;
    }
}

/// Waits until `node` says `field:value` in `INFO replication` (a demoted
/// master says `role:slave`, then `master_link_status:up`), within
/// `within`.
pub(crate) async fn wait_for_replication_info(
    node: &Node,
    field: &str,
    value: &str,
    within: Duration,
) -> Result<()> {
    let deadline = Instant::now() + within;
    let wanted = format!("{field}:{value}");
    loop {
        // A fresh connection each time: a Sentinel reconfiguring the node
        // closes its clients' connections.
        if let Ok(mut conn) = lockcore::connect(&node.url(), "harness").await {
            let info: String = redis::cmd("INFO")
                .arg("replication")
                .query_async(&mut conn)
                .await
                .unwrap_or_default();
            if info.lines().any(|line| line.trim() == wanted) {
                return Ok(());
            }
        }
        if Instant::now() > deadline {
            return Err(HarnessError::Unsupported(format!(
                "{} did not say {wanted} within {within:?}",
                node.label()
            )));
        }
        sleep(POLL).await;
    }
}
