//! The generator: what the clients do while the nemesis strikes.
//!
//! Each client is a real holder process (so that `kill -9` and SIGSTOP are
//! real) driven by a loop here: acquire with the stage's own waiting, read
//! the stock, work for a random time, sell, release; again, until the
//! trial's time is up. Every step goes into the history as an invocation
//! and a completion. An operation whose outcome is unknown (a timeout, a
//! lost connection, a killed process) ends that process: the client starts
//! a fresh one, as a crashed service is restarted, and carries on.
//!
//! The work times come from a generator seeded per trial and client, so a
//! replay asks the same of every client; how their requests interleave is
//! up to the machine.
//!
//! The clients also say when the moments a nemesis aims at happen: a client
//! was granted the lock, a client read the stock ([`Slots::read_after`]).
//! They only say it; what to do then is the nemesis's business. One moment
//! cannot be reported in time, because it lasts a millisecond: the lock is
//! free and its last holder is about to ask again. For that a client can be
//! stopped before its next acquire ([`Slot::stop_before_next_acquire`]), so
//! that a fault is in place when that request goes out.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use lockcore::{Point, Release};
use std::sync::atomic::AtomicU64;
use tokio::sync::{Notify, oneshot};
use tokio::time::{Instant, sleep, sleep_until, timeout};

use super::rng::Rng;
use super::schedule::client_name;
use crate::client::ClientFactory;
use crate::error::{HarnessError, Result};
use crate::guard::Released;
use crate::history::{Detail, History, Op, Phase, What};
use crate::holder::{HolderProcess, Launcher};
use crate::process::{self, Signal};

/// What the nemesis knows of one client, and how it reaches it.
#[derive(Debug, Default)]
pub(crate) struct Slot {
    pid: AtomicU32,
    inside: AtomicBool,
    reconnect: AtomicBool,
    reconnect_now: Notify,
    slow: Mutex<Option<Duration>>,
    stall: Mutex<Option<Duration>>,
    /// Its critical section does not end before this (a node fault under
    /// way keeps its holder inside), and who to tell when it moves.
    stay: Mutex<Option<Instant>>,
    stay_moved: Notify,
    /// The moment (in [`Slots`]'s count) its current lock was granted.
    granted: AtomicU64,
    /// Its last read of the stock.
    read: Mutex<Option<Read>>,
    /// The moment its last release came back.
    released: AtomicU64,
    /// Set: the client stops before its next acquire, says so, and goes on
    /// when told to.
    gate: Mutex<Option<Gate>>,
}

/// Where a client stopped before its next acquire waits to go on.
#[derive(Debug)]
struct Gate {
    arrived: oneshot::Sender<()>,
    open: oneshot::Receiver<()>,
}

/// The nemesis's side of a [`Gate`]: when the client has stopped, and how
/// to let it go (dropping it lets the client go too).
#[derive(Debug)]
pub(crate) struct Stopped {
    pub(crate) arrived: oneshot::Receiver<()>,
    pub(crate) open: oneshot::Sender<()>,
}

/// A client's read of the stock inside its critical section: the moment
/// a fault aimed at the holder is measured from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Read {
    /// Which client read.
    pub(crate) client: usize,
    /// When.
    pub(crate) at: Instant,
    /// Its place in the order of the trial's moments.
    pub(crate) moment: u64,
    /// The moment the lock it read under was granted.
    pub(crate) granted: u64,
}

impl Read {
    /// The critical section it was made in: its client and its grant.
    pub(crate) fn section(&self) -> (usize, u64) {
        (self.client, self.granted)
    }
}

impl Slot {
    /// Its next critical section (or the one it is in) works `extra` longer.
    pub(crate) fn slow_next(&self, extra: Duration) {
        *lock(&self.slow) = Some(extra);
    }

    /// Its next release stops for `stall` on its way.
    pub(crate) fn stall_next(&self, stall: Duration) {
        *lock(&self.stall) = Some(stall);
    }

    /// Its current critical section (or its next) works until `until` at
    /// least: earlier or later than said before.
    pub(crate) fn stay_until(&self, until: Instant) {
        *lock(&self.stay) = Some(until);
        self.stay_moved.notify_waiters();
    }

