//! A real `redis-server` process on a free loopback port.

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{Instant, sleep};

use super::log_tail::tail;
use super::port_hold::PortHold;
use crate::error::{HarnessError, Result};
use crate::process::{self, Signal};

/// How to install `redis-server`, said once wherever it is missing.
pub const INSTALL_HINT: &str = "redis-server was not found on PATH. Install it:\n  \
    Debian/Ubuntu: sudo apt-get install redis-server\n  \
    macOS:         brew install redis\n\
or run with Docker instead: LOCKSTAGES_BACKEND=docker (image from LOCKSTAGES_REDIS_IMAGE, default redis:7-alpine)";

/// Whether `redis-server` can be started here.
pub fn redis_server_installed() -> bool {
    let mut version = Command::new("redis-server");
    version.arg("--version");
    process::output(version).is_ok_and(|out| out.status.success())
}

/// A `redis-server` child process. It keeps nothing on disk, and it is
/// killed when dropped and when this process dies.
#[derive(Debug)]
pub struct RedisProcess {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
    /// A configuration file's contents, written to `dir` and named first on
    /// the command line (a sentinel needs one it can rewrite).
    config: Option<String>,
    /// A cluster node's bus port (`--cluster-port`), picked free like the
    /// client port: Redis's default, the client port + 10000, may be taken
    /// or beyond the last port.
    cluster_port: Option<u16>,
    extra_args: Vec<String>,
    /// While killed: its ports, kept from every other server
    /// ([`PortHold`]).
    held: Vec<PortHold>,
}

const READY_WITHIN: Duration = Duration::from_secs(10);
const PORT_ATTEMPTS: usize = 20;

impl RedisProcess {
    /// Starts a server on a free port, with `extra_args` appended to the
    /// command line (`--replicaof 127.0.0.1 6379`, say), and waits until it
    /// answers PING.
    pub async fn start(extra_args: &[&str]) -> Result<Self> {
        Self::start_configured(None, extra_args, false).await
    }

    /// Starts a Sentinel (`redis-server sentinel.conf --sentinel`) whose
    /// configuration file says `config`, and waits until it answers PING.
    pub async fn start_sentinel(config: &str) -> Result<Self> {
        Self::start_configured(Some(config.to_owned()), &["--sentinel"], false).await
    }

    /// Starts a Redis Cluster node (`--cluster-enabled yes`) on a free
    /// client port and a free bus port, with `extra_args`, and waits until
    /// it answers PING. It knows no other node yet.
    pub async fn start_cluster_node(extra_args: &[&str]) -> Result<Self> {
        Self::start_configured(None, extra_args, true).await
    }

    async fn start_configured(
        config: Option<String>,
        extra_args: &[&str],
        cluster: bool,
    ) -> Result<Self> {
        for _ in 0..PORT_ATTEMPTS {
            let port = free_port()?;
            let cluster_port = if cluster { Some(free_port()?) } else { None };
            let mut server = Self {
                child: None,
                port,
                // A folder of this launch's own, not of the port's: a server
                // that had this port before may still be removing its folder
                // (see `Drop`), and a cluster node whose `nodes.conf` is
                // deleted under it exits at its next configuration change.
                dir: super::data_folders::new_folder(&std::env::temp_dir(), "redis", port),
                config: config.clone(),
                cluster_port,
                extra_args: extra_args.iter().map(|s| (*s).to_owned()).collect(),
                held: Vec::new(),
            };
            match server.launch().await {
                Ok(()) => return Ok(server),
                Err(Launch::PortTaken) => continue,
                Err(Launch::Failed(e)) => return Err(e),
            }
        }
        Err(HarnessError::ServerStart(format!(
            "no free port after {PORT_ATTEMPTS} attempts"
        )))
    }

