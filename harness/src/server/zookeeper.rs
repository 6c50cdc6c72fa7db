//! A real ZooKeeper ensemble: three `QuorumPeerMain` Java processes on
//! free loopback ports, for stage 9.
//!
//! Each member is the server Debian's `zookeeper` package ships
//! (`/usr/share/java/zookeeper.jar`, whose manifest names the rest of its
//! classpath), started directly with `java`, not through `zkServer.sh`, so
//! that the child *is* the server: it is started with the harness's
//! parent-death signal ([`crate::process`]), killed when the ensemble is
//! dropped, and killed by the kernel when the test process dies (a panic,
//! `kill -9`, Ctrl-C). No Java process outlives a test.
//!
//! Times are short so that stories take seconds: a `tickTime` of 100 ms
//! (so sessions may be as short as 200 ms, two ticks), and the default
//! `forceSync=yes`, so every write is fsynced to the transaction log as in
//! production. Where the data directories live is said by
//! [`Ensemble::storage`]: the system's temporary directory unless
//! `LOCKSTAGES_ZOOKEEPER_DATA_DIR` names another (a tmpfs such as `/dev/shm`
//! makes the fsync nearly free).

use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::pin::Pin;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::data_folders::ZOOKEEPER_DATA_DIR_VAR;
use super::ensemble::{self, Ensemble, Launch, Members};
use crate::error::{HarnessError, Result};
use crate::process;

/// What to install when ZooKeeper or Java is missing.
pub const ZOOKEEPER_INSTALL_HINT: &str = "ZooKeeper was not found (stage 9 needs a Java runtime \
    and ZooKeeper's server jar). Install them:\n  \
    Debian/Ubuntu: sudo apt-get install zookeeper   (brings a Java runtime)\n  \
    elsewhere:     install a JDK and Apache ZooKeeper, and set LOCKSTAGES_ZOOKEEPER_CLASSPATH \
    to its jars (for example /opt/zookeeper/lib/*)";

/// Overrides the server's classpath (Debian's jar by default).
pub const CLASSPATH_VAR: &str = "LOCKSTAGES_ZOOKEEPER_CLASSPATH";

/// Debian's server jar; its manifest's `Class-Path` brings netty, slf4j…
const DEBIAN_JAR: &str = "/usr/share/java/zookeeper.jar";
/// A logger for the server's log file, when one is installed (without it
/// slf4j logs nothing, and a member that fails to start says nothing why).
const SIMPLE_LOGGER: &str = "/usr/share/java/slf4j-simple.jar";
/// ZooKeeper's tick: the unit of its session and sync timeouts.
pub const TICK: Duration = Duration::from_millis(100);
/// A JVM starting on a loaded machine takes seconds; three at once longer.
const READY_WITHIN: Duration = Duration::from_secs(90);

/// The classpath of the server, or what to install. Found once per
/// process: asking `java -version` starts a JVM, a fifth of a second of
/// CPU that every stage 9 cell of a matrix would otherwise spend again.
pub fn zookeeper_classpath() -> Result<String> {
    static FOUND: OnceLock<String> = OnceLock::new();
    if let Some(classpath) = FOUND.get() {
        return Ok(classpath.clone());
    }
    let classpath = find_classpath()?;
    Ok(FOUND.get_or_init(|| classpath).clone())
}

fn find_classpath() -> Result<String> {
    let mut version = Command::new("java");
    version.arg("-version");
    let java = process::output(version).is_ok_and(|out| out.status.success());
    if !java {
        return Err(HarnessError::NoZooKeeper(format!(
            "{ZOOKEEPER_INSTALL_HINT}\n(no `java` on PATH)"
        )));
    }
    if let Ok(classpath) = std::env::var(CLASSPATH_VAR) {
        return Ok(classpath);
    }
    if !Path::new(DEBIAN_JAR).exists() {
        return Err(HarnessError::NoZooKeeper(format!(
            "{ZOOKEEPER_INSTALL_HINT}\n({DEBIAN_JAR} is missing)"
        )));
    }
    let mut classpath = DEBIAN_JAR.to_owned();
    if Path::new(SIMPLE_LOGGER).exists() {
        classpath.push(':');
        classpath.push_str(SIMPLE_LOGGER);
    }
    Ok(classpath)
}

/// A ZooKeeper ensemble of Java processes on loopback. Every member is
/// killed when the ensemble is dropped, and when this process dies.
#[derive(Debug)]
pub struct ZkEnsemble {
    members: Members,
    classpath: String,
}

const STORE: &str = "ZooKeeper";

fn missing() -> HarnessError {
    HarnessError::NoZooKeeper(ZOOKEEPER_INSTALL_HINT.to_owned())
}

