//! # Stage 10 — etcd: a lease kept alive, and the revision as the token
//!
//! Stage 9 took the lock out of Redis and into a ZooKeeper ensemble. etcd
//! is the other consensus store the articles' answer points to, the one
//! Kubernetes keeps its state in. Its members agree on every write by Raft
//! before they answer: a write acknowledged by a majority of the three
//! members survives the loss of any one of them, leader included.
//!
//! ## The recipe: etcd's `concurrency.Mutex`
//!
//! etcd's Go client ships a mutex (`client/v3/concurrency/mutex.go`), and
//! the `etcdctl lock` command and etcd's own lock service run the same
//! recipe. It has four parts.
//!
//! 1. **A session: a lease kept alive.** The client asks the cluster for a
//!    *lease*, a number with a TTL that the leader counts down, and keeps
//!    renewing it (every third of its TTL) while the process lives. A key
//!    written *with* the lease is deleted by the cluster when the lease
//!    expires. This is stage 6's watchdog moved into the store: the
//!    renewals are what say "I am still here", and when they stop, the
//!    lock goes, one TTL later.
//! 2. **A key per contender under the lock's prefix.** Each client writes
//!    `lockstages/lock:stock/<its lease id in hex>`, attached to its lease,
//!    in a transaction that writes it only if it does not exist yet.
//! 3. **The lowest create revision holds.** etcd numbers every change to
//!    its keyspace with one *revision* counter, and each key remembers the
//!    revision that created it. The keys under the prefix, in create
//!    revision order, are a queue in the order the cluster accepted them.
//!    The first one holds the lock; the others wait for every key with a
//!    lower create revision to be deleted, and each watches only the key
//!    just before its own: no herd wakes when the lock is freed.
//! 4. **The key's create revision is the fencing token.** See below.
//!
//! ## The lease is the TTL, and the renewals are the watchdog
//!
//! `LockConfig::ttl` is used as the lease's TTL, rounded up to whole
//! seconds: etcd counts leases in seconds, and grants none shorter than one
//! and a half election timeouts (2 s with its default 1 s election
//! timeout, the harness's setting). A holder that dies, is cut off, or
//! freezes stops renewing; the leader revokes the lease one TTL later
//! (checked every half second), deletes the key, and the next contender's
//! watch fires.
//!
//! As with stage 6's watchdog and stage 9's session pings, the renewals run
//! beside the business, and a stop-the-world pause stops them too: the
//! lease expires, another client takes the lock, and the paused holder,
//! when it wakes, still believes it holds the lock and writes. This is what
//! Jepsen found for etcd 3.4.3's locks. etcd cannot stop that write; only
//! the resource can (`tests/paused_holder.rs`).
//!
//! A leader that dies does not take the leases with it: the new leader
//! extends every lease when it takes over (by its TTL and an election
//! timeout), so a holder whose renewals reach a surviving member keeps its
//! lock (`tests/ensemble.rs`). The holder's side has a clock too: a client
//! whose renewals have gone unanswered for a whole TTL gives its lease up
//! (the lock's lost signal fires), as Go's session does, because it can no
//! longer tell whether the cluster still counts it. So the TTL must be
//! longer than an election takes, with room to spare: etcd's default
//! election timeout is 1 s, and production leases are tens of seconds.
//!
//! ## Reentrancy, and whose hold it is
//!
//! The key is named after the lease, so a second `Lock` from the same
//! session finds its own key already there (the transaction's else branch)
//! and holds at once. Go's mutex keeps no count: one `Unlock` frees it, and
//! an outer section would go on unprotected after an inner one released.
//! Here holds are counted, as Curator and Redisson count them, and the key
//! is deleted when the count comes back to zero.
//!
//! Counted for whom? Curator counts per thread. An async task hops between
//! threads, so the unit that stays put for a whole critical section is the
//! tokio **task** (as in stage 6 and stage 9): the task that holds
//! re-enters, and another task sharing the same `EtcdLock` is a contender
//! of its own. It cannot have a key of its own (the key is the lease's), so
//! the client's tasks take turns for its one place in the queue, in the
//! client, before they ask the cluster. Counted per lock instance, holds
//! would let two tasks sharing one `EtcdLock` in at once, which is what
//! Go's else branch does to two mutexes on one session (`tests/tasks.rs`).
//!
//! ## When a step goes wrong
//!
//! A key left behind is worse here than a node in stage 9: it sits on a
//! lease the client keeps renewing, so it blocks everyone behind it for as
//! long as the client lives.
//!
//! - **A wait given up from outside.** A `lock()` future dropped while it
//!   waits (by `tokio::time::timeout`, or as the losing branch of a
//!   `select!`) runs none of its own code again. A guard it owns deletes
//!   the key from a task of its own, as Go's mutex does when the waiting
//!   context is cancelled (`tests/cancelled_wait.rs`).
//! - **A release that fails.** When the delete transaction cannot be sent
//!   (no member answers), nobody knows whether the key went; the hold stays
//!   ours and `unlock` can be called again (`tests/failed_release.rs`). A
//!   client that stays cut off loses its lease a TTL later, and the key with
//!   it.
//! - **Asking again after the lease is lost.** Re-entry fails instead of
//!   handing out a key and a token that went with the lease; the holds
//!   already taken are still to be given back (`tests/lease_lost.rs`).
//! - **A wait the clock cannot count** (`Duration::MAX`) is refused with an
//!   error rather than a panic (`tests/deadline.rs`).
//!
//! ## The fencing token: the key's create revision
//!
//! The revision is one counter for the whole keyspace, raised by the leader
//! in commit order, never reset, and carried across leader changes (it is
//! part of the replicated state, not of a leader). Holders hold in create
//! revision order, so each holder's token is higher than every earlier
//! holder's. Unlike stage 8's `INCR` counter on one Redis master, nothing
//! short of wiping the cluster can hand the same number out twice.
//!
//! ## The client, and reaching the cluster
//!
//! `etcd-client` (crates.io): the maintained asynchronous etcd v3 client
//! for Rust, on tonic (gRPC). Its build compiles etcd's protobuf files, so
//! it needs `protoc` (Debian: `protobuf-compiler`).
//!
//! Go's client retries a request that a member could not serve on another
//! member. Here each member gets a connection of its own, and a request a
//! member cannot serve (it is down, or has no leader during an election)
//! goes to the next one, for as long as a lease lives: a member's death
//! costs the holder a retry, not its lock (`Members`).
//!
//! ## What it fixes, what it does not
//!
//! Fixes: a killed holder's lock comes back one lease TTL later; the leader
//! killed while a client holds keeps exactly one holder, where Redis's
//! failover handed the lock out twice; a holder cut off with a minority is
//! told (its lost signal) before the majority lets anyone else in, where
//! Redis's split brain had two holders (`tests/partition.rs`). Does not
//! fix: the paused holder.
//! Without the token check it oversells exactly as Redis does; with the
//! resource checking the create revision, its stale write is refused. The
//! price: every acquire is a write agreed by a majority and fsynced.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, Error as EtcdError, EventType, GetOptions,
    PutOptions, SortOrder, SortTarget, Txn, TxnOp, TxnOpResponse, WatchFilterType, WatchOptions,
};
use lockcore::{
    Acquired, ClientSetup, ConnectFuture, Description, DistributedLock, FaultPoints, LockError,
    LostSignal, Point, Release, StageEntry, deadline_after,
};
use tokio::sync::{Mutex, OwnedSemaphorePermit, Semaphore, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// What this stage is, for listings and the harness.
pub const DESCRIPTION: Description = Description {
    stage: 10,
    name: "stage10",
    title: "etcd (concurrency.Mutex's recipe): a key per client on a kept-alive lease, the lowest create revision holds and is the token",
    acquire_commands: "LeaseGrant; Txn(if <prefix>/<lease> absent: put it with the lease); Range(the key just before ours) + Watch its delete",
    release_commands: "Txn(if our key's create revision is ours: delete it)",
    reentrant: true,
    // The three members of the cluster (they decide together; not
    // independent masters as Redlock's are).
    nodes: 3,
    fault_points: &[Point::AfterAcquire],
    home: lockcore::Home::ETCD,
};

/// Where lock keys live: `lockstages/<key>/<lease id in hex>`.
pub const ROOT: &str = "lockstages/";
/// How a stage 10 URL starts: one `http://host:port` per member.
pub const SCHEME: &str = "http://";
/// The shortest lease etcd grants with its default 1 s election timeout.
pub const SHORTEST_LEASE: Duration = Duration::from_secs(2);

/// A granted lock: our key, and the token to show the resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fenced {
    /// Our key (the value the harness keeps).
    pub key: String,
    /// Our key's create revision: higher than every earlier holder's.
    pub token: u64,
}

