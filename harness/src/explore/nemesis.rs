//! The nemesis: what faults happen, and when.
//!
//! A trial's faults are a [`Schedule`], drawn from a seeded generator
//! before anything runs: the same seed, trial number, fault kinds, client
//! count and topology give the same schedule every time (the *outcome* may
//! still differ, since real processes race). The schedule is then played
//! against the trial's real processes and servers: signals to holder
//! processes, rules in the proxies, node restarts, a failover, a clock jump.
//!
//! Faults aimed at a client strike "the holder": whichever client is inside
//! its critical section at that moment (the one the schedule names if it
//! is), and the named client when nobody is. A fault that misses the
//! holder proves little, and the choice is still made by the schedule, not
//! by luck.

use std::fmt;
use std::time::Duration;

use lockcore::{Description, Point};
use tokio::time::{Instant, sleep_until};

use super::generator::Slots;
use super::history::History;
use super::rng::Rng;
use crate::error::Result;
use crate::process::{self, Signal};
use crate::scenario::Run;
use crate::scenario::redlock_topology::Proxies;
use crate::scenario::replicated::ReplicationLink;

/// A kind of fault the nemesis can cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// `kill -9` of the holder's process.
    Kill,
    /// SIGSTOP of the holder's process for a while, below or above the TTL.
    Freeze,
    /// The holder's business runs longer than usual, its process alive.
    SlowWork,
    /// The holder's release stops on its way (between `GET` and `DEL` where
    /// the stage has that gap) for a while.
    StallRelease,
    /// Replies from the lock's nodes to the holder come late, later than
    /// the client library waits.
    Delay,
    /// The holder is cut off from the lock's nodes (a minority of them on
    /// Redlock) for a while: a partition.
    Cut,
    /// Lock nodes are killed and start again empty (up to a majority of
    /// Redlock's masters at once).
    Restart,
    /// The master dies before replicating what it granted; its replica is
    /// promoted and takes its address.
    Failover,
    /// Lock nodes' clocks jump forward: their keys expire early (modelled
    /// by cutting the key's TTL, as the scripted story does).
    ClockJump,
}

impl Kind {
    /// Every kind, in the order tables print them.
    pub const ALL: [Kind; 9] = [
        Kind::Kill,
        Kind::Freeze,
        Kind::SlowWork,
        Kind::StallRelease,
        Kind::Delay,
        Kind::Cut,
        Kind::Restart,
        Kind::Failover,
        Kind::ClockJump,
    ];

    /// The command line's name.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Kill => "kill",
            Kind::Freeze => "freeze",
            Kind::SlowWork => "slow-work",
            Kind::StallRelease => "stall-release",
            Kind::Delay => "delay",
            Kind::Cut => "cut",
            Kind::Restart => "restart",
            Kind::Failover => "failover",
            Kind::ClockJump => "clock-jump",
        }
    }

    /// Finds a kind by its name.
    pub fn named(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    // ANCHOR: columns
    /// The matrix column whose scripted story this kind of fault tells at
    /// random; `None` for a fault no column scripts (a partition).
    pub fn column(self) -> Option<&'static str> {
        match self {
            Kind::Kill => Some("killed-holder"),
            Kind::Freeze => Some("gc-pause"),
            Kind::SlowWork => Some("slow-business"),
            Kind::StallRelease => Some("get-del-race"),
            Kind::Delay => Some("network-delay"),
            Kind::Cut => None,
            Kind::Restart => Some("restart-without-persistence"),
            Kind::Failover => Some("failover"),
            Kind::ClockJump => Some("clock-jump"),
        }
    }
    // ANCHOR_END: columns

    /// Whether this fault makes sense for `stage`: where its column's
    /// scenario applies (a partition: wherever there is a Redis lock server).
    pub fn applies_to(self, stage: &Description) -> bool {
        match self.column() {
            Some(column) => crate::scenario::find(column)
                .is_some_and(|scenario| (scenario.not_applicable)(stage).is_none()),
            // No proxy stands in front of a ZooKeeper ensemble yet.
            None => stage.stage != 0 && !crate::scenario::ensemble::on_zookeeper(stage),
        }
    }

    /// Whether the fault strikes one client (rather than nodes).
    fn aims_at_a_client(self) -> bool {
        !matches!(self, Kind::Restart | Kind::Failover | Kind::ClockJump)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One planned fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// When, counted from the start of the trial's workload.
    pub at: Duration,
    /// What kind.
    pub kind: Kind,
    /// The client it aims at when nobody holds the lock (index).
    pub client: usize,
    /// The lock nodes it hits (node faults and partitions).
    pub nodes: Vec<usize>,
    /// How long it lasts (freeze, stall, delay, partition), how much extra
    /// work (slow work), how far the clock jumps, or how long the master
    /// outlives the held-back replication (failover).
    pub length: Duration,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let holder = format!("the holder (else {})", client_name(self.client));
        self.tell(f, &holder)
    }
}

