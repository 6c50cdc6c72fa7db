//! The schedule: what faults a trial will see, and when, drawn from a seed.
//!
//! This file is pure: no process, no server, no clock. A trial's faults are
//! a [`Schedule`] drawn before anything runs, so the same seed, trial
//! number, fault kinds, client count and topology give the same schedule
//! every time, and `--replay SEED:TRIAL` replays it. The
//! [`nemesis`](super::nemesis) plays it against real processes; the
//! [`history`](super::history) records what was played.
//!
//! Faults are aimed, as Jepsen's nemeses are, at the moments that matter
//! for a lock: not "at 1.2 s" but "20 ms after the next holder has read the
//! stock", that is between its read and its write, where a pause or a lost
//! lock turns into a lost update. What stays random (which client, how far
//! into its critical section, how long) is drawn here, from the seed; only
//! *which* critical section comes next is up to the machine.
//!
//! Lengths are drawn around the lock's own timing: a freeze or a stall
//! outlives the TTL three times in four (the lock is lost under its
//! holder) and stays below it otherwise (a pause the lock must survive).
//! A trial has two or three faults, and its first one always outlives the
//! lock, so that no trial is spent on harmless pauses alone.

use std::fmt;
use std::time::Duration;

use lockcore::Description;

use super::rng::Rng;
pub use crate::history::fault_kind::Kind;

/// Which matrix scenario each kind of fault tells, and where it applies.
impl Kind {
    // ANCHOR: scenario-of-kind
    /// The matrix scenario (a row of the matrix) whose scripted story this
    /// kind of fault tells at random; `None` for a fault no scenario
    /// scripts (a partition).
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
    // ANCHOR_END: scenario-of-kind

    /// Whether this fault makes sense for `stage`: where the scenario it
    /// tells applies (a partition: wherever there is a lock server).
    pub fn applies_to(self, stage: &Description) -> bool {
        match self.column() {
            Some(column) => crate::scenario::find(column)
                .is_some_and(|scenario| (scenario.not_applicable)(stage).is_none()),
            // No proxy stands in front of a ZooKeeper or etcd cluster yet.
            None => stage.stage != 0 && !crate::scenario::ensemble::on_consensus_store(stage),
        }
    }
}