    /// Stops the client before its next acquire: right after the release
    /// of the section it is in, when the lock it held is free and nobody
    /// has asked for it yet.
    pub(crate) fn stop_before_next_acquire(&self) -> Stopped {
        let (arrived, arrived_rx) = oneshot::channel();
        let (open_tx, open) = oneshot::channel();
        *lock(&self.gate) = Some(Gate { arrived, open });
        Stopped {
            arrived: arrived_rx,
            open: open_tx,
        }
    }

    /// Stops here if the nemesis asked for it, until it lets the client go
    /// (or gives up on it).
    async fn pass_gate(&self) {
        let gate = lock(&self.gate).take();
        if let Some(gate) = gate {
            let _ = gate.arrived.send(());
            let _ = gate.open.await;
        }
    }

    /// Waits until the time set by [`Slot::stay_until`], which may move
    /// meanwhile; then forgets it.
    async fn stay(&self) {
        loop {
            let moved = self.stay_moved.notified();
            tokio::pin!(moved);
            moved.as_mut().enable();
            let Some(until) = *lock(&self.stay) else {
                return;
            };
            if Instant::now() >= until {
                *lock(&self.stay) = None;
                return;
            }
            tokio::select! {
                () = &mut moved => {}
                () = sleep_until(until) => {}
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// Every client of a trial, and the count of the moments they reported
/// (grants and reads), which orders them.
#[derive(Debug)]
pub(crate) struct Slots(Vec<Slot>, Moments);

#[derive(Debug, Default)]
struct Moments {
    count: AtomicU64,
    changed: Notify,
}

impl Slots {
    pub(crate) fn new(clients: usize) -> Self {
        Self(
            (0..clients).map(|_| Slot::default()).collect(),
            Moments::default(),
        )
    }

    /// The latest moment so far: what happens from now on comes after it.
    pub(crate) fn moment(&self) -> u64 {
        self.1.count.load(Ordering::SeqCst)
    }

    fn next_moment(&self) -> u64 {
        self.1.count.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Client `index` was granted the lock.
    fn granted(&self, index: usize) {
        let moment = self.next_moment();
        self.get(index).granted.store(moment, Ordering::SeqCst);
        self.1.changed.notify_waiters();
    }

    /// The moment client `index` was last granted the lock.
    pub(crate) fn granted_to(&self, index: usize) -> u64 {
        self.get(index).granted.load(Ordering::SeqCst)
    }

    /// Whether the client that made `read` is still in the critical
    /// section it made it in.
    pub(crate) fn still_in(&self, read: &Read) -> bool {
        let slot = self.get(read.client);
        slot.inside.load(Ordering::SeqCst) && slot.granted.load(Ordering::SeqCst) == read.granted
    }

    /// Client `index` read the stock.
    fn read(&self, index: usize) {
        let slot = self.get(index);
        let read = Read {
            client: index,
            at: Instant::now(),
            moment: self.next_moment(),
            granted: slot.granted.load(Ordering::SeqCst),
        };
        *lock(&slot.read) = Some(read);
        self.1.changed.notify_waiters();
    }

    /// Client `index`'s release came back: the lock is free, on the
    /// master and soon on its replica.
    fn released(&self, index: usize) {
        let moment = self.next_moment();
        self.get(index).released.store(moment, Ordering::SeqCst);
        self.1.changed.notify_waiters();
    }

    /// The first read after `moment` that `wanted` accepts, as soon as
    /// there is one; `None` if none came by `until`.
    pub(crate) async fn read_after(
        &self,
        moment: u64,
        wanted: impl Fn(&Read) -> bool,
        until: Instant,
    ) -> Option<Read> {
        self.first(until, || {
            self.0
                .iter()
                .filter_map(|slot| *lock(&slot.read))
                .filter(|read| read.moment > moment && wanted(read))
                .min_by_key(|read| read.moment)
        })
        .await
    }

    /// Whether a release came back after `moment`, waiting for one until
    /// `until` at the latest.
    pub(crate) async fn released_after(&self, moment: u64, until: Instant) -> bool {
        let look = || {
            let released = |slot: &Slot| slot.released.load(Ordering::SeqCst) > moment;
            self.0.iter().any(released).then_some(())
        };
        self.first(until, look).await.is_some()
    }

    /// What `look` finds, as soon as it finds something; `None` if it found
    /// nothing by `until`. Woken by the clients' own reports, not by
    /// polling.
    async fn first<T>(&self, until: Instant, look: impl Fn() -> Option<T>) -> Option<T> {
        loop {
            let changed = self.1.changed.notified();
            tokio::pin!(changed);
            // Registered before looking, so a report in between still
            // wakes this wait.
            changed.as_mut().enable();
            if let Some(found) = look() {
                return Some(found);
            }
            tokio::select! {
                () = &mut changed => {}
                () = sleep_until(until) => return None,
            }
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    pub(crate) fn get(&self, index: usize) -> &Slot {
        &self.0[index.min(self.0.len() - 1)]
    }

    /// The client inside its critical section now: `preferred` if it is,
    /// else the first one that is, else `preferred`.
    pub(crate) fn holder_else(&self, preferred: usize) -> usize {
        let inside = |i: &usize| self.0[*i].inside.load(Ordering::SeqCst);
        if inside(&preferred) {
            return preferred;
        }
        (0..self.0.len()).find(inside).unwrap_or(preferred)
    }

    /// Signals client `index`'s current process.
    pub(crate) fn signal(&self, index: usize, signal: Signal) -> Result<()> {
        signal_pid(self.get(index).pid.load(Ordering::SeqCst), signal)
    }

    /// Every client starts a fresh process (new connections): a restarted
    /// node's old connections are dead, and redis-rs's connections do not
    /// reconnect by themselves. A client waiting for the lock gives up its
    /// wait (its outcome unknown) and restarts at once; the holder finishes
    /// its purchase first.
    pub(crate) fn reconnect_all(&self) {
        for slot in &self.0 {
            slot.reconnect.store(true, Ordering::SeqCst);
            slot.reconnect_now.notify_waiters();
        }
    }

    /// Thaws the client called `name`.
    pub(crate) fn thaw_named(&self, name: &str) -> Result<()> {
        match (0..self.0.len()).find(|i| client_name(*i) == name) {
            Some(index) => self.signal(index, Signal::Continue),
            None => Ok(()),
        }
    }
}

/// What every client loop of a trial shares.
pub(crate) struct Workload<'a> {
    pub(crate) factory: &'a ClientFactory,
    pub(crate) launcher: &'a Launcher,
    pub(crate) history: &'a History,
    pub(crate) slots: &'a Slots,
    /// The lock's TTL, which every wait is measured in.
    pub(crate) ttl: Duration,
    /// How long one purchase usually thinks.
    pub(crate) business: Duration,
    /// Where a stalled release stops.
    pub(crate) stall_point: Point,
    /// No new acquire after this.
    pub(crate) until: Instant,
    /// The work times' generator seed: the trial's seed and number.
    pub(crate) seed: (u64, u64),
}

impl Workload<'_> {
    /// The longest any one request may take before the client is deemed
    /// stuck and restarted: the wait for the lock plus the longest freeze,
    /// with room to spare.
    fn request_limit(&self) -> Duration {
        self.ttl * 12
    }

    /// How long one purchase thinks: usually around the business time, one
    /// time in four up to a third of the TTL (still a 3x margin), so that
    /// a node fault can land while a holder is inside long enough for
    /// others to come back and take the lock.
    fn work_time(&self, rng: &mut Rng) -> Duration {
        let business = u64::try_from(self.business.as_millis()).unwrap_or(20);
        let ttl = u64::try_from(self.ttl.as_millis()).unwrap_or(300);
        Duration::from_millis(if rng.between(0, 3) == 0 {
            rng.between(ttl / 6, ttl / 3)
        } else {
            rng.between(business / 4, business * 3 / 2)
        })
    }

    /// Client `slot`'s loop, until the trial's time is up.
    pub(crate) async fn client(&self, slot: usize) -> Result<()> {
        let name = client_name(slot);
        let state = self.slots.get(slot);
        let mut rng = Rng::new(self.seed.0, (self.seed.1 << 8) + slot as u64 + 1);
        let mut holder = self.spawn(&name, state)?;
        while Instant::now() < self.until {
            if state.reconnect.swap(false, Ordering::SeqCst) {
                drop(holder);
                holder = self.spawn(&name, state)?;
            }
            state.pass_gate().await;
            let purchase = self.one_purchase(slot, &name, &mut holder, &mut rng);
            if let Err(Unknown) = purchase.await {
                state.inside.store(false, Ordering::SeqCst);
                state.reconnect.store(false, Ordering::SeqCst);
                drop(holder);
                // A short breath, so that a node that is down for a moment
                // is not asked a hundred times meanwhile.
                sleep(self.ttl / 30).await;
                holder = self.spawn(&name, state)?;
            }
        }
        state.pid.store(0, Ordering::SeqCst);
        Ok(())
    }

    fn spawn(&self, name: &str, state: &Slot) -> Result<HolderProcess> {
        let holder = HolderProcess::spawn(self.launcher, self.factory, name)?;
        state.pid.store(holder.pid(), Ordering::SeqCst);
        Ok(holder)
    }

    // ANCHOR: purchase
    /// Acquire, read, work, sell, release. `Err(Unknown)` when an outcome
    /// is unknown and the process must be replaced. The holder records
    /// each operation it is asked (invoke, then ok or fail); what only the
    /// loop knows, an answer that never came, is recorded here as `info`.
    async fn one_purchase(
        &self,
        slot: usize,
        name: &str,
        holder: &mut HolderProcess,
        rng: &mut Rng,
    ) -> Result<(), Unknown> {
        let state = self.slots.get(slot);
        let patience = self.ttl * 3;
        let reconnect = state.reconnect_now.notified();
        // Each acquire is a patience window, as a story's is: what the
        // liveness checker reads a deadlock from.
        self.history.push(name, What::Ask { patience });
        let acquired = tokio::select! {
            acquired = self.within(Op::Acquire, name, holder.acquire(patience)) => acquired?,
            () = reconnect => {
                let gave_up = Detail::word("gave up: a lock node restarted, reconnecting", None);
                self.history.complete(name, Op::Acquire, Phase::Info, gave_up);
                return Err(Unknown);
            }
        };
        if !acquired {
            return Ok(());
        }
        state.inside.store(true, Ordering::SeqCst);
        self.slots.granted(slot);

        let stock = self.within(Op::Read, name, holder.read_stock()).await?;
        self.slots.read(slot);

        sleep(self.work_time(rng)).await;
        let extra = lock(&state.slow).take();
        if let Some(extra) = extra {
            sleep(extra).await;
        }
        state.stay().await;

        self.within(Op::Sell, name, holder.sell(stock)).await?;

        let stall = lock(&state.stall).take();
        if let Some(stall) = stall {
            let _ = holder.stall(self.stall_point, stall).await;
        }
        state.inside.store(false, Ordering::SeqCst);
        let released = self.within(Op::Release, name, holder.release()).await?;
        self.slots.released(slot);
        // Masters out of reach: whether the lock was still ours is unknown.
        if let Released::Answered(Release::Unconfirmed { .. }) = released {
            return Err(Unknown);
        }
        Ok(())
    }
    // ANCHOR_END: purchase

    /// Runs one request with the time limit; an error or a timeout is
    /// recorded as `info` and ends the process.
    async fn within<T>(
        &self,
        op: Op,
        name: &str,
        request: impl Future<Output = Result<T>>,
    ) -> Result<T, Unknown> {
        let error = match timeout(self.request_limit(), request).await {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(HarnessError::Holder(e))) => e,
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("no answer within {}ms", self.request_limit().as_millis()),
        };
        self.history
            .complete(name, op, Phase::Info, Detail::word(&error, None));
        Err(Unknown)
    }
}

/// Sends `signal` to process `pid`, if there is one (0: none yet).
fn signal_pid(pid: u32, signal: Signal) -> Result<()> {
    if pid == 0 {
        return Ok(());
    }
    Ok(process::send(pid, signal)?)
}

/// An operation's outcome is unknown; the client's process is replaced.
struct Unknown;