impl Fault {
    /// The fault as it struck `client` (the schedule only knows "the holder").
    pub fn as_struck(&self, client: &str) -> String {
        struct Struck<'a>(&'a Fault, &'a str);
        impl fmt::Display for Struck<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.tell(f, self.1)
            }
        }
        Struck(self, client).to_string()
    }

    fn tell(&self, f: &mut fmt::Formatter<'_>, holder: &str) -> fmt::Result {
        let nodes = self
            .nodes
            .iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(",");
        let ms = self.length.as_millis();
        write!(f, "+{}ms {}: ", self.at.as_millis(), self.kind)?;
        match self.kind {
            Kind::Kill => write!(f, "kill -9 {holder}"),
            Kind::Freeze => write!(f, "SIGSTOP {holder} for {ms}ms"),
            Kind::SlowWork => write!(f, "{holder} works {ms}ms longer"),
            Kind::StallRelease => write!(f, "{holder}'s release stalls {ms}ms"),
            Kind::Delay => write!(f, "replies to {holder} held {ms}ms, for {ms}ms"),
            Kind::Cut => write!(f, "{holder} cut off from lock node(s) {nodes} for {ms}ms"),
            Kind::Restart => write!(f, "lock node(s) {nodes} restart empty"),
            Kind::Failover => write!(
                f,
                "replication held, the master killed {ms}ms later, the replica promoted"
            ),
            Kind::ClockJump => write!(f, "lock node(s) {nodes} jump {ms}ms forward"),
        }
    }
}

/// `client-A`, `client-B`… for client `index`.
pub fn client_name(index: usize) -> String {
    crate::scenario::client_name(index)
}

/// What shapes a schedule, besides the seed and the trial number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    /// The kinds to draw from; none means a trial without faults.
    pub kinds: Vec<Kind>,
    /// How many clients there are.
    pub clients: usize,
    /// How many lock nodes the stage uses.
    pub nodes: usize,
    /// The lock's TTL: every length is drawn in TTLs.
    pub ttl: Duration,
}

/// How long a trial's workload runs, in TTLs. Faults start in the first
/// half and last at most four TTLs, so the last TTL is calm: a lock that
/// never comes back shows as a gap of several TTLs.
pub const TRIAL_TTLS: u32 = 10;
const LATEST_START_TTLS: u64 = 5;
const MAX_FAULTS: u64 = 4;

/// A trial's faults, in time order. Each keeps its number in the full
/// schedule, so a shrunk one is replayed with `--keep`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule(pub Vec<(usize, Fault)>);

