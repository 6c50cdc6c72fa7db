//! The ledger: who acquired, released, sold, crashed, and when, on one
//! monotonic clock. Observers are computed from it after the run, so every
//! verdict is measured, never assumed.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use lockcore::{Acquired, Release};
use tokio::time::Instant;

use super::Timeline;

/// One thing a client did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// The lock said yes.
    Acquired,
    /// The client started giving the lock back (its critical section ends).
    ReleaseSent,
    /// The release came back.
    Released(Release),
    /// The client died holding whatever it held (crash, `kill -9`).
    Died,
    /// The client left its critical section without releasing (its
    /// business failed and the release was skipped); the lock stays taken.
    Left,
    /// The client starts asking for the lock for up to `patience`: a
    /// window in which the observers look for a deadlock.
    Asking {
        /// How long it is prepared to wait.
        patience: Duration,
    },
    /// The lock answered "not acquired" (it did not error).
    NotAcquired,
    /// A fault aimed at this client begins (its replies are delayed…).
    FaultBegan,
    /// The fault aimed at this client is over.
    FaultEnded,
}

#[derive(Debug, Clone)]
struct Record {
    at: Instant,
    /// The same moment on the wall clock, to compare with the servers'
    /// record (`MONITOR` stamps commands with the server's wall clock).
    wall: SystemTime,
    client: String,
    entry: Entry,
}

/// A window in which a client asked for the lock, and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    /// Who asked.
    pub client: String,
    /// How long it was prepared to wait.
    pub patience: Duration,
    /// When it started asking.
    pub from: SystemTime,
    /// When the answer came (the end of the run if none came).
    pub to: SystemTime,
    /// How long it waited for the answer.
    pub waited: Duration,
    /// Whether the answer was yes.
    pub granted: bool,
    /// Whether anyone at all acquired while it asked (itself included).
    pub anyone_acquired: bool,
    /// When the client's own hold began, if it already held the lock as it
    /// asked (it acquired and had neither released nor died).
    pub already_held_since: Option<SystemTime>,
}

/// A release that removed a lock someone else had taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForeignDelete {
    /// Who sent the release.
    pub by: String,
    /// Whose lock it removed.
    pub victim: String,
}

/// Two clients inside the critical section at the same time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlap {
    /// The one that entered first.
    pub first: String,
    /// The one that entered while the first was still inside.
    pub second: String,
}

/// Shared by every client of a scenario; clones share it.
#[derive(Debug, Clone)]
pub struct Ledger {
    timeline: Timeline,
    records: Arc<Mutex<Vec<Record>>>,
}

impl Ledger {
    /// An empty ledger that also narrates into `timeline`.
    pub fn new(timeline: Timeline) -> Self {
        Self {
            timeline,
            records: Arc::default(),
        }
    }

    /// The timeline the ledger narrates into.
    pub fn timeline(&self) -> &Timeline {
        &self.timeline
    }

    /// `client` took the lock.
    pub fn acquired(&self, client: &str, held: &Acquired) {
        let mut text = format!("acquired the lock (value {})", short(&held.value));
        if let Some(token) = held.fencing_token {
            text.push_str(&format!(", fencing token {token}"));
        }
        if let Some(validity) = held.validity {
            text.push_str(&format!(", valid for {}ms", validity.as_millis()));
        }
        self.push(client, Entry::Acquired, text);
    }

    /// `client` is about to send its release.
    pub fn release_sent(&self, client: &str) {
        self.push(
            client,
            Entry::ReleaseSent,
            "leaves the critical section and releases".into(),
        );
    }

    /// `client`'s release came back with `outcome`.
    pub fn released(&self, client: &str, outcome: Release) {
        let text = match outcome {
            Release::Deleted => "release deleted the lock key".to_owned(),
            Release::NothingDeleted => "release deleted nothing".to_owned(),
            Release::StillHeld(n) => format!("released one hold; still held {n} time(s)"),
            Release::Unconfirmed {
                deleted,
                not_ours,
                unreachable,
            } => format!(
                "release UNCONFIRMED: {unreachable} master(s) unreachable (they may keep the \
                 key until it expires); deleted on {deleted}, not ours on {not_ours}"
            ),
        };
        self.push(client, Entry::Released(outcome), text);
    }

    /// `client` left its critical section without releasing; `why`.
    pub fn left(&self, client: &str, why: &str) {
        self.push(client, Entry::Left, why.to_owned());
    }

