//! What the consensus stores' clusters share: a ZooKeeper ensemble (stage
//! 9) and an etcd cluster (stage 10) are both a few member processes on
//! free loopback ports, each with a data directory and a log, that elect a
//! leader among themselves. This module holds that common part once:
//!
//! - [`Ensemble`], the one face a scenario sees, whatever the store: the
//!   members' URLs, where their data lives, who leads, kill one;
//! - `Member`, one member's process: started with the harness's
//!   parent-death signal ([`crate::process`]), so it dies with the test
//!   process (a panic, `kill -9`, Ctrl-C), and killed when stopped;
//! - the launch: free ports, the wait for an elected leader, a retry when a
//!   port was taken between choosing it and binding it.
//!
//! Each store's file ([`super::zookeeper`], [`super::etcd`]) says only what
//! differs: the command line, and how a member tells its role.

use std::fs::File;
use std::future::Future;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::{Instant, sleep};

use super::log_tail::tail;
use crate::error::{HarnessError, Result};
use crate::process::{self, Signal};

/// A consensus store's cluster as scenarios drive it, ZooKeeper or etcd.
/// A store says its name, its URLs and its members' labels; the rest is
/// the same for both and written once, on [`Members`].
#[async_trait]
pub trait Ensemble: Send + Sync + std::fmt::Debug {
    /// `ZooKeeper`, `etcd`: how timelines name the store.
    fn store(&self) -> &'static str;
    /// One URL per member, as the stage's client wants them
    /// (`zk://127.0.0.1:port`, `http://127.0.0.1:port`).
    fn urls(&self) -> Vec<String>;
    /// `zk1`, `etcd2`…: how timelines name member `index`.
    fn label(&self, index: usize) -> String;
    /// The members' processes.
    fn members(&self) -> &Members;
    /// The members' processes, to kill or restart one.
    fn members_mut(&mut self) -> &mut Members;

    /// The members' client addresses, `127.0.0.1:port,…`.
    fn endpoints(&self) -> String {
        let list = &self.members().list;
        let addrs: Vec<String> = list.iter().map(|m| m.addr().to_string()).collect();
        addrs.join(",")
    }
    /// Where the data directories live and on what filesystem:
    /// `tmpfs at /dev/shm/…`, `disk (ext4) at /tmp/…`. Every write is
    /// fsynced, so this decides what a write costs.
    fn storage(&self) -> String {
        storage(&self.members().dir)
    }
    /// The running members' process ids.
    fn pids(&self) -> Vec<u32> {
        let list = &self.members().list;
        list.iter()
            .filter_map(|m| m.child.as_ref().map(Child::id))
            .collect()
    }
    /// How many members (alive or not).
    fn size(&self) -> usize {
        self.members().list.len()
    }
    /// Each member's role (`leader`, `follower`); `None` for a member that
    /// is down or knows no leader (it has no quorum).
    async fn roles(&self) -> Vec<Option<String>> {
        self.members().roles().await
    }
    /// The index of the member that leads, waiting up to `within` for one
    /// to be elected (after the old leader was killed, say).
    async fn leader(&self, within: Duration) -> Result<usize> {
        self.members().leader(within).await
    }
    /// `kill -9` of member `index`: its sockets close, its peers notice.
    fn kill(&mut self, index: usize) {
        self.members_mut().list[index].stop();
    }
    /// Freezes member `index` (SIGSTOP).
    fn pause(&self, index: usize) -> Result<()> {
        self.members().list[index].signal(Signal::Stop)
    }
    /// Thaws member `index` (SIGCONT).
    fn resume(&self, index: usize) -> Result<()> {
        self.members().list[index].signal(Signal::Continue)
    }
}

/// How a store asks one member its role: `leader`, `follower`, or `None`.
pub type RoleQuery = fn(SocketAddr) -> Pin<Box<dyn Future<Output = Option<String>> + Send>>;

/// A cluster's member processes and their directory. Dropped, it kills
/// every member and removes the directory.
#[derive(Debug)]
pub struct Members {
    list: Vec<Member>,
    dir: PathBuf,
    store: &'static str,
    role: RoleQuery,
}

impl Members {
    /// No members yet, in `dir`, for `store`, whose members say their role
    /// to `role`.
    pub(crate) fn new(store: &'static str, dir: PathBuf, role: RoleQuery) -> Self {
        Self {
            list: Vec::new(),
            dir,
            store,
            role,
        }
    }

    /// Adds member `id` on `client_port`, its directory made, its output
    /// going to `log` in it.
    pub(crate) fn add(
        &mut self,
        id: usize,
        client_port: u16,
        log: &str,
    ) -> std::io::Result<&Member> {
        let dir = self
            .dir
            .join(format!("{}{id}", self.store.to_ascii_lowercase()));
        std::fs::create_dir_all(&dir)?;
        self.list.push(Member {
            id,
            client_port,
            log: dir.join(log),
            dir,
            child: None,
        });
        Ok(&self.list[self.list.len() - 1])
    }

