//! What the clients of a trial and its nemesis share, and nothing else of
//! either: one [`Slot`] per client, on which the client reports the
//! moments a nemesis aims at (it was granted the lock, it read the stock:
//! [`Slots::read_after`]) and finds what a fault asks of it (work longer,
//! stall its release, stay inside, reconnect). The clients only say; what
//! to do then is the nemesis's business, and the clients' loop is the
//! generator's.
//!
//! One moment cannot be reported in time, because it lasts a millisecond:
//! the lock is free and its last holder is about to ask again. For that a
//! client can be stopped before its next acquire
//! ([`Slot::stop_before_next_acquire`]), so that a fault is in place when
//! that request goes out.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::{Notify, oneshot};
use tokio::time::{Instant, sleep_until};

use super::schedule::client_name;
use crate::error::Result;
use crate::process::{self, Signal};

/// What the nemesis knows of one client, and how it reaches it.
#[derive(Debug, Default)]
pub(crate) struct Slot {
    /// Its client's current process (0: none yet).
    pub(super) pid: AtomicU32,
    /// Whether its client is inside its critical section.
    pub(super) inside: AtomicBool,
    /// Set: its client starts a fresh process before its next purchase.
    pub(super) reconnect: AtomicBool,
    /// Wakes a client that waits for the lock to reconnect at once.
    pub(super) reconnect_now: Notify,
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

    /// How much longer than usual its current critical section works, if
    /// a fault said so ([`Slot::slow_next`]); said once.
    pub(super) fn take_slow(&self) -> Option<Duration> {
        lock(&self.slow).take()
    }

    /// How long its release stalls, if a fault said so
    /// ([`Slot::stall_next`]); said once.
    pub(super) fn take_stall(&self) -> Option<Duration> {
        lock(&self.stall).take()
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
    pub(super) async fn pass_gate(&self) {
        let gate = lock(&self.gate).take();
        if let Some(gate) = gate {
            let _ = gate.arrived.send(());
            let _ = gate.open.await;
        }
    }

    /// Waits until the time set by [`Slot::stay_until`], which may move
    /// meanwhile; then forgets it.
    pub(super) async fn stay(&self) {
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
    pub(super) fn granted(&self, index: usize) {
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
    pub(super) fn read(&self, index: usize) {
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
    pub(super) fn released(&self, index: usize) {
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

/// Sends `signal` to process `pid`, if there is one (0: none yet).
fn signal_pid(pid: u32, signal: Signal) -> Result<()> {
    if pid == 0 {
        return Ok(());
    }
    Ok(process::send(pid, signal)?)
}
