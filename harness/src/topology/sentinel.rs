//! The Sentinel topology: one master, two replicas, three Sentinels that
//! watch the master and, when they agree that it is down, promote a
//! replica themselves. The harness never promotes anything here.
//!
//! Clients find the master through the Sentinels (a `redis+sentinel://`
//! URL, see `lockcore::resolve`), as a production client configured with
//! Sentinel does.
//!
//! Timeouts are short but safe: a Sentinel calls the master subjectively
//! down after [`DOWN_AFTER`] without an answer (a live master answers a
//! ping in well under a millisecond; the margin is for a loaded machine),
//! and the Sentinels' own periods (how often they ask a server for `INFO`,
//! greet each other, ask each other about the master) are cut with
//! `SENTINEL DEBUG` from Redis's production defaults of seconds to a
//! fraction of one (see [`PERIODS`]). The Sentinels still decide everything
//! themselves; they only stop waiting on clocks tuned for a data centre's
//! patience, so a failover takes two seconds or so, and the demotion of a
//! master cut off and healed about as long.
//!
//! Every story ends with a line of phase times (topology up, fault,
//! `+odown`, `+switch-master`, heal, `+convert-to-slave`), so a reader sees
//! which wait a run spent its time on.
//!
//! How the master's peers (replicas and Sentinels) reach it depends on
//! what the story will do to them ([`Wiring`]):
//! - [`Wiring::Links`]: each replica follows the master through a
//!   [`ReplicationLink`], and the Sentinels watch it through one more, so
//!   a story can hold replication back (keeping open the window in which
//!   the master has granted a lock its replicas have not seen).
//! - [`Wiring::Partition`]: a story cuts the master off from all its
//!   peers, while clients on its side still talk to it. On the Docker
//!   backend the peers reach the master at its own address on the run's
//!   network, and the cut is a real one: the master is disconnected from
//!   that network, then connected again at the same address; the harness
//!   and the clients reach it over the run's clients' network, which
//!   nothing else is on. On the process backend every node is on loopback,
//!   so the peers go through links there too, and the cut is the links
//!   dropping everything both ways.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::{Instant, sleep};

use super::docker_node;
use super::phases::Phases;
use super::replicated::wait_in_sync;
use crate::error::{HarnessError, Result};
use crate::fault::link::ReplicationLink;
use crate::observe::{SentinelWatcher, Timeline, wait_for_switch};
use crate::server::{Backend, Node};

/// The name the Sentinels know the master by.
pub(crate) const SERVICE: &str = "lockmaster";
/// Sentinels that must agree the master is down before a failover.
const QUORUM: usize = 2;
/// How long a master may stay silent before the first Sentinel calls it
/// down; each next Sentinel waits [`DOWN_AFTER_STEP`] longer. Production
/// keeps the default, 30 s.
const DOWN_AFTER: Duration = Duration::from_millis(500);
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
/// The Sentinels' clocks, set with `SENTINEL DEBUG` once each has started
/// (a Sentinel reads none of them from its configuration file); Redis's
/// defaults are in the comments.
// ANCHOR: sentinel_debug
const PERIODS: &[(&str, Duration)] = &[
    // INFO to each server (10 s): a master healed from a partition is seen
    // claiming its old role within this, and so demoted sooner. During a
    // failover a Sentinel asks the replicas every second whatever this says.
    ("INFO-PERIOD", Duration::from_millis(250)),
    // Hello messages (2 s): Sentinels find each other within this; a server
    // that claims to be a master against their view is demoted after four
    // of these without news.
    ("PUBLISH-PERIOD", Duration::from_millis(100)),
    // How often a Sentinel that calls the master down asks the others
    // whether they agree (1 s): the wait between `+sdown` and `+odown`.
    ("ASK-PERIOD", Duration::from_millis(100)),
];
// ANCHOR_END: sentinel_debug
/// How long a failover may take, a split election and its retry included.
const SWITCH_WITHIN: Duration = Duration::from_secs(60);
/// How long the Sentinels may take to find each other and the replicas.
const SETTLE_WITHIN: Duration = Duration::from_secs(30);
/// How often the Sentinels' state is asked while they settle.
const POLL: Duration = Duration::from_millis(50);