/// A lease and the task that keeps it alive.
struct Session {
    lease: i64,
    /// Fires when the lease is known to be gone.
    lost: LostSignal,
    keeping: JoinHandle<()>,
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

/// What we hold, which task holds it, and how many times.
struct Held {
    owner: Owner,
    fenced: Fenced,
    count: u32,
    lost: LostSignal,
    /// This client's turn, kept while it holds: its other tasks wait.
    _turn: Option<OwnedSemaphorePermit>,
}

/// An etcd mutex on one lock prefix, for one client (one lease at a time).
///
/// Share it between tasks (behind an `Arc`): the lock is held by the task
/// that took it. That task re-enters; any other task waits for its turn,
/// as a contender of its own. `unlock` names the hold by its key, so a hold
/// may be given back from any task.
pub struct EtcdLock {
    members: Members,
    prefix: String,
    ttl: Duration,
    faults: FaultPoints,
    /// The lease; a new one is granted after the old one expired.
    session: Mutex<Option<Session>>,
    /// One permit: the key is named after the lease, so this client has one
    /// place in the cluster's queue, and its tasks take turns for it.
    turn: Arc<Semaphore>,
    held: Mutex<Option<Held>>,
}

impl EtcdLock {
    /// A client of the cluster `setup.urls` names (`http://host:port`, one
    /// per member), with `setup.config.ttl` (rounded up to whole seconds,
    /// at least [`SHORTEST_LEASE`]) as its lease's TTL.
    pub async fn connect(setup: ClientSetup) -> Result<Self, LockError> {
        setup.config.validate()?;
        let ttl = lease_ttl(setup.config.ttl);
        let members = Members::connect(&endpoints(&setup.urls)?, ttl).await?;
        Ok(Self {
            members,
            prefix: format!("{ROOT}{}/", setup.config.key),
            ttl,
            faults: setup.faults,
            session: Mutex::new(None),
            turn: Arc::new(Semaphore::new(1)),
            held: Mutex::new(None),
        })
    }

