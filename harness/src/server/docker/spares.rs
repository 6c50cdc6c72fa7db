//! Spare containers: a matrix's standalone servers, wiped and used again
//! by a later cell instead of being removed and made anew.
//!
//! Why: on a Docker engine like this machine's (its storage on
//! fuse-overlayfs, two cores), making and removing one container costs
//! about half a CPU-second (a filesystem mount, a network namespace and its
//! link, cgroups, the engine's own bookkeeping). A Docker matrix asked for
//! some seven hundred, and spent most of its time there, not in its stories.
//!
//! What is used again, and what is not: a plain server (started by
//! [`crate::server::Node::start`]: the database, a standalone lock node, a
//! Redlock master) that nothing faulted and that never took part in
//! replication; and the master, replicas and Sentinels of a Sentinel
//! topology, or the nodes of a Redis Cluster, in a [`Rig`]. A server that
//! was killed, paused, restarted, cut off or connected to another network
//! is removed as before.
//!
//! A rig is a topology's network and the nodes a run left on it. A
//! Sentinel cell made six containers (a master, two replicas, three
//! Sentinels), a Cluster cell six nodes, and each faults one or two of
//! them: with rigs, a later cell of the same kind takes the network with
//! the survivors, wiped, and starts only what is missing. The survivors are
//! put back in two steps, so that no old peer can reach a node of the new
//! run: each node is wiped as it drops (a Sentinel forgets the master it
//! watched, a replica stops replicating, a cluster node is reset as new),
//! and the rig goes back to the idle ones only once the old run's last node
//! is gone ([`RigLease`]). A cell that takes a rig asks each node again
//! whether it is as wiped ([`still_wiped`]); one that is not is removed.
//!
//! What "wiped" means ([`wipe`]): every key, script and function gone, the
//! configuration set back to what the container started with, no user but
//! the ones it started with, the old run's connections closed, the
//! statistics reset. A spare that cannot be put back exactly so is removed.
//! Each spare keeps a network of its own, as a plain server of a run has
//! (one host on it): a story that kills and restarts it finds its address
//! still free (on a shared network a container made meanwhile would be
//! given it). A cell takes the spare that has been idle longest, and only
//! after a short rest, so a straggler of the old run (nothing should be
//! left, but a wiped server would not show it) has no server of a new run
//! to reach.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use testcontainers::{ContainerAsync, GenericImage};

use super::RunNetwork;
use crate::error::{HarnessError, Result};

/// At most this many idle spares are kept; one more is removed.
const MAX_IDLE: usize = 16;
/// How long wiping a spare may take before it is given up (and removed).
const WIPE_WITHIN: Duration = Duration::from_secs(3);

/// The idle spares of one matrix.
pub struct Spares {
    image: String,
    idle: Mutex<VecDeque<Spare>>,
    /// Rigs no run holds.
    rigs: Mutex<Vec<Arc<Rig>>>,
    made: AtomicUsize,
    reused: AtomicUsize,
}

impl std::fmt::Debug for Spares {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spares")
            .field("image", &self.image)
            .field("idle", &self.idle_count())
            .finish()
    }
}

/// An idle spare.
pub(crate) struct Spare {
    // Declared first, so it is removed before its network is let go.
    pub(crate) container: ContainerAsync<GenericImage>,
    pub(crate) network: Arc<RunNetwork>,
    pub(crate) addr: SocketAddr,
    pub(crate) origin: Origin,
    wiped_at: Instant,
}

/// What a spare was started as, to be put back to: its arguments (a cell
/// gets a spare started with the arguments it asks for), its configuration
/// and its users; and where it goes back to.
#[derive(Debug)]
pub(crate) struct Origin {
    pub(crate) spares: Arc<Spares>,
    /// The rig it belongs to; none for a plain server on its own network.
    rig: Option<Arc<Rig>>,
    kind: Kind,
    pub(crate) args: Vec<String>,
    config: HashMap<String, String>,
    users: Vec<String>,
}

/// What kind of server a spare is, for its wipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A Redis server.
    Server,
    /// A Redis Cluster node.
    ClusterNode,
    /// A Sentinel.
    Sentinel,
}

/// A Sentinel topology's network, with the wiped nodes a run left on it
/// (see the module's documentation).
pub(crate) struct Rig {
    /// What topology it is for: only a run of the same kind takes it.
    key: String,
    network: Arc<RunNetwork>,
    idle: Mutex<VecDeque<Spare>>,
}

impl std::fmt::Debug for Rig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rig").field("key", &self.key).finish()
    }
}

/// A run's hold on a rig. Every node started in the rig holds it too; the
/// rig goes back to the matrix's idle rigs when the last holder is gone,
/// so a later run never meets a node of this one still running.
#[derive(Debug)]
pub struct RigLease {
    rig: Arc<Rig>,
    spares: Arc<Spares>,
}

