//! The one judge: checkers over a history, and nothing else (not the
//! schedule, not the code that made the faults, not the story), each
//! saying whether a property was violated and pointing at the entries that
//! show it. One finding type ([`Finding`]) for every verdict, and one
//! definition for each word, in its checker:
//!
//! - [`mutual_exclusion`] (OVERLAP): two clients inside their critical
//!   sections at once, each having been told it holds the lock;
//! - [`oversold`] (OVERSOLD): more orders than items that left the stock
//!   (a lost update; with a small stock, more orders than stock);
//! - [`foreign_delete`] (FOREIGN-DELETE): a client's command deleted a key
//!   another client had written, from the servers' own record;
//! - [`liveness`] (DEADLOCK, SELF-BLOCKED, REFUSED): what a client that
//!   asked for the lock was told, and whether the lock is to blame;
//! - [`duplicate`] (DUPLICATE): one request charged twice;
//! - [`stale_write`] (STALE-WRITE): the resource accepted a write with a
//!   lower fencing token than one it had already seen;
//! - [`order`] (OUT-OF-ORDER): a grant passed over a waiter that had lined
//!   up before the grantee (only where a story lined its waiters up).
//!
//! The explorer's verdict ([`check()`]) is the first violation of each of
//! five properties; a scripted story's ([`judge()`]) is every finding of
//! the matrix's words, told as lines.

mod duplicate;
mod finding;
pub mod foreign_delete;
mod judge;
pub mod liveness;
pub mod mutual_exclusion;
pub mod order;
mod outcome;
pub mod oversold;
pub mod stale_write;

use std::time::Duration;

pub use finding::{Finding, Verdict};
pub use judge::judge;
pub use outcome::{Outcome, verdict_words};

use crate::history::fault_kind::Kind;
use crate::history::{Entry, History, Op, Phase, What};

/// A property that did not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Which.
    pub finding: Finding,
    /// What happened, in one sentence.
    pub text: String,
    /// The clients involved.
    pub processes: Vec<String>,
    /// The entries (history indices) that show it.
    pub evidence: Vec<usize>,
}

impl Violation {
    /// The smallest slice of `entries` that shows the violation: the
    /// evidence, and what the nemesis did meanwhile.
    pub fn slice<'a>(&self, entries: &'a [Entry]) -> Vec<&'a Entry> {
        let (Some(first), Some(last)) = (self.evidence.iter().min(), self.evidence.iter().max())
        else {
            return Vec::new();
        };
        entries
            .iter()
            .filter(|e| (*first..=*last).contains(&e.index))
            .filter(|e| self.evidence.contains(&e.index) || matches!(e.what, What::Nemesis { .. }))
            .collect()
    }
}

/// The explorer's verdict on `history`: the first violation of each of
/// its properties ([`Finding::EXPLORED`]).
pub fn check(history: &History) -> Vec<Violation> {
    let entries = history.entries();
    [
        mutual_exclusion::check(&entries),
        oversold::check(&entries),
        foreign_delete::check(history),
        stale_write::check(&entries),
        liveness::deadlocks(history),
    ]
    .into_iter()
    .filter_map(|found| found.into_iter().next())
    .collect()
}

/// A critical section as the history tells it: from the moment a client
/// was told it holds the lock to the first of: it invoked its release, an
/// operation of its ended unknown (its process was replaced), it died or
/// left without releasing, or the nemesis killed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// The client.
    pub process: String,
    /// The acquire `ok` entry.
    pub opened: usize,
    /// When.
    pub start: Duration,
    /// The entry that closed it, and when (`None`: open at the end).
    pub closed: Option<(usize, Duration)>,
}

impl Section {
    /// Its end, or `end` if it never closed.
    pub fn end_or(&self, end: Duration) -> Duration {
        self.closed.map_or(end, |(_, at)| at)
    }
}

/// Every critical section in `entries`.
pub fn sections(entries: &[Entry]) -> Vec<Section> {
    let mut sections = Vec::new();
    for entry in entries {
        if !entry.is(Op::Acquire, Phase::Ok) {
            continue;
        }
        let closed = entries[entry.index + 1..]
            .iter()
            .find(|later| closes(later, &entry.process))
            .map(|later| (later.index, later.at));
        sections.push(Section {
            process: entry.process.clone(),
            opened: entry.index,
            start: entry.at,
            closed,
        });
    }
    sections
}

fn closes(entry: &Entry, process: &str) -> bool {
    match &entry.what {
        What::Op { op, phase, .. } => {
            entry.process == process
                && ((*op == Op::Release && *phase == Phase::Invoke) || *phase == Phase::Info)
        }
        What::Died | What::Left => entry.process == process,
        What::Nemesis {
            kind,
            phase,
            target,
            ..
        } => *kind == Kind::Kill && *phase == "start" && target.as_deref() == Some(process),
        _ => false,
    }
}