    // ANCHOR: session
    /// Our live lease, or a new one (kept alive from now on) when the last
    /// one expired.
    async fn session(&self) -> Result<(i64, LostSignal), LockError> {
        let mut slot = self.session.lock().await;
        if self.faults.has_crashed() {
            // A dead client sends nothing more, and takes no lease.
            return Err(LockError::Crashed(Point::AfterAcquire));
        }
        if let Some(live) = slot.as_ref().filter(|s| !s.lost.is_lost()) {
            return Ok((live.lease, live.lost.clone()));
        }
        let seconds = i64::try_from(self.ttl.as_secs()).unwrap_or(i64::MAX);
        let grant = |mut c: Client| async move { c.lease_grant(seconds, None).await };
        let lease = self.members.call(grant).await?.id();
        let (fire, lost) = LostSignal::new();
        let keeping = tokio::spawn(keep_alive(self.members.clone(), lease, self.ttl, fire));
        *slot = Some(Session {
            lease,
            lost: lost.clone(),
            keeping,
        });
        Ok((lease, lost))
    }
    // ANCHOR_END: session

    /// Tries once: takes the lock if no one holds it or waits for it.
    pub async fn try_lock(&self) -> Result<Option<Fenced>, LockError> {
        self.lock(Duration::ZERO).await
    }

    // ANCHOR: lock
    /// Takes the lock for the current task, waiting at most `wait` for the
    /// keys ahead of ours.
    pub async fn lock(&self, wait: Duration) -> Result<Option<Fenced>, LockError> {
        Ok(self.take(wait).await?.map(|(fenced, _)| fenced))
    }

