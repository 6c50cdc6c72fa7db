//! A TCP proxy in front of one Redis node, to make the network misbehave.
//!
//! Clients connect to the proxy instead of the node; the proxy forwards
//! bytes both ways and learns each connection's client name from the
//! `CLIENT SETNAME` every client sends first. Per client name it can then:
//!
//! - **delay replies**: every chunk the node sends back is held for a while,
//!   in order (requests still reach the node at once: the command runs, only
//!   the answer is late);
//! - **cut the client off** (a partition): bytes in both directions are
//!   dropped, so the client hears nothing, as across a broken link. A
//!   connection that lost bytes is closed once the link heals: its stream
//!   can no longer be trusted, and the client reconnects.
//!
//! It is a [`Relay`] on a client port (one relay serves every fault on
//! the wire), whose changes are told in the timeline.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use super::relay::{Relay, Sniff, Who};
use crate::error::Result;
use crate::observe::Timeline;

/// A proxy in front of one node. Stops (and closes every connection) when
/// dropped.
#[derive(Debug)]
pub struct Proxy {
    label: String,
    relay: Relay,
    timeline: Timeline,
}

impl Proxy {
    /// Listens on a free loopback port and forwards to `upstream`
    /// (`127.0.0.1:6379`). `label` names the node in the timeline.
    pub async fn start(upstream: SocketAddr, label: &str, timeline: &Timeline) -> Result<Self> {
        Ok(Self {
            label: label.to_owned(),
            relay: Relay::to(Ipv4Addr::LOCALHOST.into(), upstream, Sniff::ClientPort).await?,
            timeline: timeline.clone(),
        })
    }

    /// Sends new connections to `upstream` from now on (a restarted
    /// container may come back on another port).
    pub fn retarget(&self, upstream: SocketAddr) {
        self.relay.retarget(upstream);
    }

    /// The URL clients use instead of the node's.
    pub fn url(&self) -> String {
        format!("redis://{}", self.relay.addr)
    }

    /// Holds every reply to `client` for `by` before passing it on.
    pub fn delay_replies(&self, client: &str, by: Duration) {
        self.relay.delay(client, by);
        self.narrate(format!(
            "replies to {client} are now held {}ms",
            by.as_millis()
        ));
    }

    /// Drops everything between `client` and the node, both ways.
    pub fn cut_off(&self, client: &str) {
        self.relay.cut(Who::Client(client.to_owned()));
        self.narrate(format!("{client} is CUT OFF from this node (a partition)"));
    }

    /// Lifts every rule for `client`.
    pub fn heal(&self, client: &str) {
        if self.relay.heal_client(client) {
            self.narrate(format!("the network to {client} is healthy again"));
        }
    }

    fn narrate(&self, text: String) {
        self.timeline
            .record("harness", format!("proxy [{}]: {text}", self.label));
    }
}
