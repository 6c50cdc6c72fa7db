//! A `redis-server` container on its run's network (and, when asked, on
//! the run's clients' network too: see [`RedisContainer::join_clients_network`]).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use testcontainers::bollard::Docker;
use testcontainers::bollard::models::{
    EndpointIpamConfig, EndpointSettings, NetworkConnectRequest,
};
use testcontainers::bollard::query_parameters::KillContainerOptionsBuilder;
use testcontainers::core::client::docker_client_instance;
use testcontainers::runners::AsyncRunner as _;
use testcontainers::{ContainerAsync, GenericImage, ImageExt as _};
use tokio::time::{Instant, sleep};

use super::network::disconnect;
use super::spares::{self, Kind, Origin, RigLease, Spare, Spares};
use super::{IMAGE_HINT, OWNER_LABEL, RunNetwork, owner, reaper, split_image};
use crate::error::{HarnessError, Result};
use crate::server::log_tail::tail;
use crate::server::redis_process::ping;

/// How long a fresh container may take to answer PING.
const READY_WITHIN: Duration = Duration::from_secs(20);
/// How long a node put back on its network may take to be reached there:
/// a second or two is usual (a neighbour lookup retried), ten is the
/// margin.
const REJOINED_WITHIN: Duration = Duration::from_secs(10);

/// A `redis-server` container. Removed when dropped (and by the reaper if
/// this process dies first).
pub struct RedisContainer {
    // Declared first, so it is removed before the network is let go.
    // Taken only when the container is dropped, to be kept as a spare.
    container: Option<ContainerAsync<GenericImage>>,
    docker: Docker,
    image: String,
    /// Where the harness and the clients reach it.
    addr: SocketAddr,
    /// Where its peers reach it: its address on the run's network.
    peer_addr: SocketAddr,
    network: Arc<RunNetwork>,
    /// What it was started as, when it may become a spare (see
    /// [`super::spares`]).
    spare_origin: Option<Origin>,
    /// Whether it was killed, paused, restarted or moved between
    /// networks: then it is removed, never kept as a spare.
    faulted: AtomicBool,
    /// The rig it was started in, held until it is wiped (see
    /// [`super::spares`]).
    rig: Option<Arc<RigLease>>,
}

impl std::fmt::Debug for RedisContainer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisContainer")
            .field("id", &self.handle().id())
            .field("image", &self.image)
            .field("addr", &self.addr)
            .field("peer_addr", &self.peer_addr)
            .finish()
    }
}

impl RedisContainer {
    /// Starts a container of `image` on `network`, with `args` after the
    /// server's usual ones, and waits until it answers PING. `args` come
    /// first when the server needs a configuration file (`/sentinel.conf
    /// --sentinel`): `files` are copied into the container before it starts.
    pub async fn start(
        image: &str,
        network: Arc<RunNetwork>,
        leading_args: &[&str],
        extra_args: &[&str],
        files: &[(&str, Vec<u8>)],
        port: u16,
    ) -> Result<Self> {
        reaper::ensure()?;
        let docker = docker_client_instance()
            .await
            .map_err(|e| HarnessError::Docker(format!("cannot reach the Docker engine: {e}")))?;
        let network_name = network.name(&docker).await?.to_owned();
        let (name, tag) = split_image(image);
        let args = leading_args
            .iter()
            .chain(&[
                "--protected-mode",
                "no",
                "--save",
                "",
                "--appendonly",
                "no",
                "--notify-keyspace-events",
                "Ex",
            ])
            .chain(extra_args)
            .map(|s| (*s).to_owned())
            .collect::<Vec<_>>();
        let mut request = GenericImage::new(name, tag)
            .with_cmd(args)
            .with_container_name(network.name_container())
            .with_network(network_name.clone())
            .with_label(OWNER_LABEL, owner())
            // Reached at its own address only: nothing is published on
            // the host's interfaces.
            .with_host_config_modifier(|host| {
                host.publish_all_ports = Some(false);
                host.port_bindings = None;
            })
            .with_startup_timeout(READY_WITHIN);
        for (path, bytes) in files {
            request = request.with_copy_to(*path, bytes.clone());
        }
        let container = request.start().await.map_err(|e| {
            HarnessError::ServerStart(format!(
                "container of {image} did not start: {e}\n({IMAGE_HINT})"
            ))
        })?;
        let ip = address_on(&docker, container.id(), &network_name).await?;
        let addr = SocketAddr::new(IpAddr::V4(ip), port);
        let server = Self {
            container: Some(container),
            docker,
            image: image.to_owned(),
            addr,
            peer_addr: addr,
            network,
            spare_origin: None,
            faulted: AtomicBool::new(false),
            rig: None,
        };
        server.wait_ready().await?;
        Ok(server)
    }

