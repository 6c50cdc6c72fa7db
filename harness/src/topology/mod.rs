//! Topologies: the shapes of servers a story runs on. The single node and
//! Redlock's independent masters ([`redlock`]), a master and its
//! asynchronous replica ([`replicated`]), a master with two replicas and
//! three Sentinels that decide the failover ([`sentinel`]), a Redis Cluster
//! of three masters and three replicas that decides its own
//! ([`cluster`]).
//!
//! A topology starts its nodes and the links between them, and hands them
//! back: the lock nodes to whoever keeps and watches them (a run), the
//! rest (Sentinels, relays, links) in a value of its own, through which a
//! story acts on the wiring (holds replication back, cuts a master off,
//! waits for a promotion). It knows no story; what is done to a node is in
//! [`crate::fault`].

pub(crate) mod cluster;
mod phases;
pub mod redlock;
pub(crate) mod replicated;
pub(crate) mod sentinel;

use std::time::Duration;

use crate::error::{HarnessError, Result};
use crate::server::{Node, RedisContainer};

/// The lock's TTL on a topology that fails over by itself (Sentinel,
/// Cluster): the articles' default, far longer than a failover there (a
/// few seconds) or the demotion of a master after a partition heals (as
/// long, sixty at the most), so that a lock lost is lost to the failover
/// and never to its expiry.
pub(crate) const LEASE: Duration = Duration::from_secs(30);

/// The container behind `node`, for a story that acts on the Docker
/// backend's nodes (every node of a run on Docker has one).
fn docker_node(node: &Node) -> Result<&RedisContainer> {
    node.container()
        .ok_or_else(|| HarnessError::Bug(format!("{} is not a Docker container", node.label())))
}