/// Critical sections that outlived their lock although no fault was aimed
/// at their client meanwhile: the machine itself stalled the client (a
/// loaded host can hold a process for hundreds of milliseconds). A section
/// outlived its lock when it lasted longer than the TTL, or when a lock
/// node announced the lock key's expiry while it was open (the client may
/// learn of its lock well after the server granted it). A fault aimed at
/// the client during the section explains it, as does slow work ordered
/// earlier (it waits for the client's next section) and any node fault
/// meanwhile. Such a trial tested more than its fault kind, and says so
/// instead of blaming the kind.
pub fn unexplained_overruns(entries: &[Entry]) -> Vec<Section> {
    let (ttl, _, lock_nodes) = crate::history::setup(entries);
    let end = end_of(entries);
    let expiries: Vec<Duration> = entries
        .iter()
        .filter(|e| match &e.what {
            What::Server { node, command } => {
                e.process == "redis" && lock_nodes.contains(node) && command.starts_with("expired")
            }
            _ => false,
        })
        .map(|e| e.at)
        .collect();
    sections(entries)
        .into_iter()
        .filter(|s| {
            let stop = s.end_or(end);
            stop - s.start > ttl || expiries.iter().any(|at| (s.start..stop).contains(at))
        })
        .filter(|s| {
            let last = s.closed.map_or(usize::MAX, |(index, _)| index);
            !entries.iter().any(|e| match &e.what {
                What::Nemesis { target, kind, .. } => {
                    let during = (s.opened..=last).contains(&e.index);
                    match target {
                        Some(t) if *t == s.process => {
                            during || (*kind == Kind::SlowWork && e.index < s.opened)
                        }
                        Some(_) => false,
                        None => during,
                    }
                }
                _ => false,
            })
        })
        .collect()
}

/// When the history ends.
pub fn end_of(entries: &[Entry]) -> Duration {
    entries.iter().map(|e| e.at).max().unwrap_or_default()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::history::{Detail, History};

    /// A little history builder for the checkers' tests: times in ms.
    pub(crate) struct Script(pub Vec<Entry>);

    impl Script {
        pub(crate) fn new(stock: i64) -> Self {
            let mut script = Self(Vec::new());
            script.push(0, "harness", setup(stock));
            script
        }

        pub(crate) fn push(&mut self, ms: u64, process: &str, what: What) -> usize {
            let index = self.0.len();
            self.0.push(Entry {
                index,
                at: Duration::from_millis(ms),
                process: process.into(),
                what,
            });
            index
        }

        pub(crate) fn op(
            &mut self,
            ms: u64,
            process: &str,
            op: Op,
            phase: Phase,
            detail: Detail,
        ) -> usize {
            self.push(ms, process, What::Op { op, phase, detail })
        }

        /// An operation with nothing more to say.
        pub(crate) fn step(&mut self, ms: u64, process: &str, op: Op, phase: Phase) -> usize {
            self.op(ms, process, op, phase, Detail::default())
        }

        pub(crate) fn server(&mut self, ms: u64, process: &str, command: &str) -> usize {
            self.push(
                ms,
                process,
                What::Server {
                    node: "lock".into(),
                    command: command.into(),
                },
            )
        }

        /// The nemesis starts a fault of `kind` on `target`.
        pub(crate) fn strike(&mut self, ms: u64, kind: Kind, target: &str) {
            self.push(
                ms,
                "nemesis",
                What::Nemesis {
                    fault: 0,
                    kind,
                    phase: "start",
                    target: Some(target.into()),
                    text: kind.to_string(),
                },
            );
        }

        /// acquire at `from`, release at `to`, all ok.
        pub(crate) fn section(&mut self, process: &str, from: u64, to: u64) {
            self.step(from, process, Op::Acquire, Phase::Invoke);
            self.server(from, process, "SET lock:stock 1 NX PX 300");
            self.step(from + 1, process, Op::Acquire, Phase::Ok);
            self.step(to, process, Op::Release, Phase::Invoke);
            self.server(to, process, "EVAL …");
            self.op(to + 1, process, Op::Release, Phase::Ok, word("deleted"));
        }

        pub(crate) fn history(self) -> History {
            History::of(self.0)
        }
    }

    /// How the tests' runs are set up: stage 3 on one node, a 300 ms TTL,
    /// `stock` items.
    pub(crate) fn setup(stock: i64) -> What {
        What::Setup {
            stage: "stage3".into(),
            ttl: Duration::from_millis(300),
            stock,
            lock_nodes: vec!["lock".into()],
            fencing: "reads-and-writes",
            lock_key: "lock:stock".into(),
        }
    }

    pub(crate) fn word(w: &str) -> Detail {
        Detail {
            result: Some(w.into()),
            ..Detail::default()
        }
    }

    #[test]
    fn a_lock_that_expires_under_an_unstruck_holder_is_the_machines_doing() {
        let expiry = What::Server {
            node: "lock".into(),
            command: "expired lock:stock (TTL ran out)".into(),
        };
        let mut calm = Script::new(10);
        calm.section("client-A", 10, 200);
        calm.push(150, "redis", expiry.clone());
        assert_eq!(unexplained_overruns(&calm.history().entries()).len(), 1);

        let mut struck = Script::new(10);
        struck.step(10, "client-A", Op::Acquire, Phase::Invoke);
        struck.step(11, "client-A", Op::Acquire, Phase::Ok);
        struck.strike(20, Kind::Freeze, "client-A");
        struck.push(150, "redis", expiry);
        struck.step(200, "client-A", Op::Release, Phase::Invoke);
        assert!(unexplained_overruns(&struck.history().entries()).is_empty());
    }

    #[test]
    fn a_kill_closes_the_section_of_the_client_it_struck() {
        let mut s = Script::new(10);
        s.step(10, "client-A", Op::Acquire, Phase::Invoke);
        s.step(11, "client-A", Op::Acquire, Phase::Ok);
        s.strike(50, Kind::Kill, "client-A");
        let found = sections(&s.history().entries());
        assert_eq!(found.len(), 1);
        assert_eq!(
            found[0].closed.map(|(_, at)| at),
            Some(Duration::from_millis(50))
        );
    }
}
