//! The kinds of fault, as a record names them: what the explorer's
//! schedule draws, the nemesis plays and a history notes. Pure words, kept
//! with the record: the history and the judge ([`crate::check`]) share them
//! without knowing the code that makes each fault happen ([`crate::fault`]).

use std::fmt;

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

    /// Whether the fault strikes one client (rather than nodes).
    pub fn aims_at_a_client(self) -> bool {
        !matches!(self, Kind::Restart | Kind::Failover | Kind::ClockJump)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
