//! How fast a violation was found: the trial, the operation count and the
//! time of its first appearance.
//!
//! A reader who sees "no violation" wants to know how much that is worth.
//! Where the explorer does find a stage's known failure, how long it took
//! says how long to run before trusting a silence: a finding that comes in
//! the first trial or two on every seed is one a minute's silence rules
//! out; one that takes a hundred trials is not.

use std::time::Duration;

use crate::check::Violation;
use crate::history::{Entry, Phase};

/// Where a check first failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct First {
    /// The trial (counted from 0).
    pub trial: u64,
    /// Client operations invoked up to the violation's last client entry,
    /// counting every earlier trial's.
    pub operations: usize,
    /// Time since exploring began, at the end of that trial.
    pub after: Duration,
}

/// Operations invoked in `entries` up to the last client operation among
/// the violation's evidence (every one, if the evidence has none).
pub fn operations_until(entries: &[Entry], violation: &Violation) -> usize {
    let last = violation
        .evidence
        .iter()
        .copied()
        .filter(|i| entries.get(*i).is_some_and(|e| e.op().is_some()))
        .max()
        .unwrap_or(usize::MAX);
    entries
        .iter()
        .filter(|e| e.index <= last)
        .filter(|e| matches!(e.op(), Some((_, Phase::Invoke, _))))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{Finding, tests::Script};
    use crate::history::{Op, Phase};

    #[test]
    fn operations_are_counted_up_to_the_last_client_entry_of_the_evidence() {
        let mut b = Script::new(10);
        b.step(0, "client-A", Op::Acquire, Phase::Invoke);
        let ok = b.step(5, "client-A", Op::Acquire, Phase::Ok);
        b.step(6, "client-B", Op::Acquire, Phase::Invoke);
        b.step(7, "client-A", Op::Read, Phase::Invoke);
        let entries = b.0;
        let violation = Violation {
            finding: Finding::Overlap,
            text: String::new(),
            processes: vec![],
            evidence: vec![ok],
        };
        assert_eq!(operations_until(&entries, &violation), 1);
        let none = Violation {
            evidence: vec![],
            ..violation
        };
        assert_eq!(operations_until(&entries, &none), 3);
    }
}