    /// Member `index`.
    pub(crate) fn get(&self, index: usize) -> &Member {
        &self.list[index]
    }

    /// Member `index`, to start it.
    pub(crate) fn get_mut(&mut self, index: usize) -> &mut Member {
        &mut self.list[index]
    }

    async fn roles(&self) -> Vec<Option<String>> {
        let mut roles = Vec::with_capacity(self.list.len());
        for member in &self.list {
            roles.push(match member.child {
                Some(_) => (self.role)(member.addr()).await,
                None => None,
            });
        }
        roles
    }

    async fn leader(&self, within: Duration) -> Result<usize> {
        let deadline = Instant::now() + within;
        loop {
            let roles = self.roles().await;
            if let Some(index) = roles.iter().position(|r| r.as_deref() == Some("leader")) {
                return Ok(index);
            }
            if Instant::now() > deadline {
                // The members' own words: their data folder goes with
                // the run.
                return Err(HarnessError::ServerStart(format!(
                    "no {} member leads after {within:?} (members said {roles:?}); \
                     the end of each member's log:\n{}",
                    self.store,
                    self.log_tails(8)
                )));
            }
            sleep(Duration::from_millis(50)).await;
        }
    }

    /// The last `lines` lines of each member's log, headed by its id.
    fn log_tails(&self, lines: usize) -> String {
        self.list
            .iter()
            .map(|member| {
                let text = std::fs::read_to_string(&member.log).unwrap_or_default();
                format!(
                    "--- member {} ({})\n{}",
                    member.id,
                    member.log.display(),
                    tail(&text, lines)
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Waits until every member answers with a role and one of them leads.
    /// A member that exits on the way stops the wait (and every member).
    pub(crate) async fn await_leader_elected(
        &mut self,
        within: Duration,
    ) -> std::result::Result<(), Launch> {
        let deadline = Instant::now() + within;
        loop {
            let roles = self.roles().await;
            if roles.iter().all(Option::is_some) && roles.iter().flatten().any(|r| r == "leader") {
                return Ok(());
            }
            let store = self.store;
            if let Some(failure) = self.list.iter_mut().find_map(|m| m.exited(store)) {
                self.stop_all();
                return Err(failure);
            }
            if Instant::now() > deadline {
                self.stop_all();
                return Err(Launch::Failed(HarnessError::ServerStart(format!(
                    "the {store} members elected no leader within {within:?} \
                     (they said {roles:?}); logs under {}",
                    self.dir.display()
                ))));
            }
            sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until member `index`, started again, answers with a role.
    pub(crate) async fn await_rejoined(&self, index: usize, within: Duration) -> Result<()> {
        let deadline = Instant::now() + within;
        while (self.role)(self.list[index].addr()).await.is_none() {
            if Instant::now() > deadline {
                return Err(HarnessError::ServerStart(format!(
                    "{} member {} did not rejoin within {within:?}",
                    self.store, self.list[index].id
                )));
            }
            sleep(Duration::from_millis(50)).await;
        }
        Ok(())
    }

    fn stop_all(&mut self) {
        self.list.iter_mut().for_each(Member::stop);
    }
}

impl Drop for Members {
    fn drop(&mut self) {
        self.stop_all();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One member: its ports, its directory, its process while it runs.
#[derive(Debug)]
pub(crate) struct Member {
    /// 1, 2, 3…
    pub id: usize,
    /// Where clients connect.
    pub client_port: u16,
    /// Its data (and configuration) directory.
    pub dir: PathBuf,
    /// Its stdout and stderr.
    pub log: PathBuf,
    /// The process, while it runs.
    pub child: Option<Child>,
}

impl Member {
    /// Its client address on loopback.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.client_port))
    }

    /// Starts `command` as this member, its output into the log; `missing`
    /// is the error when the program is not installed.
    pub fn start(&mut self, mut command: Command, missing: fn() -> HarnessError) -> Result<()> {
        let log = File::create(&self.log)?;
        command
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone()?))
            .stderr(Stdio::from(log));
        let child = process::spawn(command).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                missing()
            } else {
                e.into()
            }
        })?;
        self.child = Some(child);
        Ok(())
    }

    /// `kill -9`, and reaped.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            process::stop(&mut child);
        }
    }

    /// Sends `signal` (a pause, a thaw) to the running member.
    pub fn signal(&self, signal: Signal) -> Result<()> {
        let child = self.child.as_ref().ok_or_else(|| {
            HarnessError::ServerStart(format!("member {} is not running", self.id))
        })?;
        Ok(process::send(child.id(), signal)?)
    }

