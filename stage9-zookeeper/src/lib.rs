//! # Stage 9 — ZooKeeper: the ensemble decides who holds, and for how long
//!
//! Every Redis stage had the same weak spot underneath its cleverness: one
//! server's memory said who held the lock, and a failover or a restart
//! could forget it. The articles end by pointing away from Redis, to
//! ZooKeeper: a lock kept by an ensemble (three servers here) that agrees
//! on every write by majority (ZAB, ZooKeeper's atomic broadcast) before it
//! answers. A write acknowledged by a majority survives the loss of any
//! minority, leader included, so the lock cannot be forgotten the way
//! Redis's asynchronous replica forgot it.
//!
//! ## The recipe: Curator's `InterProcessMutex`
//!
//! Apache Curator is the library Java shops use for ZooKeeper locks. Its
//! mutex is a queue of nodes:
//!
//! 1. Each contender creates an *ephemeral sequential* node under the
//!    lock's path: `/lockstages/lock:stock/_c_<uuid>-lock-0000000007`.
//!    *Sequential*: the ensemble appends a number one higher than the last
//!    child's, so the nodes are a queue in the order the ensemble accepted
//!    them. *Ephemeral*: the node belongs to the client's session and is
//!    deleted by the ensemble when the session ends.
//! 2. It lists the children. The lowest number holds the lock.
//! 3. Otherwise it watches only its *predecessor*, the node just below its
//!    own, and sleeps. When that node goes, one client wakes up, not all of
//!    them: no herd rushing at a freed lock, as stage 1's retry loop had.
//!    It lists again (the predecessor may have given up, not held), and
//!    either holds or watches the next one down.
//! 4. To release, it deletes its node; its successor's watch fires.
//!
//! The `_c_<uuid>` part is Curator's "protection": if the connection drops
//! while the create is on its way, the client cannot know whether the node
//! was made. It looks among the children for its uuid instead of making a
//! second node that would wait behind its own first forever.
//!
//! ## The session is the TTL
//!
//! There is no TTL on the lock. The client keeps a *session* with the
//! ensemble by pinging it (every third of the session timeout); a session
//! that goes unheard for the whole timeout expires, and the ensemble
//! deletes its ephemeral nodes. So a holder that dies, is cut off, or
//! freezes loses its lock one session timeout later: the articles' "released
//! when the client disconnects" is really *when the session expires*, and a
//! TCP disconnect alone does not do it (the client may reconnect to another
//! member within the timeout and keep its session). `LockConfig::ttl` is
//! used as the session timeout.
//!
//! Unlike stage 6's watchdog, the pings are not the lock's own code: they
//! run in the client library, beside the business. That does not save a
//! frozen process. A stop-the-world pause stops the pings too; the session
//! expires, another client takes the lock, and when the paused holder wakes
//! it still believes it holds it and writes. ZooKeeper cannot stop that
//! write; only the resource can (`tests/paused_holder.rs`).
//!
//! A crashed client in the tests is a client whose session is abandoned,
//! not closed: it is connected *detached*, so dropping it stops its pings
//! without the goodbye (`closeSession`) that would delete its nodes at
//! once. That is what a killed process looks like to the ensemble.
//!
//! ## Reentrancy, as Curator does it
//!
//! Curator counts holds per thread, in the client: a thread that holds the
//! mutex and asks again gets it at once, without a round trip, and the
//! node is deleted only when the count comes back to zero. Another thread
//! of the same client is another contender, with its own node in the queue.
//!
//! Async Rust has no such thread: a task hops between threads at every
//! `.await`, and one thread runs many tasks. The unit that stays put for a
//! whole critical section is the tokio **task** (stage 6 found the same),
//! so holds are counted per task. Counted per lock instance, they would let
//! two tasks that share one `ZkLock` in at once, the second "re-entering"
//! the first one's hold; per task, the second queues (`tests/tasks.rs`).
//!
//! ## When a step goes wrong
//!
//! Every way out of the recipe must leave the queue as clean as a release
//! does: a node left behind lives as long as the session, and everyone
//! queues behind it.
//!
//! - **A wait given up from outside.** A `lock()` future dropped while it
//!   waits (by `tokio::time::timeout`, or as the losing branch of a
//!   `select!`) runs none of its own code again. A guard it owns deletes
//!   the node from a task of its own, as Curator deletes its node on any
//!   exception or interrupt (`tests/cancelled_wait.rs`).
//! - **A release whose delete does not land.** The connection can break
//!   with the delete on it. The delete is sent again once the client has
//!   reconnected, until it lands or the session ends and takes the node
//!   (Curator's *guaranteed* delete), from a task of its own, so that a
//!   dropped `unlock` does not stop it; the hold is ours until then. A
//!   delete the ensemble refuses (a permission taken away) leaves the hold,
//!   and `unlock` can be called again (`tests/failed_release.rs`).
//! - **A session that ends as the lock is granted.** The session is watched
//!   from before the queue is read, so its end is seen even when it falls
//!   between "our node is first" and the lock being handed out, and a lock
//!   whose session already ended is not handed out at all.
//! - **Asking again after the session ended.** Re-entry fails instead of
//!   handing out a node and a token that went with the session; the holds
//!   already taken are still to be given back (`tests/session_lost.rs`).
//! - **A wait the clock cannot count** (`Duration::MAX`) is refused with an
//!   error rather than a panic (`tests/deadline.rs`).
//!
//! ## The fencing token: the node's `czxid`
//!
//! Every change the ensemble accepts gets a *zxid*, a 64-bit transaction id
//! that the leader hands out in commit order: the high 32 bits are the
//! leader's epoch (one higher after every election), the low 32 bits count
//! within the epoch. A node's `czxid` is the zxid of its creation. Holders
//! hold in queue order, and the queue is in creation order, so each holder's
//! `czxid` is higher than every earlier holder's: it is a fencing token,
//! ordered by the ensemble itself, that stage 8's resource can check as it
//! checked Redis's counter.
//!
//! Why not the sequence number in the node's name? It is also ordered, but
//! it is a counter of the lock's parent node (its child version): if the
//! parent is deleted and made again (an operator cleaning up, a container
//! node reaped when empty), the numbers start from zero and tokens repeat,
//! the very failure stage 8 showed when its counter was lost. The zxid only
//! grows, over every node and every leader change; nothing resets it short
//! of wiping the ensemble.
//!
//! ## The client
//!
//! `zookeeper-client` (crates.io): asynchronous, pure Rust, no C library,
//! maintained (0.11 when this was written), and it speaks the 3.5+ protocol
//! that returns the created node's `Stat` (and so its `czxid`) with the
//! create. The older `zookeeper` crate is synchronous, and the others wrap
//! the C client.
//!
//! ## What it fixes, what it does not
//!
//! Fixes: a killed holder's lock comes back after one session timeout; the
//! leader killed while a client holds keeps exactly one holder
//! (`tests/ensemble.rs`), where Redis's failover handed the lock out twice.
//! Does not fix: the paused holder. Without the token check it oversells
//! exactly as Redis does; with the resource checking the `czxid`, its stale
//! write is refused. The price: every acquire is a write agreed by a
//! majority and fsynced to disk, milliseconds where Redis took microseconds.

