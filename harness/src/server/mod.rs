//! Redis nodes for scenarios: where they run and how they are faulted.
//!
//! A [`Node`] is one Redis server with a label (`lock`, `db`, `replica`,
//! `node3`). The default backend runs `redis-server` processes on loopback;
//! the Docker backend runs each node in a container. Either way node faults
//! are real: signals to processes, or the engine's kill and pause.

mod redis_container;
mod redis_process;

pub use redis_container::{OWNER_LABEL, RedisContainer, docker_answers};
pub use redis_process::{INSTALL_HINT, RedisProcess, redis_server_installed};

use crate::error::{HarnessError, Result};

/// Chooses the backend: `process` or `docker`.
pub const BACKEND_VAR: &str = "LOCKSTAGES_BACKEND";
/// The Docker backend's image.
pub const IMAGE_VAR: &str = "LOCKSTAGES_REDIS_IMAGE";
/// The image used when [`IMAGE_VAR`] is not set.
pub const DEFAULT_IMAGE: &str = "redis:7-alpine";

/// Where nodes run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// `redis-server` processes on loopback ports (the default).
    Process,
    /// One container per node, of this image.
    Docker {
        /// The image, `redis:7-alpine` unless `LOCKSTAGES_REDIS_IMAGE` says.
        image: String,
    },
}

impl Backend {
    /// The backend chosen by `LOCKSTAGES_BACKEND`, or else `redis-server`
    /// when installed, or else Docker when it answers; a clear error saying
    /// how to get one when neither can be had.
    pub fn from_env() -> Result<Self> {
        let image = std::env::var(IMAGE_VAR).unwrap_or_else(|_| DEFAULT_IMAGE.to_owned());
        match std::env::var(BACKEND_VAR).as_deref() {
            Ok("docker") => {
                if docker_answers() {
                    Ok(Backend::Docker { image })
                } else {
                    Err(HarnessError::NoRedis(format!(
                        "{BACKEND_VAR}=docker, but no Docker engine answers (`docker info` failed)"
                    )))
                }
            }
            Ok("process") | Ok("") | Err(_) => {
                if redis_server_installed() {
                    Ok(Backend::Process)
                } else if std::env::var(BACKEND_VAR).is_err() && docker_answers() {
                    Ok(Backend::Docker { image })
                } else if std::env::var(BACKEND_VAR).is_err() {
                    Err(HarnessError::NoRedis(format!(
                        "{INSTALL_HINT}\n(no Docker engine answers here either: `docker info` failed)"
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

    /// `process` or `docker (image)`, for timelines and reports.
    pub fn label(&self) -> String {
        match self {
            Backend::Process => "process".to_owned(),
            Backend::Docker { image } => format!("docker {image}"),
        }
    }
}

#[derive(Debug)]
enum Server {
    Process(RedisProcess),
    Container(RedisContainer),
}

/// One Redis server in a scenario.
#[derive(Debug)]
pub struct Node {
    label: String,
    server: Server,
}

impl Node {
    /// Starts a node on `backend`, labelled for timelines.
    pub async fn start(backend: &Backend, label: &str, extra_args: &[&str]) -> Result<Self> {
        let server = match backend {
            Backend::Process => Server::Process(RedisProcess::start(extra_args).await?),
            Backend::Docker { image } => {
                Server::Container(RedisContainer::start(image, extra_args).await?)
            }
        };
        Ok(Self {
            label: label.to_owned(),
            server,
        })
    }

    /// The node's label: `lock`, `db`, `replica`, `node1`…
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Its URL.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port())
    }

    /// Its loopback port.
    pub fn port(&self) -> u16 {
        match &self.server {
            Server::Process(p) => p.port(),
            Server::Container(c) => c.port(),
        }
    }

    /// Host and port, as `REPLICAOF` wants them.
    pub fn host_port(&self) -> (String, u16) {
        ("127.0.0.1".to_owned(), self.port())
    }

    /// Kills the node (`kill -9`, `docker kill`): its memory is lost.
    pub async fn kill(&mut self) -> Result<()> {
        match &mut self.server {
            Server::Process(p) => {
                p.kill();
                Ok(())
            }
            Server::Container(c) => c.kill(),
        }
    }

    /// Freezes the node (SIGSTOP, `docker pause`): it answers nothing until resumed.
    pub async fn pause(&mut self) -> Result<()> {
        match &self.server {
            Server::Process(p) => p.pause(),
            Server::Container(c) => c.pause(),
        }
    }

    /// Thaws a paused node.
    pub async fn resume(&mut self) -> Result<()> {
        match &self.server {
            Server::Process(p) => p.resume(),
            Server::Container(c) => c.resume(),
        }
    }

    /// Kills the node and starts it again, empty, at the same address.
    pub async fn restart(&mut self) -> Result<()> {
        match &mut self.server {
            Server::Process(p) => p.restart().await,
            Server::Container(c) => c.restart().await,
        }
    }
}