    /// `client` died (`how`: "crashed at after-setnx", "killed with kill -9").
    pub fn died(&self, client: &str, how: &str) {
        self.push(client, Entry::Died, how.to_owned());
    }

    /// `client` starts asking for the lock for up to `patience`.
    pub fn asking(&self, client: &str, patience: Duration) {
        self.push(
            client,
            Entry::Asking { patience },
            format!(
                "asks for the lock, waiting up to {}ms",
                patience.as_millis()
            ),
        );
    }

    /// The lock told `client` "not acquired".
    pub fn not_acquired(&self, client: &str) {
        self.push(
            client,
            Entry::NotAcquired,
            "was not granted the lock".into(),
        );
    }

    /// A fault aimed at `client` begins; `what` says which.
    pub fn fault_began(&self, client: &str, what: &str) {
        self.push(client, Entry::FaultBegan, format!("FAULT begins: {what}"));
    }

    /// The fault aimed at `client` is over.
    pub fn fault_ended(&self, client: &str) {
        self.push(client, Entry::FaultEnded, "fault over".into());
    }

    fn push(&self, client: &str, entry: Entry, text: String) {
        self.timeline.record(client, text);
        self.records().push(Record {
            at: Instant::now(),
            wall: SystemTime::now(),
            client: client.to_owned(),
            entry,
        });
    }

    fn records(&self) -> std::sync::MutexGuard<'_, Vec<Record>> {
        self.records
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// How many times `client` acquired.
    pub fn acquisitions(&self, client: &str) -> usize {
        self.records()
            .iter()
            .filter(|r| r.client == client && r.entry == Entry::Acquired)
            .count()
    }

    /// Every window in which a client asked for the lock
    /// ([`Ledger::asking`]), with how it ended.
    pub fn asks(&self) -> Vec<Ask> {
        let records = self.records();
        let mut asks = Vec::new();
        for (i, record) in records.iter().enumerate() {
            let Entry::Asking { patience } = record.entry else {
                continue;
            };
            let mine = |r: &&Record| r.client == record.client;
            let answer_at = records[i + 1..]
                .iter()
                .position(|r| {
                    r.client == record.client
                        && matches!(r.entry, Entry::Acquired | Entry::NotAcquired)
                })
                .map(|p| p + i + 1);
            let answer = answer_at.map(|j| &records[j]);
            let inside = &records[i + 1..answer_at.map_or(records.len(), |j| j + 1)];
            let already_held_since = records[..i]
                .iter()
                .rev()
                .filter(mine)
                .find(|r| matches!(r.entry, Entry::Acquired | Entry::ReleaseSent | Entry::Died))
                .filter(|r| r.entry == Entry::Acquired)
                .map(|r| r.wall);
            asks.push(Ask {
                client: record.client.clone(),
                patience,
                from: record.wall,
                to: answer.map_or_else(SystemTime::now, |a| a.wall),
                waited: answer.map_or_else(|| record.at.elapsed(), |a| a.at - record.at),
                granted: answer.is_some_and(|a| a.entry == Entry::Acquired),
                anyone_acquired: inside.iter().any(|r| r.entry == Entry::Acquired),
                already_held_since,
            });
        }
        asks
    }

    /// Clients the lock told "not acquired" while a fault aimed at them was
    /// on.
    pub fn refused_during_their_fault(&self) -> Vec<String> {
        let records = self.records();
        let mut refused = Vec::new();
        for (i, record) in records.iter().enumerate() {
            if record.entry != Entry::NotAcquired || refused.contains(&record.client) {
                continue;
            }
            let fault_on = records[..i]
                .iter()
                .rev()
                .filter(|r| r.client == record.client)
                .find(|r| matches!(r.entry, Entry::FaultBegan | Entry::FaultEnded))
                .is_some_and(|r| r.entry == Entry::FaultBegan);
            if fault_on {
                refused.push(record.client.clone());
            }
        }
        refused
    }

