//! Liveness: while clients ask for the lock, someone gets it.
//!
//! A gap is a stretch of time in which no client was inside its critical
//! section. A gap longer than the patience window (three TTLs: any lock
//! with a TTL has expired by then), during which some client asked and was
//! told no, is a lock nobody can take: a deadlock. Gaps at the very end,
//! when clients have stopped asking, are not counted: nobody was refused.

use std::time::Duration;

use super::{Finding, Violation, end_of, sections};
use crate::history::{Entry, Op, Phase, operations, setup};

/// How many TTLs a gap may last.
pub const PATIENCE_TTLS: u32 = 3;

/// The first gap of more than [`PATIENCE_TTLS`] TTLs with refused clients.
pub fn check(entries: &[Entry]) -> Option<Violation> {
    let (ttl, _, _) = setup(entries);
    let end = end_of(entries);
    // The lock is taken from the acquire's `ok` until its release has come
    // back (a stalled release still holds it), or its holder died.
    let mut busy: Vec<(Duration, Duration)> = sections(entries)
        .iter()
        .map(|s| (s.start, released(entries, s.closed).unwrap_or(end)))
        .collect();
    busy.sort();
    let refusals: Vec<_> = operations(entries)
        .into_iter()
        .filter(|o| o.op == Op::Acquire && o.phase() == Some(Phase::Fail))
        .collect();
    let first = entries.iter().find(|e| e.op().is_some())?.at;
    let mut free_since = first;
    let mut gaps = Vec::new();
    for (start, stop) in busy {
        if start > free_since {
            gaps.push((free_since, start));
        }
        free_since = free_since.max(stop);
    }
    gaps.push((free_since, end));
    for (from, to) in gaps {
        if to - from <= ttl * PATIENCE_TTLS {
            continue;
        }
        let refused: Vec<_> = refusals
            .iter()
            .filter(|o| o.done.as_ref().is_some_and(|d| d.at > from && d.at <= to))
            .collect();
        let Some(last) = refused.last() else {
            continue;
        };
        let mut processes: Vec<String> = refused.iter().map(|o| o.process.clone()).collect();
        processes.sort();
        processes.dedup();
        let mut evidence: Vec<usize> = refused.iter().map(|o| o.invoke.index).collect();
        evidence.extend(last.done.as_ref().map(|d| d.index));
        return Some(Violation {
            finding: Finding::Deadlock,
            text: format!(
                "nobody held the lock from T+{}ms to T+{}ms ({} TTLs) while {} acquire(s) were \
                 refused",
                from.as_millis(),
                to.as_millis(),
                (to - from).as_millis() / ttl.as_millis().max(1),
                refused.len()
            ),
            processes,
            evidence,
        });
    }
    None
}

/// When the operation closing a section was over: a release's completion
/// (or the trial's end, if it never came), anything else at once.
fn released(entries: &[Entry], closed: Option<(usize, Duration)>) -> Option<Duration> {
    let (index, at) = closed?;
    let closer = &entries[index];
    match closer.op() {
        Some((Op::Release, Phase::Invoke, _)) => entries[index + 1..]
            .iter()
            .find(|e| {
                e.process == closer.process
                    && matches!(e.op(), Some((Op::Release, phase, _)) if phase != Phase::Invoke)
            })
            .map(|e| e.at),
        _ => Some(at),
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::Script;
    use super::*;

    fn refused(s: &mut Script, from: u64, to: u64) {
        s.step(from, "client-B", Op::Acquire, Phase::Invoke);
        s.step(to, "client-B", Op::Acquire, Phase::Fail);
    }

    #[test]
    fn a_long_gap_with_refusals_is_a_deadlock() {
        let mut s = Script::new(10);
        s.section("client-A", 10, 50);
        refused(&mut s, 60, 960);
        refused(&mut s, 961, 1861);
        s.section("client-C", 1900, 1950);
        assert!(check(&s.history().entries()).is_some());
    }

    #[test]
    fn a_long_stalled_release_is_not_a_deadlock() {
        let mut s = Script::new(10);
        s.step(10, "client-A", Op::Acquire, Phase::Invoke);
        s.step(11, "client-A", Op::Acquire, Phase::Ok);
        s.step(20, "client-A", Op::Release, Phase::Invoke);
        refused(&mut s, 30, 930);
        refused(&mut s, 931, 1831);
        s.step(1850, "client-A", Op::Release, Phase::Ok);
        s.section("client-B", 1860, 1900);
        assert_eq!(check(&s.history().entries()), None);
    }

    #[test]
    fn short_gaps_and_quiet_ends_are_fine() {
        let mut s = Script::new(10);
        s.section("client-A", 10, 50);
        refused(&mut s, 60, 200);
        s.section("client-C", 300, 350);
        s.section("client-C", 5000, 5050);
        assert_eq!(check(&s.history().entries()), None);
    }
}
