//! One ZooKeeper ensemble that many runs share, each under a chroot of its
//! own, as applications share a production ensemble.
//!
//! A whole matrix runs stage 9 in a dozen cells. Most of their stories
//! fault the holders (killed, frozen, slow), not the ensemble, and for
//! those a fresh ensemble per cell buys nothing: it costs three JVMs
//! started and elected again, about two CPU-seconds and a second of wall
//! time a cell on a 2-core machine. So the matrix hands those cells one
//! [`SharedZooKeeper`]: the ensemble starts with the first cell that needs
//! it, and every run gets a chroot, `/runs/<n>`, made for it before its
//! clients connect (`zk://host:port/runs/<n>`). A client sees only the
//! nodes under its chroot: the lock path is `/lockstages/lock:stock` in
//! every run, and no run can see or touch another's.
//!
//! The stories that kill or cut off members (leader-killed,
//! minority-partition) keep an ensemble of their own.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::OnceCell;
use zookeeper_client::{Acls, Client, CreateMode};

use super::ensemble::Ensemble;
use super::zookeeper::ZkEnsemble;
use crate::error::{HarnessError, Result};

/// The ensemble the runs share, started on first use.
#[derive(Debug, Default)]
pub struct SharedZooKeeper {
    ensemble: OnceCell<ZkEnsemble>,
    runs: AtomicU64,
}

/// A run's part of the shared ensemble.
#[derive(Debug, Clone)]
pub struct Chroot {
    /// One URL per member, each ending in the chroot (`zk://…:port/runs/3`).
    pub urls: Vec<String>,
    /// `/runs/3`.
    pub path: String,
    /// The members' client addresses, `127.0.0.1:port,…`.
    pub endpoints: String,
    /// Where the members keep their data ([`Ensemble::storage`]).
    pub storage: String,
}

impl SharedZooKeeper {
    /// A shared ensemble, not started yet.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// A chroot of its own for one run, made in the ensemble (started
    /// first if this is the first run to ask).
    pub async fn chroot_for_run(&self) -> Result<Chroot> {
        let ensemble = self
            .ensemble
            .get_or_try_init(|| ZkEnsemble::start(3))
            .await?;
        let path = format!("/runs/{}", self.runs.fetch_add(1, Ordering::Relaxed) + 1);
        let client = Client::connector()
            .with_session_timeout(Duration::from_secs(10))
            .connect(&ensemble.connect_string())
            .await
            .map_err(zk)?;
        let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
        client.mkdir(&path, &persistent).await.map_err(zk)?;
        Ok(Chroot {
            urls: ensemble
                .urls()
                .into_iter()
                .map(|url| format!("{url}{path}"))
                .collect(),
            path,
            endpoints: ensemble.endpoints(),
            storage: ensemble.storage(),
        })
    }
}

fn zk(error: zookeeper_client::Error) -> HarnessError {
    HarnessError::Topology(format!("the shared ZooKeeper ensemble: {error}"))
}