/// One planned fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// When the nemesis starts aiming, counted from the start of the
    /// trial's workload.
    pub at: Duration,
    /// What kind.
    pub kind: Kind,
    /// The client it prefers: it waits a while for this client's next
    /// critical section before it takes whichever comes.
    pub client: usize,
    /// The lock nodes it hits (node faults and partitions).
    pub nodes: Vec<usize>,
    /// How long it lasts (freeze, stall, delay, partition), how much extra
    /// work (slow work), or how far the clock jumps. A freeze longer than
    /// the TTL ends earlier, at [`Fault::then`] after the next holder's
    /// read, if that comes first.
    pub length: Duration,
    /// How long after the aimed holder's read of the stock it strikes:
    /// usually between that read and the write that follows it.
    pub into: Duration,
    /// How long after the next holder's read the struck client goes on:
    /// a long freeze thaws it then; a node fault keeps its holder inside
    /// until then. Either way its stale write races the new holder's.
    pub then: Duration,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let holder = format!("the next holder (preferably {})", client_name(self.client));
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

    /// Whether a freeze is meant to outlive the lock: then it ends soon
    /// after someone else has taken the lock and read.
    pub fn outlives(&self, ttl: Duration) -> bool {
        self.kind == Kind::Freeze && self.length > ttl
    }

    /// The latest this fault can be over, counted from the trial's start
    /// (the time a node takes to restart aside): aiming waits at most
    /// [`AIM_TTLS`] for the holder's read (a failover and a delay first as
    /// long for a release); a freeze that outlives the lock waits at most
    /// half a TTL more for the next holder's read, and a node fault's
    /// holder [`CAUGHT_TTLS`] half TTLs.
    pub fn latest_end(&self, ttl: Duration) -> Duration {
        let struck = self.at + ttl * AIM_TTLS + self.into;
        let caught = ttl * CAUGHT_TTLS / 2 + self.then;
        struck
            + match self.kind {
                Kind::Freeze if self.outlives(ttl) => self.length + ttl / 2 + self.then,
                Kind::Restart | Kind::ClockJump => caught,
                // It first waits for a release to hold replication at.
                Kind::Failover => ttl * AIM_TTLS + caught,
                // It first waits for its holder's release.
                Kind::Delay => ttl * AIM_TTLS + self.length,
                _ => self.length.max(self.then),
            }
    }

    fn tell(&self, f: &mut fmt::Formatter<'_>, holder: &str) -> fmt::Result {
        let nodes = self
            .nodes
            .iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(",");
        let (ms, into, then) = (
            self.length.as_millis(),
            self.into.as_millis(),
            self.then.as_millis(),
        );
        write!(f, "+{}ms {}: ", self.at.as_millis(), self.kind)?;
        match self.kind {
            Kind::Kill => write!(f, "kill -9 {holder}, {into}ms after its read"),
            Kind::Freeze => write!(
                f,
                "SIGSTOP {holder} {into}ms after its read, for {ms}ms (if longer than the TTL: \
                 until {then}ms after the next holder's read, half a TTL later at most)"
            ),
            Kind::SlowWork => write!(f, "{holder} works {ms}ms longer"),
            Kind::StallRelease => write!(f, "{holder}'s release stalls {ms}ms"),
            Kind::Delay => write!(
                f,
                "replies to {holder} held {ms}ms, for {ms}ms, from its first request after its \
                 release (the lock is free)"
            ),
            Kind::Cut => write!(
                f,
                "{holder} cut off from lock node(s) {nodes} {into}ms after its read, for {ms}ms"
            ),
            Kind::Restart => write!(
                f,
                "lock node(s) {nodes} restart empty {into}ms after {holder}'s read; it stays \
                 inside until {then}ms after the next holder's read"
            ),
            Kind::Failover => write!(
                f,
                "replication held after a release; {into}ms after the read of {holder} \
                 granted after that, the master killed and the replica promoted; it stays \
                 inside until {then}ms after the next holder's read"
            ),
            Kind::ClockJump => write!(
                f,
                "lock node(s) {nodes} jump {ms}ms forward {into}ms after {holder}'s read; it \
                 stays inside until {then}ms after the next holder's read"
            ),
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

/// How long a trial's workload runs, in TTLs. Faults start aiming in the
/// first TTL and strike within the second; a deadlock they cause still
/// leaves more than the liveness checker's three TTLs of refusals before
/// the clients' last waits end. Short trials: more schedules a minute.
pub const TRIAL_TTLS: u32 = 6;
/// The latest a fault starts aiming, in TTLs.
pub const LATEST_START_TTLS: u64 = 1;
/// How long, in TTLs, a fault waits at most for the holder it aims at.
pub const AIM_TTLS: u32 = 1;
/// How long, in half TTLs, a holder whose lock a node fault took stays
/// inside at most, waiting for another client to read under it: longer
/// than a waiter of stage 6 sleeps (up to the TTL it last saw) when the
/// lock vanished with no release to wake it.
pub const CAUGHT_TTLS: u32 = 3;
/// Faults a trial: at least two, so that a trial whose one fault was drawn
/// harmless (a pause the lock survives) still has another.
const MIN_FAULTS: u64 = 2;
const MAX_FAULTS: u64 = 3;

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
        let count = rng.between(MIN_FAULTS, MAX_FAULTS);
        for _ in 0..count {
            let kind = shape.kinds[rng.index(shape.kinds.len())];
            let at = ms(rng.between(ttl / 4, LATEST_START_TTLS * ttl));
            // A restart, three times in four, aims at the trial's first
            // critical section (unless another fault already does): stage
            // 8's fencing counter then starts again at the token its holder
            // has, which the resource cannot tell from the holder's own
            // (later, it starts below the tokens the resource has seen, and
            // is refused as stale). Only one fault aims there: a second
            // restart would send the counter back again.
            let first_section_free = faults.iter().all(|f| !f.at.is_zero());
            let at = if kind == Kind::Restart && first_section_free && rng.between(0, 3) > 0 {
                Duration::ZERO
            } else {
                at
            };
            let client = rng.index(shape.clients);
            // A trial's first fault always outlasts the lock: a short one
            // is a pause the lock must survive, and a trial of those alone
            // could find nothing to report.
            let first = faults.is_empty();
            // Around the business time: mostly between the read and the write.
            let into = soon_after(&mut rng, ttl);
            let (nodes, length, then) = match kind {
                Kind::Kill => (vec![], Duration::ZERO, Duration::ZERO),
                Kind::Freeze => (
                    vec![],
                    around_ttl(&mut rng, ttl, first),
                    soon_after(&mut rng, ttl),
                ),
                Kind::SlowWork | Kind::StallRelease => {
                    (vec![], around_ttl(&mut rng, ttl, first), Duration::ZERO)
                }
                // Longer than redis-rs waits for a reply (500 ms), as in the
                // matrix's story: the command runs, its answer is lost.
                Kind::Delay => (
                    vec![],
                    ms(rng.between(2 * ttl, 5 * ttl / 2)),
                    Duration::ZERO,
                ),
                Kind::Cut => (
                    pick_nodes(&mut rng, shape.nodes, minority(shape.nodes)),
                    ms(rng.between(ttl, 2 * ttl)),
                    Duration::ZERO,
                ),
                // A majority: with fewer, Redlock's holder keeps enough
                // nodes for nobody else to win; with a majority of the
                // holder's nodes gone, another client can.
                Kind::Restart => (
                    pick(&mut rng, shape.nodes, majority(shape.nodes)),
                    Duration::ZERO,
                    soon_after(&mut rng, ttl),
                ),
                Kind::ClockJump => (
                    pick(&mut rng, shape.nodes, majority(shape.nodes)),
                    ms(rng.between(ttl, 2 * ttl)),
                    soon_after(&mut rng, ttl),
                ),
                Kind::Failover => (vec![0], Duration::ZERO, soon_after(&mut rng, ttl)),
            };
            faults.push(Fault {
                at,
                kind,
                client,
                nodes,
                length,
                into,
                then,
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

    /// One line per fault: `#2 +120ms freeze: SIGSTOP …`.
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

/// A length around the TTL: above it three times in four, and always when
/// `long` (1.1 to 2 TTLs: the lock is lost), below it otherwise (0.2 to 0.8
/// TTLs: it must hold).
fn around_ttl(rng: &mut Rng, ttl: u64, long: bool) -> Duration {
    if rng.between(0, 3) == 0 && !long {
        ms(rng.between(ttl / 5, ttl * 4 / 5))
    } else {
        ms(rng.between(ttl * 11 / 10, 2 * ttl))
    }
}

/// A few milliseconds, up to a fifteenth of the TTL: how far into a
/// critical section a fault strikes, and how soon after the next holder's
/// read a struck client goes on.
fn soon_after(rng: &mut Rng, ttl: u64) -> Duration {
    ms(rng.between(0, ttl / 15))
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
    pick(rng, nodes, count)
}

/// `count` distinct nodes out of `nodes`, in ascending order.
fn pick(rng: &mut Rng, nodes: usize, count: usize) -> Vec<usize> {
    let mut pool: Vec<usize> = (0..nodes.max(1)).collect();
    let mut chosen = Vec::with_capacity(count);
    for _ in 0..count.min(pool.len()) {
        chosen.push(pool.remove(rng.index(pool.len())));
    }
    chosen.sort_unstable();
    chosen
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
    fn faults_start_early_and_end_before_the_trial_does() {
        let ttl = Duration::from_millis(300);
        for trial in 0..200 {
            let schedule = Schedule::generate(9, trial, &shape(&Kind::ALL, 5));
            assert!(!schedule.0.is_empty());
            for (_, fault) in &schedule.0 {
                let start = ttl * u32::try_from(LATEST_START_TTLS).unwrap_or(2);
                let first = fault.kind == Kind::Restart && fault.at.is_zero();
                assert!(
                    fault.at <= start && (fault.at >= ttl / 4 || first),
                    "{fault}"
                );
                assert!(fault.latest_end(ttl) < ttl * TRIAL_TTLS, "{fault}");
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
    fn lengths_are_drawn_around_the_ttl() {
        let ttl = Duration::from_millis(300);
        let freezes: Vec<Duration> = (0..400)
            .flat_map(|t| Schedule::generate(11, t, &shape(&[Kind::Freeze], 1)).0)
            .map(|(_, f)| f.length)
            .collect();
        let longer = freezes.iter().filter(|l| **l > ttl).count();
        assert!(
            longer * 2 > freezes.len() && longer < freezes.len(),
            "most freezes outlive the TTL, some do not: {longer} of {}",
            freezes.len()
        );
        assert!(freezes.iter().all(|l| *l <= ttl * 2));
    }

    #[test]
    fn node_faults_hit_a_majority_of_redlocks_nodes() {
        for trial in 0..50 {
            let schedule = Schedule::generate(2, trial, &shape(&[Kind::Restart], 5));
            assert!(schedule.0.iter().all(|(_, f)| f.nodes.len() == 3));
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
