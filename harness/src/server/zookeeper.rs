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
//! [`ZkEnsemble::storage`]: the system's temporary directory unless
//! `LOCKSTAGES_ZOOKEEPER_DATA_DIR` names another (a tmpfs such as `/dev/shm`
//! makes the fsync nearly free).

use std::fs::File;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{Instant, sleep};

use crate::error::{HarnessError, Result};
use crate::process::{self, Signal};

/// What to install when ZooKeeper or Java is missing.
pub const ZOOKEEPER_INSTALL_HINT: &str = "ZooKeeper was not found (stage 9 needs a Java runtime \
    and ZooKeeper's server jar). Install them:\n  \
    Debian/Ubuntu: sudo apt-get install zookeeper   (brings a Java runtime)\n  \
    elsewhere:     install a JDK and Apache ZooKeeper, and set LOCKSTAGES_ZOOKEEPER_CLASSPATH \
    to its jars (for example /opt/zookeeper/lib/*)";

/// Overrides the server's classpath (Debian's jar by default).
pub const CLASSPATH_VAR: &str = "LOCKSTAGES_ZOOKEEPER_CLASSPATH";
/// Where the members' data directories go (the temporary directory by default).
pub const DATA_DIR_VAR: &str = "LOCKSTAGES_ZOOKEEPER_DATA_DIR";

/// Debian's server jar; its manifest's `Class-Path` brings netty, slf4j…
const DEBIAN_JAR: &str = "/usr/share/java/zookeeper.jar";
/// A logger for the server's log file, when one is installed (without it
/// slf4j logs nothing, and a member that fails to start says nothing why).
const SIMPLE_LOGGER: &str = "/usr/share/java/slf4j-simple.jar";
/// ZooKeeper's tick: the unit of its session and sync timeouts.
pub const TICK: Duration = Duration::from_millis(100);
/// A JVM starting on a loaded machine takes seconds; three at once longer.
const READY_WITHIN: Duration = Duration::from_secs(90);
const START_ATTEMPTS: usize = 5;

/// The classpath of the server, or what to install.
pub fn zookeeper_classpath() -> Result<String> {
    let java = Command::new("java")
        .arg("-version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
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

/// Whether an ensemble can be started here.
pub fn zookeeper_installed() -> bool {
    zookeeper_classpath().is_ok()
}

/// One member: its ports, its directory, its process while it runs.
#[derive(Debug)]
struct Member {
    id: usize,
    client_port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

impl Member {
    fn log(&self) -> PathBuf {
        self.dir.join("zookeeper.log")
    }

    fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.client_port))
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = process::send(child.id(), Signal::Kill);
            let _ = child.wait();
        }
    }
}

/// A ZooKeeper ensemble of Java processes on loopback. Every member is
/// killed when the ensemble is dropped, and when this process dies.
#[derive(Debug)]
pub struct ZkEnsemble {
    members: Vec<Member>,
    classpath: String,
    dir: PathBuf,
}

enum Launch {
    PortTaken,
    Failed(HarnessError),
}

impl ZkEnsemble {
    /// Starts `size` members (3 for stage 9) and waits until they have
    /// elected a leader and every member answers.
    pub async fn start(size: usize) -> Result<Self> {
        let classpath = zookeeper_classpath()?;
        let base = std::env::var(DATA_DIR_VAR)
            .map(PathBuf::from)
            .unwrap_or_else(|_| std::env::temp_dir());
        for attempt in 0..START_ATTEMPTS {
            let dir = base.join(format!(
                "lockstages-zk-{}-{attempt}-{}",
                std::process::id(),
                uuid::Uuid::new_v4().simple()
            ));
            let mut ensemble = Self {
                members: Vec::new(),
                classpath: classpath.clone(),
                dir,
            };
            match ensemble.launch(size).await {
                Ok(()) => return Ok(ensemble),
                Err(Launch::PortTaken) => continue,
                Err(Launch::Failed(e)) => return Err(e),
            }
        }
        Err(HarnessError::ServerStart(format!(
            "ZooKeeper: no free ports after {START_ATTEMPTS} attempts"
        )))
    }