impl RigLease {
    /// The rig's network, where every node of the run's topology is.
    pub(crate) fn network(&self) -> Arc<RunNetwork> {
        self.rig.network.clone()
    }

    /// The matrix's spares, which the rig belongs to.
    pub(crate) fn spares(&self) -> &Arc<Spares> {
        &self.spares
    }

    /// The longest-idle node of the rig started with `args` that has
    /// rested, if any.
    pub(crate) fn take(&self, args: &[String]) -> Option<Spare> {
        let spare = take_from(&self.rig.idle, args)?;
        self.spares.reused.fetch_add(1, Ordering::Relaxed);
        Some(spare)
    }

    /// Where a new node of the rig goes back to when it drops.
    pub(crate) fn rig(&self) -> Arc<Rig> {
        self.rig.clone()
    }
}

impl Drop for RigLease {
    fn drop(&mut self) {
        self.spares
            .rigs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(self.rig.clone());
    }
}

impl Spares {
    /// How long a spare rests after it was wiped before a run may take
    /// it.
    pub const REST: Duration = Duration::from_millis(500);

    /// No spares yet, for containers of `image`.
    pub fn new(image: &str) -> Arc<Self> {
        Arc::new(Self {
            image: image.to_owned(),
            idle: Mutex::new(VecDeque::new()),
            rigs: Mutex::new(Vec::new()),
            made: AtomicUsize::new(0),
            reused: AtomicUsize::new(0),
        })
    }

    /// The image the spares are of.
    pub fn image(&self) -> &str {
        &self.image
    }

    /// How many containers were made as spares, and how many times one was
    /// used again.
    pub fn counts(&self) -> (usize, usize) {
        (
            self.made.load(Ordering::Relaxed),
            self.reused.load(Ordering::Relaxed),
        )
    }

    /// The longest-idle spare started with `args` that has rested, if any.
    pub(crate) fn take(&self, args: &[String]) -> Option<Spare> {
        let spare = take_from(&self.idle, args)?;
        self.reused.fetch_add(1, Ordering::Relaxed);
        Some(spare)
    }

    /// An idle rig for a topology of `key`, or a new one (a network of its
    /// own, made when its first node starts), held until the lease and
    /// every node started in it are gone.
    pub fn lease_rig(self: &Arc<Self>, key: &str) -> Arc<RigLease> {
        let idle = {
            let mut rigs = self.rigs.lock().unwrap_or_else(|p| p.into_inner());
            rigs.iter()
                .position(|rig| rig.key == key)
                .map(|position| rigs.swap_remove(position))
        };
        let rig = idle.unwrap_or_else(|| {
            Arc::new(Rig {
                key: key.to_owned(),
                network: Arc::default(),
                idle: Mutex::new(VecDeque::new()),
            })
        });
        Arc::new(RigLease {
            rig,
            spares: self.clone(),
        })
    }

    /// Counts a container made to be a spare.
    pub(crate) fn count_made(&self) {
        self.made.fetch_add(1, Ordering::Relaxed);
    }

    /// Keeps a wiped spare for a later cell (or removes it, when enough
    /// are idle).
    pub(crate) fn give_back(
        &self,
        container: ContainerAsync<GenericImage>,
        network: Arc<RunNetwork>,
        addr: SocketAddr,
        origin: Origin,
    ) {
        let rig = origin.rig.clone();
        let home = match &rig {
            Some(rig) => &rig.idle,
            None => &self.idle,
        };
        let spare = Spare {
            container,
            network,
            addr,
            origin,
            wiped_at: Instant::now(),
        };
        let mut idle = home.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < MAX_IDLE {
            idle.push_back(spare);
        }
        // Else dropped here: removed.
    }

    fn idle_count(&self) -> usize {
        self.idle.lock().map(|idle| idle.len()).unwrap_or(0)
    }

    /// Removes every idle spare, all at once (each removal is an engine
    /// round trip that holds its thread), and returns when they are gone.
    /// Call it within a tokio runtime, once no cell runs.
    pub fn remove_all(&self) {
        let rigs: Vec<Arc<Rig>> = {
            let mut rigs = self.rigs.lock().unwrap_or_else(|p| p.into_inner());
            rigs.drain(..).collect()
        };
        let mut spares: Vec<Spare> = {
            let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
            idle.drain(..).collect()
        };
        for rig in &rigs {
            spares.extend(rig.idle.lock().unwrap_or_else(|p| p.into_inner()).drain(..));
        }
        crate::server::drop_together(spares);
        // Their networks, now that no node is on them.
        crate::server::drop_together(rigs);
    }
}

