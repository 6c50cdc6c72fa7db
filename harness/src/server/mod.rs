//! Redis nodes for scenarios: where they run and how they are faulted.
//!
//! A [`Node`] is one Redis server with a label (`lock`, `db`, `replica`,
//! `node3`). The default backend runs `redis-server` processes on loopback;
//! node faults are real signals sent to them.

mod redis_process;

pub use redis_process::{INSTALL_HINT, RedisProcess, redis_server_installed};

use crate::error::{HarnessError, Result};

/// Where nodes run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// `redis-server` processes on loopback ports (the default).
    Process,
}

impl Backend {
    /// The backend chosen by the environment, with a clear error when none
    /// can be had.
    pub fn from_env() -> Result<Self> {
        if redis_server_installed() {
            Ok(Backend::Process)
        } else {
            Err(HarnessError::NoRedis(INSTALL_HINT.to_owned()))
        }
    }
}

/// One Redis server in a scenario.
#[derive(Debug)]
pub struct Node {
    label: String,
    server: RedisProcess,
}

impl Node {
    /// Starts a node on `backend`, labelled for timelines.
    pub async fn start(backend: &Backend, label: &str, extra_args: &[&str]) -> Result<Self> {
        match backend {
            Backend::Process => Ok(Self {
                label: label.to_owned(),
                server: RedisProcess::start(extra_args).await?,
            }),
        }
    }

    /// The node's label: `lock`, `db`, `replica`, `node1`…
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Its URL.
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// Host and port, as `REPLICAOF` wants them.
    pub fn host_port(&self) -> (String, u16) {
        ("127.0.0.1".to_owned(), self.server.port())
    }

    /// Kills the node (`kill -9`): its memory is lost.
    pub async fn kill(&mut self) -> Result<()> {
        self.server.kill();
        Ok(())
    }

    /// Freezes the node: it accepts nothing until resumed.
    pub async fn pause(&mut self) -> Result<()> {
        self.server.pause()
    }

    /// Thaws a paused node.
    pub async fn resume(&mut self) -> Result<()> {
        self.server.resume()
    }

    /// Kills the node and starts it again, empty, at the same address.
    pub async fn restart(&mut self) -> Result<()> {
        self.server.restart().await
    }
}
