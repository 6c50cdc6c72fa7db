//! Redis nodes for scenarios: where they run and how they are faulted.
//!
//! A [`Node`] is one Redis server with a label (`lock`, `db`, `replica`,
//! `node3`, `sentinel1`). The default backend runs `redis-server` processes
//! on loopback; the Docker backend runs each node in a container of its
//! own, at its own address on its run's network. Either way node faults are
//! real: signals to processes, or the engine's kill, pause and network
//! disconnect.

mod data_folders;
pub mod docker;
pub mod ensemble;
pub mod etcd;
pub mod external;
mod log_tail;
mod port_hold;
mod redis_process;
pub mod shared_zookeeper;
pub mod zookeeper;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

pub use data_folders::{ETCD_DATA_DIR_VAR, ZOOKEEPER_DATA_DIR_VAR};
use docker::Kind;
pub use docker::{OWNER_LABEL, RedisContainer, RigLease, RunNetwork, Spares, docker_answers};
pub use external::{ExternalServer, URL_VAR};
pub use redis_process::{INSTALL_HINT, RedisProcess, redis_server_installed};

use crate::error::{HarnessError, Result};

/// Chooses the backend: `process` or `docker`.
pub const BACKEND_VAR: &str = "LOCKSTAGES_BACKEND";
/// The Docker backend's image.
pub const IMAGE_VAR: &str = "LOCKSTAGES_REDIS_IMAGE";
/// The image used when [`IMAGE_VAR`] is not set.
pub const DEFAULT_IMAGE: &str = "redis:7-alpine";

/// The port a Redis server listens on in its container.
const CONTAINER_REDIS_PORT: u16 = 6379;
/// The port a Sentinel listens on in its container.
const CONTAINER_SENTINEL_PORT: u16 = 26379;
/// The cluster bus port of a cluster node in its container: Redis's
/// default, the client port plus 10000.
pub const CONTAINER_CLUSTER_BUS_PORT: u16 = CONTAINER_REDIS_PORT + 10000;

/// Where nodes run.
#[derive(Debug, Clone)]
pub enum Backend {
    /// `redis-server` processes on loopback ports (the default).
    Process,
    /// One container per node, of `image`, on `network`.
    Docker {
        /// The image, `redis:7-alpine` unless `LOCKSTAGES_REDIS_IMAGE` says.
        image: String,
        /// The network the nodes started with this backend share; see
        /// [`Backend::for_new_run`].
        network: Arc<RunNetwork>,
        /// Plain servers to use again, when the runs share them (a
        /// matrix's, [`Backend::with_spares`]); else every node is a new
        /// container.
        spares: Option<Arc<Spares>>,
        /// The rig whose network and kept nodes this run's topology uses
        /// ([`Backend::for_rig`]); `network` is the rig's.
        rig: Option<Arc<RigLease>>,
    },
    /// A reader's own server (`LOCKSTAGES_REDIS_URL`): every node of a run
    /// is that server, with the run's keys under a prefix of their own.
    External(ExternalServer),
}

impl Backend {
    /// The backend chosen by `LOCKSTAGES_BACKEND`, or else `redis-server`
    /// when installed, or else Docker when it answers; a clear error saying
    /// how to get one when neither can be had. The Docker backend's image is
    /// checked (pulled if absent) here, once.
    pub fn from_env() -> Result<Self> {
        if let Ok(url) = std::env::var(URL_VAR) {
            external::check(&url)?;
            return Ok(Backend::External(ExternalServer::new(&url)?));
        }
        let image = std::env::var(IMAGE_VAR).unwrap_or_else(|_| DEFAULT_IMAGE.to_owned());
        let docker = |image: String| -> Result<Self> {
            docker::check_image(&image)?;
            Ok(Backend::Docker {
                image,
                network: Arc::default(),
                spares: None,
                rig: None,
            })
        };
        match std::env::var(BACKEND_VAR).as_deref() {
            Ok("docker") => {
                if docker_answers() {
                    docker(image)
                } else {
                    Err(HarnessError::NoRedis(format!(
                        "{BACKEND_VAR}=docker, but no Docker engine answers"
                    )))
                }
            }
            Ok("process") | Ok("") | Err(_) => {
                if redis_server_installed() {
                    Ok(Backend::Process)
                } else if std::env::var(BACKEND_VAR).is_err() && docker_answers() {
                    docker(image).map_err(|e| {
                        HarnessError::NoRedis(format!("{INSTALL_HINT}\n(Docker answers, but: {e})"))
                    })
                } else if std::env::var(BACKEND_VAR).is_err() {
                    Err(HarnessError::NoRedis(format!(
                        "{INSTALL_HINT}\n(no Docker engine answers here either)"
                    )))
                } else {
                    Err(HarnessError::NoRedis(INSTALL_HINT.to_owned()))
                }
            }
            Ok(other) => Err(HarnessError::NoRedis(format!(
                "{BACKEND_VAR}={other} is not a backend; use `process` or `docker`"
            ))),
        }
    }

