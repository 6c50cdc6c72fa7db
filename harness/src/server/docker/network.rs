//! A run's own Docker network: the hosts of one scenario.
//!
//! The network has a subnet of its own choosing (a free `10.x.y.0/24`), so
//! that a node can be given back its address after a restart or after it
//! was cut off: Docker pins an address only on a subnet the user chose.
//!
//! A run may also have a clients' network beside it: an internal one that
//! only the harness's host and the nodes that ask for it are on. A node on
//! both is reached by its peers on the run's network and by the harness and
//! the clients on the clients' network, so cutting it off the run's network
//! is a partition with the clients on the node's side (split brain).

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use testcontainers::bollard::Docker;
use testcontainers::bollard::errors::Error as BollardError;
use testcontainers::bollard::models::{
    Ipam, IpamConfig, NetworkCreateRequest, NetworkDisconnectRequest,
};
use tokio::sync::OnceCell;

use super::{OWNER_LABEL, blocking, owner};
use crate::error::{HarnessError, Result};

/// Subnets tried before giving up (each is taken only if no other network
/// on this engine overlaps it).
const SUBNET_ATTEMPTS: usize = 40;

/// One run's network, made when its first node starts and removed when the
/// last of its nodes is gone (every node holds it).
#[derive(Debug, Default)]
pub struct RunNetwork {
    made: OnceCell<Made>,
    clients: OnceCell<Made>,
    /// The names of the containers started on it: the only handle on an
    /// endpoint the engine keeps after its container is gone (see
    /// [`remove`]).
    containers: Mutex<Vec<String>>,
}

#[derive(Debug)]
struct Made {
    name: String,
    gateway: Ipv4Addr,
}

impl RunNetwork {
    /// The network's name, making it on first use.
    pub async fn name(&self, docker: &Docker) -> Result<&str> {
        Ok(&self.made(docker).await?.name)
    }

    /// The host's own address on the network: where a node reaches a relay
    /// the harness runs.
    pub async fn gateway(&self, docker: &Docker) -> Result<Ipv4Addr> {
        Ok(self.made(docker).await?.gateway)
    }

    /// The clients' network's name, making it on first use.
    pub async fn clients_name(&self, docker: &Docker) -> Result<&str> {
        let made = self.made(docker).await?;
        let clients = self
            .clients
            .get_or_try_init(|| create(docker, format!("{}-clients", made.name), true))
            .await?;
        Ok(&clients.name)
    }

    /// A name for a container about to be started on this network, kept
    /// so that an endpoint its container leaves behind can be removed.
    pub fn name_container(&self) -> String {
        static CONTAINERS: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "lockstages-{}-c{}-{}",
            owner(),
            CONTAINERS.fetch_add(1, Ordering::Relaxed),
            &uuid::Uuid::new_v4().simple().to_string()[..6]
        );
        if let Ok(mut containers) = self.containers.lock() {
            containers.push(name.clone());
        }
        name
    }

    async fn made(&self, docker: &Docker) -> Result<&Made> {
        self.made
            .get_or_try_init(|| create(docker, next_name(), false))
            .await
    }
}

impl Drop for RunNetwork {
    fn drop(&mut self) {
        let containers =
            std::mem::take(self.containers.get_mut().unwrap_or_else(|e| e.into_inner()));
        for made in [self.clients.take(), self.made.take()]
            .into_iter()
            .flatten()
        {
            let containers = containers.clone();
            // Best effort: the reaper removes it at the latest when this
            // process ends.
            let _ = blocking(move |docker| async move {
                remove(&docker, &made.name, &containers)
                    .await
                    .map_err(|e| HarnessError::Docker(e.to_string()))
            });
        }
    }
}

/// Pauses between tries at removing a network the engine still sees in use.
const REMOVAL_PAUSES_MS: [u64; 4] = [50, 200, 800, 2_000];