/// Takes from `idle` the longest-idle spare started with `args` that has
/// rested, if any.
fn take_from(idle: &Mutex<VecDeque<Spare>>, args: &[String]) -> Option<Spare> {
    let mut idle = idle.lock().unwrap_or_else(|p| p.into_inner());
    let position = idle
        .iter()
        .position(|s| s.origin.args == args && s.wiped_at.elapsed() >= Spares::REST)?;
    idle.remove(position)
}

impl Origin {
    /// Reads what the fresh server (of `kind`) at `addr` is, to put it back
    /// to later, in `rig` or else alone. A Sentinel has no configuration or
    /// users to read: what a run changes on it is the masters it watches.
    pub(crate) async fn read(
        spares: Arc<Spares>,
        rig: Option<Arc<Rig>>,
        kind: Kind,
        args: Vec<String>,
        addr: SocketAddr,
    ) -> Result<Self> {
        let (config, users) = match kind {
            Kind::Server | Kind::ClusterNode => {
                let mut conn = connect(addr).await?;
                (config_of(&mut conn).await?, users_of(&mut conn).await?)
            }
            Kind::Sentinel => (HashMap::new(), Vec::new()),
        };
        Ok(Self {
            spares,
            rig,
            kind,
            args,
            config,
            users,
        })
    }
}

/// Puts the server at `addr` back to what `origin` read, on a thread and
/// runtime of its own (it is called from a destructor, inside a runtime or
/// outside one). An error says why it cannot be used again.
pub(crate) fn wipe(addr: SocketAddr, origin: &Origin) -> std::result::Result<(), String> {
    let wiped = super::on_own_runtime(|| async {
        Ok(tokio::time::timeout(WIPE_WITHIN, wipe_now(addr, origin)).await)
    })
    .map_err(|e| e.to_string())?;
    wiped.map_err(|_| format!("not wiped within {WIPE_WITHIN:?}"))?
}

async fn wipe_now(addr: SocketAddr, origin: &Origin) -> std::result::Result<(), String> {
    let mut conn = connect(addr).await.map_err(|e| e.to_string())?;
    if origin.kind == Kind::Sentinel {
        return forget_masters(&mut conn).await;
    }
    if origin.kind == Kind::ClusterNode {
        // A node of the old run's cluster: a master's keys go first (a
        // master with keys refuses the reset; a replica refuses FLUSHALL,
        // and the reset empties it anyway), then it forgets every other
        // node, its slots and its epochs, and takes a new node ID, as a
        // node that never met another.
        let _ = query::<()>(&mut conn, redis::cmd("FLUSHALL").arg("SYNC")).await;
        query::<()>(&mut conn, redis::cmd("CLUSTER").arg("RESET").arg("HARD")).await?;
        query::<i64>(
            &mut conn,
            redis::cmd("CLIENT").arg("KILL").arg("TYPE").arg("replica"),
        )
        .await?;
    } else if origin.rig.is_some() {
        // A master or a replica of the old run: it replicates no more, and
        // its replicas' connections are closed (they are wiped too).
        query::<()>(&mut conn, redis::cmd("REPLICAOF").arg("NO").arg("ONE")).await?;
        query::<i64>(
            &mut conn,
            redis::cmd("CLIENT").arg("KILL").arg("TYPE").arg("replica"),
        )
        .await?;
    } else {
        let replication: String = query(&mut conn, redis::cmd("INFO").arg("replication")).await?;
        let never_replicated = ["role:master", "connected_slaves:0", "master_repl_offset:0"]
            .iter()
            .all(|line| replication.lines().any(|l| l.trim() == *line));
        if !never_replicated {
            return Err("it took part in replication".into());
        }
    }
    query::<()>(&mut conn, redis::cmd("CLIENT").arg("UNPAUSE")).await?;
    query::<()>(&mut conn, redis::cmd("FLUSHALL").arg("SYNC")).await?;
    query::<()>(&mut conn, redis::cmd("SCRIPT").arg("FLUSH")).await?;
    query::<()>(&mut conn, redis::cmd("FUNCTION").arg("FLUSH")).await?;
    let now = config_of(&mut conn).await.map_err(|e| e.to_string())?;
    for (name, value) in &origin.config {
        if now.get(name) != Some(value) {
            query::<()>(
                &mut conn,
                redis::cmd("CONFIG").arg("SET").arg(name).arg(value),
            )
            .await?;
        }
    }
    let now = config_of(&mut conn).await.map_err(|e| e.to_string())?;
    if now != origin.config {
        return Err("its configuration could not be set back".into());
    }
    if users_of(&mut conn).await.map_err(|e| e.to_string())? != origin.users {
        return Err("its users changed".into());
    }
    // The old run's connections (its MONITOR and subscribers among them).
    for kind in ["normal", "pubsub"] {
        query::<i64>(
            &mut conn,
            redis::cmd("CLIENT")
                .arg("KILL")
                .arg("TYPE")
                .arg(kind)
                .arg("SKIPME")
                .arg("yes"),
        )
        .await?;
    }
    query::<()>(&mut conn, redis::cmd("CONFIG").arg("RESETSTAT")).await?;
    let keys: i64 = query(&mut conn, &redis::cmd("DBSIZE")).await?;
    if keys != 0 {
        return Err(format!("{keys} key(s) came back after FLUSHALL"));
    }
    Ok(())
}