/// How a story will fault the master's peers' ways to it, which decides
/// how they reach it (see the module's documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wiring {
    /// Through links on the harness's host, so that replication can be
    /// held back.
    Links,
    /// For a partition that cuts the master off from all its peers: on
    /// Docker over the run's network (a real cut), elsewhere through links.
    Partition,
}

/// The Sentinels, their watchers, and the master's peers' paths to it;
/// the master and its replicas are handed to whoever keeps the lock nodes.
/// Keep it for as long as those.
pub(crate) struct SentinelTopology {
    /// Declared (so dropped) before the Sentinels: they stop reporting first.
    watchers: Vec<SentinelWatcher>,
    sentinels: Vec<Node>,
    /// Where the watchers announce a new master, until they are started.
    switch_tx: Option<watch::Sender<Option<String>>>,
    switches: watch::Receiver<Option<String>>,
    paths: PeerPaths,
    /// Where the master's peers reach it: the Sentinels name it by this.
    seen_by_peers: SocketAddr,
    /// When the story's steps happened, for its line of phase times.
    phases: Phases,
}

impl Drop for SentinelTopology {
    fn drop(&mut self) {
        // The watchers stop reporting first; then the Sentinels stop
        // together.
        self.watchers.clear();
        crate::server::stop_all(std::mem::take(&mut self.sentinels));
    }
}

/// The Sentinel events a phase line shows, each the first one after the
/// fault (or the heal).
const TIMED_EVENTS: &[&str] = &["+odown", "+switch-master", "+convert-to-slave"];

/// How the master's replicas and Sentinels reach it.
enum PeerPaths {
    /// Through links on the harness's host, which can hold what the master
    /// sends, or cut everything both ways.
    Links {
        /// The replicas' links to the master.
        replicas: Vec<ReplicationLink>,
        /// The Sentinels' link to the master.
        sentinels: ReplicationLink,
    },
    /// At the master's own address on the run's Docker network, their only
    /// way to it.
    Network,
}

impl SentinelTopology {
    /// Starts a master (the first node handed back), two replicas that
    /// follow it (the second and third, in sync), and three Sentinels that
    /// know the master, both replicas and each other, on `backend` (on
    /// Docker, a network of their own), wired as `wiring` says.
    /// `master_args` go on the master's command line (and the replicas',
    /// which may become masters). Clients find the master through the
    /// Sentinels ([`SentinelTopology::url`]); [`SentinelTopology::watch`]
    /// them once there is a timeline.
    pub(crate) async fn start(
        backend: &Backend,
        master_args: &[&str],
        wiring: Wiring,
    ) -> Result<(Self, Vec<Node>)> {
        let phases = Phases::new("servers and Sentinels", TIMED_EVENTS);
        // With a partition on Docker, the peers reach the master at its
        // address on the run's network, and everyone else on the clients'
        // network.
        let by_network = wiring == Wiring::Partition && matches!(backend, Backend::Docker { .. });
        // No wait before a full sync: the replicas are all there.
        let args: Vec<&str> = ["--repl-diskless-sync-delay", "0"]
            .into_iter()
            .chain(master_args.iter().copied())
            .collect();
        // The three servers start at once (on Docker each is a container,
        // seconds each when started one after another).
        // The master, replicas and Sentinels on one network of their own,
        // where the Sentinels reach the servers (a matrix's plain spares are
        // each on another): in a matrix, a rig that an earlier cell of the
        // same kind left, with its wiped nodes, which start again far sooner
        // than new containers.
        let rig = format!(
            "sentinel {} {}",
            if by_network { "partition" } else { "links" },
            args.join(" ")
        );
        let peers = backend.for_rig(&rig);
        let master = async {
            if by_network {
                Node::start_with_clients_network(&peers, "master", &args).await
            } else {
                Node::start(&peers, "master", &args).await
            }
        };
        let (master, replica1, replica2) = tokio::try_join!(
            master,
            Node::start(&peers, "replica1", &args),
            Node::start(&peers, "replica2", &args),
        )?;
        let mut nodes = vec![master];
        let mut links = Vec::new();
        for replica in [&replica1, &replica2] {
            let master_addr = if by_network {
                nodes[0].peer_addr()
            } else {
                let link = ReplicationLink::start(&nodes[0]).await?;
                let addr = link.addr;
                links.push(link);
                addr
            };
            follow(replica, master_addr).await?;
        }
        for replica in [&replica1, &replica2] {
            wait_in_sync(replica).await?;
        }
        nodes.extend([replica1, replica2]);
        let paths = if by_network {
            PeerPaths::Network
        } else {
            PeerPaths::Links {
                replicas: links,
                sentinels: ReplicationLink::start(&nodes[0]).await?,
            }
        };
        // Where the Sentinels find the master.
        let seen_by_peers = match &paths {
            PeerPaths::Links { sentinels, .. } => sentinels.addr,
            PeerPaths::Network => nodes[0].peer_addr(),
        };
        let (master_host, master_port) = (seen_by_peers.ip(), seen_by_peers.port());
        let backend = &peers;
        let sentinels = futures_util::future::try_join_all((1..=3u32).map(|i| {
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
            async move {
                let sentinel =
                    Node::start_sentinel(backend, &format!("sentinel{i}"), &config).await?;
                set_periods(&sentinel).await?;
                Ok::<_, HarnessError>(sentinel)
            }
        }))
        .await?;
        for sentinel in &sentinels {
            wait_until_settled(sentinel, sentinels.len() - 1, nodes.len() - 1).await?;
        }
        let (switch_tx, switches) = watch::channel(None);
        let topology = Self {
            watchers: Vec::new(),
            sentinels,
            switch_tx: Some(switch_tx),
            switches,
            paths,
            seen_by_peers,
            phases,
        };
        Ok((topology, nodes))
    }

