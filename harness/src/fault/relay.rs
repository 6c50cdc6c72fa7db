//! The one byte relay: a port on the harness's host that stands in front of
//! a node's port, so that the harness can make the network between them
//! misbehave. The fault proxy in front of a lock node
//! ([`Proxy`](super::proxy::Proxy)), the link from a master to its replicas
//! and Sentinels ([`ReplicationLink`](super::link::ReplicationLink)) and a
//! cluster node's client and bus ports are each one of these, with rules of
//! their own.
//!
//! A relay tells its connections apart by the first bytes the far side
//! sends ([`Sniff`]):
//! - on a client port, a client's name from the `CLIENT SETNAME` every
//!   client of this project sends first, and a replica by its replication
//!   handshake (`REPLCONF`, `PSYNC`);
//! - on a cluster bus port, the node that opened the connection, named in
//!   the header of its first message.
//!
//! The rules ([`Rules`]) then say, per connection and direction, whether
//! bytes pass (perhaps late), wait (*held*: what the node sends, while the
//! other way flows, as replication that merely lags) or are dropped (*cut*:
//! both ways, as across a broken network). A connection that lost bytes is
//! closed once it heals: its stream can no longer be trusted, and its side
//! connects again. A node that is down makes the relay close the
//! connection at once, so a dead node is a quick "no", a cut one a slow
//! silence.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep_until};

use crate::error::Result;

/// What a relay reads in a connection's first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sniff {
    /// A node's client port: clients (by their names) and replicas.
    ClientPort,
    /// A cluster node's bus port: which node a connection comes from.
    BusPort,
}

/// Who is at the far end of a relayed connection, as its bytes so far say.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
enum Origin {
    /// Not known yet: a client before its `CLIENT SETNAME`.
    #[default]
    Unknown,
    /// A client that named itself.
    Client(String),
    /// A replica following the node.
    Replica,
    /// The cluster node with this id (40 characters).
    Node(String),
}

/// A set of connections a rule applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Who {
    /// Every connection.
    All,
    /// The node's replicas' connections.
    Replicas,
    /// The connections of the client with this name.
    Client(String),
    /// The bus connections that the cluster node with this id opened.
    Node(String),
}

impl Who {
    fn covers(&self, origin: &Origin) -> bool {
        match (self, origin) {
            (Who::All, _) | (Who::Replicas, Origin::Replica) => true,
            (Who::Client(name), Origin::Client(client)) => name == client,
            (Who::Node(id), Origin::Node(node)) => id == node,
            _ => false,
        }
    }
}

/// What a relay lets through, set by the harness.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Rules {
    /// Nothing passes on these connections, either way.
    pub(crate) cut: Vec<Who>,
    /// What the node sends on these connections waits (their own bytes
    /// still go up); lost if the node dies.
    pub(crate) held: Vec<Who>,
    /// What the node sends to these clients arrives this much later, each
    /// chunk held once and in order (the command runs at once, only its
    /// answer is late).
    pub(crate) delayed: HashMap<String, Duration>,
}

/// What happens to the bytes in hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Pass(Duration),
    Hold,
    Drop,
}

impl Rules {
    fn flow(&self, origin: &Origin, from_the_node: bool) -> Flow {
        if self.cut.iter().any(|who| who.covers(origin)) {
            return Flow::Drop;
        }
        if from_the_node && self.held.iter().any(|who| who.covers(origin)) {
            return Flow::Hold;
        }
        match origin {
            Origin::Client(name) if from_the_node => {
                Flow::Pass(self.delayed.get(name).copied().unwrap_or_default())
            }
            _ => Flow::Pass(Duration::ZERO),
        }
    }
}

/// A relay on one port of the harness's host. Stops, and closes every
/// connection, when dropped.
#[derive(Debug)]
pub(crate) struct Relay {
    /// Where the others reach the node: the relay.
    pub(crate) addr: SocketAddr,
    rules: watch::Sender<Rules>,
    upstream: Arc<Mutex<SocketAddr>>,
    listener: Option<TcpListener>,
    acceptor: Option<JoinHandle<()>>,
}

impl Relay {
    /// Binds a relay on `host`, before its node exists (a cluster node is
    /// started announcing this address); [`Relay::start`] it then.
    pub(crate) async fn bind(host: IpAddr) -> Result<Self> {
        let listener = TcpListener::bind((host, 0)).await?;
        Ok(Self {
            addr: listener.local_addr()?,
            rules: watch::channel(Rules::default()).0,
            upstream: Arc::new(Mutex::new(listener.local_addr()?)),
            listener: Some(listener),
            acceptor: None,
        })
    }

    /// A relay on `host` in front of `upstream`, relaying already.
    pub(crate) async fn to(host: IpAddr, upstream: SocketAddr, sniff: Sniff) -> Result<Self> {
        let mut relay = Self::bind(host).await?;
        relay.start(upstream, sniff);
        Ok(relay)
    }