    /// The same backend for a new run: on Docker, a network of its own, so
    /// the run's nodes are hosts among themselves.
    pub fn for_new_run(&self) -> Self {
        match self {
            Backend::Process => Backend::Process,
            Backend::Docker { image, spares, .. } => Backend::Docker {
                image: image.clone(),
                network: Arc::default(),
                spares: spares.clone(),
                rig: None,
            },
            Backend::External(server) => Backend::External(server.clone()),
        }
    }

    /// The same backend, whose runs share spare containers (on Docker;
    /// the others are unchanged): a plain server that its run neither
    /// faulted nor replicated is wiped when the run ends and used again by
    /// a later one (see [`Spares`]). For a matrix, which runs hundreds; the
    /// caller removes the spares with [`Spares::remove_all`] when done.
    pub fn with_spares(&self) -> (Self, Option<Arc<Spares>>) {
        match self {
            Backend::Docker { image, network, .. } => {
                let spares = Spares::new(image);
                (
                    Backend::Docker {
                        image: image.clone(),
                        network: network.clone(),
                        spares: Some(spares.clone()),
                        rig: None,
                    },
                    Some(spares),
                )
            }
            other => (other.clone(), None),
        }
    }

    /// The same backend without spares: for nodes that replicate (never
    /// used again) and share the run's own network with their peers (a
    /// Sentinel topology's master and replicas, which its Sentinels reach
    /// directly; each spare is alone on a network of its own).
    pub fn without_spares(&self) -> Self {
        match self {
            Backend::Docker { image, network, .. } => Backend::Docker {
                image: image.clone(),
                network: network.clone(),
                spares: None,
                rig: None,
            },
            other => other.clone(),
        }
    }

    /// The backend for a topology whose nodes share one network and
    /// replicate (a Sentinel topology's master, replicas and Sentinels, a
    /// Redis Cluster's nodes):
    /// with a matrix's spares, a rig for topologies of `kind`, whose network
    /// and wiped nodes a later run of the same kind uses again (see
    /// [`Spares`]); else [`Backend::without_spares`].
    pub fn for_rig(&self, kind: &str) -> Self {
        match self {
            Backend::Docker {
                image,
                spares: Some(spares),
                ..
            } => {
                let lease = spares.lease_rig(kind);
                Backend::Docker {
                    image: image.clone(),
                    network: lease.network(),
                    spares: None,
                    rig: Some(lease),
                }
            }
            other => other.without_spares(),
        }
    }

    /// The reader's own server, when the nodes are not the harness's.
    pub fn external(&self) -> Option<&ExternalServer> {
        match self {
            Backend::External(server) => Some(server),
            _ => None,
        }
    }

    /// `process` or `docker (image)`, for timelines and reports.
    pub fn label(&self) -> String {
        match self {
            Backend::Process => "process".to_owned(),
            Backend::Docker { image, .. } => format!("docker {image}"),
            Backend::External(server) => format!("{URL_VAR} {}", server.addr()),
        }
    }
}

