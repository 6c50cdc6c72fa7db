//! A real etcd cluster: three `etcd` processes on free loopback ports, for
//! stage 10.
//!
//! Each member is the server Debian's `etcd-server` package ships (the
//! binary `etcd`), started directly, so that the child *is* the server:
//! started with the harness's parent-death signal, killed when the cluster
//! is dropped, and killed by the kernel when the test process dies. No
//! `etcd` outlives a test (see [`super::ensemble`]).
//!
//! Times are etcd's defaults, said out loud: a Raft heartbeat every 100 ms
//! and an election after 1 s without one. etcd grants no lease shorter than
//! one and a half election timeouts, rounded up to whole seconds: 2 s here.
//! Every write is fsynced to the member's write-ahead log, as in
//! production. The data directories live on a tmpfs (`/dev/shm`) when there
//! is one, so that a loaded machine's disk does not stall the Raft log and
//! cost a living lease; `LOCKSTAGES_ETCD_DATA_DIR` names another place (a
//! disk, to measure what fsync costs). [`EtcdCluster::storage`] says which.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::data_folders::ETCD_DATA_DIR_VAR;
use super::ensemble::{self, Ensemble, Launch, Members};
use crate::error::{HarnessError, Result};
use crate::process;

/// What to install when etcd is missing.
pub const ETCD_INSTALL_HINT: &str = "etcd was not found (stage 10 needs the `etcd` server \
    binary on PATH). Install it:\n  \
    Debian/Ubuntu: sudo apt-get install etcd-server\n  \
    elsewhere:     download a release from https://github.com/etcd-io/etcd/releases and put \
    its `etcd` on PATH";

/// etcd's Raft heartbeat (its default).
pub const HEARTBEAT: Duration = Duration::from_millis(100);
/// How long a follower waits without a heartbeat before it stands for
/// election (etcd's default).
pub const ELECTION_TIMEOUT: Duration = Duration::from_secs(1);
/// Three `etcd` processes starting at once on a loaded machine.
const READY_WITHIN: Duration = Duration::from_secs(60);

const STORE: &str = "etcd";

fn missing() -> HarnessError {
    HarnessError::NoEtcd(ETCD_INSTALL_HINT.to_owned())
}

/// Whether `etcd` runs here; the error says what to install. Asked once
/// per process when the answer is yes.
pub fn etcd_installed() -> Result<()> {
    static FOUND: OnceLock<()> = OnceLock::new();
    if FOUND.get().is_some() {
        return Ok(());
    }
    ask_etcd_version()?;
    FOUND.get_or_init(|| ());
    Ok(())
}

fn ask_etcd_version() -> Result<()> {
    let mut version = Command::new("etcd");
    version.arg("--version");
    match process::output(version) {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(HarnessError::NoEtcd(format!(
            "{ETCD_INSTALL_HINT}\n(`etcd --version` failed: {})",
            String::from_utf8_lossy(&out.stderr).trim()
        ))),
        Err(_) => Err(HarnessError::NoEtcd(format!(
            "{ETCD_INSTALL_HINT}\n(no `etcd` on PATH)"
        ))),
    }
}

/// An etcd cluster of processes on loopback. Every member is killed when
/// the cluster is dropped, and when this process dies.
#[derive(Debug)]
pub struct EtcdCluster {
    members: Members,
    /// `--initial-cluster`: every member's name and peer URL.
    peers: String,
    peer_ports: Vec<u16>,
    /// `--initial-cluster-token`: this cluster's own, so that no member
    /// of another run's cluster could ever join it.
    token: String,
}

impl EtcdCluster {
    /// Starts `size` members (3 for stage 10) and waits until they have
    /// elected a leader and every member knows it.
    pub async fn start(size: usize) -> Result<Self> {
        etcd_installed()?;
        ensemble::with_free_ports(STORE, |attempt| async move {
            let dir = ensemble::cluster_dir(ETCD_DATA_DIR_VAR, true, "etcd", attempt);
            let mut cluster = Self::configure(size, dir).map_err(|e| Launch::Failed(e.into()))?;
            for index in 0..size {
                cluster.spawn(index, "new").map_err(Launch::Failed)?;
            }
            cluster.members.await_leader_elected(READY_WITHIN).await?;
            Ok(cluster)
        })
        .await
    }