use std::sync::{Arc, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use lockcore::{
    Acquired, ClientSetup, ConnectFuture, Description, DistributedLock, FaultPoints, LockError,
    LostSignal, Point, Release, StageEntry, deadline_after,
};
use tokio::sync::{Mutex, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use uuid::Uuid;
use zookeeper_client::{Acls, Client, CreateMode, Error as ZkError, SessionState};

/// What this stage is, for listings and the harness.
pub const DESCRIPTION: Description = Description {
    stage: 9,
    name: "stage9",
    title: "ZooKeeper (Curator's recipe): ephemeral sequential nodes, the lowest holds, the session is the TTL, czxid the token",
    acquire_commands: "create -e -s <lock>/_c_<uuid>-lock-; getChildren; exists+watch the predecessor",
    release_commands: "delete <our node>",
    reentrant: true,
    // The three members of the ensemble (they decide together; not
    // independent masters as Redlock's are).
    nodes: 3,
    fault_points: &[Point::AfterAcquire],
    home: lockcore::Home::ZOOKEEPER,
};

/// Where lock paths live in the ensemble: `/lockstages/<key>`.
pub const ROOT: &str = "/lockstages";
/// How a stage 9 URL starts: `zk://host:port`, one per ensemble member.
pub const SCHEME: &str = "zk://";

/// A granted lock: our node, and the token to show the resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fenced {
    /// Our node's full path (the value the harness keeps).
    pub node: String,
    /// Our node's `czxid`: higher than every earlier holder's.
    pub token: u64,
}

/// Who holds: the task that took the lock (a future driven outside any
/// task, by `block_on`, never leaves its thread: then the thread).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    Task(tokio::task::Id),
    Thread(std::thread::ThreadId),
}

