//! The Redis Cluster topology: three masters, each with one replica, the
//! 16384 slots split among the masters. Nobody watches the cluster from
//! outside: its nodes ping each other on the cluster bus, call a silent
//! master down once a majority of masters agree, and its replica promotes
//! itself after an election among the masters. The harness never promotes
//! anything here.
//!
//! Clients know the cluster by its nodes (a `redis+cluster://` URL, see
//! `lockcore::connect`): redis-rs's cluster client asks which master serves
//! each slot and sends each command to the master of its key's slot,
//! following `MOVED` and `ASK`, as production cluster clients do.
//!
//! Nodes are placed so that `nodes[0]` (`master1`) serves the slot of the
//! lock's key and `nodes[1]` (`replica1`) replicates it; `master2`,
//! `replica2`, `master3`, `replica3` serve the other slots. The timeline
//! names the slot.
//!
//! Timeouts are short but safe: `cluster-node-timeout` is [`NODE_TIMEOUT`]
//! (production keeps 15 s); a live node answers a ping in well under a
//! millisecond. What the cluster waits on besides, Redis fixes: a replica
//! stands for election half a second to a second after its master is
//! failed. A failover takes a second and a half or so.
//!
//! How a story reaches into the cluster depends on the backend:
//! - processes: every node announces relays the harness runs on loopback
//!   as its ports (see [`Relay`]: it tells a replica's connection from a
//!   client's, and a bus connection by the node that opened it), so a story can hold back what a master
//!   sends its replica, or cut a master off from every other node while its
//!   clients still reach it.
//! - Docker: every node is a container at its own address on the run's
//!   network, announced as such (`cluster-announce-ip`), and every node,
//!   replica and cluster client reaches it there. Nothing relays between
//!   two containers, so replication cannot be held: the master refuses its
//!   replica instead (an ACL takes `PSYNC` and `SYNC` from its default user,
//!   and the replica's connection is closed), and the replica falls behind
//!   as one whose link is down. The partition is a real one, as in the
//!   Sentinel split brain: master1 is disconnected from the run's network
//!   and connected again at the same address; it is on the run's clients'
//!   network too, where the harness and client-A reach it directly (the
//!   address it announces to the cluster is the one cut).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use lockcore::Connection;
use tokio::time::{Instant, sleep};

use super::phases::Phases;
use super::replicated::wait_for_replication_info;
use super::{LEASE, docker_node};
use crate::error::{HarnessError, Result};
use crate::fault::relay::{Relay, Sniff, Who};
use crate::observe::{ClusterWatcher, Timeline, cluster_nodes};
use crate::server::{Backend, CONTAINER_CLUSTER_BUS_PORT, Node, external};

/// How long a node may stay silent before another calls it failing
/// (`fail?`), and the unit of the cluster's other waits (a failure report
/// is valid for two of these). Production keeps the default, 15 s.
// ANCHOR: node_timeout
const NODE_TIMEOUT: Duration = Duration::from_millis(500);
// ANCHOR_END: node_timeout
/// The slots, split in three ranges as `redis-cli --cluster create` does.
const RANGES: [(u16, u16); 3] = [(0, 5460), (5461, 10922), (10923, 16383)];
/// Labels, in the order of the nodes handed back: each master and then its
/// replica.
const LABELS: [&str; 6] = [
    "master1", "replica1", "master2", "replica2", "master3", "replica3",
];
/// The node whose view the timeline shows: a master that is never faulted.
const WATCHING: usize = 2;
/// How long the nodes may take to know each other, agree on the slots and
/// have their replicas in sync.
const SETTLE_WITHIN: Duration = Duration::from_secs(30);
/// How long a failover may take (a failed election is retried after twice
/// the node timeout).
const PROMOTED_WITHIN: Duration = Duration::from_secs(30);
/// How often the nodes are asked while the harness waits on them.
const POLL: Duration = Duration::from_millis(20);
/// How much longer than a client the harness waits for a node's reply
/// while it sets the cluster up.
const SETUP_PATIENCE: Duration = Duration::from_secs(2);

