//! The nemesis: plays a [`Schedule`] against a running trial.
//!
//! The schedule says what and roughly when ([`super::schedule`]); the
//! nemesis waits for the moment it aims at, then strikes real processes and
//! servers: signals to holder processes, rules in the proxies, node
//! restarts, a failover, a clock jump. Every fault plays on its own, so one
//! fault waiting for its moment never holds back another's end.
//!
//! A fault aimed at "the holder" waits (at most a TTL) for the next client
//! to read the stock under the lock, the client the schedule prefers if it
//! comes within half a TTL, and strikes `into` after that read: between the
//! read and the write, as a GC pause or a crash would hurt most. A freeze
//! that outlives the lock ends soon after another client has taken the
//! lock and read, so that the frozen client's write races the new holder's.
//! A delay waits for the holder's release and holds every reply to it from
//! its next request on, which is the first to ask for the free lock.
//! A failover holds replication back just after a release, and fails over
//! inside the critical section of the first lock granted after that: the lock, and stage 8's
//! fencing counter, exist only on the master that dies. A holder whose lock
//! a node fault took stays inside until another client has read under the
//! lock it lost, so that its write races the new holder's.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::future::join_all;
use lockcore::{Description, Point};
use tokio::sync::Mutex;
use tokio::time::{Instant, sleep_until, timeout};

use super::schedule::{AIM_TTLS, CAUGHT_TTLS, Fault, Kind, Schedule, client_name};
use super::slots::{Read, Slots};
use crate::error::Result;
use crate::fault::link::ReplicationLink;
use crate::fault::node::{self, LockNodes, Proxies};
use crate::history::History;
use crate::observe::Timeline;
use crate::process::Signal;

/// The lock's nodes on the replicated topology: the master, and its
/// replica that a failover promotes.
const MASTER: usize = 0;
const REPLICA: usize = 1;

/// Plays a schedule against a running trial, on its lock `nodes`.
pub(crate) struct Nemesis<'a, N> {
    nodes: Mutex<&'a mut N>,
    proxies: &'a Proxies,
    link: Option<&'a ReplicationLink>,
    slots: &'a Slots,
    history: &'a History,
    ttl: Duration,
    /// The node the single-node lock lives on (1 after a failover).
    lock_node: AtomicUsize,
    /// The critical sections some fault has aimed at (client, moment of
    /// its grant): each fault strikes a section of its own.
    claimed: std::sync::Mutex<BTreeSet<(usize, u64)>>,
}

/// Whom a fault struck, and from when.
struct Struck {
    target: usize,
    name: String,
    at: Instant,
}

impl<'a, N: LockNodes> Nemesis<'a, N> {
    pub(crate) fn new(
        nodes: &'a mut N,
        proxies: &'a Proxies,
        link: Option<&'a ReplicationLink>,
        slots: &'a Slots,
        history: &'a History,
        ttl: Duration,
    ) -> Self {
        Self {
            nodes: Mutex::new(nodes),
            proxies,
            link,
            slots,
            history,
            ttl,
            lock_node: AtomicUsize::new(0),
            claimed: std::sync::Mutex::default(),
        }
    }

    /// Plays `schedule` from `start`, then heals everything: every frozen
    /// process thawed, every network rule lifted.
    pub(crate) async fn play(&self, schedule: &Schedule, start: Instant) {
        join_all(
            schedule
                .0
                .iter()
                .map(|(i, fault)| self.play_one(*i, fault, start)),
        )
        .await;
        self.heal_all();
    }

    /// Says `text` in the timeline as the harness, once no fault is under
    /// way on the nodes: a line waits until a restart has told its own.
    async fn narrate(&self, text: String) {
        let _nodes = self.nodes.lock().await;
        self.history.narrate("harness", text);
    }