    /// Starts a plain server as [`Self::start`] does, on a network of its
    /// own (which it keeps as a spare): an idle spare started with the same `args` when one has
    /// rested, else a new container. Either way it becomes a spare again
    /// when dropped, unless it was faulted or replicated.
    pub async fn start_or_reuse(spares: &Arc<Spares>, args: &[&str]) -> Result<Self> {
        let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
        if let Some(spare) = spares.take(&args) {
            return Self::from_spare(spare, spares, None).await;
        }
        let extra: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut server = Self::start(
            spares.image(),
            Arc::default(),
            &[],
            &extra,
            &[],
            crate::server::CONTAINER_REDIS_PORT,
        )
        .await?;
        spares.count_made();
        server.spare_origin =
            Some(Origin::read(spares.clone(), None, Kind::Server, args, server.addr).await?);
        Ok(server)
    }

    /// Starts a node of `kind` in a rig (see [`super::spares`]): a node the
    /// rig kept, started with the same arguments, when one has rested and
    /// is still as its wipe left it; else a new container on the rig's
    /// network, started as [`Self::start`] does. Says whether it was used
    /// again (a Sentinel used again has still to be told what to watch).
    pub async fn start_in_rig(
        lease: &Arc<RigLease>,
        kind: Kind,
        leading_args: &[&str],
        extra_args: &[&str],
        files: &[(&str, Vec<u8>)],
        port: u16,
    ) -> Result<(Self, bool)> {
        let args: Vec<String> = leading_args
            .iter()
            .chain(extra_args)
            .map(|s| (*s).to_owned())
            .collect();
        let spares = lease.spares();
        while let Some(spare) = lease.take(&args) {
            if !spares::still_wiped(spare.addr, kind).await {
                // Removed as it drops.
                continue;
            }
            return Ok((Self::from_spare(spare, spares, Some(lease)).await?, true));
        }
        let mut server = Self::start(
            spares.image(),
            lease.network(),
            leading_args,
            extra_args,
            files,
            port,
        )
        .await?;
        spares.count_made();
        server.spare_origin =
            Some(Origin::read(spares.clone(), Some(lease.rig()), kind, args, server.addr).await?);
        server.rig = Some(lease.clone());
        Ok((server, false))
    }

    /// A spare taken from `spares` (in `rig`, when a rig kept it), once it
    /// answers.
    async fn from_spare(
        spare: Spare,
        spares: &Arc<Spares>,
        rig: Option<&Arc<RigLease>>,
    ) -> Result<Self> {
        let docker = docker_client_instance()
            .await
            .map_err(|e| HarnessError::Docker(format!("cannot reach the Docker engine: {e}")))?;
        let server = Self {
            container: Some(spare.container),
            docker,
            image: spares.image().to_owned(),
            addr: spare.addr,
            peer_addr: spare.addr,
            network: spare.network,
            spare_origin: Some(spare.origin),
            faulted: AtomicBool::new(false),
            rig: rig.cloned(),
        };
        server.wait_ready().await?;
        Ok(server)
    }

    /// The testcontainers handle (there until the container is dropped).
    fn handle(&self) -> &ContainerAsync<GenericImage> {
        self.container
            .as_ref()
            .expect("a container's handle is taken only when it is dropped")
    }

    fn mark_faulted(&self) {
        self.faulted.store(true, Ordering::Relaxed);
    }

    /// Where the harness and the clients reach the node: its address on
    /// the run's network, or on the clients' network once it joined that.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Where its peers (replicas, Sentinels) reach the node: its address on
    /// the run's network, the one [`Self::leave_network`] takes away.
    pub fn peer_addr(&self) -> SocketAddr {
        self.peer_addr
    }