    /// Starts recording what the Sentinels say in `timeline`, names the
    /// master (`master`) there by the address they know it by, and says
    /// what watches it. The setup is done: the line of phase times counts
    /// from here.
    pub(crate) async fn watch(&mut self, master: &Node, timeline: &Timeline) -> Result<()> {
        if let Some(switch_tx) = self.switch_tx.take() {
            for sentinel in &self.sentinels {
                self.watchers.push(
                    SentinelWatcher::start(
                        &sentinel.url(),
                        sentinel.label(),
                        timeline,
                        switch_tx.clone(),
                    )
                    .await?,
                );
            }
        }
        self.phases.ready();
        timeline
            .history()
            .name_node(&format!("redis://{}", self.seen_by_peers), master.label());
        timeline.record("harness", format!(
            "3 Sentinels watch the master (quorum {QUORUM}, down after {}ms or a little more); both replicas are in sync; clients find the master through the Sentinels",
            DOWN_AFTER.as_millis()
        ));
        Ok(())
    }

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
        for link in self.replica_links() {
            link.hold();
        }
    }

    /// Holds replication back on every replica's link but `index`'s
    /// (`nodes[index]`, 1 or 2).
    pub(crate) fn hold_replication_except(&self, index: usize) {
        for (i, link) in self.replica_links().iter().enumerate() {
            if i + 1 != index {
                link.hold();
            }
        }
    }

    /// The replicas' links; none when they reach the master over the
    /// network (as [`Wiring::Partition`] has them on Docker).
    fn replica_links(&self) -> &[ReplicationLink] {
        match &self.paths {
            PeerPaths::Links { replicas, .. } => replicas,
            PeerPaths::Network => &[],
        }
    }

    /// Cuts `master` off from its replicas and the Sentinels, both ways,
    /// and says in `timeline` how.
    pub(crate) async fn cut_master_off(&self, master: &Node, timeline: &Timeline) -> Result<()> {
        match &self.paths {
            PeerPaths::Links {
                replicas,
                sentinels,
            } => {
                for link in replicas.iter().chain([sentinels]) {
                    link.cut();
                }
                self.mark("fault");
                timeline.record("harness", format!(
                    "the harness CUTS the links between {} and its peers (both replicas, all three Sentinels): nothing passes either way",
                    master.label()
                ));
            }
            PeerPaths::Network => {
                let container = docker_node(master)?;
                container.leave_network().await?;
                self.mark("fault");
                timeline.record("harness", format!(
                    "the harness DISCONNECTED {} ({}) from Docker network {}, the only way its replicas and Sentinels reach it; the harness and client-A still reach it at {} on {}",
                    master.label(),
                    container.peer_addr().ip(),
                    container.network_name().await?,
                    container.addr().ip(),
                    container.clients_network_name().await?,
                ));
            }
        }
        Ok(())
    }

    /// Heals the partition around `master`, and says in `timeline` how.
    pub(crate) async fn heal(&self, master: &Node, timeline: &Timeline) -> Result<()> {
        match &self.paths {
            PeerPaths::Links {
                replicas,
                sentinels,
            } => {
                for link in replicas.iter().chain([sentinels]) {
                    link.heal();
                }
                self.mark("heal");
                timeline.record(
                    "harness",
                    format!(
                        "the harness HEALS the links between {} and its peers",
                        master.label()
                    ),
                );
            }
            PeerPaths::Network => {
                let container = docker_node(master)?;
                container.join_network().await?;
                self.mark("heal");
                timeline.record(
                    "harness",
                    format!(
                        "the harness RECONNECTED {} to Docker network {}, at the same address ({})",
                        master.label(),
                        container.network_name().await?,
                        container.peer_addr().ip(),
                    ),
                );
            }
        }
        Ok(())
    }

    /// Notes that the harness did `step` now (`"fault"`, `"heal"`, …), for
    /// the line of phase times.
    pub(crate) fn mark(&self, step: &'static str) {
        self.phases.mark(step);
    }

    /// Stops recording what the Sentinels say (before the run's reckoning,
    /// so that its verdict is the timeline's last word), and says in
    /// `timeline` how long each phase took.
    pub(crate) fn stop_watching(&mut self, timeline: &Timeline) {
        self.watchers.clear();
        timeline.record("harness", self.phases.line(timeline));
    }

    /// Waits until the Sentinels announce a new master (`+switch-master`);
    /// returns its `host:port`.
    pub(crate) async fn wait_for_switch(&mut self) -> Result<String> {
        let new_master = wait_for_switch(&mut self.switches, SWITCH_WITHIN).await?;
        // The first Sentinel to announce it is not the last: a client that
        // asks one still naming the dead master would wait on it (on
        // Docker a killed node's address answers nothing, and the client
        // timed out). The story goes on once every Sentinel names the new
        // master.
        let deadline = Instant::now() + SWITCH_WITHIN;
        for sentinel in &self.sentinels {
            let mut conn = lockcore::connect(&sentinel.url(), "harness-sentinel").await?;
            loop {
                let named: Vec<String> = redis::cmd("SENTINEL")
                    .arg("GET-MASTER-ADDR-BY-NAME")
                    .arg(SERVICE)
                    .query_async(&mut conn)
                    .await?;
                if named.join(":") == new_master {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(HarnessError::Topology(format!(
                        "{} still names {} as the master, not {new_master}",
                        sentinel.label(),
                        named.join(":")
                    )));
                }
                sleep(POLL).await;
            }
        }
        Ok(new_master)
    }
}