    /// One fault: aim, strike, and end it when it lasts.
    async fn play_one(&self, i: usize, fault: &Fault, start: Instant) {
        sleep_until(start + fault.at).await;
        let since = if fault.kind == Kind::Failover {
            self.hold_replication(i, fault).await
        } else {
            self.slots.moment()
        };
        let read = self.aim(fault, since).await;
        let target = match read {
            Some(read) => read.client,
            None => {
                // Nobody read in time: whoever holds the lock now, unless
                // another fault has it already.
                let holder = self.slots.holder_else(fault.client);
                if !self.take((holder, self.slots.granted_to(holder))) {
                    let text = format!("nemesis #{i}: not played: the holder is another fault's");
                    self.narrate(text).await;
                    return;
                }
                holder
            }
        };
        if let Some(read) = read {
            let strikes_inside = !matches!(
                fault.kind,
                Kind::SlowWork | Kind::StallRelease | Kind::Delay
            );
            if strikes_inside {
                // Its section lasts until the strike at least: a short one
                // would be over, and the fault would land in the next. A
                // node fault keeps it inside past the strike too (see
                // `keep_inside`): a stay that ends as the strike begins lets
                // the holder out while the node is going down, and on a
                // loaded machine it often is out by then.
                let past_strike = if fault.kind.aims_at_a_client() {
                    Duration::ZERO
                } else {
                    self.ttl
                };
                self.slots
                    .get(read.client)
                    .stay_until(read.at + fault.into + past_strike);
            }
            sleep_until(read.at + fault.into).await;
        }
        // A delay strikes as its client asks for the lock again, just after
        // its release: the lock is free and that request comes first, so
        // it is the one that wins while its answer is lost.
        let mut stopped =
            (fault.kind == Kind::Delay).then(|| self.slots.get(target).stop_before_next_acquire());
        if let Some(stopped) = &mut stopped {
            let _ = timeout(self.ttl * AIM_TTLS, &mut stopped.arrived).await;
        }
        let struck = Struck {
            target,
            name: client_name(target),
            at: Instant::now(),
        };
        let node_fault = !fault.kind.aims_at_a_client();
        if node_fault {
            self.keep_inside(target);
        }
        let before_strike = self.slots.moment();
        let result = self.strike(fault, &struck).await;
        if let Some(stopped) = stopped {
            // Its replies are held now: it may go on.
            let _ = stopped.open.send(());
        }
        let text = match &result {
            Ok(()) => fault.as_struck(&struck.name),
            Err(e) => format!("{} (failed: {e})", fault.as_struck(&struck.name)),
        };
        let aimed = fault
            .kind
            .aims_at_a_client()
            .then_some(struck.name.as_str());
        let phase = if fault.kind == Kind::Failover {
            "end"
        } else {
            "start"
        };
        self.history.nemesis(i, fault.kind, phase, aimed, &text);
        self.narrate(format!("nemesis #{i}: {text}")).await;
        let lasts = matches!(fault.kind, Kind::Freeze | Kind::Delay | Kind::Cut);
        if result.is_ok() && lasts {
            self.wait_for_end(fault, &struck).await;
            self.end(i, fault, &struck.name).await;
        }
        if node_fault && result.is_ok() {
            self.leave_when_caught(fault, &struck, before_strike).await;
        } else if node_fault {
            self.slots.get(target).stay_until(Instant::now());
        }
    }

    /// A holder whose lock a node fault took stays inside until another
    /// client has read under the lock it lost (`since` the fault began),
    /// and [`Fault::then`] more: its stale write then races the new
    /// holder's. It leaves after [`CAUGHT_TTLS`] half TTLs if nobody reads.
    async fn leave_when_caught(&self, fault: &Fault, struck: &Struck, since: u64) {
        let slot = self.slots.get(struck.target);
        let other = |read: &Read| read.client != struck.target;
        let latest = Instant::now() + self.ttl * CAUGHT_TTLS / 2;
        match self.slots.read_after(since, other, latest).await {
            Some(read) => slot.stay_until(read.at + fault.then),
            None => slot.stay_until(Instant::now()),
        }
    }