fn current_task() -> Owner {
    match tokio::task::try_id() {
        Some(id) => Owner::Task(id),
        None => Owner::Thread(std::thread::current().id()),
    }
}

/// One task's hold: its node, and how many times (Curator's reentrancy
/// count).
struct Hold {
    owner: Owner,
    fenced: Fenced,
    count: u32,
    lost: LostSignal,
    /// Watches the session and fires `lost` when it expires.
    watching: JoinHandle<()>,
    /// The session the node belongs to.
    client: Client,
    /// The last release's delete, once sent: what it came to, when known.
    releasing: Option<watch::Receiver<Option<Released>>>,
}

/// What a release's delete came to (an error as its message: the hold is
/// still ours then, and `unlock` may try again).
type Released = Result<Release, String>;

/// A ZooKeeper mutex on one lock path, for one client (one session).
///
/// Share it between tasks (behind an `Arc`): holds belong to the task that
/// took them, as Curator's belong to a thread. The holding task re-enters;
/// any other task is one more contender, with a node of its own in the
/// queue. `unlock` names the hold by its node, so a hold may be given back
/// from any task.
pub struct ZkLock {
    connect_string: String,
    session_timeout: Duration,
    path: String,
    faults: FaultPoints,
    /// The session; a new one is opened after the old one expired, as
    /// Curator does.
    client: Mutex<Option<Client>>,
    holds: Arc<std::sync::Mutex<Vec<Hold>>>,
}

impl ZkLock {
    /// A client of the ensemble `setup.urls` names (`zk://host:port`, one
    /// per member), with `setup.config.ttl` as its session timeout.
    pub async fn connect(setup: ClientSetup) -> Result<Self, LockError> {
        setup.config.validate()?;
        let connect_string = connect_string(&setup.urls)?;
        let lock = Self {
            connect_string,
            session_timeout: setup.config.ttl,
            path: format!("{ROOT}/{}", setup.config.key),
            faults: setup.faults,
            client: Mutex::new(None),
            holds: Arc::default(),
        };
        lock.session().await?;
        Ok(lock)
    }

    /// The live session, or a new one when the last expired.
    async fn session(&self) -> Result<Client, LockError> {
        let mut slot = self.client.lock().await;
        if self.faults.has_crashed() {
            // A dead client sends nothing more, and opens no session.
            return Err(LockError::Crashed(Point::AfterAcquire));
        }
        if let Some(client) = slot.as_ref().filter(|c| !c.state().is_terminated()) {
            return Ok(client.clone());
        }
        let client = Client::connector()
            .with_session_timeout(self.session_timeout)
            // A connection is given up only after a whole session timeout
            // of silence (the client's default, two fifths of it, gives up
            // on a loaded machine while the session is fine).
            .with_connection_timeout(self.session_timeout)
            // Dropped without a goodbye, the session is left to expire, as
            // a killed process's is; see the module docs.
            .with_detached()
            .connect(&self.connect_string)
            .await
            .map_err(zk)?;
        *slot = Some(client.clone());
        Ok(client)
    }

    /// Tries once: takes the lock if no one holds it or waits for it.
    pub async fn try_lock(&self) -> Result<Option<Fenced>, LockError> {
        self.lock(Duration::ZERO).await
    }