    /// Why the member exited during the launch, if it did: its port was
    /// taken (try other ports), or the end of its log.
    fn exited(&mut self, store: &str) -> Option<Launch> {
        let status = self.child.as_mut()?.try_wait().ok().flatten()?;
        if let Some(child) = self.child.take() {
            process::waited(&child);
        }
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        Some(
            if log.to_ascii_lowercase().contains("address already in use") {
                Launch::PortTaken
            } else {
                Launch::Failed(HarnessError::ServerStart(format!(
                    "{store} member {} exited with {status}; its log ends with:\n{}",
                    self.id,
                    tail(&log, 10)
                )))
            },
        )
    }
}

/// Why a launch did not give a cluster.
pub(crate) enum Launch {
    /// A port chosen free was taken before the member bound it: try again.
    PortTaken,
    /// Anything else: give up with this error.
    Failed(HarnessError),
}

/// How many times a launch is tried on new ports.
pub(crate) const START_ATTEMPTS: usize = 5;

/// Runs `launch` on fresh ports until one attempt is not foiled by a taken
/// port.
pub(crate) async fn with_free_ports<T, F, Fut>(store: &str, mut launch: F) -> Result<T>
where
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = std::result::Result<T, Launch>>,
{
    for attempt in 0..START_ATTEMPTS {
        match launch(attempt).await {
            Ok(cluster) => return Ok(cluster),
            Err(Launch::PortTaken) => continue,
            Err(Launch::Failed(e)) => return Err(e),
        }
    }
    Err(HarnessError::ServerStart(format!(
        "{store}: no free ports after {START_ATTEMPTS} attempts"
    )))
}

/// `count` distinct free loopback ports: all bound at once, held until all
/// are chosen, so no two members are handed the same one.
///
/// They come from below the kernel's ephemeral range (see
/// [`ports_below_ephemeral`]), which it never hands out by itself: a port
/// from that range, free when chosen, was sometimes taken by another
/// cell's server or an outgoing connection in the second a member spent
/// binding it again (ZooKeeper's election listener does after an error).
pub(crate) fn free_ports(count: usize) -> std::io::Result<Vec<u16>> {
    let (low, high) = ports_below_ephemeral();
    let span = u32::from(high - low);
    let mut listeners = Vec::with_capacity(count);
    for _ in 0..span {
        if listeners.len() == count {
            break;
        }
        let port = low + u16::try_from(next_port_offset() % span).unwrap_or(0);
        if let Ok(listener) = TcpListener::bind(("127.0.0.1", port)) {
            listeners.push(listener);
        }
    }
    // Nothing free down there (a crowded machine): let the kernel choose.
    while listeners.len() < count {
        listeners.push(TcpListener::bind("127.0.0.1:0")?);
    }
    listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect()
}

/// Where cluster members' ports are chosen: from 10000 up to the first
/// port of the kernel's ephemeral range (`ip_local_port_range`, 32768 by
/// default).
fn ports_below_ephemeral() -> (u16, u16) {
    const LOWEST: u16 = 10_000;
    let first_ephemeral = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32_768);
    (LOWEST, first_ephemeral.max(LOWEST + 1_000))
}

/// The next port to try, as an offset into [`ports_below_ephemeral`]'s
/// range: a walk that starts at a place of this process's own, so that two
/// processes choosing at once rarely try the same ports.
fn next_port_offset() -> u32 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let start = std::process::id().wrapping_mul(7919);
    start.wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed))
}

/// A fresh directory for one cluster's members, under `var` if it is set,
/// else under `/dev/shm` when `prefer_tmpfs` and it is a writable tmpfs,
/// else under the system's temporary directory.
pub(crate) fn cluster_dir(var: &str, prefer_tmpfs: bool, name: &str, attempt: usize) -> PathBuf {
    let base = std::env::var(var).map(PathBuf::from).unwrap_or_else(|_| {
        let shm = Path::new("/dev/shm");
        let tmpfs = filesystem_of(shm).is_some_and(|fs| fs == "tmpfs") && tempfile_allowed(shm);
        if prefer_tmpfs && tmpfs {
            shm.to_owned()
        } else {
            std::env::temp_dir()
        }
    });
    super::data_folders::new_folder(&base, name, attempt)
}

fn tempfile_allowed(dir: &Path) -> bool {
    let probe = dir.join(format!("lockstages-probe-{}", std::process::id()));
    let ok = std::fs::write(&probe, b"").is_ok();
    let _ = std::fs::remove_file(&probe);
    ok
}

/// Where `dir` is and on what: `tmpfs at /dev/shm/…`, `disk (ext4) at
/// /tmp/…`. Every write of a consensus store is fsynced, so this decides
/// what a write costs.
pub(crate) fn storage(dir: &Path) -> String {
    let kind = filesystem_of(dir).map_or_else(
        || "unknown filesystem".to_owned(),
        |fs| {
            if fs == "tmpfs" || fs == "ramfs" {
                fs
            } else {
                format!("disk ({fs})")
            }
        },
    );
    format!("{kind} at {}", dir.display())
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