/// Removes a network, even one the engine says has "active endpoints".
///
/// A container's removal can return before the engine has let go of its
/// endpoint, and now and then (in about one whole Docker matrix in three on
/// this machine) the engine keeps such an endpoint for good, with no
/// container behind it and none listed on the network. Both are answered
/// the same way: every endpoint the network lists, and every container
/// `started_on_it` names, is disconnected by force, and the removal is
/// tried again after a pause. A forced disconnect of a container that is
/// gone deletes the endpoint of that name, and an endpoint is named after
/// its container: the names are the only handle on a stale one. They do
/// not always reach it: now and then the engine still refuses, and only
/// its restart clears the network (`.ci/run` reports such a network). A
/// network already gone counts as removed.
pub(super) async fn remove(
    docker: &Docker,
    name: &str,
    started_on_it: &[String],
) -> std::result::Result<(), BollardError> {
    let mut pauses = REMOVAL_PAUSES_MS.iter();
    loop {
        let error = match docker.remove_network(name).await {
            Ok(()) => return Ok(()),
            Err(BollardError::DockerResponseServerError {
                status_code: 404, ..
            }) => return Ok(()),
            Err(e) => e,
        };
        let Some(pause) = pauses.next() else {
            return Err(error);
        };
        disconnect_everything(docker, name, started_on_it).await;
        tokio::time::sleep(Duration::from_millis(*pause)).await;
    }
}

/// Forces off `network` every endpoint the engine lists on it, and every
/// one named after a container in `started_on_it`.
async fn disconnect_everything(docker: &Docker, network: &str, started_on_it: &[String]) {
    let listed = match docker.inspect_network(network, None).await {
        Ok(inspected) => inspected.containers.unwrap_or_default(),
        Err(_) => HashMap::new(),
    };
    let names = listed
        .into_iter()
        .flat_map(|(id, endpoint)| endpoint.name.into_iter().chain([id]))
        .chain(started_on_it.iter().cloned());
    for container in names {
        let _ = disconnect(docker, container, network).await;
    }
}

/// Disconnects container `id` (or name) from `network`, forcibly: the
/// engine's answer to a node being cut off, and the way to a stale
/// endpoint (see [`remove`]).
pub(super) async fn disconnect(docker: &Docker, id: String, network: &str) -> Result<()> {
    let request = NetworkDisconnectRequest {
        container: id,
        force: Some(true),
    };
    docker
        .disconnect_network(network, request)
        .await
        .map_err(|e| HarnessError::Docker(format!("disconnect from {network}: {e}")))
}

/// A name no other run of this process has.
fn next_name() -> String {
    static RUNS: AtomicU32 = AtomicU32::new(0);
    format!(
        "lockstages-{}-{}",
        owner(),
        RUNS.fetch_add(1, Ordering::Relaxed)
    )
}

/// Makes a bridge network on a free subnet. An `internal` one has no way
/// out but to the host: a node on it reaches no other network through it.
async fn create(docker: &Docker, name: String, internal: bool) -> Result<Made> {
    let mut last_error = String::new();
    for _ in 0..SUBNET_ATTEMPTS {
        let [_, _, _, _, b, c, ..] = uuid::Uuid::new_v4().into_bytes();
        let b = 100 + b % 100;
        let request = NetworkCreateRequest {
            name: name.clone(),
            driver: Some("bridge".into()),
            internal: Some(internal),
            ipam: Some(Ipam {
                config: Some(vec![IpamConfig {
                    subnet: Some(format!("10.{b}.{c}.0/24")),
                    gateway: Some(format!("10.{b}.{c}.1")),
                    ..IpamConfig::default()
                }]),
                ..Ipam::default()
            }),
            labels: Some(HashMap::from([(OWNER_LABEL.to_owned(), owner())])),
            ..NetworkCreateRequest::default()
        };
        match docker.create_network(request).await {
            Ok(_) => {
                return Ok(Made {
                    name,
                    gateway: Ipv4Addr::new(10, b, c, 1),
                });
            }
            // Another network (another run, another program) has it.
            Err(e) if e.to_string().contains("overlap") => last_error = e.to_string(),
            Err(e) => {
                return Err(HarnessError::Docker(format!(
                    "cannot create network {name}: {e}"
                )));
            }
        }
    }
    Err(HarnessError::Docker(format!(
        "no free subnet for network {name} after {SUBNET_ATTEMPTS} attempts: {last_error}"
    )))
}
