//! The ways into a cluster node on the process backend: relays on loopback
//! that the node announces as its own ports (`cluster-announce-port`,
//! `cluster-announce-bus-port`), so every other node, every replica and
//! every client reaches it through them. The harness's own watchers go to
//! the node's real ports and are never faulted.
//!
//! A relay tells its connections apart by their first bytes:
//! - on the client port, a replica's replication stream (it sends
//!   `REPLCONF` and `PSYNC`) from ordinary clients;
//! - on the bus port, which node a connection comes from (every bus message
//!   starts with a header that names its sender).
//!
//! So the harness can hold back what a master sends its replica while the
//! clients' traffic flows (the window of asynchronous replication, kept
//! open, as the Sentinel stories do it), or cut a node off from the other
//! nodes while its clients still reach it (a partition between hosts, made
//! on one host).

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::error::Result;

/// What a relay stands in front of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Port {
    /// The node's client port: clients, and its replicas' replication.
    Client,
    /// The node's cluster bus port: the other nodes' gossip and votes.
    Bus,
}

/// What a relay lets through, set by the harness.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Rules {
    /// Replication connections: the replica's bytes go up, the master's
    /// wait (lost if the master dies).
    hold_replication: bool,
    /// Nothing passes on replication connections, either way.
    cut_replication: bool,
    /// Nothing passes on any connection, either way.
    cut_all: bool,
    /// Nothing passes on bus connections that node (its 40-character id)
    /// opened.
    cut_from: Option<String>,
}

/// Who is at the far end of a relayed connection, as its first bytes say.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
enum Origin {
    /// Not known yet, or an ordinary client.
    #[default]
    Client,
    /// A replica following this node.
    Replica,
    /// The cluster node with this id.
    Node(String),
}

/// What happens to the bytes in hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Pass,
    Hold,
    Drop,
}

impl Rules {
    fn flow(&self, origin: &Origin, downward: bool) -> Flow {
        if self.cut_all {
            return Flow::Drop;
        }
        match origin {
            Origin::Replica if self.cut_replication => Flow::Drop,
            Origin::Replica if self.hold_replication && downward => Flow::Hold,
            Origin::Node(id) if self.cut_from.as_deref() == Some(id) => Flow::Drop,
            _ => Flow::Pass,
        }
    }
}

/// A relay in front of one port of one node. Stops when dropped.
#[derive(Debug)]
pub(crate) struct NodeRelay {
    /// Where the others reach the node: the relay.
    pub(crate) addr: SocketAddr,
    rules: watch::Sender<Rules>,
    acceptor: Option<JoinHandle<()>>,
    listener: Option<TcpListener>,
}

impl NodeRelay {
    /// Binds a relay on loopback, before its node exists (the node is
    /// started announcing this address); [`NodeRelay::start`] it then.
    pub(crate) async fn bind() -> Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        Ok(Self {
            addr: listener.local_addr()?,
            rules: watch::channel(Rules::default()).0,
            acceptor: None,
            listener: Some(listener),
        })
    }

    /// Relays every connection to `target`, the node's `port`.
    pub(crate) fn start(&mut self, target: SocketAddr, port: Port) {
        let Some(listener) = self.listener.take() else {
            return;
        };
        let rules = self.rules.clone();
        self.acceptor = Some(tokio::spawn(async move {
            let mut relays = Vec::new();
            while let Ok((peer, _)) = listener.accept().await {
                relays.push(Relay::spawn(peer, target, port, rules.subscribe()));
            }
        }));
    }

    /// From now on, what the node sends its replicas waits.
    pub(crate) fn hold_replication(&self) {
        self.rules.send_modify(|r| r.hold_replication = true);
    }

    /// From now on, nothing passes between the node and its replicas.
    pub(crate) fn cut_replication(&self) {
        self.rules.send_modify(|r| r.cut_replication = true);
    }

    /// From now on, nothing passes on any connection.
    pub(crate) fn cut_all(&self) {
        self.rules.send_modify(|r| r.cut_all = true);
    }

    /// From now on, nothing passes on bus connections opened by node `id`.
    pub(crate) fn cut_from(&self, id: &str) {
        self.rules.send_modify(|r| r.cut_from = Some(id.to_owned()));
    }

    /// Lets everything through again. A connection that lost bytes while
    /// cut is closed (its stream can no longer be trusted): its side
    /// connects again.
    pub(crate) fn heal(&self) {
        self.rules.send_replace(Rules::default());
    }
}

