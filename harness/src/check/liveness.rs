//! Liveness: what a client that asks for the lock is told, and whether the
//! lock is to blame. An ask is a window the history opens ([`What::Ask`]):
//! a scripted story's patience window, or any acquire of the explorer's
//! clients, who all wait as long. Three words come from the asks:
//!
//! - DEADLOCK: a client asked for its whole window and was refused (an
//!   answer lost or given up on is not a refusal: the lock may have
//!   granted), nobody else held the lock meanwhile (inside a critical
//!   section, or with a release still on its way), and the servers' record
//!   shows the lock key there all along: a key nobody holds and nobody can
//!   take. The asker's own hold does not count: a holder asking again for
//!   its lock waits for itself. A slow holder is not a deadlock, however
//!   long its waiters wait.
//! - SELF-BLOCKED: a holder asked again for the lock it held and was
//!   granted it only after its own key had expired: not a re-entry, and
//!   not a deadlock either.
//! - REFUSED: the lock answered "not acquired" to a client while a fault
//!   was aimed at it, and granted nobody an unsafe lock (no overlap). A
//!   client library that gives up on a late reply is not the lock
//!   refusing: the lock did grant, so an error does not count.

use std::time::Duration;

use super::{Finding, Violation, end_of, mutual_exclusion, sections};
use crate::history::{Entry, History, Op, Phase, What};

/// Every ask that ended in vain with the lock key orphaned.
pub fn deadlocks(history: &History) -> Vec<Violation> {
    let entries = history.entries();
    let keys = history.keys();
    let key = lock_key(&entries);
    let held = holds(&entries);
    asks(&entries)
        .into_iter()
        .filter(|ask| ask.told == Some(Phase::Fail))
        .filter(|ask| {
            !held
                .iter()
                .any(|(who, from, to)| *who != ask.client && *from < ask.to && *to > ask.from)
        })
        .filter(|ask| keys.existed_throughout(key, history.wall(ask.from), history.wall(ask.to)))
        .map(|ask| Violation {
            finding: Finding::Deadlock,
            text: format!(
                "{} asked for {}ms; the lock key existed all along and nobody acquired",
                ask.client,
                (ask.to - ask.from).as_millis()
            ),
            processes: vec![ask.client.clone()],
            evidence: ask.evidence,
        })
        .collect()
}

/// Every holder that asked again and got its lock back only after its own
/// key had expired and it wrote the key anew (the servers' record).
pub fn self_blocked(history: &History) -> Vec<Violation> {
    let entries = history.entries();
    let keys = history.keys();
    let key = lock_key(&entries);
    asks(&entries)
        .into_iter()
        .filter(|ask| ask.told == Some(Phase::Ok) && ask.held_already)
        .filter_map(|ask| {
            let expiry = keys.expired_then_retaken(key, &ask.client)?;
            Some(Violation {
                finding: Finding::SelfBlocked,
                text: format!(
                    "{} asked again for the lock it held, waited {}ms, and got it only after \
                     its own key expired on {}",
                    ask.client,
                    (ask.to - ask.from).as_millis(),
                    expiry.node
                ),
                processes: vec![ask.client.clone()],
                evidence: ask.evidence,
            })
        })
        .collect()
}

/// The first "not acquired" each client was told while a fault aimed at
/// it was on, unless somebody was granted an unsafe lock.
pub fn refused(entries: &[Entry]) -> Vec<Violation> {
    if !mutual_exclusion::check(entries).is_empty() {
        return Vec::new();
    }
    let mut found: Vec<Violation> = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let client = &entry.process;
        if !entry.is(Op::Acquire, Phase::Fail) || found.iter().any(|v| v.processes[0] == *client) {
            continue;
        }
        let fault = entries[..i].iter().rev().find(
            |e| matches!(&e.what, What::Nemesis { target, .. } if target.as_ref() == Some(client)),
        );
        if let Some(fault) =
            fault.filter(|f| matches!(f.what, What::Nemesis { phase, .. } if phase == "start"))
        {
            found.push(Violation {
                finding: Finding::Refused,
                text: format!(
                    "the lock told {client} \"not acquired\" during the fault aimed at it, and \
                     granted nobody an unsafe lock"
                ),
                processes: vec![client.clone()],
                evidence: vec![fault.index, entry.index],
            });
        }
    }
    found
}

/// A window in which a client asked for the lock, and how it ended.
struct Ask {
    client: String,
    /// The ask entry, and the acquire's answer if one came.
    evidence: Vec<usize>,
    from: Duration,
    /// When the answer came (the end of the record, if none came).
    to: Duration,
    /// What the acquire's answer said: `ok`, `fail` (refused), `info`
    /// (unknown: the client gave up, or the answer was lost).
    told: Option<Phase>,
    /// Whether it held the lock already as it asked: a critical section of
    /// its own was open.
    held_already: bool,
}

fn asks(entries: &[Entry]) -> Vec<Ask> {
    let end = end_of(entries);
    let sections = sections(entries);
    let mut found = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        if !matches!(entry.what, What::Ask { .. }) {
            continue;
        }
        let client = &entry.process;
        let answer = entries[i + 1..]
            .iter()
            .find(|e| &e.process == client && e.completes(Op::Acquire));
        found.push(Ask {
            client: client.clone(),
            evidence: std::iter::once(entry.index)
                .chain(answer.map(|a| a.index))
                .collect(),
            from: entry.at,
            to: answer.map_or(end, |a| a.at),
            told: answer.and_then(|a| a.op()).map(|(_, phase, _)| phase),
            held_already: sections.iter().any(|s| {
                &s.process == client
                    && s.opened < entry.index
                    && s.closed.is_none_or(|(closer, _)| closer > entry.index)
            }),
        });
    }
    found
}