#[derive(Debug)]
enum Server {
    Process(RedisProcess),
    // Boxed: testcontainers' handle is large.
    Container(Box<RedisContainer>),
    External(ExternalServer),
}

/// One Redis server in a scenario.
#[derive(Debug)]
pub struct Node {
    label: String,
    server: Server,
}

/// Stops `nodes` all at once, each on a thread of its own (see
/// [`drop_together`]): a run's six containers one after another took about
/// a second.
pub fn stop_all(nodes: impl IntoIterator<Item = Node>) {
    drop_together(nodes.into_iter().collect());
}

/// Drops `items` at once, each on a thread of its own that has entered the
/// current runtime: a container is removed on drop by a call to the engine
/// that blocks its thread. Outside a runtime of several threads (a test's
/// single one), or for a single item, they drop here one after another.
pub(crate) fn drop_together<T: Send>(items: Vec<T>) {
    use tokio::runtime::{Handle, RuntimeFlavor};
    let runtime = match Handle::try_current() {
        Ok(runtime) if runtime.runtime_flavor() == RuntimeFlavor::MultiThread => runtime,
        _ => return,
    };
    if items.len() < 2 {
        return;
    }
    // Off the runtime's worker while the threads wait, so the runtime
    // keeps driving the removals' I/O.
    tokio::task::block_in_place(|| {
        std::thread::scope(|scope| {
            for item in items {
                let runtime = runtime.clone();
                scope.spawn(move || {
                    let _entered = runtime.enter();
                    drop(item);
                });
            }
        });
    });
}

/// What a node is started as.
#[derive(Clone, Copy)]
enum Role<'a> {
    /// A plain Redis server.
    Server,
    /// A Redis Cluster node, knowing no other node yet.
    ClusterNode,
    /// A Sentinel whose configuration file says this.
    Sentinel(&'a str),
}

impl Node {
    /// Starts a node on `backend`, labelled for timelines.
    pub async fn start(backend: &Backend, label: &str, extra_args: &[&str]) -> Result<Self> {
        Self::start_as(backend, label, Role::Server, extra_args).await
    }

    /// Starts a node as [`Node::start`] does, that the harness and the
    /// clients reach by a way of their own. On Docker that is the run's
    /// clients' network, which stays open when the node is cut off the
    /// run's network, where its peers reach it ([`Node::peer_addr`]): the
    /// clients are on its side of the partition. Elsewhere, [`Node::start`].
    pub async fn start_with_clients_network(
        backend: &Backend,
        label: &str,
        extra_args: &[&str],
    ) -> Result<Self> {
        let mut node = Self::start(backend, label, extra_args).await?;
        node.join_clients_network().await?;
        Ok(node)
    }

    /// Starts a Redis Cluster node on `backend`, knowing no other node yet,
    /// with `extra_args`. In a container its bus is on Redis's default port
    /// ([`CONTAINER_CLUSTER_BUS_PORT`]) at the container's address.
    pub async fn start_cluster_node(
        backend: &Backend,
        label: &str,
        extra_args: &[&str],
    ) -> Result<Self> {
        Self::start_as(backend, label, Role::ClusterNode, extra_args).await
    }

    /// Starts a Sentinel on `backend` whose configuration file says
    /// `config`. A Sentinel a rig kept (see [`Backend::for_rig`]) is told the
    /// same at run time instead: each `sentinel monitor` line as `SENTINEL
    /// MONITOR`, each other line as `SENTINEL SET`.
    pub async fn start_sentinel(backend: &Backend, label: &str, config: &str) -> Result<Self> {
        Self::start_as(backend, label, Role::Sentinel(config), &[]).await
    }