    fn holds(&self) -> MutexGuard<'_, Vec<Hold>> {
        self.holds.lock().unwrap_or_else(PoisonError::into_inner)
    }

    // ANCHOR: lock
    /// Takes the lock for the current task, waiting at most `wait` for the
    /// nodes ahead of ours.
    pub async fn lock(&self, wait: Duration) -> Result<Option<Fenced>, LockError> {
        Ok(self.take(wait).await?.map(|(fenced, _)| fenced))
    }

    /// [`ZkLock::lock`], with the signal that fires when the lock is lost.
    async fn take(&self, wait: Duration) -> Result<Option<(Fenced, LostSignal)>, LockError> {
        let deadline = deadline_after(wait)?;
        let me = current_task();
        // Reentrancy: this task holds it already; count, and ask nobody.
        if let Some(ours) = self
            .holds()
            .iter_mut()
            .find(|h| h.owner == me && h.releasing.is_none())
        {
            if ours.lost.is_lost() || ours.client.state().is_terminated() {
                // Counting would hand out a node and a token that went
                // with the session, to a caller who would go on as holder.
                return Err(LockError::ZooKeeper(format!(
                    "the lock ({}) was lost with its session; unlock it before locking again",
                    ours.fenced.node
                )));
            }
            ours.count += 1;
            return Ok(Some((ours.fenced.clone(), ours.lost.clone())));
        }
        let client = self.session().await?;
        // The session is watched from before we look at the queue, so that
        // its end is seen whenever it comes, even between the look that
        // finds our node first and the moment the lock is handed out.
        let mut states = client.state_watcher();
        let id = Uuid::new_v4().simple().to_string();
        // From here until the lock is ours, a dropped future leaves the queue.
        let mut queued = Queued::new(&client, &self.path, &id);
        let ours = self.join_queue(&client, &id).await?;
        queued.node = Some(ours.node.clone());
        match self.wait_until_first(&client, &ours.node, deadline).await {
            Ok(true) => {}
            outcome => {
                // Gave up, or failed: leave the queue, or our node would
                // block everyone behind it until our session ends.
                queued.leave().await;
                return outcome.map(|_| None);
            }
        }
        if let Err(crash) = self.faults.reached(Point::AfterAcquire).await {
            // Dead here: the session is abandoned, the node stays until
            // the session expires.
            queued.stay();
            self.client.lock().await.take();
            return Err(crash);
        }
        if states.peek_state().is_terminated() {
            // Our node went with the session: there is no lock to hand out.
            return Err(LockError::ZooKeeper(format!(
                "{} went with the session, which ended before the lock was handed out",
                ours.node
            )));
        }
        queued.stay();
        let (fire, lost) = LostSignal::new();
        let watching = tokio::spawn(async move {
            // Curator's default: the lock is lost when the session is
            // (LOST), not at a mere disconnection (SUSPENDED), which the
            // session may survive by reconnecting to another member.
            let mut state = states.peek_state();
            while !state.is_terminated() {
                state = states.changed().await;
            }
            let _ = fire.send(true);
        });
        self.holds().push(Hold {
            owner: me,
            fenced: ours.clone(),
            count: 1,
            lost: lost.clone(),
            watching,
            client,
            releasing: None,
        });
        Ok(Some((ours, lost)))
    }
    // ANCHOR_END: lock

    // ANCHOR: join_queue
    /// Creates our ephemeral sequential node, named with our `id`; its
    /// `czxid` is our token.
    async fn join_queue(&self, client: &Client, id: &str) -> Result<Fenced, LockError> {
        let prefix = format!("{}/_c_{id}-lock-", self.path);
        let ephemeral = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
        loop {
            match client.create(&prefix, &[], &ephemeral).await {
                Ok((stat, sequence)) => {
                    return Ok(Fenced {
                        node: format!("{prefix}{sequence}"),
                        token: token(stat.czxid)?,
                    });
                }
                // The lock's path does not exist yet: make it (persistent).
                Err(ZkError::NoNode) => {
                    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
                    client.mkdir(&self.path, &persistent).await.map_err(zk)?;
                }
                // Curator's protection: the create may have landed before
                // the connection dropped. Our uuid finds it.
                Err(ZkError::ConnectionLoss) => {
                    if let Some(node) = self.find_ours(client, id).await? {
                        return Ok(node);
                    }
                }
                Err(other) => return Err(zk(other)),
            }
        }
    }
    // ANCHOR_END: join_queue

    async fn find_ours(&self, client: &Client, id: &str) -> Result<Option<Fenced>, LockError> {
        let children = client.list_children(&self.path).await.map_err(zk)?;
        let Some(name) = children.into_iter().find(|c| c.contains(id)) else {
            return Ok(None);
        };
        let node = format!("{}/{name}", self.path);
        match client.check_stat(&node).await.map_err(zk)? {
            Some(stat) => Ok(Some(Fenced {
                node,
                token: token(stat.czxid)?,
            })),
            None => Ok(None),
        }
    }

    // ANCHOR: wait_until_first
    /// Waits until our node is the lowest, watching only the one before it.
    /// `false` when `deadline` passed first.
    async fn wait_until_first(
        &self,
        client: &Client,
        node: &str,
        deadline: Instant,
    ) -> Result<bool, LockError> {
        let ours = node.rsplit('/').next().unwrap_or(node);
        loop {
            let mut queue = client.list_children(&self.path).await.map_err(zk)?;
            queue.retain(|child| sequence(child).is_some());
            queue.sort_by_key(|child| sequence(child));
            let Some(place) = queue.iter().position(|child| child == ours) else {
                // Our node is gone: the session expired while we waited.
                return Err(LockError::ZooKeeper(format!(
                    "{node} vanished while waiting: the session expired"
                )));
            };
            if place == 0 {
                return Ok(true);
            }
            if Instant::now() >= deadline {
                return Ok(false);
            }
            let predecessor = format!("{}/{}", self.path, queue[place - 1]);
            let (exists, watch) = client
                .check_and_watch_stat(&predecessor)
                .await
                .map_err(zk)?;
            if exists.is_none() {
                continue; // it went between the listing and the watch
            }
            // Only our predecessor's deletion wakes us: no herd.
            if tokio::time::timeout_at(deadline, watch.changed())
                .await
                .is_err()
            {
                return Ok(false);
            }
        }
    }
    // ANCHOR_END: wait_until_first

    // ANCHOR: unlock
    /// Gives back one hold; deletes our node when the last one goes. The
    /// hold stays ours until the node is gone: a lost connection does not
    /// end the release (the delete is sent again), and a delete the
    /// ensemble refuses leaves the hold for `unlock` to try again.
    pub async fn unlock(&self, fenced: &Fenced) -> Result<Release, LockError> {
        let mut released = {
            let mut holds = self.holds();
            let Some(ours) = holds.iter_mut().find(|h| h.fenced.node == fenced.node) else {
                // Curator: IllegalMonitorStateException("You do not own the lock").
                return Err(LockError::NotOwner);
            };
            match &ours.releasing {
                // An earlier unlock sent the delete and stopped waiting
                // (its future was dropped): wait for the same delete.
                Some(releasing) => releasing.clone(),
                None if ours.count > 1 => {
                    ours.count -= 1;
                    return Ok(Release::StillHeld(ours.count));
                }
                None => {
                    let (tell, released) = watch::channel(None);
                    ours.releasing = Some(released.clone());
                    let (client, node) = (ours.client.clone(), ours.fenced.node.clone());
                    tokio::spawn(release(Arc::clone(&self.holds), client, node, tell));
                    released
                }
            }
        };
        let outcome = released.wait_for(Option::is_some).await.map(|o| o.clone());
        match outcome {
            Ok(Some(Ok(release))) => Ok(release),
            Ok(Some(Err(refused))) => Err(LockError::ZooKeeper(refused)),
            _ => Err(LockError::ZooKeeper("the release was cut short".into())),
        }
    }
    // ANCHOR_END: unlock

    /// Whether our session has ended (expired or closed).
    pub async fn session_ended(&self) -> bool {
        self.client
            .lock()
            .await
            .as_ref()
            .is_none_or(|c| c.state() != SessionState::SyncConnected)
    }
}