/// The cluster: the ways into its nodes, their ids, the slot of the lock's
/// key, and the watcher of the cluster's view; the nodes themselves are
/// handed to whoever keeps the lock nodes. Keep it for as long as those.
/// Every method that takes `nodes` takes those, in [`LABELS`]' order.
pub(crate) struct ClusterTopology {
    /// Declared (so dropped) first: it stops asking before the nodes go.
    watcher: Option<ClusterWatcher>,
    paths: Paths,
    /// `addrs[i]`: where the other nodes and cluster clients reach
    /// `nodes[i]` (its relay, or its own address on the run's network).
    addrs: Vec<SocketAddr>,
    /// `ids[i]`: the cluster's id of `nodes[i]`.
    ids: Vec<String>,
    /// The slot of the lock's key.
    pub(crate) slot: u16,
    /// When the story's steps happened, for its line of phase times.
    phases: Phases,
}

/// The cluster's events a phase line shows, each the first one after the
/// fault (or the heal).
const TIMED_EVENTS: &[&str] = &["+pfail", "+fail", "+promoted", "+demoted"];

/// A cut being made (see [`ClusterTopology::cut_off`]).
#[must_use = "a cut is made only once it is finished"]
pub(crate) struct Cut {
    /// On Docker: the engine's disconnect, when it was asked for, and the
    /// label of the node it cuts off.
    engine: Option<(tokio::task::JoinHandle<Result<()>>, Instant, String)>,
}

impl Cut {
    /// Waits until the cut is in place, and says so in `timeline` with
    /// how long the engine took.
    pub(crate) async fn finished(self, timeline: &Timeline) -> Result<()> {
        let Some((engine, started, label)) = self.engine else {
            return Ok(());
        };
        engine
            .await
            .map_err(|e| HarnessError::Docker(format!("the disconnect task failed: {e}")))??;
        timeline.record("harness", format!(
            "the Docker engine answered {}ms after it was asked: {label} is DISCONNECTED from the other nodes",
            started.elapsed().as_millis()
        ));
        Ok(())
    }
}

/// How the harness reaches between the nodes.
enum Paths {
    /// Processes: `relays[i]` are the client and bus relays of `nodes[i]`.
    Relays(Vec<(Relay, Relay)>),
    /// Containers: the nodes reach each other at their addresses on the
    /// run's network, and the harness acts on the containers and on the
    /// servers themselves.
    Network,
}

impl ClusterTopology {
    /// The URL clients use: every node, through its relay.
    pub(crate) fn url(&self) -> String {
        self.url_of(&[0, 1, 2, 3, 4, 5])
    }

    /// A cluster URL that names `nodes` only (a client that reaches no
    /// other node starts from them).
    pub(crate) fn url_of(&self, nodes: &[usize]) -> String {
        let addrs: Vec<String> = nodes
            .iter()
            .filter_map(|&i| self.addrs.get(i))
            .map(SocketAddr::to_string)
            .collect();
        lockcore::cluster_url(&addrs)
    }

    /// The URL of a client on `nodes[master]`'s side of
    /// [`ClusterTopology::cut_off`]: a cluster client that knows the cluster
    /// by that node alone on processes; on Docker a plain client of the node
    /// at its address on the clients' network, since the address it
    /// announces to the cluster (which a cluster client would be sent to)
    /// is on the network that is cut.
    pub(crate) fn url_on_side_of(&self, nodes: &[Node], master: usize) -> String {
        match self.paths {
            Paths::Relays(_) => self.url_of(&[master]),
            Paths::Network => nodes[master].url(),
        }
    }

    /// `redis://` of node `index` as clients reach it.
    pub(crate) fn client_url(&self, index: usize) -> String {
        format!("redis://{}", self.addrs[index])
    }

    /// From now on, nothing `nodes[master]` is sent reaches its replica;
    /// its clients' traffic flows. Says in `timeline` how.
    pub(crate) async fn hold_replication(
        &self,
        nodes: &[Node],
        master: usize,
        timeline: &Timeline,
    ) -> Result<()> {
        let (label, replica) = (nodes[master].label(), nodes[master + 1].label());
        match &self.paths {
            Paths::Relays(relays) => {
                relays[master].0.hold(Who::Replicas);
                timeline.record(
                    "harness",
                    format!(
                        "replication held back: from now on nothing {label} sends reaches {replica}"
                    ),
                );
            }
            Paths::Network => {
                refuse_replicas(&nodes[master]).await?;
                timeline.record("harness", format!(
                    "replication stopped: {label} refuses its replica (an ACL takes PSYNC and SYNC from its default user) and has closed {replica}'s replication connection; {replica} tries to resync every second and is refused, so nothing {label} is sent from now on reaches it"
                ));
            }
        }
        Ok(())
    }