    async fn start_as(
        backend: &Backend,
        label: &str,
        role: Role<'_>,
        extra_args: &[&str],
    ) -> Result<Self> {
        let server = match backend {
            Backend::Process => Server::Process(match role {
                Role::Server => RedisProcess::start(extra_args).await?,
                Role::ClusterNode => RedisProcess::start_cluster_node(extra_args).await?,
                Role::Sentinel(config) => RedisProcess::start_sentinel(config).await?,
            }),
            // The harness configures no server it did not start.
            Backend::External(server) if matches!(role, Role::Server) && extra_args.is_empty() => {
                Server::External(server.clone())
            }
            Backend::External(_) => return Err(no_faults()),
            Backend::Docker {
                image,
                network,
                spares,
                rig,
            } => Server::Container(Box::new(
                start_container(
                    image,
                    network,
                    spares.as_ref(),
                    rig.as_ref(),
                    role,
                    extra_args,
                )
                .await?,
            )),
        };
        Ok(Self {
            label: label.to_owned(),
            server,
        })
    }

    /// A cluster node's bus port, where the other nodes reach it.
    pub fn cluster_bus_addr(&self) -> Option<SocketAddr> {
        match &self.server {
            Server::Process(p) => p
                .cluster_port()
                .map(|port| SocketAddr::new(self.addr().ip(), port)),
            Server::Container(c) => Some(SocketAddr::new(
                c.peer_addr().ip(),
                CONTAINER_CLUSTER_BUS_PORT,
            )),
            Server::External(_) => None,
        }
    }

    /// Puts a node started with [`Node::start`] (or
    /// [`Node::start_cluster_node`]) on the run's clients' network too, as
    /// [`Node::start_with_clients_network`] does; nothing elsewhere.
    pub async fn join_clients_network(&mut self) -> Result<()> {
        if let Server::Container(c) = &mut self.server {
            c.join_clients_network().await?;
        }
        Ok(())
    }

    /// The node's label: `lock`, `db`, `replica`, `node1`…
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Its URL.
    pub fn url(&self) -> String {
        match &self.server {
            Server::External(e) => e.url().to_owned(),
            _ => format!("redis://{}", self.addr()),
        }
    }

    /// Whether the harness started this node (and may watch, configure and
    /// fault it), as opposed to a reader's own server.
    pub fn is_own(&self) -> bool {
        !matches!(self.server, Server::External(_))
    }

    /// Its address: a loopback port, or its own address on the run's
    /// network.
    pub fn addr(&self) -> SocketAddr {
        match &self.server {
            Server::Process(p) => p.addr(),
            Server::Container(c) => c.addr(),
            Server::External(e) => e.addr(),
        }
    }

    /// Host and port, as `REPLICAOF` and `SENTINEL MONITOR` want them.
    pub fn host_port(&self) -> (String, u16) {
        let addr = self.addr();
        (addr.ip().to_string(), addr.port())
    }

    /// Where other nodes reach it: [`Node::addr`], but for a container on
    /// the clients' network too (see [`Node::start_with_clients_network`]),
    /// whose peers reach it on the run's network.
    pub fn peer_addr(&self) -> SocketAddr {
        match &self.server {
            Server::Container(c) => c.peer_addr(),
            _ => self.addr(),
        }
    }