impl Schedule {
    /// The schedule of trial `trial` of `seed`. Deterministic: it depends on
    /// nothing else than its arguments.
    pub fn generate(seed: u64, trial: u64, shape: &Shape) -> Self {
        let mut faults: Vec<Fault> = Vec::new();
        if shape.kinds.is_empty() {
            return Self(Vec::new());
        }
        let mut rng = Rng::new(seed, trial);
        let ttl = u64::try_from(shape.ttl.as_millis()).unwrap_or(300);
        let count = rng.between(1, MAX_FAULTS);
        for _ in 0..count {
            let kind = shape.kinds[rng.index(shape.kinds.len())];
            let at = Duration::from_millis(rng.between(ttl / 2, LATEST_START_TTLS * ttl));
            let client = rng.index(shape.clients);
            let (nodes, length) = match kind {
                Kind::Kill => (vec![], Duration::ZERO),
                // Below or above the TTL: most pauses are harmless.
                Kind::Freeze => (vec![], ms(rng.between(ttl * 3 / 10, 4 * ttl))),
                Kind::SlowWork | Kind::StallRelease => (vec![], ms(rng.between(ttl, 4 * ttl))),
                // Longer than redis-rs waits for a reply (500 ms), as in the
                // matrix's story: the command runs, its answer is lost.
                Kind::Delay => (vec![], ms(rng.between(2 * ttl, 4 * ttl))),
                Kind::Cut => (
                    pick_nodes(&mut rng, shape.nodes, minority(shape.nodes)),
                    ms(rng.between(ttl, 4 * ttl)),
                ),
                Kind::Restart => (
                    pick_nodes(&mut rng, shape.nodes, majority(shape.nodes)),
                    Duration::ZERO,
                ),
                Kind::ClockJump => (
                    pick_nodes(&mut rng, shape.nodes, majority(shape.nodes)),
                    ms(rng.between(ttl, 4 * ttl)),
                ),
                Kind::Failover => (vec![0], ms(rng.between(ttl / 5, ttl))),
            };
            faults.push(Fault {
                at,
                kind,
                client,
                nodes,
                length,
            });
        }
        // One failover per trial: after it there is no replica left. A
        // restart would bring the dead master back; the two are not mixed.
        if let Some(first) = faults.iter().position(|f| f.kind == Kind::Failover) {
            let mut i = 0;
            faults.retain(|f| {
                i += 1;
                match f.kind {
                    Kind::Failover => i - 1 == first,
                    Kind::Restart => false,
                    _ => true,
                }
            });
        }
        let mut numbered: Vec<(usize, Fault)> = faults.into_iter().enumerate().collect();
        numbered.sort_by_key(|(i, f)| (f.at, *i));
        Self(numbered)
    }

    /// Only the faults numbered in `keep`.
    pub fn keeping(&self, keep: &[usize]) -> Self {
        Self(
            self.0
                .iter()
                .filter(|(i, _)| keep.contains(i))
                .cloned()
                .collect(),
        )
    }

    /// The fault numbers, in time order.
    pub fn numbers(&self) -> Vec<usize> {
        self.0.iter().map(|(i, _)| *i).collect()
    }

    /// Whether any fault is a failover (the trial needs a replica).
    pub fn has_failover(&self) -> bool {
        self.0.iter().any(|(_, f)| f.kind == Kind::Failover)
    }

    /// One line per fault: `#2 +1200ms freeze: SIGSTOP …`.
    pub fn render(&self) -> String {
        if self.0.is_empty() {
            return "  (no faults)\n".to_owned();
        }
        self.0
            .iter()
            .map(|(i, fault)| format!("  #{i} {fault}\n"))
            .collect()
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn majority(nodes: usize) -> usize {
    nodes / 2 + 1
}

fn minority(nodes: usize) -> usize {
    (nodes.saturating_sub(1) / 2).max(1)
}

/// Between 1 and `most` distinct nodes out of `nodes`, in ascending order.
fn pick_nodes(rng: &mut Rng, nodes: usize, most: usize) -> Vec<usize> {
    let count = usize::try_from(rng.between(1, most.min(nodes).max(1) as u64)).unwrap_or(1);
    let mut pool: Vec<usize> = (0..nodes.max(1)).collect();
    let mut chosen = Vec::with_capacity(count);
    for _ in 0..count {
        chosen.push(pool.remove(rng.index(pool.len())));
    }
    chosen.sort_unstable();
    chosen
}

/// The end of a fault that lasts, or the second step of a failover.
#[derive(Debug, Clone)]
enum Step {
    Start(usize, Fault),
    End(usize, Fault, String),
}

/// Plays a schedule against a running trial.
pub(crate) struct Nemesis<'a> {
    pub(crate) run: &'a mut Run,
    pub(crate) proxies: &'a Proxies,
    pub(crate) link: Option<&'a ReplicationLink>,
    pub(crate) slots: &'a Slots,
    pub(crate) history: &'a History,
    /// The node the single-node lock lives on (1 after a failover).
    lock_node: usize,
}

impl<'a> Nemesis<'a> {
    pub(crate) fn new(
        run: &'a mut Run,
        proxies: &'a Proxies,
        link: Option<&'a ReplicationLink>,
        slots: &'a Slots,
        history: &'a History,
    ) -> Self {
        Self {
            run,
            proxies,
            link,
            slots,
            history,
            lock_node: 0,
        }
    }

