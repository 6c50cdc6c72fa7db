//! The one finding type: what a checker says was violated, in a scripted
//! story's verdict, a matrix cell and an explorer report alike.

use std::collections::BTreeSet;
use std::fmt;

/// One observer that fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Finding {
    /// More orders than items that left the stock: a sale overwrote
    /// another (a lost update); with a small stock, more orders than stock.
    Oversold,
    /// Two clients inside the critical section at once.
    Overlap,
    /// A client's command deleted a lock key another client had written.
    ForeignDelete,
    /// A client asked for a whole patience window in vain while nobody
    /// else held the lock and its key stayed.
    Deadlock,
    /// A holder asked for the lock it held and got it only after its own
    /// first hold expired: not a re-entry, and not a deadlock either.
    SelfBlocked,
    /// The lock correctly said no (Redlock: validity used up, no quorum).
    Refused,
    /// One request was charged twice: a retry the resource did not
    /// recognise as the same request.
    Duplicate,
    /// The lock went to a client while another, in line before it, was
    /// still waiting: a waiter was passed over.
    OutOfOrder,
    /// The resource accepted a write with an older fencing token than one
    /// it had already seen (the explorer's checker; no scripted story
    /// needs the word, its oversell says it).
    StaleWrite,
}

impl Finding {
    /// Every finding, in the order verdicts print them.
    pub const ALL: [Finding; 8] = [
        Finding::Oversold,
        Finding::Overlap,
        Finding::ForeignDelete,
        Finding::Deadlock,
        Finding::SelfBlocked,
        Finding::Refused,
        Finding::Duplicate,
        Finding::OutOfOrder,
    ];

    /// What the explorer's checkers judge, in the order its reports print
    /// them: a liveness failure is a deadlock.
    pub const EXPLORED: [Finding; 5] = [
        Finding::Overlap,
        Finding::Oversold,
        Finding::ForeignDelete,
        Finding::StaleWrite,
        Finding::Deadlock,
    ];

    /// The property it violates, as the explorer's reports and its
    /// `--check` option name it.
    pub fn property(self) -> &'static str {
        match self {
            Finding::Overlap => "mutual-exclusion",
            Finding::Oversold => "oversold",
            Finding::ForeignDelete => "foreign-delete",
            Finding::StaleWrite => "stale-write",
            Finding::Deadlock => "liveness",
            Finding::SelfBlocked => "self-blocked",
            Finding::Refused => "refused",
            Finding::Duplicate => "duplicate",
            Finding::OutOfOrder => "order",
        }
    }

    /// The finding whose property is called `name`.
    pub fn with_property(name: &str) -> Option<Finding> {
        Finding::EXPLORED.into_iter().find(|f| f.property() == name)
    }

    /// The word the matrix prints.
    pub fn label(self) -> &'static str {
        match self {
            Finding::Oversold => "OVERSOLD",
            Finding::Overlap => "OVERLAP",
            Finding::ForeignDelete => "FOREIGN-DELETE",
            Finding::Deadlock => "DEADLOCK",
            Finding::SelfBlocked => "SELF-BLOCKED",
            Finding::Refused => "REFUSED",
            Finding::Duplicate => "DUPLICATE",
            Finding::OutOfOrder => "OUT-OF-ORDER",
            Finding::StaleWrite => "STALE-WRITE",
        }
    }

    /// What it means, for the legend.
    pub fn meaning(self) -> &'static str {
        match self {
            Finding::Oversold => {
                "more orders than items that left the stock: the lock failed to protect the data"
            }
            Finding::Overlap => "two clients were inside the critical section at the same time",
            Finding::ForeignDelete => "a client's release deleted a lock another client held",
            Finding::Deadlock => {
                "nobody could take the lock for a whole patience window, and nobody else held it"
            }
            Finding::SelfBlocked => {
                "the holder asked again for its own lock and got it only after that lock expired"
            }
            Finding::Refused => "the lock said no instead of granting an unsafe lock",
            Finding::Duplicate => {
                "one request was charged twice: a lock serialises a retry, it does not de-duplicate it"
            }
            Finding::OutOfOrder => {
                "a waiter was passed over: the lock went to a client that asked after it"
            }
            Finding::StaleWrite => "the resource accepted a write from an older fencing token",
        }
    }
}

/// The findings of one run; empty means `ok`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Verdict(BTreeSet<Finding>);

impl Verdict {
    /// Nothing fired.
    pub fn ok() -> Self {
        Self::default()
    }

    /// Exactly these findings.
    pub fn of(findings: &[Finding]) -> Self {
        Self(findings.iter().copied().collect())
    }

    /// Adds a finding.
    pub fn insert(&mut self, finding: Finding) {
        self.0.insert(finding);
    }

    /// Whether `finding` fired.
    pub fn has(&self, finding: Finding) -> bool {
        self.0.contains(&finding)
    }

    /// Whether nothing fired.
    pub fn is_ok(&self) -> bool {
        self.0.is_empty()
    }

    /// The findings, in print order.
    pub fn findings(&self) -> impl Iterator<Item = Finding> + '_ {
        self.0.iter().copied()
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_ok() {
            return f.write_str("ok");
        }
        let labels: Vec<&str> = self.findings().map(Finding::label).collect();
        f.write_str(&labels.join(" "))
    }
}