/// Our node while it waits in the queue. Dropped before the lock is ours
/// (the `lock()` future dropped, or an error on the way), it takes the node
/// out of the queue from a task of its own: left behind, the node would
/// hold up every later waiter, this client's next `lock()` included, for as
/// long as the session lives.
struct Queued {
    client: Client,
    path: String,
    /// The uuid in the node's name: it finds the node when the future was
    /// dropped before the create's answer came back.
    id: String,
    node: Option<String>,
    armed: bool,
}

impl Queued {
    fn new(client: &Client, path: &str, id: &str) -> Self {
        Self {
            client: client.clone(),
            path: path.to_owned(),
            id: id.to_owned(),
            node: None,
            armed: true,
        }
    }

    /// The node stays: it holds the lock (or a dead client leaves it to
    /// its session's end, sending nothing more).
    fn stay(mut self) {
        self.armed = false;
    }

    /// Leaves the queue now, and waits until the node is gone.
    async fn leave(mut self) {
        if let Some(leaving) = self.leave_in_background() {
            let _ = leaving.await;
        }
    }

    /// A task of its own, so that the leaving goes on when the future that
    /// started it is dropped.
    fn leave_in_background(&mut self) -> Option<JoinHandle<()>> {
        if !std::mem::take(&mut self.armed) {
            return None;
        }
        // Outside a runtime (the process is ending), the session's end
        // takes the node.
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        let (client, path, id) = (self.client.clone(), self.path.clone(), self.id.clone());
        let node = self.node.take();
        Some(runtime.spawn(async move {
            let node = match node {
                Some(node) => Some(node),
                None => node_named(&client, &path, &id).await,
            };
            if let Some(node) = node {
                let _ = delete_until_gone(&client, &node).await;
            }
        }))
    }
}

