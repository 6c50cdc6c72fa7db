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
//! Each client reports on its [`Slot`] the moments a nemesis aims at, and
//! honours what a fault asks of it there (see [`super::slots`]).

use std::sync::atomic::Ordering;
use std::time::Duration;

use lockcore::{Point, Release};
use tokio::time::{Instant, sleep, timeout};

use super::rng::Rng;
use super::schedule::client_name;
use super::slots::{Slot, Slots};
use crate::client::ClientFactory;
use crate::error::{HarnessError, Result};
use crate::guard::Released;
use crate::history::{Detail, History, Op, Phase, What};
use crate::holder::{HolderProcess, Launcher};

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

    /// Client `slot`'s loop with its first `holder`, until the trial's
    /// time is up.
    pub(crate) async fn client(&self, slot: usize, holder: HolderProcess) -> Result<()> {
        let name = client_name(slot);
        let state = self.slots.get(slot);
        let mut rng = Rng::new(self.seed.0, (self.seed.1 << 8) + slot as u64 + 1);
        let mut holder = Some(holder);
        while Instant::now() < self.until {
            if state.reconnect.swap(false, Ordering::SeqCst) {
                holder = None;
            }
            let Some(current) = holder.as_mut() else {
                holder = self.respawn(slot, state).await?;
                continue;
            };
            state.pass_gate().await;
            let purchase = self.one_purchase(slot, &name, current, &mut rng);
            if let Err(Unknown) = purchase.await {
                state.inside.store(false, Ordering::SeqCst);
                state.reconnect.store(false, Ordering::SeqCst);
                holder = None;
                // A short breath, so that a node that is down for a moment
                // is not asked a hundred times meanwhile.
                sleep(self.ttl / 30).await;
            }
        }
        state.pid.store(0, Ordering::SeqCst);
        Ok(())
    }

    /// A new holder process for a client whose last one was replaced;
    /// `None` once the trial's time is up. A holder that cannot reach its
    /// lock node yet (a node cut off, replies delayed) answers its `ping`
    /// with an error, as it would have answered its first request: it is
    /// replaced again after a breath, as an unknown outcome is.
    async fn respawn(&self, slot: usize, state: &Slot) -> Result<Option<HolderProcess>> {
        state.pid.store(0, Ordering::SeqCst);
        while Instant::now() < self.until {
            match spawn(self.factory, self.launcher, slot, state).await {
                Ok(holder) => return Ok(Some(holder)),
                Err(HarnessError::Holder(_)) => sleep(self.ttl / 30).await,
                Err(other) => return Err(other),
            }
        }
        Ok(None)
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
        let extra = state.take_slow();
        if let Some(extra) = extra {
            sleep(extra).await;
        }
        state.stay().await;

        self.within(Op::Sell, name, holder.sell(stock)).await?;

        let stall = state.take_stall();
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

/// Starts a holder process for client `slot`, ready, and notes its pid on
/// `state` (the nemesis signals it there).
pub(crate) async fn spawn(
    factory: &ClientFactory,
    launcher: &Launcher,
    slot: usize,
    state: &Slot,
) -> Result<HolderProcess> {
    let holder = factory.spawn_holder(launcher, &client_name(slot)).await?;
    state.pid.store(holder.pid(), Ordering::SeqCst);
    Ok(holder)
}

/// An operation's outcome is unknown; the client's process is replaced.
struct Unknown;
