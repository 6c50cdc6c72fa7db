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

use std::time::Duration;

use tokio::time::{Instant, sleep};

use crate::error::{HarnessError, Result};
use crate::fault::link::ReplicationLink;
use crate::server::{Backend, Node};

/// How long a fresh replica may take to finish its first sync.
const SYNC_WITHIN: Duration = Duration::from_secs(10);
/// How often a node's replication state is asked while the harness waits
/// on it.
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

/// Waits until `replica` reports its link to the master up, which it does
/// once the first full sync is done.
pub(crate) async fn wait_in_sync(replica: &Node) -> Result<()> {
    wait_for_replication_info(replica, "master_link_status", "up", SYNC_WITHIN).await
}

/// Waits until `old_master`, back from a partition, is a replica of the
/// new master and in sync with it: its own copy of what it took while cut
/// off has been thrown away.
pub(crate) async fn wait_demoted(old_master: &Node, within: Duration) -> Result<()> {
    wait_for_replication_info(old_master, "role", "slave", within).await?;
    wait_for_replication_info(old_master, "master_link_status", "up", within).await
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
