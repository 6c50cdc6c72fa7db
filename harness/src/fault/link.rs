//! The way from a master to one of its peers (a replica; on the Sentinel
//! topology, the Sentinels too): a [`Relay`] the harness stands in the
//! middle of, so that it can hold back what the master sends (replication
//! that lags, the window the failover stories keep open: see
//! `topology/replicated.rs`) or cut the way both ways (a partition between
//! hosts), and heal it.

use super::relay::{Relay, Sniff, Who};
use crate::error::Result;
use crate::server::Node;

/// The way from a master to its peers: a relay on a port of the harness's
/// host that the peers take for the master. The harness can *hold* what
/// the master sends (the peers' own bytes still go up, as when replication
/// merely lags), or *cut* the link both ways (a partition between hosts),
/// and heal it. Stops when dropped.
#[derive(Debug)]
pub(crate) struct ReplicationLink {
    /// Where the peers find their "master": the relay.
    pub(crate) addr: std::net::SocketAddr,
    relay: Relay,
}

impl ReplicationLink {
    /// A relay in front of `master`, listening where the master's peers
    /// reach the harness's host.
    pub(crate) async fn start(master: &Node) -> Result<Self> {
        let host = master.host_seen_from_here().await?;
        let relay = Relay::to(host, master.addr(), Sniff::ClientPort).await?;
        Ok(Self {
            addr: relay.addr,
            relay,
        })
    }

    /// From now on, nothing the master sends reaches the peers.
    pub(crate) fn hold(&self) {
        self.relay.hold(Who::All);
    }

    /// From now on, nothing passes either way.
    pub(crate) fn cut(&self) {
        self.relay.cut(Who::All);
    }

    /// Lets everything through again. A connection that lost bytes while
    /// cut is closed (its stream can no longer be trusted): the peer
    /// connects again.
    pub(crate) fn heal(&self) {
        self.relay.heal();
    }
}