    /// Cuts `nodes[master]` off from every other node and from its
    /// replica's replication, both ways; clients on its side still reach
    /// it (see [`ClusterTopology::url_on_side_of`]). Says in `timeline`
    /// how. The cut is made when the returned [`Cut`] is finished: at once
    /// on processes; on Docker, when the engine answers, which a story does
    /// not wait for before its client asks the cut-off master.
    pub(crate) async fn cut_off(
        &self,
        nodes: &[Node],
        master: usize,
        timeline: &Timeline,
    ) -> Result<Cut> {
        let node = &nodes[master];
        match &self.paths {
            Paths::Relays(relays) => {
                let id = &self.ids[master];
                for (i, (client, bus)) in relays.iter().enumerate() {
                    if i == master {
                        bus.cut(Who::All);
                        client.cut(Who::Replicas);
                    } else {
                        bus.cut(Who::Node(id.clone()));
                    }
                }
                self.mark("fault");
                timeline.record("harness", format!(
                    "the harness CUTS {} off: the cluster bus between it and the five other nodes, and its replication to {}, drop everything both ways; clients still reach it",
                    node.label(),
                    nodes[master + 1].label(),
                ));
                Ok(Cut { engine: None })
            }
            Paths::Network => {
                let container = docker_node(node)?;
                // Whether client-A's request lands just before the link
                // goes or just after, its lock must not reach the replica.
                refuse_replicas(node).await?;
                let started = Instant::now();
                let engine = container.start_leaving_network().await?;
                self.mark("fault");
                timeline.record("harness", format!(
                    "the harness CUTS {label} off: it stops {label}'s replication ({label} refuses {replica}: an ACL takes PSYNC and SYNC from its default user) and asks the Docker engine to disconnect {label} ({peer}) from network {network}, where the five other nodes reach it; the harness and client-A still reach it at {addr} on {clients}",
                    label = node.label(),
                    replica = nodes[master + 1].label(),
                    peer = container.peer_addr().ip(),
                    network = container.network_name().await?,
                    addr = container.addr().ip(),
                    clients = container.clients_network_name().await?,
                ));
                Ok(Cut {
                    engine: Some((engine, started, node.label().to_owned())),
                })
            }
        }
    }

    /// Heals every cut, and says in `timeline` how.
    pub(crate) async fn heal(
        &self,
        nodes: &[Node],
        master: usize,
        timeline: &Timeline,
    ) -> Result<()> {
        match &self.paths {
            Paths::Relays(relays) => {
                for (client, bus) in relays {
                    client.heal();
                    bus.heal();
                }
                self.mark("heal");
                timeline.record(
                    "harness",
                    "the harness HEALS the cut: every node hears every other again",
                );
            }
            Paths::Network => {
                let node = &nodes[master];
                let container = docker_node(node)?;
                container.join_network().await?;
                self.mark("heal");
                timeline.record("harness", format!(
                    "the harness RECONNECTED {} to Docker network {}, at the same address ({}): every node hears every other again",
                    node.label(),
                    container.network_name().await?,
                    container.peer_addr().ip(),
                ));
            }
        }
        Ok(())
    }

    /// Notes that the harness did `step` now, for the line of phase times.
    pub(crate) fn mark(&self, step: &'static str) {
        self.phases.mark(step);
    }

    /// Waits until every node in `asked` says that `nodes[replica]` serves
    /// the lock's slot: the cluster promoted it, and any client asking
    /// those nodes finds it.
    pub(crate) async fn wait_for_promotion(
        &self,
        nodes: &[Node],
        replica: usize,
        asked: &[usize],
    ) -> Result<()> {
        let wanted = &self.ids[replica];
        let deadline = Instant::now() + PROMOTED_WITHIN;
        let mut conns = Vec::new();
        for &i in asked {
            conns.push(lockcore::connect(&nodes[i].url(), "harness").await?);
        }
        loop {
            let mut agreed = true;
            for conn in &mut conns {
                let view = cluster_nodes(conn).await.unwrap_or_default();
                if self.slot_master(&view).as_deref() != Some(wanted.as_str()) {
                    agreed = false;
                    break;
                }
            }
            if agreed {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(HarnessError::Topology(format!(
                    "the cluster did not promote {} within {PROMOTED_WITHIN:?}",
                    nodes[replica].label()
                )));
            }
            sleep(POLL).await;
        }
    }