    /// Pairs of clients whose critical sections overlapped. A section runs
    /// from `Acquired` to the client's next `ReleaseSent`, `Died` or `Left`
    /// (or to the end of the run).
    pub fn overlaps(&self) -> Vec<Overlap> {
        let records = self.records();
        let mut sections: Vec<(String, Instant, Option<Instant>)> = Vec::new();
        for (i, record) in records.iter().enumerate() {
            if record.entry != Entry::Acquired {
                continue;
            }
            let end = records[i + 1..]
                .iter()
                .find(|r| {
                    r.client == record.client
                        && matches!(r.entry, Entry::ReleaseSent | Entry::Died | Entry::Left)
                })
                .map(|r| r.at);
            sections.push((record.client.clone(), record.at, end));
        }
        let mut overlaps = Vec::new();
        for (i, (first, _, first_end)) in sections.iter().enumerate() {
            for (second, second_start, _) in &sections[i + 1..] {
                let still_inside = first_end.is_none_or(|end| end > *second_start);
                let pair = Overlap {
                    first: first.clone(),
                    second: second.clone(),
                };
                if first != second && still_inside && !overlaps.contains(&pair) {
                    overlaps.push(pair);
                }
            }
        }
        overlaps
    }

    /// Releases that deleted a lock taken by someone else. A client's key
    /// is provably gone once another client acquires after it (`SET NX`
    /// only succeeds on an absent key); if its release still deleted a key,
    /// that key was someone else's.
    pub fn foreign_deletes(&self) -> Vec<ForeignDelete> {
        let records = self.records();
        let mut found = Vec::new();
        for (i, record) in records.iter().enumerate() {
            if record.entry != Entry::Released(Release::Deleted) {
                continue;
            }
            let by = &record.client;
            let before = &records[..i];
            let Some(sent) = before
                .iter()
                .rposition(|r| &r.client == by && r.entry == Entry::ReleaseSent)
            else {
                continue;
            };
            let Some(taken) = before[..sent]
                .iter()
                .rposition(|r| &r.client == by && r.entry == Entry::Acquired)
            else {
                continue;
            };
            if let Some(victim) = before[taken + 1..sent]
                .iter()
                .rev()
                .find(|r| &r.client != by && r.entry == Entry::Acquired)
            {
                found.push(ForeignDelete {
                    by: by.clone(),
                    victim: victim.client.clone(),
                });
            }
        }
        found
    }
}

/// The first eight characters of a value, for the timeline.
pub fn short(value: &str) -> String {
    if value.chars().count() > 8 {
        format!("{}…", value.chars().take(8).collect::<String>())
    } else {
        value.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ledger() -> Ledger {
        Ledger::new(Timeline::new())
    }

    #[test]
    fn a_release_after_someone_else_acquired_is_a_foreign_delete() {
        let ledger = ledger();
        let held = Acquired::with_value("1");
        ledger.acquired("client-A", &held);
        ledger.acquired("client-B", &held);
        ledger.release_sent("client-A");
        ledger.released("client-A", Release::Deleted);
        assert_eq!(
            ledger.foreign_deletes(),
            [ForeignDelete {
                by: "client-A".into(),
                victim: "client-B".into()
            }]
        );
        assert_eq!(ledger.overlaps().len(), 1);
    }

    #[test]
    fn taking_turns_is_neither_overlap_nor_foreign_delete() {
        let ledger = ledger();
        let held = Acquired::with_value("1");
        for client in ["client-A", "client-B", "client-A"] {
            ledger.acquired(client, &held);
            ledger.release_sent(client);
            ledger.released(client, Release::Deleted);
        }
        assert!(ledger.foreign_deletes().is_empty());
        assert!(ledger.overlaps().is_empty());
    }

    #[test]
    fn a_release_that_deleted_nothing_is_not_a_foreign_delete() {
        let ledger = ledger();
        let held = Acquired::with_value("1");
        ledger.acquired("client-A", &held);
        ledger.acquired("client-B", &held);
        ledger.release_sent("client-A");
        ledger.released("client-A", Release::NothingDeleted);
        assert!(ledger.foreign_deletes().is_empty());
    }

    #[test]
    fn an_unconfirmed_release_says_which_masters_were_out_of_reach() {
        let ledger = ledger();
        ledger.acquired("client-A", &Acquired::with_value("1"));
        ledger.release_sent("client-A");
        ledger.released(
            "client-A",
            Release::Unconfirmed {
                deleted: 2,
                not_ours: 0,
                unreachable: 3,
            },
        );
        let said = ledger
            .timeline()
            .events()
            .iter()
            .map(|e| e.text.clone())
            .find(|text| text.starts_with("release"))
            .unwrap_or_default();
        assert!(
            said.contains("UNCONFIRMED") && said.contains("3 master(s) unreachable"),
            "{said}"
        );
        assert!(!said.contains("deleted nothing"), "{said}");
        assert!(ledger.foreign_deletes().is_empty());
    }
}
