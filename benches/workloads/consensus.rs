//! Stages 9 and 10 in the bench: a ZooKeeper ensemble and an etcd cluster
//! of three members each, started through the harness like the tests'
//! (`harness::server::{zookeeper, etcd}`), and each store's *floor*: its
//! cheapest round trip, measured in the same run, as PING is Redis's.
//!
//! - ZooKeeper's floor is `exists` of one node: a read the member the
//!   session is connected to answers from its own copy of the tree, with
//!   no proposal to the leader and nothing written to the log.
//! - etcd's floor is a serializable `get` of one key: also answered by the
//!   member from its own store, without the leader's confirmation a
//!   default (linearizable) read waits for. The status call is as cheap,
//!   but it is the maintenance service, not the key-value path the lock's
//!   requests take; the get is the like-for-like choice.
//!
//! Beside each floor, one write agreed by a majority and fsynced
//! (`set_data` of the node, `put` of the key): what every acquire and
//! every release of stages 9 and 10 costs at least, and why their pairs
//! cost milliseconds where Redis's cost microseconds.

use std::time::{Duration, Instant};

use etcd_client::GetOptions;
use harness::server::ensemble::Ensemble;
use harness::server::etcd::EtcdCluster;
use harness::server::zookeeper::ZkEnsemble;
use lockcore::LockError;
use zookeeper_client::{Acls, CreateMode};

use crate::measure::Latencies;
use crate::setup::StoreNote;

/// The members of each store.
pub const MEMBERS: usize = 3;

/// How the report names each store's floor, and its quorum write.
pub const ZK_FLOOR: &str = "ZooKeeper exists";
/// See [`ZK_FLOOR`].
pub const ZK_WRITE: &str = "ZooKeeper set_data";
/// See [`ZK_FLOOR`].
pub const ETCD_FLOOR: &str = "etcd get (serializable)";
/// See [`ZK_FLOOR`].
pub const ETCD_WRITE: &str = "etcd put";

/// The ensembles the run needs (none when stages 9 and 10 are left out).
#[derive(Default)]
pub struct Stores {
    /// Stage 9's ensemble.
    pub zk: Option<ZkEnsemble>,
    /// Stage 10's cluster.
    pub etcd: Option<EtcdCluster>,
}

impl Stores {
    /// Starts the ensembles asked for, both at once (three JVMs take
    /// seconds to start).
    pub async fn start(zk: bool, etcd: bool) -> Result<Self, String> {
        let (zk, etcd) = tokio::join!(
            async {
                match zk {
                    true => ZkEnsemble::start(MEMBERS).await.map(Some),
                    false => Ok(None),
                }
            },
            async {
                match etcd {
                    true => EtcdCluster::start(MEMBERS).await.map(Some),
                    false => Ok(None),
                }
            },
        );
        Ok(Self {
            zk: zk.map_err(|e| e.to_string())?,
            etcd: etcd.map_err(|e| e.to_string())?,
        })
    }

    /// Every running member's process id, to pin them.
    pub fn pids(&self) -> Vec<u32> {
        let zk = self.zk.iter().flat_map(|zk| zk.pids());
        zk.chain(self.etcd.iter().flat_map(|etcd| etcd.pids()))
            .collect()
    }

    /// The process ids of `store`'s members; `None` for Redis.
    pub fn members(&self, store: &str) -> Option<Vec<u32>> {
        match store {
            "ZooKeeper" => self.zk.as_ref().map(Ensemble::pids),
            "etcd" => self.etcd.as_ref().map(Ensemble::pids),
            _ => None,
        }
    }

    /// The members' URLs for `store` (`ZooKeeper`, `etcd`).
    pub fn urls(&self, store: &str) -> Vec<String> {
        match store {
            "ZooKeeper" => self.zk.as_ref().map(Ensemble::urls),
            "etcd" => self.etcd.as_ref().map(Ensemble::urls),
            _ => None,
        }
        .unwrap_or_default()
    }

    /// One setup note per store: its members, who leads, where the data
    /// lives (every write is fsynced there).
    pub async fn notes(&self) -> Vec<StoreNote> {
        let mut notes = Vec::new();
        let stores: [Option<&dyn Ensemble>; 2] = [
            self.zk.as_ref().map(|e| e as &dyn Ensemble),
            self.etcd.as_ref().map(|e| e as &dyn Ensemble),
        ];
        for ensemble in stores.into_iter().flatten() {
            let leader = ensemble
                .leader(Duration::from_secs(10))
                .await
                .map(|i| ensemble.label(i))
                .map_err(|e| e.to_string());
            notes.push(StoreNote {
                store: ensemble.store().to_owned(),
                members: ensemble.size(),
                leader,
                storage: ensemble.storage(),
            });
        }
        notes
    }
}

/// ZooKeeper's floor and write: `count` `exists` of one node, then
/// `count` `set_data` of it, on one session to the ensemble at `urls`
/// (`zk://host:port`, as stage 9 is given them).
pub async fn zookeeper(urls: &[String], count: usize) -> Result<[Latencies; 2], LockError> {
    let hosts: Vec<&str> = urls
        .iter()
        .filter_map(|u| u.strip_prefix("zk://"))
        .collect();
    let zk = |e: zookeeper_client::Error| LockError::ZooKeeper(e.to_string());
    let client = zookeeper_client::Client::connector()
        .with_session_timeout(Duration::from_secs(10))
        .connect(&hosts.join(","))
        .await
        .map_err(zk)?;
    let node = "/lockstages-bench-floor";
    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    match client.create(node, b"0", &persistent).await {
        Ok(_) | Err(zookeeper_client::Error::NodeExists) => {}
        Err(e) => return Err(zk(e)),
    }
    let mut reads = Latencies::with_capacity(count);
    for _ in 0..count {
        let started = Instant::now();
        client.check_stat(node).await.map_err(zk)?;
        reads.record(started.elapsed());
    }
    let mut writes = Latencies::with_capacity(count);
    for _ in 0..count {
        let started = Instant::now();
        client.set_data(node, b"1", None).await.map_err(zk)?;
        writes.record(started.elapsed());
    }
    Ok([reads, writes])
}

/// etcd's floor and write: `count` serializable `get`s of one key, then
/// `count` `put`s of it, to the first member of `urls`, the one stage 10's
/// client sends its requests to while it answers.
pub async fn etcd(urls: &[String], count: usize) -> Result<[Latencies; 2], LockError> {
    let etcd = |e: etcd_client::Error| LockError::Etcd(e.to_string());
    let first = urls
        .first()
        .ok_or_else(|| LockError::Config("no etcd member".into()))?;
    let mut client = etcd_client::Client::connect([first], None)
        .await
        .map_err(etcd)?;
    let key = "lockstages-bench-floor";
    client.put(key, "0", None).await.map_err(etcd)?;
    let mut reads = Latencies::with_capacity(count);
    for _ in 0..count {
        let started = Instant::now();
        let local = GetOptions::new().with_serializable();
        client.get(key, Some(local)).await.map_err(etcd)?;
        reads.record(started.elapsed());
    }
    let mut writes = Latencies::with_capacity(count);
    for _ in 0..count {
        let started = Instant::now();
        client.put(key, "1", None).await.map_err(etcd)?;
        writes.record(started.elapsed());
    }
    Ok([reads, writes])
}