/// Who held the lock, and when: from the acquire's `ok` until the release
/// has come back (a release on its way still holds it), or until the
/// section closed otherwise (its holder died, left, was killed).
fn holds(entries: &[Entry]) -> Vec<(String, Duration, Duration)> {
    let end = end_of(entries);
    sections(entries)
        .into_iter()
        .map(|s| {
            let until = match s.closed {
                Some((index, _)) if entries[index].is(Op::Release, Phase::Invoke) => entries
                    [index + 1..]
                    .iter()
                    .find(|e| e.process == s.process && e.completes(Op::Release))
                    .map_or(end, |e| e.at),
                closed => closed.map_or(end, |(_, at)| at),
            };
            (s.process, s.start, until)
        })
        .collect()
}

/// The lock's key, as the servers' record names it.
fn lock_key(entries: &[Entry]) -> &str {
    entries
        .iter()
        .find_map(|e| match &e.what {
            What::Setup { lock_key, .. } => Some(lock_key.as_str()),
            _ => None,
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::super::tests::Script;
    use super::*;
    use crate::history::fault_kind::Kind;
    use crate::observe::NodeKeys;

    const KEY: &str = "lock:stock";

    /// `client`'s ask at `from`, answered at `to`.
    fn ask(s: &mut Script, client: &str, from: u64, to: u64, answer: Phase) {
        let patience = Duration::from_millis(900);
        s.push(from, client, What::Ask { patience });
        s.step(from, client, Op::Acquire, Phase::Invoke);
        s.step(to, client, Op::Acquire, answer);
    }

    /// The history of `s`, with A's key written at 10, and then perhaps
    /// expired and written again, by whom.
    fn recorded(s: Script, expired: Option<u64>, retaken: Option<(&str, u64)>) -> History {
        let history = s.history();
        let at = |ms| history.wall(Duration::from_millis(ms));
        let mut keys = NodeKeys::new("lock", history.keys());
        keys.notified(KEY, "set", at(10));
        keys.command("client-A", at(10));
        if let Some(gone) = expired {
            keys.notified(KEY, "expired", at(gone));
            keys.command("harness-monitor", at(gone));
        }
        if let Some((by, again)) = retaken {
            keys.notified(KEY, "set", at(again));
            keys.command(by, at(again));
        }
        history
    }

    fn a_holds(s: &mut Script) {
        s.step(10, "client-A", Op::Acquire, Phase::Invoke);
        s.step(11, "client-A", Op::Acquire, Phase::Ok);
    }

    #[test]
    fn a_wait_in_vain_on_an_orphaned_key_is_a_deadlock() {
        let mut s = Script::new(1);
        a_holds(&mut s);
        s.push(20, "client-A", What::Died);
        ask(&mut s, "client-B", 30, 930, Phase::Fail);
        assert_eq!(deadlocks(&recorded(s, None, None)).len(), 1);
    }

    #[test]
    fn a_wait_in_vain_on_a_slow_holder_or_after_the_key_went_is_not() {
        let mut slow = Script::new(1);
        a_holds(&mut slow);
        ask(&mut slow, "client-B", 30, 930, Phase::Fail);
        assert_eq!(deadlocks(&recorded(slow, None, None)), []);

        let mut expired = Script::new(1);
        a_holds(&mut expired);
        expired.push(20, "client-A", What::Died);
        ask(&mut expired, "client-B", 30, 930, Phase::Fail);
        let history = recorded(expired, Some(310), None);
        assert_eq!(deadlocks(&history), []);
    }

    #[test]
    fn a_holder_waiting_for_itself_is_deadlocked_or_self_blocked() {
        let mut forever = Script::new(1);
        a_holds(&mut forever);
        ask(&mut forever, "client-A", 30, 930, Phase::Fail);
        let history = recorded(forever, None, None);
        assert_eq!(deadlocks(&history).len(), 1);
        assert_eq!(self_blocked(&history), []);

        let mut blocked = Script::new(1);
        a_holds(&mut blocked);
        ask(&mut blocked, "client-A", 30, 311, Phase::Ok);
        let history = recorded(blocked, Some(310), Some(("client-A", 310)));
        assert_eq!(self_blocked(&history).len(), 1);
        assert_eq!(deadlocks(&history), []);
    }

    #[test]
    fn a_no_during_the_clients_own_fault_is_a_refusal_and_one_outside_it_is_not() {
        let mut s = Script::new(1);
        s.step(10, "client-A", Op::Acquire, Phase::Invoke);
        s.step(11, "client-A", Op::Acquire, Phase::Fail);
        assert_eq!(refused(&s.0), []);
        s.strike(20, Kind::Delay, "client-A");
        s.step(30, "client-A", Op::Acquire, Phase::Invoke);
        s.step(31, "client-A", Op::Acquire, Phase::Fail);
        assert_eq!(refused(&s.0).len(), 1);
    }
}
