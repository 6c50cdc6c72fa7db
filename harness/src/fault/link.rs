//! The way from a master to one of its peers (a replica; on the Sentinel
//! topology, the Sentinels too): a relay the harness stands in the middle
//! of, so that it can hold back what the master sends (replication that
//! lags, the window the failover stories keep open: see
//! `topology/replicated.rs`) or cut the way both ways (a partition between
//! hosts), and heal it.

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::error::Result;
use crate::server::Node;

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
