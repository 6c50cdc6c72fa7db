//! The master + asynchronous replica topology, for the failover story.
//!
//! Redis replication is asynchronous: the master answers a write as soon as
//! it has applied it, and streams it to its replicas afterwards. A lock the
//! master granted exists nowhere else until the stream has carried it over.
//! If the master dies in that window and the replica is promoted, the lock
//! is simply not there.
//!
//! In production the window is usually a millisecond or less. To keep it
//! open on purpose, the replica follows its master through a
//! [`ReplicationLink`], a relay the harness can tell to hold back what the
//! master sends. Freezing the replica (SIGSTOP) is not enough: the master's
//! bytes still land in the frozen replica's socket buffer, and it applies
//! them the moment it is thawed, often before it can be promoted.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep};

use crate::error::{HarnessError, Result};
use crate::server::{Backend, Node};

/// How long a fresh replica may take to finish its first sync.
const SYNC_WITHIN: Duration = Duration::from_secs(10);
/// How often its replication state is asked for meanwhile.
const SYNC_POLL: Duration = Duration::from_millis(10);
/// How often a node's replication state is asked while a story waits on
/// it ([`wait_for_replication_info`]).
const POLL: Duration = Duration::from_millis(50);

/// A master and the replica that follows it through a
/// [`ReplicationLink`], in sync. Keep the link for as long as the nodes.
pub(crate) struct Replicated {
    /// Labelled `master`.
    pub(crate) master: Node,
    /// Labelled `replica`.
    pub(crate) replica: Node,
    /// The replica's way to the master.
    pub(crate) link: ReplicationLink,
}

impl Replicated {
    /// Starts a master and one replica of it on `backend` (on Docker, a
    /// network of their own), the replica following the master through a
    /// [`ReplicationLink`], and waits until the replica is in sync.
    pub(crate) async fn start(backend: &Backend) -> Result<Self> {
        // A master waits 5 s by default before a full sync, hoping for more
        // replicas to serve at once; there is only one.
        // The master and its replica on a network of their own: in a
        // matrix, a rig an earlier cell of this kind left, with its nodes
        // wiped (see harness::server::Spares).
        let peers = backend.for_rig("replicated");
        let args = ["--repl-diskless-sync-delay", "0"];
        let (master, replica) = tokio::try_join!(
            Node::start(&peers, "master", &args),
            Node::start(&peers, "replica", &args),
        )?;
        let link = ReplicationLink::start(&master).await?;
        let mut conn = lockcore::connect(&replica.url(), "harness").await?;
        redis::cmd("REPLICAOF")
            .arg(link.addr.ip().to_string())
            .arg(link.addr.port())
            .query_async::<()>(&mut conn)
            .await?;
        drop(conn);
        wait_in_sync(&replica).await?;
        Ok(Self {
            master,
            replica,
            link,
        })
    }
}

/// The way from a master to one of its peers (a replica; on the Sentinel
/// topology, the Sentinels too): a relay on a port of the harness's host
/// that the peer takes for the master. The harness can *hold* what the
/// master sends (the peer's own bytes still go up, as when replication
/// merely lags), or *cut* the link both ways (a partition between hosts),
/// and heal it. Stops when dropped.
#[derive(Debug)]
pub(crate) struct ReplicationLink {
    /// Where the peer finds its "master": the relay.
    pub(crate) addr: SocketAddr,
    state: watch::Sender<LinkState>,
    acceptor: JoinHandle<()>,
}

/// What a [`ReplicationLink`] lets through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LinkState {
    /// Everything, both ways.
    Open,
    /// The peer's bytes go up; the master's wait (lost if the master dies).
    Held,
    /// Nothing, either way: bytes are dropped, as across a broken network.
    Cut,
}

