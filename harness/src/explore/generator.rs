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

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use lockcore::{LockError, Point, Release};
use tokio::sync::Notify;
use tokio::time::{Instant, sleep, timeout};

use super::history::{Detail, History, Op, Phase};
use super::nemesis::{client_name, signal_pid};
use super::rng::Rng;
use crate::client::ClientFactory;
use crate::error::{HarnessError, Result};
use crate::holder::{HolderProcess, Launcher};
use crate::process::Signal;
use crate::workload::{Fencing, Sale};

/// What the nemesis knows of one client, and how it reaches it.
#[derive(Debug, Default)]
pub(crate) struct Slot {
    pid: AtomicU32,
    inside: AtomicBool,
    reconnect: AtomicBool,
    reconnect_now: Notify,
    slow: Mutex<Option<Duration>>,
    stall: Mutex<Option<Duration>>,
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
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// Every client of a trial.
#[derive(Debug)]
pub(crate) struct Slots(Vec<Slot>);

impl Slots {
    pub(crate) fn new(clients: usize) -> Self {
        Self((0..clients).map(|_| Slot::default()).collect())
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
            if let Err(Unknown) = self.one_purchase(&name, state, &mut holder, &mut rng).await {
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
    /// is unknown and the process must be replaced.
    async fn one_purchase(
        &self,
        name: &str,
        state: &Slot,
        holder: &mut HolderProcess,
        rng: &mut Rng,
    ) -> Result<(), Unknown> {
        let h = self.history;
        let patience = self.ttl * 3;
        h.invoke(name, Op::Acquire, Detail::default());
        let reconnect = state.reconnect_now.notified();
        let acquired = tokio::select! {
            acquired = self.within(Op::Acquire, name, holder.acquire(patience)) => acquired?,
            () = reconnect => {
                let gave_up = word("gave up: a lock node restarted, reconnecting", None);
                h.complete(name, Op::Acquire, Phase::Info, gave_up);
                return Err(Unknown);
            }
        };
        match acquired {
            false => {
                h.complete(name, Op::Acquire, Phase::Fail, Detail::default());
                return Ok(());
            }
            true => {
                let held = holder.held().cloned();
                h.complete(
                    name,
                    Op::Acquire,
                    Phase::Ok,
                    Detail {
                        value: held.as_ref().map(|a| a.value.clone()),
                        token: held.as_ref().and_then(|a| a.fencing_token),
                        ..Detail::default()
                    },
                );
                state.inside.store(true, Ordering::SeqCst);
            }
        }
        let token = holder.held().and_then(|a| a.fencing_token);

        // A fenced read shows the resource the token: it is then "seen".
        let shown = match self.factory.fencing {
            Fencing::ReadsAndWrites => token,
            Fencing::WriteOnly | Fencing::Unchecked => None,
        };
        h.invoke(
            name,
            Op::Read,
            Detail {
                token: shown,
                ..Detail::default()
            },
        );
        let stock = self.within(Op::Read, name, holder.read_stock()).await?;
        h.complete(name, Op::Read, Phase::Ok, number(stock));

        sleep(self.work_time(rng)).await;
        let extra = lock(&state.slow).take();
        if let Some(extra) = extra {
            sleep(extra).await;
        }

        h.invoke(
            name,
            Op::Sell,
            Detail {
                token,
                ..number(stock)
            },
        );
        let sale = self.within(Op::Sell, name, holder.sell(stock)).await?;
        let (phase, detail) = match sale {
            Sale::Sold(from) => (Phase::Ok, word("sold", Some(from))),
            Sale::SoldOut => (Phase::Ok, word("sold-out", None)),
            Sale::Rejected { .. } => (Phase::Fail, word("rejected", None)),
        };
        h.complete(name, Op::Sell, phase, Detail { token, ..detail });

        let stall = lock(&state.stall).take();
        if let Some(stall) = stall {
            let _ = holder.stall(self.stall_point, stall).await;
        }
        state.inside.store(false, Ordering::SeqCst);
        h.invoke(name, Op::Release, Detail::default());
        let (phase, detail) = match self.within(Op::Release, name, holder.release()).await? {
            Ok(Release::Deleted) => (Phase::Ok, word("deleted", None)),
            Ok(Release::NothingDeleted) => (Phase::Ok, word("nothing", None)),
            Ok(Release::StillHeld(n)) => (Phase::Ok, word("still-held", Some(i64::from(n)))),
            // Masters out of reach: whether the lock was still ours is unknown.
            Ok(Release::Unconfirmed { .. }) => (Phase::Info, word("unconfirmed", None)),
            Err(LockError::NotOwner) => (Phase::Fail, word("not-owner", None)),
            Err(other) => (Phase::Info, word(&other.to_string(), None)),
        };
        h.complete(name, Op::Release, phase, detail);
        if phase == Phase::Info {
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
            .complete(name, op, Phase::Info, word(&error, None));
        Err(Unknown)
    }
}

/// An operation's outcome is unknown; the client's process is replaced.
struct Unknown;

fn number(n: i64) -> Detail {
    Detail {
        number: Some(n),
        ..Detail::default()
    }
}

fn word(result: &str, n: Option<i64>) -> Detail {
    Detail {
        result: Some(result.to_owned()),
        number: n,
        ..Detail::default()
    }
}