    /// The id of the master that serves the lock's slot in `view`.
    fn slot_master(&self, view: &[crate::observe::ClusterNode]) -> Option<String> {
        view.iter()
            .filter(|n| n.master && !n.fail)
            .find(|n| n.slots.iter().any(|range| covers(range, self.slot)))
            .map(|n| n.id.clone())
    }

    /// Stops watching the cluster (before the run's reckoning, so that its
    /// verdict is the timeline's last word), and says in `timeline` how
    /// long each phase took.
    pub(crate) fn stop_watching(&mut self, timeline: &Timeline) {
        self.watcher = None;
        timeline.record("harness", self.phases.line(timeline));
    }
}

/// Whether `range` (`5461-10922`, or one slot `42`) holds `slot`.
fn covers(range: &str, slot: u16) -> bool {
    let (low, high) = range.split_once('-').unwrap_or((range, range));
    match (low.parse::<u16>(), high.parse::<u16>()) {
        (Ok(low), Ok(high)) => (low..=high).contains(&slot),
        _ => false,
    }
}

impl ClusterTopology {
    /// Starts a Redis Cluster of three masters and three replicas on
    /// `backend` (see the module's documentation for who is where), and
    /// waits until every node knows every other, every slot is served
    /// (`cluster_state:ok`) and every replica is in sync. Hands back the
    /// six nodes, in [`LABELS`]' order; clients know the cluster by all of
    /// them ([`ClusterTopology::url`]). [`ClusterTopology::watch`] it once
    /// there is a timeline.
    pub(crate) async fn start(backend: &Backend) -> Result<(Self, Vec<Node>)> {
        let on_docker = match backend {
            Backend::Process => false,
            Backend::Docker { .. } => true,
            Backend::External(_) => return Err(HarnessError::NotApplicable(external::NO_FAULTS)),
        };
        let phases = Phases::new("the six-node cluster", TIMED_EVENTS);
        let timeout = NODE_TIMEOUT.as_millis().to_string();
        // ANCHOR: cluster_config
        let common = [
            "--cluster-node-timeout",
            &timeout,
            // Every replica stays with its master.
            "--cluster-allow-replica-migration",
            "no",
            // No wait before a full sync: the replica is there.
            "--repl-diskless-sync-delay",
            "0",
        ];
        // ANCHOR_END: cluster_config

        // The six nodes start at once (on Docker each is a container,
        // seconds when started one after another).
        let (mut nodes, paths) = if on_docker {
            // The nodes on a network of their own: in a matrix, a rig that
            // an earlier cluster cell left, with its nodes reset (see
            // harness::server::Spares).
            let peers = backend.for_rig("cluster");
            let nodes = futures_util::future::try_join_all(
                LABELS
                    .iter()
                    .map(|label| Node::start_cluster_node(&peers, label, &common)),
            )
            .await?;
            (nodes, Paths::Network)
        } else {
            // Each node announces its relays as its ports, so the relays
            // are bound first.
            let mut relays = Vec::new();
            for _ in LABELS {
                let loopback = std::net::Ipv4Addr::LOCALHOST.into();
                relays.push((Relay::bind(loopback).await?, Relay::bind(loopback).await?));
            }
            let nodes = futures_util::future::try_join_all(LABELS.iter().zip(&relays).map(
                |(label, (client, bus))| {
                    let (client_port, bus_port) =
                        (client.addr.port().to_string(), bus.addr.port().to_string());
                    async move {
                        let announce = [
                            "--cluster-announce-ip",
                            "127.0.0.1",
                            "--cluster-announce-port",
                            &client_port,
                            "--cluster-announce-bus-port",
                            &bus_port,
                        ];
                        let args: Vec<&str> = common.iter().chain(&announce).copied().collect();
                        Node::start_cluster_node(backend, label, &args).await
                    }
                },
            ))
            .await?;
            for (node, (client, bus)) in nodes.iter().zip(&mut relays) {
                let bus_addr = node.cluster_bus_addr().ok_or_else(|| {
                    HarnessError::Topology(format!("{} has no cluster bus", node.label()))
                })?;
                client.start(node.addr(), Sniff::ClientPort);
                bus.start(bus_addr, Sniff::BusPort);
            }
            (nodes, Paths::Relays(relays))
        };
        // Where the other nodes and cluster clients reach each node (client
        // port, bus port).
        let ways: Vec<(SocketAddr, u16)> = match &paths {
            Paths::Relays(relays) => relays
                .iter()
                .map(|(client, bus)| (client.addr, bus.addr.port()))
                .collect(),
            Paths::Network => nodes
                .iter()
                .map(|n| (n.peer_addr(), CONTAINER_CLUSTER_BUS_PORT))
                .collect(),
        };
        if on_docker {
            // The partition story cuts master1 off the run's network; the
            // harness and client-A reach it on the clients' network.
            nodes[0].join_clients_network().await?;
        }
        // One connection to each node for all the asking below. The
        // harness's own setup waits longer for a reply than a client's
        // 500 ms: with builds beside the matrix a node once took longer to
        // answer a `CLUSTER` command, and the cell errored before its story
        // began.
        let mut conns =
            futures_util::future::try_join_all(
                nodes.iter().map(|n| {
                    let url = n.url();
                    async move {
                        lockcore::connect_blocking(&url, "harness", None, SETUP_PATIENCE).await
                    }
                }),
            )
            .await
            .map_err(|e| setup_failed("connecting to the nodes", e.into()))?;
        let mut ids = Vec::new();
        for (conn, (addr, _)) in conns.iter_mut().zip(&ways) {
            if on_docker {
                // The address on the run's network, even for a node that
                // is on the clients' network too.
                redis::cmd("CONFIG")
                    .arg("SET")
                    .arg("cluster-announce-ip")
                    .arg(addr.ip().to_string())
                    .query_async::<()>(conn)
                    .await?;
            }
            ids.push(
                redis::cmd("CLUSTER")
                    .arg("MYID")
                    .query_async::<String>(conn)
                    .await
                    .map_err(|e| setup_failed("CLUSTER MYID", e.into()))?,
            );
        }
        let slot = form_cluster(&mut conns, &ways, &ids)
            .await
            .map_err(|e| setup_failed("forming the cluster", e))?;
        for replica in [1, 3, 5] {
            redis::cmd("CLUSTER")
                .arg("REPLICATE")
                .arg(&ids[replica - 1])
                .query_async::<()>(&mut conns[replica])
                .await
                .map_err(|e| setup_failed("CLUSTER REPLICATE", e.into()))?;
        }
        wait_until_settled(&mut conns, &ids)
            .await
            .map_err(|e| setup_failed("waiting for the cluster to settle", e))?;
        drop(conns);

        let topology = Self {
            watcher: None,
            paths,
            addrs: ways.iter().map(|(addr, _)| *addr).collect(),
            ids,
            slot,
            phases,
        };
        Ok((topology, nodes))
    }