    /// The run's network's name, for timelines.
    pub async fn network_name(&self) -> Result<String> {
        Ok(self.network.name(&self.docker).await?.to_owned())
    }

    /// The run's clients' network's name, for timelines.
    pub async fn clients_network_name(&self) -> Result<String> {
        Ok(self.network.clients_name(&self.docker).await?.to_owned())
    }

    /// Connects the node to the run's clients' network as well, and has the
    /// harness and the clients reach it there from now on: a way to it that
    /// stays open when it is cut off the run's network, as for clients on
    /// its side of a partition. Its peers still reach it at
    /// [`Self::peer_addr`] only: the clients' network is internal, and
    /// nothing else is on it but the host.
    pub async fn join_clients_network(&mut self) -> Result<()> {
        let name = self.network.clients_name(&self.docker).await?.to_owned();
        self.connect(&name, None).await?;
        let ip = address_on(&self.docker, self.handle().id(), &name).await?;
        self.addr = SocketAddr::new(IpAddr::V4(ip), self.addr.port());
        self.wait_ready().await
    }

    /// Where this node reaches the harness's host: the network's gateway.
    pub async fn host_seen_from_here(&self) -> Result<Ipv4Addr> {
        self.network.gateway(&self.docker).await
    }

    /// SIGKILL to the server: it vanishes with its memory. The container
    /// stays, stopped, so that it can be started again at its address.
    pub async fn kill(&self) -> Result<()> {
        self.mark_faulted();
        let options = KillContainerOptionsBuilder::new().signal("SIGKILL").build();
        match self
            .docker
            .kill_container(self.handle().id(), Some(options))
            .await
        {
            Ok(()) => Ok(()),
            // Killing a stopped container is what we wanted anyway.
            Err(e) if e.to_string().contains("is not running") => Ok(()),
            Err(e) => Err(HarnessError::Docker(format!("kill: {e}"))),
        }
    }

    /// Freezes every process of the container (the cgroup freezer).
    pub async fn pause(&self) -> Result<()> {
        self.mark_faulted();
        self.handle()
            .pause()
            .await
            .map_err(|e| HarnessError::Docker(format!("pause: {e}")))
    }

    /// Thaws a paused container.
    pub async fn resume(&self) -> Result<()> {
        self.handle()
            .unpause()
            .await
            .map_err(|e| HarnessError::Docker(format!("unpause: {e}")))
    }

    /// Kills the server and starts the same container again: empty (no
    /// persistence), at the same address.
    pub async fn restart(&mut self) -> Result<()> {
        self.kill().await?;
        // A container started again is given new addresses unless they are
        // pinned, which an endpoint made at connect time can be.
        self.leave_network().await?;
        self.rejoin_network().await?;
        if self.addr != self.peer_addr {
            let name = self.network.clients_name(&self.docker).await?.to_owned();
            self.disconnect(&name).await?;
            self.connect(&name, Some(self.addr.ip())).await?;
        }
        self.handle()
            .start()
            .await
            .map_err(|e| HarnessError::Docker(format!("start again: {e}")))?;
        self.wait_ready().await
    }

    /// Cuts the node off the run's network, as a host whose link went
    /// down: its peers no longer reach it, nor it them (nor the harness,
    /// unless the node is on the clients' network too).
    pub async fn leave_network(&self) -> Result<()> {
        let name = self.network.name(&self.docker).await?;
        self.disconnect(name).await
    }

    /// Starts [`Self::leave_network`] and returns at once: the engine's
    /// answer can come a second or more later on a busy machine, and a
    /// story may need to act while the cut is being made. The task's
    /// result is the engine's answer.
    pub async fn start_leaving_network(&self) -> Result<tokio::task::JoinHandle<Result<()>>> {
        self.mark_faulted();
        let name = self.network.name(&self.docker).await?.to_owned();
        let (docker, id) = (self.docker.clone(), self.handle().id().to_owned());
        Ok(tokio::spawn(
            async move { disconnect(&docker, id, &name).await },
        ))
    }

