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

use lockcore::StageEntry;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep};

use super::{Run, ScenarioEnv};
use crate::error::{HarnessError, Result};
use crate::server::Node;

/// How long a fresh replica may take to finish its first sync.
const SYNC_WITHIN: Duration = Duration::from_secs(10);
/// How often its replication state is asked for meanwhile.
const SYNC_POLL: Duration = Duration::from_millis(10);

impl Run {
    /// Starts a master (`nodes[0]`, labelled `master`) and one replica of it
    /// (`nodes[1]`, `replica`) that follows it through a
    /// [`ReplicationLink`], waits until the replica is in sync, then does
    /// the rest of [`Run::start`]. Clients of the stage talk to the master.
    /// Keep the link for as long as the run.
    pub(crate) async fn start_replicated(
        stage: StageEntry,
        env: ScenarioEnv,
        stock: i64,
    ) -> Result<(Self, ReplicationLink)> {
        if stage.description.nodes != 1 {
            return Err(HarnessError::Unsupported(format!(
                "{} needs {} independent masters, not a master and its replica",
                stage.description.name, stage.description.nodes
            )));
        }
        let env = env.for_new_run();
        // A master waits 5 s by default before a full sync, hoping for more
        // replicas to serve at once; there is only one.
        let master =
            Node::start(&env.backend, "master", &["--repl-diskless-sync-delay", "0"]).await?;
        let link = ReplicationLink::start(&master).await?;
        let (link_host, link_port) = (link.addr.ip().to_string(), link.addr.port().to_string());
        let replica = Node::start(
            &env.backend,
            "replica",
            &["--replicaof", &link_host, &link_port],
        )
        .await?;
        wait_in_sync(&replica).await?;
        let run = Self::start_on(stage, env, stock, vec![master, replica]).await?;
        run.narrate("the replica is in sync with the master (master_link_status:up)");
        Ok((run, link))
    }

    /// Makes lock node `index` a master of its own: `REPLICAOF NO ONE`, as
    /// Sentinel or an operator does in a failover.
    pub async fn promote(&self, index: usize) -> Result<()> {
        let node = self.lock_node(index)?;
        let mut conn = lockcore::connect(&node.url(), "harness").await?;
        redis::cmd("REPLICAOF")
            .arg("NO")
            .arg("ONE")
            .query_async::<()>(&mut conn)
            .await?;
        Ok(())
    }

    /// Whether the lock key exists on lock node `index`.
    pub async fn lock_key_exists(&self, index: usize) -> Result<bool> {
        let node = self.lock_node(index)?;
        let mut conn = lockcore::connect(&node.url(), "harness").await?;
        Ok(redis::cmd("EXISTS")
            .arg(&self.factory.config.key)
            .query_async(&mut conn)
            .await?)
    }

    fn lock_node(&self, index: usize) -> Result<&Node> {
        self.nodes
            .get(index)
            .ok_or_else(|| HarnessError::Unsupported(format!("this run has no lock node {index}")))
    }
}

/// The replication stream's way from master to replica: a relay on a
/// loopback port that the replica takes for its master. Once held, what the
/// master sends goes no further; it is lost if the master dies. Stops when
/// dropped.
#[derive(Debug)]
pub(crate) struct ReplicationLink {
    /// Where the replica finds its "master": the relay.
    pub(crate) addr: SocketAddr,
    held: watch::Sender<bool>,
    acceptor: JoinHandle<()>,
}

impl ReplicationLink {
    /// A relay in front of `master`, listening where the master's peers
    /// reach the harness's host.
    pub(crate) async fn start(master: &Node) -> Result<Self> {
        let listener = TcpListener::bind((master.host_seen_from_here().await?, 0)).await?;
        let addr = listener.local_addr()?;
        let master = master.addr();
        let (held, _) = watch::channel(false);
        let hold = held.clone();
        let acceptor = tokio::spawn(async move {
            let mut relays = Vec::new();
            while let Ok((replica, _)) = listener.accept().await {
                relays.push(Relay::spawn(replica, master, hold.subscribe()));
            }
        });
        Ok(Self {
            addr,
            held,
            acceptor,
        })
    }

    /// From now on, nothing the master sends reaches the replica.
    pub(crate) fn hold(&self) {
        self.held.send_replace(true);
    }
}

impl Drop for ReplicationLink {
    fn drop(&mut self) {
        // Aborting the acceptor drops its relays, which abort theirs.
        self.acceptor.abort();
    }
}

/// One connection from the replica, relayed to the master and back.
/// Aborted when dropped.
struct Relay(JoinHandle<()>);

impl Relay {
    fn spawn(replica: TcpStream, master: SocketAddr, mut held: watch::Receiver<bool>) -> Self {
        Self(tokio::spawn(async move {
            let Ok(master) = TcpStream::connect(master).await else {
                return; // the master is gone: the replica sees its link drop
            };
            let (mut master_reads, mut master_writes) = master.into_split();
            let (mut replica_reads, mut replica_writes) = replica.into_split();
            // The replica's acknowledgements go up unhindered.
            let upward = async {
                let _ = tokio::io::copy(&mut replica_reads, &mut master_writes).await;
            };
            let downward = async {
                let mut buf = vec![0u8; 16 * 1024];
                while let Ok(n @ 1..) = master_reads.read(&mut buf).await {
                    // Bytes in hand: pass them on only while the link is
                    // open. A held link keeps them until the master dies.
                    if held.wait_for(|held| !held).await.is_err()
                        || replica_writes.write_all(&buf[..n]).await.is_err()
                    {
                        break;
                    }
                }
            };
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

/// Waits until `replica` reports its link to the master up, which it does
/// once the first full sync is done.
pub(super) async fn wait_in_sync(replica: &Node) -> Result<()> {
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
            return Err(HarnessError::ServerStart(format!(
                "the replica at {} was not in sync with its master within {SYNC_WITHIN:?}",
                replica.url()
            )));
        }
        sleep(SYNC_POLL).await;
    }
}