impl ZkEnsemble {
    /// Starts `size` members (3 for stage 9) and waits until they have
    /// elected a leader and every member answers.
    pub async fn start(size: usize) -> Result<Self> {
        let classpath = zookeeper_classpath()?;
        ensemble::with_free_ports(STORE, |attempt| {
            let dir = ensemble::cluster_dir(ZOOKEEPER_DATA_DIR_VAR, false, "zk", attempt);
            let mut zk = Self {
                members: Members::new(STORE, dir, mode_query),
                classpath: classpath.clone(),
            };
            async move {
                zk.configure(size).map_err(|e| Launch::Failed(e.into()))?;
                for index in 0..size {
                    zk.spawn(index).map_err(Launch::Failed)?;
                }
                zk.members.await_leader_elected(READY_WITHIN).await?;
                Ok(zk)
            }
        })
        .await
    }

    fn configure(&mut self, size: usize) -> std::io::Result<()> {
        // All ports at once, so that no two members are handed the same one.
        let ports = ensemble::free_ports(size * 3)?;
        let servers: String = (0..size)
            .map(|i| {
                format!(
                    "server.{}=127.0.0.1:{}:{}\n",
                    i + 1,
                    ports[size + i],
                    ports[2 * size + i]
                )
            })
            .collect();
        for (i, &client_port) in ports[..size].iter().enumerate() {
            let member = self.members.add(i + 1, client_port, "zookeeper.log")?;
            std::fs::write(member.dir.join("myid"), format!("{}\n", i + 1))?;
            let config = format!(
                "tickTime={tick}\n\
                 initLimit=100\n\
                 syncLimit=20\n\
                 maxSessionTimeout=60000\n\
                 dataDir={data}\n\
                 clientPort={client_port}\n\
                 clientPortAddress=127.0.0.1\n\
                 admin.enableServer=false\n\
                 4lw.commands.whitelist=srvr,ruok\n\
                 {servers}",
                tick = TICK.as_millis(),
                data = member.dir.display(),
            );
            std::fs::write(member.dir.join("zoo.cfg"), config)?;
        }
        Ok(())
    }

    fn spawn(&mut self, index: usize) -> Result<()> {
        let member = self.members.get_mut(index);
        let mut command = Command::new("java");
        command
            // Small and quick to start: the ensemble holds a few nodes.
            .args(["-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"])
            .arg("-Djava.net.preferIPv4Stack=true")
            .arg("-Dzookeeper.jmx.log4j.disable=true")
            // A member whose election listener fails closes its port and
            // binds it again a second later; by default it gives up after
            // three failures in a row and the JVM exits with code 14, which
            // left a two-member minority once its leader was frozen (a
            // matrix under a CPU burner). Ten: it holds on for ten seconds,
            // and still exits, with "Address already in use" in its log, if
            // its port was taken before it started, so that the ensemble is
            // started again on new ports (`ensemble::with_free_ports`)
            // instead of waiting for a leader in vain.
            .arg("-Dzookeeper.electionPortBindRetry=10")
            .arg("-cp")
            .arg(&self.classpath)
            .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
            .arg(member.dir.join("zoo.cfg"));
        member.start(command, missing)
    }

    /// `127.0.0.1:<port>,…`: ZooKeeper's own connect string.
    pub fn connect_string(&self) -> String {
        self.endpoints()
    }

    /// Each member's `Mode` (`leader`, `follower`), from its `srvr`
    /// command; `None` for a member that is down or serves no clients (it
    /// has no quorum).
    pub async fn modes(&self) -> Vec<Option<String>> {
        self.roles().await
    }

    /// Starts member `index` again (after [`Ensemble::kill`]), with the
    /// data it had on disk, and waits until it serves clients.
    pub async fn restart(&mut self, index: usize) -> Result<()> {
        self.members.get_mut(index).stop();
        self.spawn(index)?;
        self.members.await_rejoined(index, READY_WITHIN).await
    }
}

impl Ensemble for ZkEnsemble {
    fn store(&self) -> &'static str {
        STORE
    }

    /// `zk://127.0.0.1:<port>`, one per member: a stage 9 client joins them
    /// into ZooKeeper's connect string.
    fn urls(&self) -> Vec<String> {
        let addrs = self.endpoints();
        addrs.split(',').map(|a| format!("zk://{a}")).collect()
    }

    fn label(&self, index: usize) -> String {
        format!("zk{}", self.members.get(index).id)
    }

    fn members(&self) -> &Members {
        &self.members
    }

    fn members_mut(&mut self) -> &mut Members {
        &mut self.members
    }
}

fn mode_query(addr: SocketAddr) -> Pin<Box<dyn Future<Output = Option<String>> + Send>> {
    Box::pin(mode(addr))
}

/// A member's `Mode:` line from its `srvr` command, within half a second.
async fn mode(addr: SocketAddr) -> Option<String> {
    let ask = async {
        let mut stream = TcpStream::connect(addr).await.ok()?;
        stream.write_all(b"srvr").await.ok()?;
        let mut reply = String::new();
        stream.read_to_string(&mut reply).await.ok()?;
        reply
            .lines()
            .find_map(|line| line.strip_prefix("Mode: "))
            .map(str::to_owned)
    };
    tokio::time::timeout(Duration::from_millis(500), ask)
        .await
        .ok()
        .flatten()
}