    /// Plays `schedule` from `start`, then heals everything: every frozen
    /// process thawed, every network rule lifted.
    pub(crate) async fn play(&mut self, schedule: &Schedule, start: Instant) {
        let mut steps: Vec<(Duration, Step)> = schedule
            .0
            .iter()
            .map(|(i, f)| (f.at, Step::Start(*i, f.clone())))
            .collect();
        steps.sort_by_key(|(at, _)| *at);
        let mut next = 0;
        while next < steps.len() {
            let (at, step) = steps[next].clone();
            next += 1;
            sleep_until(start + at).await;
            let end = match step {
                Step::Start(i, fault) => self.start(i, &fault).await,
                Step::End(i, fault, target) => {
                    self.end(i, &fault, &target).await;
                    None
                }
            };
            if let Some((later, step)) = end {
                let at = at + later;
                let place = steps[next..]
                    .iter()
                    .position(|(t, _)| *t > at)
                    .map_or(steps.len(), |p| p + next);
                steps.insert(place, (at, step));
            }
        }
        self.heal_all();
    }

    /// Starts fault `i`; returns its end step when it lasts.
    async fn start(&mut self, i: usize, fault: &Fault) -> Option<(Duration, Step)> {
        let target = if fault.kind.aims_at_a_client() {
            self.slots.holder_else(fault.client)
        } else {
            fault.client
        };
        let name = client_name(target);
        let result = self.strike(fault, target, &name).await;
        let text = match &result {
            Ok(()) => fault.as_struck(&name),
            Err(e) => format!("{} (failed: {e})", fault.as_struck(&name)),
        };
        let aimed = fault.kind.aims_at_a_client().then_some(name.as_str());
        self.history.nemesis(i, fault.kind, "start", aimed, &text);
        self.run.narrate(format!("nemesis #{i}: {text}"));
        let lasts = matches!(
            fault.kind,
            Kind::Freeze | Kind::Delay | Kind::Cut | Kind::Failover
        );
        (result.is_ok() && lasts).then(|| (fault.length, Step::End(i, fault.clone(), name.clone())))
    }