impl Drop for Queued {
    fn drop(&mut self) {
        self.leave_in_background();
    }
}

/// How long to wait before asking again after a lost connection (the
/// request itself waits for the client to reconnect).
const RETRY_PAUSE: Duration = Duration::from_millis(20);

/// Deletes `node`, again and again across lost connections, until it is
/// gone: deleted by us, or with our session (the ensemble deletes a
/// session's ephemeral nodes when it ends).
async fn delete_until_gone(client: &Client, node: &str) -> Result<Release, ZkError> {
    loop {
        match client.delete(node, None).await {
            Ok(()) => return Ok(Release::Deleted),
            Err(ZkError::NoNode) => return Ok(Release::NothingDeleted),
            Err(_) if client.state().is_terminated() => return Ok(Release::NothingDeleted),
            Err(ZkError::ConnectionLoss) => tokio::time::sleep(RETRY_PAUSE).await,
            Err(refused) => return Err(refused),
        }
    }
}

/// Curator's guaranteed delete: our node is deleted from a task of its
/// own, sent again after every lost connection until it lands or the
/// session ends (and takes the node with it), however the `unlock` that
/// started it fares. A failed delete let go would leave the node, and
/// everyone locked out, for as long as the session lives. The hold is given
/// up once the node is gone; a delete the ensemble refuses leaves it, for
/// `unlock` to try again.
async fn release(
    holds: Arc<std::sync::Mutex<Vec<Hold>>>,
    client: Client,
    node: String,
    tell: watch::Sender<Option<Released>>,
) {
    let outcome = delete_until_gone(&client, &node).await;
    {
        let mut holds = holds.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(at) = holds.iter().position(|h| h.fenced.node == node) {
            if outcome.is_ok() {
                holds.remove(at).watching.abort();
            } else {
                holds[at].releasing = None;
            }
        }
    }
    tell.send_replace(Some(outcome.map_err(|refused| refused.to_string())));
}

/// Our node under `path`, found by the uuid in its name.
async fn node_named(client: &Client, path: &str, id: &str) -> Option<String> {
    loop {
        match client.list_children(path).await {
            Ok(children) => {
                let name = children.into_iter().find(|c| c.contains(id))?;
                return Some(format!("{path}/{name}"));
            }
            Err(ZkError::ConnectionLoss) if !client.state().is_terminated() => {
                tokio::time::sleep(RETRY_PAUSE).await;
            }
            Err(_) => return None,
        }
    }
}

/// The sequence number at the end of a lock node's name, if it is one.
fn sequence(child: &str) -> Option<u64> {
    child.rsplit_once("-lock-")?.1.parse().ok()
}

/// A `czxid` as a token (zxids are never negative).
fn token(czxid: i64) -> Result<u64, LockError> {
    u64::try_from(czxid).map_err(|_| {
        LockError::ZooKeeper(format!(
            "the server gave no czxid ({czxid}); stage 9 needs ZooKeeper 3.5 or later"
        ))
    })
}