    async fn launch(&mut self) -> std::result::Result<(), Launch> {
        std::fs::create_dir_all(&self.dir).map_err(|e| Launch::Failed(e.into()))?;
        let log = self.dir.join("redis.log");
        let _ = std::fs::remove_file(&log);
        let mut command = Command::new("redis-server");
        if let Some(config) = &self.config {
            let file = self.dir.join("sentinel.conf");
            std::fs::write(&file, config).map_err(|e| Launch::Failed(e.into()))?;
            command.arg(file);
        }
        command
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            // No persistence: a restart comes back empty, as the Redlock
            // scenarios need, and nothing is left on disk.
            .args(["--save", "", "--appendonly", "no"])
            .args(["--dir", &self.dir.to_string_lossy()])
            .args(["--logfile", &log.to_string_lossy()])
            .args(["--repl-diskless-load", "on-empty-db"])
            .args(["--notify-keyspace-events", "Ex"]);
        if let Some(bus) = self.cluster_port {
            command
                .args(["--cluster-enabled", "yes"])
                .args(["--cluster-port", &bus.to_string()])
                .args(["--cluster-config-file", "nodes.conf"]);
        }
        command
            .args(&self.extra_args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = process::spawn(command).map_err(|e| {
            Launch::Failed(if e.kind() == std::io::ErrorKind::NotFound {
                HarnessError::NoRedis(INSTALL_HINT.to_owned())
            } else {
                e.into()
            })
        })?;
        self.child = Some(child);

        let deadline = Instant::now() + READY_WITHIN;
        let own_pid = self.pid();
        loop {
            // Ready means *this* child answers. A PONG alone is not enough:
            // between `free_port` and the bind, a server of a cell running
            // alongside may have taken the port, and would answer for ours
            // while ours dies with "Address already in use".
            if own_pid.is_some() && answering_pid(self.addr()).await == own_pid {
                return Ok(());
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                if let Some(child) = self.child.take() {
                    process::waited(&child);
                }
                let log = std::fs::read_to_string(&log).unwrap_or_default();
                return Err(if log.contains("Address already in use") {
                    Launch::PortTaken
                } else {
                    Launch::Failed(HarnessError::ServerStart(format!(
                        "exited with {status}; its log ends with:\n{}",
                        tail(&log, 10)
                    )))
                });
            }
            if Instant::now() > deadline {
                self.stop();
                return Err(Launch::Failed(HarnessError::ServerStart(format!(
                    "no answer to PING on port {} within {READY_WITHIN:?}",
                    self.port
                ))));
            }
            sleep(Duration::from_millis(5)).await;
        }
    }

    /// The loopback port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A cluster node's bus port; `None` for any other server.
    pub fn cluster_port(&self) -> Option<u16> {
        self.cluster_port
    }

    /// `127.0.0.1:<port>`.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// `redis://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("redis://{}", self.addr())
    }

    /// The process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// `kill -9`: the server vanishes with everything in its memory.
    pub fn kill(&mut self) {
        self.stop();
        // Dead for the rest of the run: no other server may answer here.
        self.held = std::iter::once(self.port)
            .chain(self.cluster_port)
            .filter_map(PortHold::bind)
            .collect();
    }

    /// Freezes the server (SIGSTOP): connections stay open, nothing answers.
    pub fn pause(&self) -> Result<()> {
        self.signal(Signal::Stop)
    }

    /// Thaws a paused server (SIGCONT).
    pub fn resume(&self) -> Result<()> {
        self.signal(Signal::Continue)
    }

    /// Kills the server (if it runs) and starts it again, empty, on the same
    /// port, so clients that reconnect find it where it was.
    pub async fn restart(&mut self) -> Result<()> {
        self.stop();
        self.held.clear();
        match self.launch().await {
            Ok(()) => Ok(()),
            Err(Launch::PortTaken) => Err(HarnessError::ServerStart(format!(
                "port {} was taken while the server was down",
                self.port
            ))),
            Err(Launch::Failed(e)) => Err(e),
        }
    }

    fn signal(&self, signal: Signal) -> Result<()> {
        let pid = self.pid().ok_or_else(|| {
            HarnessError::ServerStart(format!("the server on port {} is not running", self.port))
        })?;
        Ok(process::send(pid, signal)?)
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // With its process group: a master killed mid-sync takes the
            // child that streams its snapshot to a replica along.
            process::stop(&mut child);
        }
    }
}

impl Drop for RedisProcess {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

enum Launch {
    PortTaken,
    Failed(HarnessError),
}

fn free_port() -> Result<u16> {
    // The OS picks a free port; another process may take it before
    // redis-server binds it, which `start` notices and retries.
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Whether a server answers PING at `addr` (within half a second).
pub(super) async fn ping(addr: SocketAddr) -> bool {
    let Ok(Ok(mut stream)) =
        tokio::time::timeout(Duration::from_millis(500), TcpStream::connect(addr)).await
    else {
        return false;
    };
    let mut reply = [0u8; 7];
    stream.write_all(b"PING\r\n").await.is_ok()
        && tokio::time::timeout(Duration::from_millis(500), stream.read_exact(&mut reply))
            .await
            .is_ok_and(|read| read.is_ok())
        && &reply == b"+PONG\r\n"
}

/// The process id of the server that answers at `addr`, from its
/// `INFO server` (within half a second), if any answers.
async fn answering_pid(addr: SocketAddr) -> Option<u32> {
    let within = Duration::from_millis(500);
    let client = redis::Client::open(format!("redis://{addr}")).ok()?;
    let mut connection = tokio::time::timeout(within, client.get_multiplexed_async_connection())
        .await
        .ok()?
        .ok()?;
    let info: String = tokio::time::timeout(
        within,
        redis::cmd("INFO")
            .arg("server")
            .query_async(&mut connection),
    )
    .await
    .ok()?
    .ok()?;
    info.lines()
        .find_map(|line| line.strip_prefix("process_id:"))
        .and_then(|pid| pid.trim().parse().ok())
}