    /// Connects the node to the run's network again, at the address it
    /// had, and returns once the harness's host reaches it there.
    ///
    /// Why wait: Docker's answer comes before the path is usable. The
    /// host's neighbour entry for the address may still be the old
    /// link's, or a failed lookup that is retried only a second later, so
    /// a connection made at once can time out though the node is back.
    pub async fn join_network(&self) -> Result<()> {
        self.rejoin_network().await?;
        let deadline = Instant::now() + REJOINED_WITHIN;
        while !ping(self.peer_addr).await {
            if Instant::now() > deadline {
                return Err(HarnessError::Docker(format!(
                    "container of {} rejoined its network but gave no PONG at {} within {REJOINED_WITHIN:?}",
                    self.image, self.peer_addr
                )));
            }
            sleep(Duration::from_millis(20)).await;
        }
        Ok(())
    }

    /// Connects the node to the run's network again, at the address it had
    /// (a stopped container too: no waiting for an answer).
    async fn rejoin_network(&self) -> Result<()> {
        let name = self.network.name(&self.docker).await?;
        self.connect(name, Some(self.peer_addr.ip())).await
    }

    async fn disconnect(&self, network: &str) -> Result<()> {
        self.mark_faulted();
        disconnect(&self.docker, self.handle().id().to_owned(), network).await
    }

    /// Connects the node to `network`, at `ip` if given (else Docker
    /// chooses).
    async fn connect(&self, network: &str, ip: Option<IpAddr>) -> Result<()> {
        self.mark_faulted();
        let request = NetworkConnectRequest {
            container: self.handle().id().to_owned(),
            endpoint_config: Some(EndpointSettings {
                ipam_config: ip.map(|ip| EndpointIpamConfig {
                    ipv4_address: Some(ip.to_string()),
                    ..EndpointIpamConfig::default()
                }),
                ..EndpointSettings::default()
            }),
        };
        self.docker
            .connect_network(network, request)
            .await
            .map_err(|e| HarnessError::Docker(format!("connect to {network}: {e}")))
    }

    async fn wait_ready(&self) -> Result<()> {
        let deadline = Instant::now() + READY_WITHIN;
        let mut tries = 0u32;
        while !ping(self.addr).await {
            tries += 1;
            // Now and then, see whether the server gave up.
            if tries.is_multiple_of(20) && !self.handle().is_running().await.unwrap_or(false) {
                return Err(HarnessError::ServerStart(format!(
                    "the container of {} exited; its log ends with:\n{}",
                    self.image,
                    self.log_tail().await
                )));
            }
            if Instant::now() > deadline {
                return Err(HarnessError::ServerStart(format!(
                    "container of {} gave no PONG at {} within {READY_WITHIN:?}",
                    self.image, self.addr
                )));
            }
            sleep(Duration::from_millis(10)).await;
        }
        Ok(())
    }

    async fn log_tail(&self) -> String {
        let out = self.handle().stdout_to_vec().await.unwrap_or_default();
        let err = self.handle().stderr_to_vec().await.unwrap_or_default();
        tail(
            &format!(
                "{}{}",
                String::from_utf8_lossy(&out),
                String::from_utf8_lossy(&err)
            ),
            10,
        )
    }
}

impl Drop for RedisContainer {
    /// A spare that nothing faulted is wiped and kept for a later cell;
    /// any other container is removed (by testcontainers, as the handle
    /// drops).
    fn drop(&mut self) {
        let Some(origin) = self.spare_origin.take() else {
            return;
        };
        if self.faulted.load(Ordering::Relaxed) {
            return;
        }
        if spares::wipe(self.addr, &origin).is_ok()
            && let Some(container) = self.container.take()
        {
            let spares = origin.spares.clone();
            spares.give_back(container, self.network.clone(), self.addr, origin);
        }
    }
}

/// The container's address on `network`.
async fn address_on(docker: &Docker, id: &str, network: &str) -> Result<Ipv4Addr> {
    let info = docker
        .inspect_container(id, None)
        .await
        .map_err(|e| HarnessError::Docker(format!("inspect {id}: {e}")))?;
    info.network_settings
        .and_then(|settings| settings.networks)
        .and_then(|mut networks| networks.remove(network))
        .and_then(|endpoint| endpoint.ip_address)
        .and_then(|ip| ip.parse().ok())
        .ok_or_else(|| HarnessError::Docker(format!("container {id} has no address on {network}")))
}
