//! Topologies: the shapes of servers a story runs on. The single node and
//! Redlock's independent masters ([`redlock`]), a master and its
//! asynchronous replica ([`replicated`]), a master with two replicas and
//! three Sentinels that decide the failover ([`sentinel`]), a Redis Cluster
//! of three masters and three replicas that decides its own
//! ([`cluster`]). Each adds to
//! [`Run`](crate::scenario::Run) what its stories need; what is done to a
//! node is in [`crate::fault`].

pub(crate) mod cluster;
mod phases;
pub mod redlock;
pub(crate) mod replicated;
pub(crate) mod sentinel;

use crate::error::{HarnessError, Result};
use crate::server::{Node, RedisContainer};

/// The container behind `node`, for a story that acts on the Docker
/// backend's nodes (every node of a run on Docker has one).
fn docker_node(node: &Node) -> Result<&RedisContainer> {
    node.container()
        .ok_or_else(|| HarnessError::Bug(format!("{} is not a Docker container", node.label())))
}