    /// The read the fault aims at: the preferred client's if it comes
    /// within half the aiming time, else anyone's; `None` if no client
    /// read within it. Node faults aim at a reader too: they
    /// take the lock from under it.
    async fn aim(&self, fault: &Fault, since: u64) -> Option<Read> {
        let now = Instant::now();
        let (half, whole) = (now + self.ttl * AIM_TTLS / 2, now + self.ttl * AIM_TTLS);
        let fresh = |read: &Read| read.granted > since;
        if fault.kind == Kind::Failover || fault.at.is_zero() {
            // The first lock granted after replication was held (or, at
            // the trial's start, the first lock): a later one would take
            // a token the counter that survives lags further behind, which
            // the resource already refuses as stale.
            return self.claim(since, fresh, whole).await;
        }
        let preferred = |read: &Read| read.client == fault.client;
        if let Some(read) = self.claim(since, preferred, half).await {
            return Some(read);
        }
        self.claim(since, |_| true, whole).await
    }

    /// The first read after `since` that `wanted` accepts, made in a
    /// critical section that is not over yet and that no other fault has
    /// aimed at, taken for this one. Two faults in one section
    /// would spoil each other: a short freeze's end thaws a long one, a
    /// second restart sends stage 8's counter back again.
    async fn claim(
        &self,
        since: u64,
        wanted: impl Fn(&Read) -> bool,
        until: Instant,
    ) -> Option<Read> {
        loop {
            let free = |read: &Read| {
                wanted(read)
                    && self.slots.still_in(read)
                    && !self.claimed().contains(&read.section())
            };
            let read = self.slots.read_after(since, free, until).await?;
            if self.take(read.section()) {
                return Some(read);
            }
        }
    }

    /// Takes a critical section for one fault; false if another has it.
    fn take(&self, section: (usize, u64)) -> bool {
        self.claimed().insert(section)
    }

    fn claimed(&self) -> std::sync::MutexGuard<'_, BTreeSet<(usize, u64)>> {
        self.claimed.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// When a lasting fault ends: after its length; a freeze that
    /// outlives the lock, soon after the next holder's read.
    async fn wait_for_end(&self, fault: &Fault, struck: &Struck) {
        let end = struck.at + fault.length;
        if !fault.outlives(self.ttl) {
            sleep_until(end).await;
            return;
        }
        let since = self.slots.moment();
        let other = |read: &Read| read.client != struck.target;
        match self
            .slots
            .read_after(since, other, end + self.ttl / 2)
            .await
        {
            Some(read) => sleep_until(read.at + fault.then).await,
            None => sleep_until(end + self.ttl / 2).await,
        }
    }

    /// Holds replication back just after a release, so that the lock is
    /// free on both nodes and the next grant reaches the master alone. Two
    /// things can spoil it, and both are looked for once the link is held:
    /// the release's `DEL` was held back (the replica still has the key),
    /// or a grant slipped in between the release and the hold (the master
    /// has the key; the replica may have it or not yet, since what the
    /// master sent just before the hold is still on its way). Either way
    /// the link is opened again and the next release tried, while the
    /// aiming time lasts. Returns the moment of the release: a grant after
    /// it is the one the failover takes.
    async fn hold_replication(&self, i: usize, fault: &Fault) -> u64 {
        let until = Instant::now() + self.ttl * AIM_TTLS;
        let mut released = self.slots.moment();
        if let Some(link) = self.link {
            loop {
                let now = self.slots.moment();
                let came = self.slots.released_after(now, until).await;
                released = self.slots.moment();
                link.hold();
                let taken = {
                    let nodes = self.nodes.lock().await;
                    let on_master = nodes.lock_key_exists(MASTER).await;
                    let on_replica = nodes.lock_key_exists(REPLICA).await;
                    on_master.unwrap_or(false) || on_replica.unwrap_or(false)
                };
                if !taken || !came || Instant::now() >= until {
                    break;
                }
                link.heal();
            }
        }
        let text = "replication held back: nothing the master sends reaches the replica";
        self.history.nemesis(i, fault.kind, "start", None, text);
        self.narrate(format!("nemesis #{i}: {text}")).await;
        released
    }