    /// [`EtcdLock::lock`], with the signal that fires when the lock is lost.
    async fn take(&self, wait: Duration) -> Result<Option<(Fenced, LostSignal)>, LockError> {
        let deadline = deadline_after(wait)?;
        let me = current_task();
        // Reentrancy: this task holds it already; count, and ask nobody.
        if let Some(ours) = self.held.lock().await.as_mut().filter(|h| h.owner == me) {
            if ours.lost.is_lost() {
                // Counting would hand out a key and a token that went with
                // the lease, to a caller who would go on as holder.
                return Err(LockError::Etcd(format!(
                    "the lock ({}) was lost with its lease; unlock it before locking again",
                    ours.fenced.key
                )));
            }
            ours.count += 1;
            return Ok(Some((ours.fenced.clone(), ours.lost.clone())));
        }
        // Another task of ours may hold it, or be on its way: they take
        // turns here, since our lease has one key in the cluster's queue.
        let turn = Arc::clone(&self.turn).acquire_owned();
        let Ok(Ok(turn)) = tokio::time::timeout_at(deadline, turn).await else {
            return Ok(None);
        };
        let (lease, lost) = self.session().await?;
        let key = format!("{}{lease:x}", self.prefix);
        // From here until the lock is ours, a dropped future leaves the queue.
        let queued = Queued::new(&self.members, &key, turn);
        let (ours, first) = self.join_queue(lease, key).await?;
        if !first {
            match self.wait_for_predecessors(&ours, deadline).await {
                Ok(true) => {}
                outcome => {
                    // Gave up, or failed: leave the queue, or our key would
                    // block everyone behind it until our lease expires.
                    queued.leave().await;
                    return outcome.map(|_| None);
                }
            }
            // Our lease may have expired while we waited, and our key with
            // it (Go's mutex: ErrSessionExpired).
            if !self.still_ours(&ours).await? {
                return Err(LockError::Etcd(format!(
                    "{} vanished while waiting: the lease expired",
                    ours.key
                )));
            }
        }
        if let Err(crash) = self.faults.reached(Point::AfterAcquire).await {
            // Dead here: the renewals stop, the lease is not revoked, and
            // the key stays until the lease expires.
            drop(queued.stay());
            if let Some(session) = self.session.lock().await.take() {
                session.keeping.abort();
            }
            return Err(crash);
        }
        // Waited for before the key is kept: a future dropped while it
        // waits here still leaves the queue.
        let mut held = self.held.lock().await;
        *held = Some(Held {
            owner: me,
            fenced: ours.clone(),
            count: 1,
            lost: lost.clone(),
            _turn: queued.stay(),
        });
        Ok(Some((ours, lost)))
    }
    // ANCHOR_END: lock

    // ANCHOR: join_queue
    /// Writes our `key` (the prefix and our lease's id) attached to the
    /// lease, unless it is there already; its create revision is our token.
    /// Also says whether ours is the oldest key, so an uncontended lock
    /// takes one round trip.
    async fn join_queue(&self, lease: i64, key: String) -> Result<(Fenced, bool), LockError> {
        let oldest = || {
            let first_created = GetOptions::new()
                .with_prefix()
                .with_sort(SortTarget::Create, SortOrder::Ascend)
                .with_limit(1);
            TxnOp::get(self.prefix.as_str(), Some(first_created))
        };
        let join = Txn::new()
            .when([Compare::create_revision(key.as_str(), CompareOp::Equal, 0)])
            .and_then([
                TxnOp::put(key.as_str(), "", Some(PutOptions::new().with_lease(lease))),
                oldest(),
            ])
            // Our key is there already: this lease joined before.
            .or_else([TxnOp::get(key.as_str(), None), oldest()]);
        let reply = self
            .members
            .call(|mut c: Client| {
                let join = join.clone();
                async move { c.txn(join).await }
            })
            .await?;
        let answers = reply.op_responses();
        let revision = if reply.succeeded() {
            // The put was this transaction's one change: its revision.
            reply.header().map_or(0, |h| h.revision())
        } else {
            first_key(answers.first()).map_or(0, |kv| kv.create_revision())
        };
        let holder = first_key(answers.get(1)).map(|kv| kv.create_revision());
        let token = u64::try_from(revision)
            .ok()
            .filter(|&t| t > 0)
            .ok_or_else(|| LockError::Etcd(format!("no create revision for {key}")))?;
        Ok((Fenced { key, token }, holder == Some(revision)))
    }
    // ANCHOR_END: join_queue

