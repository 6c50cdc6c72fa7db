//! Order: was the lock served in the order its waiters lined up?
//!
//! A fair lock promises more than mutual exclusion: whoever has waited
//! longest goes next. The history says who waited since when only where a
//! story made sure of it: the harness writes `in line` for a client once
//! the lock's server has seen it ask, and lines its waiters up one at a
//! time ([`What::InLine`]). Every other client that asks (a holder that
//! asks again the moment it has released, as a busy service does) asked
//! after the whole line, so it stands behind it.
//!
//! A grant breaks the order when a client in line ahead of the grantee is
//! still waiting for the lock: that waiter was passed over. A waiter leaves
//! the line when its own wait ends, whichever way (granted, given up, an
//! error, its death). Where nobody lined up, nothing is judged: a story
//! that promises no order (`contention`, where eight clients ask at once)
//! cannot break one.

use std::collections::BTreeSet;

use super::{Finding, Violation};
use crate::history::{Entry, Op, Phase, What};

/// One grant out of order: the client served, and the waiters in line
/// before it that were still waiting, first in line first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassedOver {
    /// Who got the lock.
    pub served: String,
    /// Who had lined up before it and still waited.
    pub waiting: Vec<String>,
    /// The grant's place in the history.
    pub at: usize,
}

/// OUT-OF-ORDER, once for each grant that passed a waiter over, with the
/// grant as its evidence.
pub fn check(entries: &[Entry]) -> Vec<Violation> {
    passed_over(entries)
        .into_iter()
        .map(|passed| Violation {
            finding: Finding::OutOfOrder,
            text: format!(
                "{} got the lock while {} waited in line before it",
                passed.served,
                passed.waiting.join(", ")
            ),
            processes: std::iter::once(passed.served)
                .chain(passed.waiting)
                .collect(),
            evidence: vec![passed.at],
        })
        .collect()
}

/// Every grant in `entries` that passed a waiter over, in time order.
pub fn passed_over(entries: &[Entry]) -> Vec<PassedOver> {
    let mut line: Vec<String> = Vec::new();
    let mut waiting: BTreeSet<String> = BTreeSet::new();
    let mut found = Vec::new();
    for entry in entries {
        let client = &entry.process;
        match &entry.what {
            What::InLine if !line.contains(client) => line.push(client.clone()),
            What::Op {
                op: Op::Acquire,
                phase,
                ..
            } => match phase {
                Phase::Invoke => {
                    waiting.insert(client.clone());
                }
                Phase::Ok => {
                    waiting.remove(client);
                    // A client not in line asked after all of it.
                    let place = line.iter().position(|c| c == client).unwrap_or(line.len());
                    let ahead: Vec<String> = line[..place]
                        .iter()
                        .filter(|c| waiting.contains(*c))
                        .cloned()
                        .collect();
                    if !ahead.is_empty() {
                        found.push(PassedOver {
                            served: client.clone(),
                            waiting: ahead,
                            at: entry.index,
                        });
                    }
                    line.retain(|c| c != client);
                }
                Phase::Fail | Phase::Info => {
                    waiting.remove(client);
                    line.retain(|c| c != client);
                }
            },
            What::Died => {
                waiting.remove(client);
                line.retain(|c| c != client);
            }
            _ => {}
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::history::Detail;

    fn entry(index: usize, process: &str, what: What) -> Entry {
        Entry {
            index,
            at: Duration::from_millis(index as u64),
            process: process.to_owned(),
            what,
        }
    }

    fn acquire(index: usize, process: &str, phase: Phase) -> Entry {
        entry(
            index,
            process,
            What::Op {
                op: Op::Acquire,
                phase,
                detail: Detail::default(),
            },
        )
    }

    #[test]
    fn grants_in_the_order_of_the_line_are_in_order() {
        let history = [
            acquire(0, "client-B", Phase::Invoke),
            entry(1, "client-B", What::InLine),
            acquire(2, "client-C", Phase::Invoke),
            entry(3, "client-C", What::InLine),
            acquire(4, "client-B", Phase::Ok),
            // The holder asks again at once: it stands behind client-C.
            acquire(5, "client-A", Phase::Invoke),
            acquire(6, "client-C", Phase::Ok),
            acquire(7, "client-A", Phase::Ok),
        ];
        assert_eq!(passed_over(&history), vec![]);
    }

    #[test]
    fn a_client_that_asks_again_and_wins_passes_the_line_over() {
        let history = [
            acquire(0, "client-B", Phase::Invoke),
            entry(1, "client-B", What::InLine),
            acquire(2, "client-C", Phase::Invoke),
            entry(3, "client-C", What::InLine),
            acquire(4, "client-A", Phase::Invoke),
            acquire(5, "client-A", Phase::Ok),
            acquire(6, "client-C", Phase::Ok),
        ];
        assert_eq!(
            passed_over(&history),
            vec![
                PassedOver {
                    served: "client-A".into(),
                    waiting: vec!["client-B".into(), "client-C".into()],
                    at: 5,
                },
                PassedOver {
                    served: "client-C".into(),
                    waiting: vec!["client-B".into()],
                    at: 6,
                },
            ]
        );
    }

    #[test]
    fn a_waiter_that_gave_up_or_died_is_no_longer_in_line() {
        let history = [
            acquire(0, "client-B", Phase::Invoke),
            entry(1, "client-B", What::InLine),
            acquire(2, "client-C", Phase::Invoke),
            entry(3, "client-C", What::InLine),
            acquire(4, "client-D", Phase::Invoke),
            entry(5, "client-D", What::InLine),
            acquire(6, "client-B", Phase::Fail),
            entry(7, "client-C", What::Died),
            acquire(8, "client-D", Phase::Ok),
        ];
        assert_eq!(passed_over(&history), vec![]);
    }

    #[test]
    fn without_a_line_nothing_is_judged() {
        let history = [
            acquire(0, "client-B", Phase::Invoke),
            acquire(1, "client-C", Phase::Invoke),
            acquire(2, "client-C", Phase::Ok),
            acquire(3, "client-B", Phase::Ok),
        ];
        assert_eq!(passed_over(&history), vec![]);
    }
}