    async fn launch(&mut self, size: usize) -> std::result::Result<(), Launch> {
        let failed = |e: std::io::Error| Launch::Failed(e.into());
        // All ports at once, held until all are chosen, so that no two
        // members are handed the same one.
        let ports = free_ports(size * 3).map_err(failed)?;
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
            let dir = self.dir.join(format!("zk{}", i + 1));
            std::fs::create_dir_all(&dir).map_err(failed)?;
            std::fs::write(dir.join("myid"), format!("{}\n", i + 1)).map_err(failed)?;
            let config = format!(
                "tickTime={tick}\n\
                 initLimit=100\n\
                 syncLimit=20\n\
                 maxSessionTimeout=60000\n\
                 dataDir={data}\n\
                 clientPort={port}\n\
                 clientPortAddress=127.0.0.1\n\
                 admin.enableServer=false\n\
                 4lw.commands.whitelist=srvr,ruok\n\
                 {servers}",
                tick = TICK.as_millis(),
                data = dir.display(),
                port = client_port,
            );
            std::fs::write(dir.join("zoo.cfg"), config).map_err(failed)?;
            self.members.push(Member {
                id: i + 1,
                client_port,
                dir,
                child: None,
            });
        }
        for index in 0..size {
            self.spawn(index).map_err(Launch::Failed)?;
        }
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            let modes = self.modes().await;
            if modes.iter().all(Option::is_some) && modes.iter().flatten().any(|m| m == "leader") {
                return Ok(());
            }
            for member in &mut self.members {
                if let Some(status) = member
                    .child
                    .as_mut()
                    .and_then(|c| c.try_wait().ok().flatten())
                {
                    member.child = None;
                    let log = std::fs::read_to_string(member.log()).unwrap_or_default();
                    let failure = if log.contains("Address already in use") {
                        Launch::PortTaken
                    } else {
                        Launch::Failed(HarnessError::ServerStart(format!(
                            "ZooKeeper member {} exited with {status}; its log ends with:\n{}",
                            member.id,
                            super::redis_process::tail(&log, 10)
                        )))
                    };
                    self.stop_all();
                    return Err(failure);
                }
            }
            if Instant::now() > deadline {
                self.stop_all();
                return Err(Launch::Failed(HarnessError::ServerStart(format!(
                    "the ZooKeeper ensemble elected no leader within {READY_WITHIN:?} \
                     (members said {modes:?}); logs under {}",
                    self.dir.display()
                ))));
            }
            sleep(Duration::from_millis(50)).await;
        }
    }

    fn spawn(&mut self, index: usize) -> Result<()> {
        let member = &mut self.members[index];
        let log = File::create(member.log())?;
        let mut command = Command::new("java");
        command
            // Small and quick to start: the ensemble holds a few nodes.
            .args(["-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"])
            .arg("-Djava.net.preferIPv4Stack=true")
            .arg("-Dzookeeper.jmx.log4j.disable=true")
            .arg("-cp")
            .arg(&self.classpath)
            .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
            .arg(member.dir.join("zoo.cfg"))
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone()?))
            .stderr(Stdio::from(log));
        let child = process::spawn(command).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                HarnessError::NoZooKeeper(ZOOKEEPER_INSTALL_HINT.to_owned())
            } else {
                e.into()
            }
        })?;
        member.child = Some(child);
        Ok(())
    }

    /// `zk://127.0.0.1:<port>`, one per member: a stage 9 client joins them
    /// into ZooKeeper's connect string.
    pub fn urls(&self) -> Vec<String> {
        self.members
            .iter()
            .map(|m| format!("zk://{}", m.addr()))
            .collect()
    }

    /// `127.0.0.1:<port>,…`: ZooKeeper's own connect string.
    pub fn connect_string(&self) -> String {
        self.members
            .iter()
            .map(|m| m.addr().to_string())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The members' process ids, of those running.
    pub fn pids(&self) -> Vec<u32> {
        self.members
            .iter()
            .filter_map(|m| m.child.as_ref().map(Child::id))
            .collect()
    }

    /// How many members the ensemble has (alive or not).
    pub fn size(&self) -> usize {
        self.members.len()
    }

    /// `zk1`, `zk2`…: how timelines name member `index`.
    pub fn label(&self, index: usize) -> String {
        format!("zk{}", self.members[index].id)
    }

    /// Each member's `Mode` (`leader`, `follower`), from its `srvr`
    /// command; `None` for a member that is down or serves no clients (it
    /// has no quorum).
    pub async fn modes(&self) -> Vec<Option<String>> {
        let mut modes = Vec::with_capacity(self.members.len());
        for member in &self.members {
            modes.push(if member.child.is_some() {
                mode(member.addr()).await
            } else {
                None
            });
        }
        modes
    }

    /// The index of the member that leads now, waiting up to `within` for
    /// one to be elected (after the old leader was killed, say).
    pub async fn leader(&self, within: Duration) -> Result<usize> {
        let deadline = Instant::now() + within;
        loop {
            let modes = self.modes().await;
            if let Some(index) = modes.iter().position(|m| m.as_deref() == Some("leader")) {
                return Ok(index);
            }
            if Instant::now() > deadline {
                return Err(HarnessError::ServerStart(format!(
                    "no ZooKeeper member leads after {within:?} (members said {modes:?})"
                )));
            }
            sleep(Duration::from_millis(50)).await;
        }
    }

    /// `kill -9` of member `index`: its sockets close, its peers notice.
    pub fn kill(&mut self, index: usize) {
        self.members[index].stop();
    }

    /// Starts member `index` again (after [`ZkEnsemble::kill`]), with the
    /// data it had on disk, and waits until it serves clients.
    pub async fn restart(&mut self, index: usize) -> Result<()> {
        self.members[index].stop();
        self.spawn(index)?;
        let deadline = Instant::now() + READY_WITHIN;
        while mode(self.members[index].addr()).await.is_none() {
            if Instant::now() > deadline {
                return Err(HarnessError::ServerStart(format!(
                    "ZooKeeper member {} did not rejoin within {READY_WITHIN:?}",
                    self.members[index].id
                )));
            }
            sleep(Duration::from_millis(50)).await;
        }
        Ok(())
    }

    /// Freezes member `index` (SIGSTOP).
    pub fn pause(&self, index: usize) -> Result<()> {
        self.signal(index, Signal::Stop)
    }

    /// Thaws member `index` (SIGCONT).
    pub fn resume(&self, index: usize) -> Result<()> {
        self.signal(index, Signal::Continue)
    }

    fn signal(&self, index: usize, signal: Signal) -> Result<()> {
        let child = self.members[index].child.as_ref().ok_or_else(|| {
            HarnessError::ServerStart(format!("ZooKeeper member {} is not running", index + 1))
        })?;
        Ok(process::send(child.id(), signal)?)
    }

    /// Where the data directories live and on what: `tmpfs at /dev/shm/…`,
    /// `disk (ext4) at /tmp/…`. Writes are fsynced, so this decides what a
    /// write costs.
    pub fn storage(&self) -> String {
        let kind = filesystem_of(&self.dir).map_or_else(
            || "unknown filesystem".to_owned(),
            |fs| {
                if fs == "tmpfs" || fs == "ramfs" {
                    fs
                } else {
                    format!("disk ({fs})")
                }
            },
        );
        format!("{kind} at {}", self.dir.display())
    }

    fn stop_all(&mut self) {
        for member in &mut self.members {
            member.stop();
        }
    }
}

impl Drop for ZkEnsemble {
    fn drop(&mut self) {
        self.stop_all();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn free_ports(count: usize) -> std::io::Result<Vec<u16>> {
    let listeners = (0..count)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<Vec<_>>>()?;
    listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect()
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

/// The filesystem type of the mount `path` is on, from `/proc/mounts`.
fn filesystem_of(path: &Path) -> Option<String> {
    let path = path.canonicalize().ok()?;
    let mounts = std::fs::read_to_string("/proc/mounts").ok()?;
    mounts
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (_, point, fs) = (fields.next()?, fields.next()?, fields.next()?);
            path.starts_with(point)
                .then(|| (point.len(), fs.to_owned()))
        })
        .max_by_key(|(len, _)| *len)
        .map(|(_, fs)| fs)
}