    // ANCHOR: wait_for_predecessors
    /// Waits until no key under the prefix was created before ours,
    /// watching only the newest of them, the one just ahead of us. `false`
    /// when `deadline` passed first.
    async fn wait_for_predecessors(
        &self,
        ours: &Fenced,
        deadline: Instant,
    ) -> Result<bool, LockError> {
        let before_ours = i64::try_from(ours.token).unwrap_or(i64::MAX) - 1;
        loop {
            let newest_before_ours = GetOptions::new()
                .with_prefix()
                .with_max_create_revision(before_ours)
                .with_sort(SortTarget::Create, SortOrder::Descend)
                .with_limit(1);
            let prefix = self.prefix.clone();
            let ahead = self
                .members
                .call(|mut c: Client| {
                    let (prefix, options) = (prefix.clone(), newest_before_ours.clone());
                    async move { c.get(prefix, Some(options)).await }
                })
                .await?;
            let Some(predecessor) = ahead.kvs().first() else {
                return Ok(true);
            };
            if Instant::now() >= deadline {
                return Ok(false);
            }
            // From the revision we read at, so a delete that came between
            // the read and the watch is not missed.
            let read_at = ahead.header().map_or(0, |h| h.revision());
            let only_deletes = WatchOptions::new()
                .with_start_revision(read_at + 1)
                .with_filters([WatchFilterType::NoPut]);
            let key = predecessor.key().to_vec();
            let mut watch = self
                .members
                .call(|mut c: Client| {
                    let (key, options) = (key.clone(), only_deletes.clone());
                    async move { c.watch(key, Some(options)).await }
                })
                .await?;
            let deleted = async {
                // A watch that breaks (its member killed) ends this wait
                // too: the loop reads the queue again and watches anew.
                while let Ok(Some(reply)) = watch.message().await {
                    let gone = reply
                        .events()
                        .iter()
                        .any(|e| e.event_type() == EventType::Delete);
                    if gone || reply.canceled() {
                        return;
                    }
                }
            };
            if tokio::time::timeout_at(deadline, deleted).await.is_err() {
                return Ok(false);
            }
        }
    }
    // ANCHOR_END: wait_for_predecessors

    async fn still_ours(&self, ours: &Fenced) -> Result<bool, LockError> {
        let key = ours.key.clone();
        let now = self
            .members
            .call(|mut c: Client| {
                let key = key.clone();
                async move { c.get(key, None).await }
            })
            .await?;
        let token = i64::try_from(ours.token).unwrap_or(i64::MAX);
        Ok(now.kvs().first().map(|kv| kv.create_revision()) == Some(token))
    }

    // ANCHOR: unlock
    /// Gives back one hold; deletes our key when the last one goes, and
    /// only if it is still the key we created (a compare and delete in one
    /// transaction, as stage 5's script did it). The hold is kept until the
    /// transaction has answered.
    pub async fn unlock(&self, fenced: &Fenced) -> Result<Release, LockError> {
        let mut held = self.held.lock().await;
        let Some(ours) = held.as_mut().filter(|h| h.fenced.key == fenced.key) else {
            return Err(LockError::NotOwner);
        };
        if ours.count > 1 {
            ours.count -= 1;
            return Ok(Release::StillHeld(ours.count));
        }
        let token = i64::try_from(fenced.token).unwrap_or(i64::MAX);
        let ours_still = Compare::create_revision(fenced.key.as_str(), CompareOp::Equal, token);
        let release = Txn::new()
            .when([ours_still])
            .and_then([TxnOp::delete(fenced.key.as_str(), None)]);
        let reply = self
            .members
            .call(|mut c: Client| {
                let release = release.clone();
                async move { c.txn(release).await }
            })
            .await?;
        // Only now is the hold given up: a transaction that failed may or
        // may not have deleted the key, and `unlock` must be free to ask
        // again rather than answer "not the owner".
        held.take();
        Ok(if reply.succeeded() {
            Release::Deleted
        } else {
            // The lease expired and took the key with it.
            Release::NothingDeleted
        })
    }
    // ANCHOR_END: unlock
}

/// Our key while it waits in the queue. Dropped before the lock is ours
/// (the `lock()` future dropped, or an error on the way), it deletes the
/// key from a task of its own: left behind on a lease this client keeps
/// renewing, the key would hold up every later waiter for as long as the
/// client lives.
struct Queued {
    members: Members,
    key: String,
    /// This client's turn, kept until the key is gone: our next try writes
    /// the same key (it is named after the lease), and must not find this
    /// one and take it for its own.
    turn: Option<OwnedSemaphorePermit>,
}

impl Queued {
    fn new(members: &Members, key: &str, turn: OwnedSemaphorePermit) -> Self {
        Self {
            members: members.clone(),
            key: key.to_owned(),
            turn: Some(turn),
        }
    }

    /// The key stays (it holds the lock, or a dead client leaves it to its
    /// lease, sending nothing more); the turn goes to the caller.
    fn stay(mut self) -> Option<OwnedSemaphorePermit> {
        self.turn.take()
    }