    fn configure(size: usize, dir: std::path::PathBuf) -> std::io::Result<Self> {
        // All ports at once, so that no two members are handed the same one.
        let ports = ensemble::free_ports(size * 2)?;
        let (client_ports, peer_ports) = ports.split_at(size);
        let peers = peer_ports
            .iter()
            .enumerate()
            .map(|(i, port)| format!("etcd{}=http://127.0.0.1:{port}", i + 1))
            .collect::<Vec<_>>()
            .join(",");
        let mut members = Members::new(STORE, dir, role_query);
        for (i, &port) in client_ports.iter().enumerate() {
            members.add(i + 1, port, "etcd.log")?;
        }
        Ok(Self {
            members,
            peers,
            peer_ports: peer_ports.to_vec(),
            token: format!("lockstages-{}", uuid::Uuid::new_v4().simple()),
        })
    }

    /// Starts member `index`; `state` is `new` for a cluster being formed,
    /// `existing` for a member rejoining with its data.
    fn spawn(&mut self, index: usize, state: &str) -> Result<()> {
        let member = self.members.get_mut(index);
        let client = format!("http://{}", member.addr());
        let peer = format!("http://127.0.0.1:{}", self.peer_ports[index]);
        let mut command = Command::new("etcd");
        command
            .arg(format!("--name=etcd{}", member.id))
            .arg("--data-dir")
            .arg(member.dir.join("data"))
            .args(["--listen-client-urls", &client])
            .args(["--advertise-client-urls", &client])
            .args(["--listen-peer-urls", &peer])
            .args(["--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &self.peers])
            .args(["--initial-cluster-state", state])
            .args(["--initial-cluster-token", &self.token])
            .arg(format!("--heartbeat-interval={}", HEARTBEAT.as_millis()))
            .arg(format!(
                "--election-timeout={}",
                ELECTION_TIMEOUT.as_millis()
            ));
        member.start(command, missing)
    }

    /// Starts member `index` again (after [`Ensemble::kill`]) with the data
    /// it had, and waits until it knows a leader.
    pub async fn restart(&mut self, index: usize) -> Result<()> {
        self.members.get_mut(index).stop();
        self.spawn(index, "existing")?;
        self.members.await_rejoined(index, READY_WITHIN).await
    }
}

impl Ensemble for EtcdCluster {
    fn store(&self) -> &'static str {
        STORE
    }

    /// `http://127.0.0.1:<port>`, one per member: etcd's own endpoints.
    fn urls(&self) -> Vec<String> {
        let addrs = self.endpoints();
        addrs.split(',').map(|a| format!("http://{a}")).collect()
    }

    fn label(&self, index: usize) -> String {
        format!("etcd{}", self.members.get(index).id)
    }

    fn members(&self) -> &Members {
        &self.members
    }

    fn members_mut(&mut self) -> &mut Members {
        &mut self.members
    }
}

fn role_query(addr: SocketAddr) -> Pin<Box<dyn Future<Output = Option<String>> + Send>> {
    Box::pin(role(addr))
}

/// A member's role from its `Status` (etcd's HTTP gateway to the gRPC
/// maintenance API): `leader` when the leader it names is itself,
/// `follower` when it names another, `None` when it names none (no quorum)
/// or does not answer within half a second.
async fn role(addr: SocketAddr) -> Option<String> {
    let ask = async {
        let mut stream = TcpStream::connect(addr).await.ok()?;
        let body = "{}";
        let request = format!(
            "POST /v3/maintenance/status HTTP/1.0\r\nHost: {addr}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut reply = String::new();
        stream.read_to_string(&mut reply).await.ok()?;
        let (_, json) = reply.split_once("\r\n\r\n")?;
        let status: serde_json::Value = serde_json::from_str(json).ok()?;
        // 64-bit ids travel as strings in the gateway's JSON.
        let leader = status.get("leader")?.as_str()?;
        let me = status.get("header")?.get("member_id")?.as_str()?;
        match leader {
            "" | "0" => None,
            l if l == me => Some("leader".to_owned()),
            _ => Some("follower".to_owned()),
        }
    };
    tokio::time::timeout(Duration::from_millis(500), ask)
        .await
        .ok()
        .flatten()
}