    async fn strike(&mut self, fault: &Fault, target: usize, name: &str) -> Result<()> {
        let length = fault.length;
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
                for &node in &fault.nodes {
                    self.run.restart_node(node, self.proxies).await?;
                }
                self.slots.reconnect_all();
                Ok(())
            }
            Kind::ClockJump => {
                for &node in &fault.nodes {
                    // With a replica, the lock lives where the master is now.
                    let node = if self.link.is_some() {
                        self.lock_node
                    } else {
                        node
                    };
                    self.run.jump_clock(node, length).await?;
                }
                Ok(())
            }
            Kind::Failover => {
                if let Some(link) = self.link {
                    link.hold();
                    self.run.narrate(
                        "replication held back: nothing the master sends reaches the replica",
                    );
                }
                Ok(())
            }
        }
    }

    async fn end(&mut self, i: usize, fault: &Fault, target: &str) {
        let result: Result<()> = match fault.kind {
            Kind::Freeze => self.slots.thaw_named(target),
            Kind::Delay | Kind::Cut => {
                self.proxies.heal(target);
                Ok(())
            }
            Kind::Failover => self.fail_over().await,
            _ => Ok(()),
        };
        let text = match (&result, fault.kind) {
            (Ok(()), Kind::Failover) => {
                "the master KILLED; the replica promoted and given the master's address".to_owned()
            }
            (Ok(()), Kind::Freeze) => format!("{target} thawed (SIGCONT)"),
            (Ok(()), _) => format!("the network to {target} is healthy again"),
            (Err(e), _) => format!("ending #{i} failed: {e}"),
        };
        let aimed = fault.kind.aims_at_a_client().then_some(target);
        self.history.nemesis(i, fault.kind, "end", aimed, &text);
        self.run.narrate(format!("nemesis #{i} ends: {text}"));
    }

    /// Kills the master, promotes the replica, and points the master's
    /// proxy at it, as a Sentinel or a virtual IP moves clients over.
    async fn fail_over(&mut self) -> Result<()> {
        const MASTER: usize = 0;
        const REPLICA: usize = 1;
        self.run.kill_node(MASTER).await?;
        self.run.promote(REPLICA).await?;
        let replica = self.run.nodes[REPLICA].addr();
        if let Some(proxy) = self.proxies.get(MASTER) {
            proxy.retarget(replica);
        }
        self.lock_node = REPLICA;
        self.slots.reconnect_all();
        self.run
            .narrate("the replica is the new master; clients reach it at the old address");
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

/// Sends `signal` to process `pid`, if there is one (0: none yet).
pub(crate) fn signal_pid(pid: u32, signal: Signal) -> Result<()> {
    if pid == 0 {
        return Ok(());
    }
    Ok(process::send(pid, signal)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(kinds: &[Kind], nodes: usize) -> Shape {
        Shape {
            kinds: kinds.to_vec(),
            clients: 4,
            nodes,
            ttl: Duration::from_millis(300),
        }
    }

    #[test]
    fn the_same_seed_and_trial_give_the_same_schedule() {
        let shape = shape(&Kind::ALL, 1);
        for trial in 0..20 {
            assert_eq!(
                Schedule::generate(3, trial, &shape),
                Schedule::generate(3, trial, &shape)
            );
        }
        let differ =
            (0..20).any(|t| Schedule::generate(3, t, &shape) != Schedule::generate(4, t, &shape));
        assert!(differ, "other seeds give other schedules");
    }

    #[test]
    fn faults_start_in_the_first_half_and_end_before_the_trial_does() {
        let ttl = Duration::from_millis(300);
        for trial in 0..200 {
            let schedule = Schedule::generate(9, trial, &shape(&Kind::ALL, 5));
            assert!(!schedule.0.is_empty());
            for (_, fault) in &schedule.0 {
                assert!(fault.at <= ttl * 5 && fault.at >= ttl / 2, "{fault}");
                assert!(fault.at + fault.length < ttl * TRIAL_TTLS, "{fault}");
                assert!(fault.nodes.iter().all(|n| *n < 5), "{fault}");
            }
            assert!(
                schedule
                    .0
                    .iter()
                    .filter(|(_, f)| f.kind == Kind::Failover)
                    .count()
                    <= 1
            );
        }
    }

    #[test]
    fn restricted_kinds_are_the_only_ones_drawn_and_none_means_no_faults() {
        for trial in 0..50 {
            let schedule = Schedule::generate(1, trial, &shape(&[Kind::Freeze], 1));
            assert!(schedule.0.iter().all(|(_, f)| f.kind == Kind::Freeze));
        }
        assert!(Schedule::generate(1, 0, &shape(&[], 1)).0.is_empty());
    }

    #[test]
    fn a_kept_subset_replays_the_same_faults() {
        let schedule = Schedule::generate(5, 2, &shape(&Kind::ALL, 1));
        let first = schedule.numbers()[0];
        let kept = schedule.keeping(&[first]);
        assert_eq!(kept.0, vec![schedule.0[0].clone()]);
    }
}