impl Drop for NodeRelay {
    fn drop(&mut self) {
        if let Some(acceptor) = &self.acceptor {
            // Aborting the acceptor drops its relays, which abort theirs.
            acceptor.abort();
        }
    }
}

/// One connection, relayed to the node and back. Aborted when dropped.
struct Relay(JoinHandle<()>);

impl Relay {
    fn spawn(
        peer: TcpStream,
        target: SocketAddr,
        port: Port,
        rules: watch::Receiver<Rules>,
    ) -> Self {
        Self(tokio::spawn(async move {
            let Ok(node) = TcpStream::connect(target).await else {
                return; // the node is gone: the peer sees its connection drop
            };
            let (node_reads, node_writes) = node.into_split();
            let (peer_reads, peer_writes) = peer.into_split();
            let (origin_tx, origin) = watch::channel(Origin::Client);
            let upward = pass(
                peer_reads,
                node_writes,
                rules.clone(),
                Direction::Up(port, origin_tx),
            );
            let downward = pass(node_reads, peer_writes, rules, Direction::Down(origin));
            tokio::select! {
                () = upward => {}
                () = downward => {}
            }
        }))
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Which way bytes go: up from the peer (whose first bytes say who it is)
/// or down from the node.
enum Direction {
    Up(Port, watch::Sender<Origin>),
    Down(watch::Receiver<Origin>),
}

/// The bytes of a bus message's header up to the end of its sender's id:
/// signature `RCmb` (4), length (4), version, port, type, count (2 each),
/// current epoch, config epoch, offset (8 each), then the sender (40).
const BUS_HEADER_TO_SENDER: usize = 80;
const BUS_SENDER: std::ops::Range<usize> = 40..80;

/// Copies `from` to `to` as the rules allow, until either side closes or
/// a cut that lost bytes has healed.
async fn pass(
    mut from: impl AsyncReadExt + Unpin,
    mut to: impl AsyncWriteExt + Unpin,
    mut rules: watch::Receiver<Rules>,
    direction: Direction,
) {
    let mut buf = vec![0u8; 16 * 1024];
    let mut lost = false;
    let mut prefix = Vec::new();
    while let Ok(n @ 1..) = from.read(&mut buf).await {
        let origin = match &direction {
            Direction::Up(port, origin) => {
                if let Some(found) = identify(*port, &mut prefix, &buf[..n]) {
                    origin.send_replace(found);
                }
                origin.borrow().clone()
            }
            Direction::Down(origin) => origin.borrow().clone(),
        };
        let downward = matches!(direction, Direction::Down(_));
        // Bytes in hand. Held ones wait until the rules change (or the node
        // dies); cut ones are dropped.
        let Ok(flow) = rules
            .wait_for(|r| r.flow(&origin, downward) != Flow::Hold)
            .await
            .map(|r| r.flow(&origin, downward))
        else {
            break;
        };
        match flow {
            Flow::Drop => lost = true,
            _ if lost => break,
            _ => {
                if to.write_all(&buf[..n]).await.is_err() {
                    break;
                }
            }
        }
    }
}

/// Who the peer is, once its bytes so far say it: a replica's handshake on
/// the client port, the sender's id in the first bus message's header.
fn identify(port: Port, prefix: &mut Vec<u8>, bytes: &[u8]) -> Option<Origin> {
    match port {
        Port::Client => {
            let replica = [&b"REPLCONF"[..], b"PSYNC", b"replconf", b"psync"]
                .iter()
                .any(|word| bytes.windows(word.len()).any(|w| w == *word));
            replica.then_some(Origin::Replica)
        }
        Port::Bus if prefix.len() < BUS_HEADER_TO_SENDER => {
            let wanted = BUS_HEADER_TO_SENDER - prefix.len();
            prefix.extend_from_slice(&bytes[..bytes.len().min(wanted)]);
            (prefix.len() == BUS_HEADER_TO_SENDER && prefix.starts_with(b"RCmb"))
                .then(|| Origin::Node(String::from_utf8_lossy(&prefix[BUS_SENDER]).into_owned()))
        }
        Port::Bus => None,
    }
}