    /// Starts watching the cluster's view into `timeline`, names every
    /// node there by the address the cluster knows it by, and says what
    /// was set up (`key`: the lock's). The setup is done: the line of
    /// phase times counts from here.
    pub(crate) async fn watch(
        &mut self,
        nodes: &[Node],
        timeline: &Timeline,
        key: &str,
    ) -> Result<()> {
        let labels: HashMap<String, String> = self
            .ids
            .iter()
            .zip(LABELS)
            .map(|(id, label)| (id.clone(), label.to_owned()))
            .collect();
        for (addr, label) in self.addrs.iter().zip(LABELS) {
            timeline
                .history()
                .name_node(&format!("redis://{addr}"), label);
        }
        self.watcher = Some(
            ClusterWatcher::start(&nodes[WATCHING].url(), LABELS[WATCHING], timeline, labels)
                .await?,
        );
        self.phases.ready();
        let (low, high) = RANGES[range_of(self.slot)];
        timeline.record("harness", format!(
            "a Redis Cluster: 3 masters, each with a replica in sync, cluster-node-timeout {}ms; the lock key {key} is in slot {}, served by master1 (slots {low}-{high}) and replicated to replica1; clients know the cluster by its six nodes and follow MOVED/ASK",
            NODE_TIMEOUT.as_millis(),
            self.slot,
        ));
        Ok(())
    }
}

/// An error while the cluster is being set up, with the step it came from:
/// the run's timeline starts only once the cluster is up.
fn setup_failed(step: &str, error: HarnessError) -> HarnessError {
    HarnessError::Topology(format!("setting up the cluster, {step}: {error}"))
}