/// A Sentinel's wipe: it watches no master any more (and so knows no
/// replica and no other Sentinel), and the old run's connections are
/// closed.
async fn forget_masters(
    conn: &mut redis::aio::MultiplexedConnection,
) -> std::result::Result<(), String> {
    for name in watched_masters(conn).await? {
        query::<()>(conn, redis::cmd("SENTINEL").arg("REMOVE").arg(&name)).await?;
    }
    for kind in ["normal", "pubsub"] {
        query::<i64>(
            conn,
            redis::cmd("CLIENT")
                .arg("KILL")
                .arg("TYPE")
                .arg(kind)
                .arg("SKIPME")
                .arg("yes"),
        )
        .await?;
    }
    if !watched_masters(conn).await?.is_empty() {
        return Err("it still watches a master".into());
    }
    Ok(())
}

/// The names of the masters a Sentinel watches.
async fn watched_masters(
    conn: &mut redis::aio::MultiplexedConnection,
) -> std::result::Result<Vec<String>, String> {
    let masters: Vec<HashMap<String, String>> =
        query(conn, redis::cmd("SENTINEL").arg("MASTERS")).await?;
    Ok(masters
        .into_iter()
        .filter_map(|mut master| master.remove("name"))
        .collect())
}

/// Whether the rig's node at `addr` is still as its wipe left it, when a
/// later run takes it: a Sentinel watching nothing; a server that is a
/// master with no replica and no key; a cluster node, besides, knowing no
/// other node and serving no slot. (A Sentinel of the old run that outlived
/// its wipe could have made a wiped server its replica; a node of the old
/// cluster, met a wiped one again.)
pub(crate) async fn still_wiped(addr: SocketAddr, kind: Kind) -> bool {
    let check = async {
        let mut conn = connect(addr).await.map_err(|e| e.to_string())?;
        match kind {
            Kind::Sentinel => Ok(watched_masters(&mut conn).await?.is_empty()),
            Kind::Server | Kind::ClusterNode => {
                let replication: String =
                    query(&mut conn, redis::cmd("INFO").arg("replication")).await?;
                let alone = ["role:master", "connected_slaves:0"]
                    .iter()
                    .all(|line| replication.lines().any(|l| l.trim() == *line));
                let keys: i64 = query(&mut conn, &redis::cmd("DBSIZE")).await?;
                let unclustered = kind == Kind::Server || {
                    let cluster: String =
                        query(&mut conn, redis::cmd("CLUSTER").arg("INFO")).await?;
                    ["cluster_known_nodes:1", "cluster_slots_assigned:0"]
                        .iter()
                        .all(|line| cluster.lines().any(|l| l.trim() == *line))
                };
                Ok::<_, String>(alone && keys == 0 && unclustered)
            }
        }
    };
    matches!(tokio::time::timeout(WIPE_WITHIN, check).await, Ok(Ok(true)))
}

async fn connect(addr: SocketAddr) -> Result<redis::aio::MultiplexedConnection> {
    let client = redis::Client::open(format!("redis://{addr}/"))?;
    Ok(
        tokio::time::timeout(WIPE_WITHIN, client.get_multiplexed_async_connection())
            .await
            .map_err(|_| HarnessError::Docker(format!("no connection to the spare at {addr}")))??,
    )
}

async fn query<T: redis::FromRedisValue>(
    conn: &mut redis::aio::MultiplexedConnection,
    cmd: &redis::Cmd,
) -> std::result::Result<T, String> {
    cmd.query_async(conn).await.map_err(|e| e.to_string())
}

async fn config_of(
    conn: &mut redis::aio::MultiplexedConnection,
) -> Result<HashMap<String, String>> {
    Ok(redis::cmd("CONFIG")
        .arg("GET")
        .arg("*")
        .query_async(conn)
        .await?)
}

async fn users_of(conn: &mut redis::aio::MultiplexedConnection) -> Result<Vec<String>> {
    Ok(redis::cmd("ACL").arg("LIST").query_async(conn).await?)
}