    /// Relays every connection to `upstream`, reading its first bytes as
    /// `sniff` says.
    pub(crate) fn start(&mut self, upstream: SocketAddr, sniff: Sniff) {
        let Some(listener) = self.listener.take() else {
            return;
        };
        self.retarget(upstream);
        let rules = self.rules.clone();
        let upstream = Arc::clone(&self.upstream);
        self.acceptor = Some(tokio::spawn(async move {
            let mut connections: Vec<Connection> = Vec::new();
            while let Ok((peer, _)) = listener.accept().await {
                let node = *upstream.lock().unwrap_or_else(|p| p.into_inner());
                connections.retain(|c| !c.0.is_finished());
                connections.push(Connection::spawn(peer, node, sniff, rules.subscribe()));
            }
        }));
    }

    /// Sends new connections to `upstream` from now on (a restarted node
    /// may come back on another port).
    pub(crate) fn retarget(&self, upstream: SocketAddr) {
        *self.upstream.lock().unwrap_or_else(|p| p.into_inner()) = upstream;
    }

    /// From now on, nothing passes on `who`'s connections.
    pub(crate) fn cut(&self, who: Who) {
        self.rules.send_modify(|r| r.cut.push(who));
    }

    /// From now on, what the node sends on `who`'s connections waits.
    pub(crate) fn hold(&self, who: Who) {
        self.rules.send_modify(|r| r.held.push(who));
    }

    /// From now on, what the node sends `client` arrives `by` later.
    pub(crate) fn delay(&self, client: &str, by: Duration) {
        self.rules.send_modify(|r| {
            r.delayed.insert(client.to_owned(), by);
        });
    }

    /// Lifts every rule about `client`; whether there was one.
    pub(crate) fn heal_client(&self, client: &str) -> bool {
        let who = Who::Client(client.to_owned());
        let mut had = false;
        self.rules.send_modify(|r| {
            let before = (r.cut.len(), r.held.len());
            r.cut.retain(|w| *w != who);
            r.held.retain(|w| *w != who);
            let delayed = r.delayed.remove(client).is_some_and(|d| !d.is_zero());
            had = delayed || before != (r.cut.len(), r.held.len());
        });
        had
    }

    /// Lets everything through again, at once.
    pub(crate) fn heal(&self) {
        self.rules.send_replace(Rules::default());
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        if let Some(acceptor) = &self.acceptor {
            // Aborting the acceptor drops its connections, which abort
            // theirs.
            acceptor.abort();
        }
    }
}

/// One connection, relayed to the node and back. Aborted when dropped.
struct Connection(JoinHandle<()>);

