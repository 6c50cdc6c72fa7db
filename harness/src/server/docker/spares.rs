//! Spare containers: a matrix's standalone servers, wiped and used again
//! by a later cell instead of being removed and made anew.
//!
//! Why: on a Docker engine like this machine's (its storage on
//! fuse-overlayfs, two cores), making and removing one container costs
//! about half a CPU-second (a filesystem mount, a network namespace and its
//! link, cgroups, the engine's own bookkeeping). A Docker matrix asked for
//! some seven hundred, and spent most of its time there, not in its stories.
//!
//! What is used again, and what is not: only a plain server (started by
//! [`crate::server::Node::start`]: the database, a standalone lock node, a
//! Redlock master) that nothing faulted and that never took part in
//! replication. A server that was killed, paused, restarted, cut off or
//! connected to another network is removed as before, and so is one that
//! was a master or a replica (a peer of the old run may still be trying to
//! reach it). Sentinels and cluster nodes are never spares.
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
/// and its users.
#[derive(Debug)]
pub(crate) struct Origin {
    pub(crate) spares: Arc<Spares>,
    pub(crate) args: Vec<String>,
    config: HashMap<String, String>,
    users: Vec<String>,
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
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        let position = idle
            .iter()
            .position(|s| s.origin.args == args && s.wiped_at.elapsed() >= Self::REST)?;
        let spare = idle.remove(position)?;
        self.reused.fetch_add(1, Ordering::Relaxed);
        Some(spare)
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
        let spare = Spare {
            container,
            network,
            addr,
            origin,
            wiped_at: Instant::now(),
        };
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
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
        let spares: Vec<Spare> = {
            let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
            idle.drain(..).collect()
        };
        crate::server::drop_together(spares);
    }
}

impl Origin {
    /// Reads what the fresh server at `addr` is, to put it back to later.
    pub(crate) async fn read(
        spares: Arc<Spares>,
        args: Vec<String>,
        addr: SocketAddr,
    ) -> Result<Self> {
        let mut conn = connect(addr).await?;
        let config = config_of(&mut conn).await?;
        let users = users_of(&mut conn).await?;
        Ok(Self {
            spares,
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
    let replication: String = query(&mut conn, redis::cmd("INFO").arg("replication")).await?;
    let never_replicated = ["role:master", "connected_slaves:0", "master_repl_offset:0"]
        .iter()
        .all(|line| replication.lines().any(|l| l.trim() == *line));
    if !never_replicated {
        return Err("it took part in replication".into());
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