    async fn strike(&self, fault: &Fault, struck: &Struck) -> Result<()> {
        let (target, name, length) = (struck.target, struck.name.as_str(), fault.length);
        match fault.kind {
            Kind::Kill => self.slots.signal(target, Signal::Kill),
            Kind::Freeze => self.slots.signal(target, Signal::Stop),
            Kind::SlowWork => {
                self.slots.get(target).slow_next(length);
                Ok(())
            }
            Kind::StallRelease => {
                self.slots.get(target).stall_next(length);
                Ok(())
            }
            Kind::Delay => {
                self.proxies.delay_replies(name, length);
                Ok(())
            }
            Kind::Cut => {
                self.proxies.cut_off(name, fault.nodes.iter().copied());
                Ok(())
            }
            Kind::Restart => {
                let mut nodes = self.nodes.lock().await;
                for &index in &fault.nodes {
                    nodes.restart_node(index, self.proxies).await?;
                }
                self.slots.reconnect_all();
                Ok(())
            }
            Kind::ClockJump => {
                let nodes = self.nodes.lock().await;
                for &index in &fault.nodes {
                    // With a replica, the lock lives where the master is now.
                    let index = if self.link.is_some() {
                        self.lock_node.load(Ordering::SeqCst)
                    } else {
                        index
                    };
                    let victim = nodes.lock_node(index)?;
                    let timeline = Timeline::of(self.history);
                    node::jump_clock(victim, nodes.lock_key(), length, &timeline).await?;
                }
                Ok(())
            }
            Kind::Failover => self.fail_over().await,
        }
    }

    /// Keeps `target` inside its critical section while a node fault is
    /// under way (a few TTLs at most), until
    /// [`leave_when_caught`](Self::leave_when_caught) lets it go.
    fn keep_inside(&self, target: usize) {
        self.slots
            .get(target)
            .stay_until(Instant::now() + self.ttl * 3);
    }

    async fn end(&self, i: usize, fault: &Fault, target: &str) {
        let result: Result<()> = match fault.kind {
            Kind::Freeze => self.slots.thaw_named(target),
            Kind::Delay | Kind::Cut => {
                self.proxies.heal(target);
                Ok(())
            }
            _ => Ok(()),
        };
        let text = match (&result, fault.kind) {
            (Ok(()), Kind::Freeze) => format!("{target} thawed (SIGCONT)"),
            (Ok(()), _) => format!("the network to {target} is healthy again"),
            (Err(e), _) => format!("ending #{i} failed: {e}"),
        };
        let aimed = fault.kind.aims_at_a_client().then_some(target);
        self.history.nemesis(i, fault.kind, "end", aimed, &text);
        self.narrate(format!("nemesis #{i} ends: {text}")).await;
    }

    /// Kills the master, promotes the replica, and points the master's
    /// proxy at it, as a Sentinel or a virtual IP moves clients over.
    async fn fail_over(&self) -> Result<()> {
        let mut nodes = self.nodes.lock().await;
        nodes.kill_node(MASTER).await?;
        let replica = nodes.lock_node(REPLICA)?;
        node::promote(replica).await?;
        if let Some(proxy) = self.proxies.get(MASTER) {
            proxy.retarget(replica.addr());
        }
        self.lock_node.store(REPLICA, Ordering::SeqCst);
        self.slots.reconnect_all();
        self.history.narrate(
            "harness",
            "the replica is the new master; clients reach it at the old address",
        );
        Ok(())
    }

    fn heal_all(&self) {
        for slot in 0..self.slots.len() {
            let _ = self.slots.signal(slot, Signal::Continue);
            self.proxies.heal(&client_name(slot));
        }
    }
}

/// Where a stalled release stops in `stage`: between `GET` and `DEL` when
/// the stage has that gap, else just before the release is sent.
pub fn stall_point(stage: &Description) -> Point {
    if stage.fault_points.contains(&Point::BetweenGetAndDel) {
        Point::BetweenGetAndDel
    } else {
        Point::BeforeRelease
    }
}