/// `zk://a:1`, `zk://b:2`… as ZooKeeper's connect string `a:1,b:2`. A path
/// after the members, the same in every URL (`zk://a:1/runs/3`), is the
/// client's chroot: every path the lock uses lives under it
/// (`a:1,b:2/runs/3`), as when applications share one ensemble.
fn connect_string(urls: &[String]) -> Result<String, LockError> {
    let members = urls
        .iter()
        .map(|url| {
            let member = url.strip_prefix(SCHEME).ok_or_else(|| {
                LockError::Config(format!(
                    "stage 9 needs ZooKeeper members as {SCHEME}host:port, not `{url}`"
                ))
            })?;
            // `a:1/runs/3` is the member `a:1` and the chroot `/runs/3`.
            Ok(member.split_at(member.find('/').unwrap_or(member.len())))
        })
        .collect::<Result<Vec<_>, LockError>>()?;
    let Some((_, chroot)) = members.first() else {
        return Err(LockError::Config("no ZooKeeper member given".into()));
    };
    if members.iter().any(|(_, path)| path != chroot) {
        return Err(LockError::Config(format!(
            "the ZooKeeper members name different chroots: {}",
            urls.join(", ")
        )));
    }
    let hosts: Vec<&str> = members.iter().map(|(host, _)| *host).collect();
    Ok(format!("{}{chroot}", hosts.join(",")))
}

fn zk(error: ZkError) -> LockError {
    LockError::ZooKeeper(error.to_string())
}

// The harness drives every stage through one contract. This adapter is all
// stage 9 needs for it; the lesson is above.
#[async_trait]
impl DistributedLock for ZkLock {
    fn describe(&self) -> Description {
        DESCRIPTION
    }

    async fn try_acquire(&self) -> Result<Option<Acquired>, LockError> {
        self.acquire(Duration::ZERO).await
    }

    async fn acquire(&self, wait: Duration) -> Result<Option<Acquired>, LockError> {
        let Some((fenced, lost)) = self.take(wait).await? else {
            return Ok(None);
        };
        let mut held = Acquired::with_value(fenced.node);
        held.fencing_token = Some(fenced.token);
        held.lost = Some(lost);
        Ok(Some(held))
    }

    async fn release(&self, held: &Acquired) -> Result<Release, LockError> {
        self.unlock(&Fenced {
            node: held.value.clone(),
            token: held.fencing_token.unwrap_or(0),
        })
        .await
    }
}

/// Stage 9 as the harness and the CLI see it.
pub const STAGE: StageEntry = StageEntry {
    description: DESCRIPTION,
    connect,
};

fn connect(setup: ClientSetup) -> ConnectFuture {
    Box::pin(async move {
        let lock: Box<dyn DistributedLock> = Box::new(ZkLock::connect(setup).await?);
        Ok(lock)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_sort_by_their_sequence_not_their_uuid() {
        let mut queue = vec![
            "_c_ffff-lock-0000000012".to_owned(),
            "_c_0000-lock-0000000003".to_owned(),
            "stray".to_owned(),
        ];
        queue.retain(|c| sequence(c).is_some());
        queue.sort_by_key(|c| sequence(c));
        assert_eq!(queue[0], "_c_0000-lock-0000000003");
        assert_eq!(queue.len(), 2);
    }

    #[test]
    fn a_redis_url_is_refused_with_what_stage_9_wants() {
        let err = connect_string(&["redis://127.0.0.1:6379".to_owned()]).unwrap_err();
        assert!(err.to_string().contains("zk://"), "{err}");
        assert_eq!(
            connect_string(&["zk://a:1".to_owned(), "zk://b:2".to_owned()]).unwrap(),
            "a:1,b:2"
        );
    }

    #[test]
    fn a_path_after_the_members_is_the_chroot_and_must_be_the_same_in_each() {
        let urls = |paths: [&str; 2]| paths.map(|p| format!("zk://a:1{p}")).to_vec();
        assert_eq!(
            connect_string(&urls(["/runs/3", "/runs/3"])).unwrap(),
            "a:1,a:1/runs/3"
        );
        let err = connect_string(&urls(["/runs/3", ""])).unwrap_err();
        assert!(err.to_string().contains("different chroots"), "{err}");
    }
}