    /// Where this node reaches the harness's own host, for a relay the
    /// harness runs between nodes: loopback for a process, the network's
    /// gateway for a container.
    pub async fn host_seen_from_here(&self) -> Result<IpAddr> {
        match &self.server {
            Server::Process(_) => Ok(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            Server::Container(c) => Ok(IpAddr::V4(c.host_seen_from_here().await?)),
            Server::External(_) => Err(HarnessError::NotApplicable(external::NO_FAULTS)),
        }
    }

    /// Kills the node (`kill -9`, SIGKILL to the container): its memory is
    /// lost.
    pub async fn kill(&mut self) -> Result<()> {
        match &mut self.server {
            Server::Process(p) => {
                p.kill();
                Ok(())
            }
            Server::Container(c) => c.kill().await,
            Server::External(_) => Err(no_faults()),
        }
    }

    /// Freezes the node (SIGSTOP, the container's cgroup freezer): it
    /// answers nothing until resumed.
    pub async fn pause(&mut self) -> Result<()> {
        match &self.server {
            Server::Process(p) => p.pause(),
            Server::Container(c) => c.pause().await,
            Server::External(_) => Err(no_faults()),
        }
    }

    /// Thaws a paused node.
    pub async fn resume(&mut self) -> Result<()> {
        match &self.server {
            Server::Process(p) => p.resume(),
            Server::Container(c) => c.resume().await,
            Server::External(_) => Err(no_faults()),
        }
    }

    /// Kills the node and starts it again, empty, at the same address.
    pub async fn restart(&mut self) -> Result<()> {
        match &mut self.server {
            Server::Process(p) => p.restart().await,
            Server::Container(c) => c.restart().await,
            Server::External(_) => Err(no_faults()),
        }
    }

    /// The Docker container behind this node, for network faults between
    /// hosts; `None` on the process backend.
    pub fn container(&self) -> Option<&RedisContainer> {
        match &self.server {
            Server::Container(c) => Some(c),
            _ => None,
        }
    }
}

/// Starts a container for `role`: in the run's rig when it has one (a
/// node the rig kept, if one rests), a plain server from the matrix's
/// spares when it shares them, else a new container on `network`.
async fn start_container(
    image: &str,
    network: &Arc<RunNetwork>,
    spares: Option<&Arc<Spares>>,
    rig: Option<&Arc<RigLease>>,
    role: Role<'_>,
    extra_args: &[&str],
) -> Result<RedisContainer> {
    const SENTINEL_FILE: &str = "/data/sentinel.conf";
    let sentinel_port = CONTAINER_SENTINEL_PORT.to_string();
    let cluster_args = [
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        "/data/nodes.conf",
    ];
    let (kind, leading, args, files, port): (_, &[&str], Vec<&str>, _, _) = match role {
        Role::Server => (
            Kind::Server,
            &[],
            extra_args.to_vec(),
            vec![],
            CONTAINER_REDIS_PORT,
        ),
        Role::ClusterNode => (
            Kind::ClusterNode,
            &[],
            cluster_args.iter().chain(extra_args).copied().collect(),
            vec![],
            CONTAINER_REDIS_PORT,
        ),
        Role::Sentinel(config) => (
            Kind::Sentinel,
            &[SENTINEL_FILE, "--sentinel"],
            vec!["--port", &sentinel_port],
            vec![(SENTINEL_FILE, config.as_bytes().to_vec())],
            CONTAINER_SENTINEL_PORT,
        ),
    };
    match (rig, spares) {
        (Some(rig), _) => {
            let (container, kept) =
                RedisContainer::start_in_rig(rig, kind, leading, &args, &files, port).await?;
            if let (true, Role::Sentinel(config)) = (kept, role) {
                configure_sentinel(container.addr(), config).await?;
            }
            Ok(container)
        }
        (None, Some(spares)) if kind == Kind::Server => {
            RedisContainer::start_or_reuse(spares, &args).await
        }
        _ => RedisContainer::start(image, network.clone(), leading, &args, &files, port).await,
    }
}

fn no_faults() -> HarnessError {
    HarnessError::NotApplicable(external::NO_FAULTS)
}

/// Tells the Sentinel at `addr` what a configuration file saying `config`
/// would have: `sentinel monitor <name> <host> <port> <quorum>` becomes
/// `SENTINEL MONITOR …`, and `sentinel <option> <name> <value>` becomes
/// `SENTINEL SET <name> <option> <value>`.
async fn configure_sentinel(addr: SocketAddr, config: &str) -> Result<()> {
    let mut conn = lockcore::connect(&format!("redis://{addr}"), "harness").await?;
    for line in config.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let command = match words.as_slice() {
            ["sentinel", "monitor", rest @ ..] => {
                let mut command = redis::cmd("SENTINEL");
                command.arg("MONITOR").arg(rest);
                command
            }
            ["sentinel", option, name, value] => {
                let mut command = redis::cmd("SENTINEL");
                command.arg("SET").arg(*name).arg(*option).arg(*value);
                command
            }
            [] => continue,
            _ => {
                return Err(HarnessError::Topology(format!(
                    "a Sentinel used again cannot be told `{line}`"
                )));
            }
        };
        command.query_async::<()>(&mut conn).await?;
    }
    Ok(())
}