    /// Leaves the queue now, and waits until the key is deleted.
    async fn leave(mut self) {
        if let Some(leaving) = self.leave_in_background() {
            let _ = leaving.await;
        }
    }

    /// A task of its own, so that the leaving goes on when the future that
    /// started it is dropped.
    fn leave_in_background(&mut self) -> Option<JoinHandle<()>> {
        let turn = self.turn.take()?;
        // Outside a runtime (the process is ending), the lease takes the key.
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        let (members, key) = (self.members.clone(), self.key.clone());
        Some(runtime.spawn(async move {
            let leave = |mut c: Client| {
                let key = key.clone();
                async move { c.delete(key, None).await }
            };
            let _ = members.call(leave).await;
            drop(turn);
        }))
    }
}

impl Drop for Queued {
    fn drop(&mut self) {
        self.leave_in_background();
    }
}

impl Drop for EtcdLock {
    fn drop(&mut self) {
        // The renewals stop with the client; the lease is left to expire,
        // as a killed process's is.
        if let Some(session) = self.session.get_mut().take() {
            session.keeping.abort();
        }
    }
}

// ANCHOR: keep_alive
/// Renews `lease` every third of `ttl`, and fires `lost` when it is gone:
/// when a renewal is answered with TTL 0 (the cluster revoked it), or when
/// no renewal has been answered for as long as the lease could live. Like
/// Go's session, the client then gives the lease up by its own clock: it
/// cannot know whether the cluster still counts it, and the safe answer is
/// that it does not. Each renewal opens its own stream, on whichever
/// member answers.
async fn keep_alive(members: Members, lease: i64, ttl: Duration, lost: watch::Sender<bool>) {
    let mut expires = Instant::now() + ttl;
    loop {
        let sent = Instant::now();
        let renewal = members.call(|c: Client| renew(c, lease));
        match tokio::time::timeout(ttl / 3, renewal).await {
            Ok(Ok(0)) => break,
            // Counted from when the renewal was sent: the cluster's count
            // started later, so ours ends first.
            Ok(Ok(seconds)) => expires = sent + Duration::from_secs(seconds.unsigned_abs()),
            _ if Instant::now() >= expires => break,
            _ => {} // no member answered in time: again at the next turn
        }
        tokio::time::sleep_until(sent + ttl / 3).await;
    }
    let _ = lost.send(true);
}

/// One renewal: the TTL the cluster gives the lease from now (0: gone).
async fn renew(mut client: Client, lease: i64) -> Result<i64, EtcdError> {
    let (mut keeper, mut replies) = client.lease_keep_alive(lease).await?;
    keeper.keep_alive().await?;
    match replies.message().await? {
        Some(reply) => Ok(reply.ttl().max(0)),
        None => Err(EtcdError::LeaseKeepAliveError("no reply".into())),
    }
}
// ANCHOR_END: keep_alive

// ANCHOR: members
/// The cluster as one client reaches it: a connection per member, and
/// which member answered last.
#[derive(Clone)]
struct Members {
    clients: Arc<[Client]>,
    current: Arc<AtomicUsize>,
    /// How long a request is retried on the members before it fails.
    patience: Duration,
}

impl Members {
    /// Connections to every member of `endpoints` (made lazily: a member
    /// that is down now is tried when a request needs it).
    async fn connect(endpoints: &[String], patience: Duration) -> Result<Self, LockError> {
        let options = ConnectOptions::new().with_connect_timeout(patience / 3);
        let mut clients = Vec::with_capacity(endpoints.len());
        for endpoint in endpoints {
            let one = Client::connect([endpoint], Some(options.clone()));
            clients.push(one.await.map_err(etcd)?);
        }
        Ok(Self {
            clients: clients.into(),
            current: Arc::new(AtomicUsize::new(0)),
            patience,
        })
    }