impl ReplicationLink {
    /// A relay in front of `master`, listening where the master's peers
    /// reach the harness's host.
    pub(crate) async fn start(master: &Node) -> Result<Self> {
        let listener = TcpListener::bind((master.host_seen_from_here().await?, 0)).await?;
        let addr = listener.local_addr()?;
        let master = master.addr();
        let (state, _) = watch::channel(LinkState::Open);
        let states = state.clone();
        let acceptor = tokio::spawn(async move {
            let mut relays = Vec::new();
            while let Ok((peer, _)) = listener.accept().await {
                relays.push(Relay::spawn(peer, master, states.subscribe()));
            }
        });
        Ok(Self {
            addr,
            state,
            acceptor,
        })
    }

    /// From now on, nothing the master sends reaches the peer.
    pub(crate) fn hold(&self) {
        self.state.send_replace(LinkState::Held);
    }

    /// From now on, nothing passes either way.
    pub(crate) fn cut(&self) {
        self.state.send_replace(LinkState::Cut);
    }

    /// Lets everything through again. A connection that lost bytes while
    /// cut is closed (its stream can no longer be trusted): the peer
    /// connects again.
    pub(crate) fn heal(&self) {
        self.state.send_replace(LinkState::Open);
    }
}

impl Drop for ReplicationLink {
    fn drop(&mut self) {
        // Aborting the acceptor drops its relays, which abort theirs.
        self.acceptor.abort();
    }
}

/// One connection from a peer, relayed to the master and back. Aborted
/// when dropped.
struct Relay(JoinHandle<()>);

impl Relay {
    fn spawn(peer: TcpStream, master: SocketAddr, state: watch::Receiver<LinkState>) -> Self {
        Self(tokio::spawn(async move {
            let Ok(master) = TcpStream::connect(master).await else {
                return; // the master is gone: the peer sees its link drop
            };
            let (master_reads, master_writes) = master.into_split();
            let (peer_reads, peer_writes) = peer.into_split();
            // The peer's bytes (a replica's acknowledgements) are held by
            // nothing but a cut.
            let upward = pass(peer_reads, master_writes, state.clone(), false);
            let downward = pass(master_reads, peer_writes, state, true);
            tokio::select! {
                () = upward => {}
                () = downward => {}
            }
        }))
    }
}

/// Copies `from` to `to` as the link's state allows, until either side
/// closes or a cut that lost bytes has healed. `holdable`: this is the
/// master's direction, which a held link keeps waiting.
async fn pass(
    mut from: impl AsyncReadExt + Unpin,
    mut to: impl AsyncWriteExt + Unpin,
    mut state: watch::Receiver<LinkState>,
    holdable: bool,
) {
    let mut buf = vec![0u8; 16 * 1024];
    let mut lost = false;
    while let Ok(n @ 1..) = from.read(&mut buf).await {
        // Bytes in hand. A held link keeps them until it opens (or the
        // master dies); a cut one drops them.
        let Ok(now) = state
            .wait_for(|s| !(holdable && *s == LinkState::Held))
            .await
            .map(|s| *s)
        else {
            break;
        };
        match now {
            LinkState::Cut => lost = true,
            _ if lost => break,
            _ => {
                if to.write_all(&buf[..n]).await.is_err() {
                    break;
                }
            }
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Waits until `replica` reports its link to the master up, which it does
/// once the first full sync is done.
pub(crate) async fn wait_in_sync(replica: &Node) -> Result<()> {
    let mut conn = lockcore::connect(&replica.url(), "harness").await?;
    let deadline = Instant::now() + SYNC_WITHIN;
    loop {
        let info: String = redis::cmd("INFO")
            .arg("replication")
            .query_async(&mut conn)
            .await?;
        if info
            .lines()
            .any(|line| line.trim() == "master_link_status:up")
        {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(HarnessError::Topology(format!(
                "the replica at {} was not in sync with its master within {SYNC_WITHIN:?}",
                replica.url()
            )));
        }
        sleep(SYNC_POLL).await;
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
            return Err(HarnessError::Topology(format!(
                "{} did not say {wanted} within {within:?}",
                node.label()
            )));
        }
        sleep(POLL).await;
    }
}