/// Makes `master` refuse its replicas: its default user may no longer
/// `PSYNC` or `SYNC` (a replica connects as that user), and the
/// replication connections it serves are closed. Waits until it serves
/// none.
async fn refuse_replicas(master: &Node) -> Result<()> {
    let mut conn = lockcore::connect(&master.url(), "harness").await?;
    redis::cmd("ACL")
        .arg("SETUSER")
        .arg("default")
        .arg("-psync")
        .arg("-sync")
        .query_async::<()>(&mut conn)
        .await?;
    redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("replica")
        .query_async::<i64>(&mut conn)
        .await?;
    wait_for_replication_info(master, "connected_slaves", "0", SETTLE_WITHIN).await
}

/// The range of [`RANGES`] that holds `slot`.
fn range_of(slot: u16) -> usize {
    RANGES
        .iter()
        .position(|(low, high)| (*low..=*high).contains(&slot))
        .unwrap_or(0)
}

/// Gives each master its slots and its own configuration epoch (as
/// `redis-cli --cluster create` does), the range with the lock key's slot
/// to `nodes[0]`, and introduces every node to every other (`CLUSTER
/// MEET`, at `ways`: each node's address and bus port), then waits until each knows every other by its
/// id (`ids`). Returns the lock key's slot.
async fn form_cluster(
    conns: &mut [Connection],
    ways: &[(SocketAddr, u16)],
    ids: &[String],
) -> Result<u16> {
    let key = lockcore::LockConfig::with_ttl(LEASE).key;
    let slot: u16 = redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(&key)
        .query_async(&mut conns[0])
        .await?;
    let first = range_of(slot);
    for (n, master) in [0, 2, 4].into_iter().enumerate() {
        let (low, high) = RANGES[(first + n) % RANGES.len()];
        redis::cmd("CLUSTER")
            .arg("SET-CONFIG-EPOCH")
            .arg(n + 1)
            .query_async::<()>(&mut conns[master])
            .await?;
        redis::cmd("CLUSTER")
            .arg("ADDSLOTSRANGE")
            .arg(low)
            .arg(high)
            .query_async::<()>(&mut conns[master])
            .await?;
    }
    for (i, conn) in conns.iter_mut().enumerate() {
        for (client, bus_port) in &ways[i + 1..] {
            redis::cmd("CLUSTER")
                .arg("MEET")
                .arg(client.ip().to_string())
                .arg(client.port())
                .arg(*bus_port)
                .query_async::<()>(conn)
                .await?;
        }
    }
    // Every node must know the five others before a replica can name its
    // master.
    let deadline = Instant::now() + SETTLE_WITHIN;
    loop {
        let mut known = true;
        for conn in conns.iter_mut() {
            // A node in the middle of a handshake is listed under a
            // temporary id until it answers.
            let view = cluster_nodes(conn).await?;
            known &= ids.iter().all(|id| view.iter().any(|n| &n.id == id));
        }
        if known {
            return Ok(slot);
        }
        if Instant::now() > deadline {
            return Err(HarnessError::Topology(format!(
                "the cluster's nodes did not all know each other within {SETTLE_WITHIN:?}"
            )));
        }
        sleep(POLL).await;
    }
}

/// Waits until every node says `cluster_state:ok`, sees each replica
/// following its master (a master grants its vote only to a replica of the
/// failed master, as it sees it), and every replica is in sync. A new
/// master says `ok` only two seconds after it started (Redis's
/// `CLUSTER_WRITABLE_DELAY`), most of the time this takes.
async fn wait_until_settled(conns: &mut [Connection], ids: &[String]) -> Result<()> {
    let deadline = Instant::now() + SETTLE_WITHIN;
    loop {
        let mut settled = true;
        for (i, conn) in conns.iter_mut().enumerate() {
            let info: String = redis::cmd("CLUSTER").arg("INFO").query_async(conn).await?;
            let view = cluster_nodes(conn).await?;
            let roles_known = [1, 3, 5].into_iter().all(|replica| {
                view.iter().any(|n| {
                    n.id == ids[replica]
                        && !n.master
                        && n.follows.as_ref() == Some(&ids[replica - 1])
                })
            });
            settled &= info.lines().any(|l| l.trim() == "cluster_state:ok") && roles_known;
            if i % 2 == 1 {
                let info: String = redis::cmd("INFO")
                    .arg("replication")
                    .query_async(conn)
                    .await?;
                settled &= info.lines().any(|l| l.trim() == "master_link_status:up");
            }
            if !settled {
                break;
            }
        }
        if settled {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(HarnessError::Topology(format!(
                "the cluster was not settled (state ok, replicas known and in sync) within {SETTLE_WITHIN:?}"
            )));
        }
        sleep(POLL).await;
    }
}