    /// Sends `request` to the member that answered last; a member that
    /// cannot serve it (down, or without a leader) passes it to the next,
    /// round and round, for at most twice `patience`: etcd itself may take
    /// its request timeout (5 s and two election timeouts) to answer
    /// "request timed out" for a proposal caught in an election, and one
    /// such answer must not use up the whole wait (a matrix run on a busy
    /// machine lost stage 10's minority-partition cell that way).
    async fn call<T, F, Fut>(&self, request: F) -> Result<T, LockError>
    where
        F: Fn(Client) -> Fut,
        Fut: Future<Output = Result<T, EtcdError>>,
    {
        let deadline = Instant::now() + self.patience * 2;
        let mut index = self.current.load(Ordering::Relaxed) % self.clients.len();
        loop {
            match request(self.clients[index].clone()).await {
                Err(e) if unavailable(&e) && Instant::now() < deadline => {
                    index = (index + 1) % self.clients.len();
                    tokio::time::sleep(RETRY_PAUSE).await;
                }
                answer => {
                    self.current.store(index, Ordering::Relaxed);
                    return answer.map_err(etcd);
                }
            }
        }
    }
}
// ANCHOR_END: members

/// gRPC's status code for "the service is unavailable": what a member that
/// is down, or has no leader, answers (or what the connection says for it).
const UNAVAILABLE: i32 = 14;
/// A short breath between two members, so an election under way is not
/// hammered.
const RETRY_PAUSE: Duration = Duration::from_millis(20);

/// Whether another member might serve what this one could not.
fn unavailable(error: &EtcdError) -> bool {
    match error {
        EtcdError::GRpcStatus(status) => i32::from(status.code()) == UNAVAILABLE,
        EtcdError::TransportError(_) | EtcdError::IoError(_) => true,
        _ => false,
    }
}

/// The first key a range in a transaction found, if any.
fn first_key(answer: Option<&TxnOpResponse>) -> Option<etcd_client::KeyValue> {
    match answer? {
        TxnOpResponse::Get(range) => range.kvs().first().cloned(),
        _ => None,
    }
}

/// `ttl` as a lease's TTL: whole seconds, at least [`SHORTEST_LEASE`].
fn lease_ttl(ttl: Duration) -> Duration {
    let seconds = ttl.as_secs() + u64::from(ttl.subsec_nanos() > 0);
    Duration::from_secs(seconds).max(SHORTEST_LEASE)
}

/// The members' URLs, checked to be etcd's `http://host:port`.
fn endpoints(urls: &[String]) -> Result<Vec<String>, LockError> {
    if urls.is_empty() {
        return Err(LockError::Config("no etcd member given".into()));
    }
    urls.iter()
        .map(|url| {
            url.strip_prefix(SCHEME)
                .filter(|rest| !rest.is_empty() && !rest.contains('/'))
                .map(|_| url.clone())
                .ok_or_else(|| {
                    LockError::Config(format!(
                        "stage 10 needs etcd members as {SCHEME}host:port, not `{url}`"
                    ))
                })
        })
        .collect()
}

fn etcd(error: EtcdError) -> LockError {
    LockError::Etcd(error.to_string())
}

// The harness drives every stage through one contract. This adapter is all
// stage 10 needs for it; the lesson is above.
#[async_trait]
impl DistributedLock for EtcdLock {
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
        let mut held = Acquired::with_value(fenced.key);
        held.fencing_token = Some(fenced.token);
        held.lost = Some(lost);
        Ok(Some(held))
    }

    async fn release(&self, held: &Acquired) -> Result<Release, LockError> {
        self.unlock(&Fenced {
            key: held.value.clone(),
            token: held.fencing_token.unwrap_or(0),
        })
        .await
    }
}

/// Stage 10 as the harness and the CLI see it.
pub const STAGE: StageEntry = StageEntry {
    description: DESCRIPTION,
    connect,
};

fn connect(setup: ClientSetup) -> ConnectFuture {
    Box::pin(async move {
        let lock: Box<dyn DistributedLock> = Box::new(EtcdLock::connect(setup).await?);
        Ok(lock)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_is_whole_seconds_and_never_shorter_than_etcd_grants() {
        assert_eq!(lease_ttl(Duration::from_millis(300)), SHORTEST_LEASE);
        assert_eq!(
            lease_ttl(Duration::from_millis(2001)),
            Duration::from_secs(3)
        );
        assert_eq!(lease_ttl(Duration::from_secs(30)), Duration::from_secs(30));
    }

    #[test]
    fn a_redis_url_is_refused_with_what_stage_10_wants() {
        let err = endpoints(&["redis://127.0.0.1:6379".to_owned()]).unwrap_err();
        assert!(err.to_string().contains("http://host:port"), "{err}");
        assert!(endpoints(&[]).is_err());
        let two = ["http://a:1".to_owned(), "http://b:2".to_owned()];
        assert_eq!(endpoints(&two).unwrap(), two);
    }
}