impl Drop for Connection {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// What both directions of one connection share.
struct Shared {
    rules: watch::Receiver<Rules>,
    origin: watch::Sender<Origin>,
    /// Bytes were dropped: the stream is broken for good.
    lost_bytes: AtomicBool,
}

/// What becomes of a chunk in hand.
enum Admit {
    /// It goes on, this much later.
    Pass(Duration),
    /// It is dropped (the connection is cut).
    Drop,
    /// The connection closes: the relay is gone, or the stream lost bytes
    /// and would flow again.
    Close,
}

impl Shared {
    /// What to do with a chunk in hand; waits while it is held.
    async fn admit(&self, from_the_node: bool) -> Admit {
        let origin = self.origin.borrow().clone();
        let mut rules = self.rules.clone();
        let Ok(flow) = rules
            .wait_for(|r| r.flow(&origin, from_the_node) != Flow::Hold)
            .await
            .map(|r| r.flow(&origin, from_the_node))
        else {
            return Admit::Close;
        };
        match flow {
            Flow::Drop => {
                self.lost_bytes.store(true, Ordering::SeqCst);
                Admit::Drop
            }
            _ if self.lost_bytes.load(Ordering::SeqCst) => Admit::Close,
            Flow::Pass(delay) => Admit::Pass(delay),
            Flow::Hold => unreachable!("waited until it is not held"),
        }
    }
}

impl Connection {
    fn spawn(
        peer: TcpStream,
        upstream: SocketAddr,
        sniff: Sniff,
        rules: watch::Receiver<Rules>,
    ) -> Self {
        Self(tokio::spawn(async move {
            let Ok(node) = TcpStream::connect(upstream).await else {
                return; // the node is gone: the peer sees its connection drop
            };
            let _ = peer.set_nodelay(true);
            let _ = node.set_nodelay(true);
            let (from_node, to_node) = node.into_split();
            let (from_peer, to_peer) = peer.into_split();
            let shared = Arc::new(Shared {
                rules,
                origin: watch::channel(Origin::Unknown).0,
                lost_bytes: AtomicBool::new(false),
            });
            // When either direction ends, both sockets close.
            tokio::select! {
                () = upward(from_peer, to_node, sniff, Arc::clone(&shared)) => {}
                () = downward(from_node, to_peer, shared) => {}
            }
        }))
    }
}

/// The peer's bytes to the node, read for who the peer is on the way.
async fn upward(
    mut from: impl AsyncReadExt + Unpin,
    mut to: impl AsyncWriteExt + Unpin,
    sniff: Sniff,
    shared: Arc<Shared>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    let mut first_bytes = Vec::new();
    while let Ok(n @ 1..) = from.read(&mut buf).await {
        if *shared.origin.borrow() == Origin::Unknown && first_bytes.len() < 64 * 1024 {
            first_bytes.extend_from_slice(&buf[..n]);
            if let Some(found) = identify(sniff, &first_bytes) {
                shared.origin.send_replace(found);
            }
        }
        match shared.admit(false).await {
            Admit::Close => return,
            Admit::Drop => {}
            Admit::Pass(_) => {
                if to.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// The node's bytes to the peer. Chunks are stamped with their delivery
/// time as they arrive and delivered in order, so a delay holds each reply
/// once, not cumulatively; what is in flight when the node closes its side
/// is still delivered.
async fn downward(
    mut from: impl AsyncReadExt + Unpin,
    mut to: impl AsyncWriteExt + Unpin,
    shared: Arc<Shared>,
) {
    let (in_flight, mut due) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let deliver = async move {
        while let Some((at, chunk)) = due.recv().await {
            sleep_until(at).await;
            if to.write_all(&chunk).await.is_err() {
                return;
            }
        }
    };
    let receive = async move {
        let mut buf = vec![0u8; 16 * 1024];
        while let Ok(n @ 1..) = from.read(&mut buf).await {
            match shared.admit(true).await {
                Admit::Close => return,
                Admit::Drop => {}
                Admit::Pass(delay) => {
                    if in_flight
                        .send((Instant::now() + delay, buf[..n].to_vec()))
                        .is_err()
                    {
                        return;
                    }
                }
            }
        }
    };
    let (_, ()) = tokio::join!(receive, deliver);
}

/// The bytes of a bus message's header up to the end of its sender's id:
/// signature `RCmb` (4), length (4), version, port, type, count (2 each),
/// current epoch, config epoch, offset (8 each), then the sender (40).
const BUS_HEADER_TO_SENDER: usize = 80;
const BUS_SENDER: std::ops::Range<usize> = 40..80;

/// Who the peer is, once its first bytes say it.
fn identify(sniff: Sniff, first_bytes: &[u8]) -> Option<Origin> {
    match sniff {
        Sniff::ClientPort => {
            let replica = [&b"REPLCONF"[..], b"PSYNC", b"replconf", b"psync"]
                .iter()
                .any(|word| first_bytes.windows(word.len()).any(|w| w == *word));
            if replica {
                Some(Origin::Replica)
            } else {
                client_name(first_bytes).map(Origin::Client)
            }
        }
        Sniff::BusPort => (first_bytes.len() >= BUS_HEADER_TO_SENDER
            && first_bytes.starts_with(b"RCmb"))
        .then(|| Origin::Node(String::from_utf8_lossy(&first_bytes[BUS_SENDER]).into_owned())),
    }
}

/// Finds `CLIENT SETNAME <name>` in the first bytes a client sent (RESP:
/// `$7\r\nSETNAME\r\n$8\r\nclient-A\r\n`).
fn client_name(bytes: &[u8]) -> Option<String> {
    const MARK: &[u8] = b"SETNAME\r\n$";
    let at = bytes
        .windows(MARK.len())
        .position(|w| w.eq_ignore_ascii_case(MARK))?
        + MARK.len();
    let rest = &bytes[at..];
    let eol = rest.windows(2).position(|w| w == b"\r\n")?;
    let len: usize = std::str::from_utf8(&rest[..eol]).ok()?.parse().ok()?;
    let name = rest.get(eol + 2..eol + 2 + len)?;
    Some(String::from_utf8_lossy(name).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_name_is_read_from_client_setname() {
        let bytes = b"*3\r\n$6\r\nCLIENT\r\n$7\r\nSETINFO\r\n$8\r\nLIB-NAME\r\n\
                      *3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$8\r\nclient-A\r\n";
        assert_eq!(client_name(bytes).as_deref(), Some("client-A"));
        assert_eq!(
            client_name(b"*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$8\r\nclie"),
            None
        );
        assert_eq!(client_name(b"*1\r\n$4\r\nPING\r\n"), None);
    }

    #[test]
    fn a_rule_covers_the_connections_it_names() {
        let rules = Rules {
            cut: vec![Who::Node("n2".into())],
            held: vec![Who::Replicas],
            delayed: HashMap::from([("client-A".to_owned(), Duration::from_millis(7))]),
        };
        let a = Origin::Client("client-A".into());
        assert_eq!(rules.flow(&a, true), Flow::Pass(Duration::from_millis(7)));
        assert_eq!(rules.flow(&a, false), Flow::Pass(Duration::ZERO));
        assert_eq!(rules.flow(&Origin::Replica, true), Flow::Hold);
        assert_eq!(
            rules.flow(&Origin::Replica, false),
            Flow::Pass(Duration::ZERO)
        );
        assert_eq!(rules.flow(&Origin::Node("n2".into()), false), Flow::Drop);
        assert_eq!(
            rules.flow(&Origin::Unknown, true),
            Flow::Pass(Duration::ZERO)
        );
    }
}