/// Makes `replica` follow the master at `master` (a link's address, or
/// the master's own), announcing its own address (through a link, the
/// master sees the link's address, not the replica's).
async fn follow(replica: &Node, master: SocketAddr) -> Result<()> {
    let mut conn = lockcore::connect(&replica.url(), "harness").await?;
    let (own_host, _) = replica.host_port();
    redis::cmd("CONFIG")
        .arg("SET")
        .arg("replica-announce-ip")
        .arg(own_host)
        .query_async::<()>(&mut conn)
        .await?;
    redis::cmd("REPLICAOF")
        .arg(master.ip().to_string())
        .arg(master.port())
        .query_async::<()>(&mut conn)
        .await?;
    Ok(())
}

/// Sets [`PERIODS`] on `sentinel`.
async fn set_periods(sentinel: &Node) -> Result<()> {
    let mut conn = lockcore::connect(&sentinel.url(), "harness").await?;
    let mut debug = redis::cmd("SENTINEL");
    debug.arg("DEBUG");
    for (name, period) in PERIODS {
        debug.arg(*name).arg(period.as_millis() as u64);
    }
    debug.query_async::<()>(&mut conn).await?;
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
            return Err(HarnessError::Topology(format!(
                "{} knew {} Sentinels and {} replicas after {SETTLE_WITHIN:?}, not {peers} and {replicas}",
                sentinel.label(),
                known_peers.len(),
                known_replicas.len()
            )));
        }
        sleep(POLL).await;
    }
}
