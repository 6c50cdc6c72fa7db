//! Observers: what a run saw, measured from the run itself, and the judge
//! ([`judge()`]) that alone turns those records into findings.

mod cluster;
mod diagram;
mod judge;
mod keyspace;
mod ledger;
mod monitor;
mod notifications;
mod sentinel;
mod timeline;
mod verdict;

pub use cluster::{ClusterNode, ClusterWatcher, cluster_nodes, parse_cluster_nodes};
pub use diagram::sequence_diagram;
pub use judge::{Evidence, judge};
pub use keyspace::{Change, KeyChange, KeyRecord, NodeKeys};
pub use ledger::{Ask, Entry, ForeignDelete, Ledger, Overlap, short};
pub use monitor::NodeWatcher;
pub use notifications::BorrowedNotifications;
pub use sentinel::{SentinelWatcher, Switches, wait_for_switch};
pub use timeline::{Event, Repeated, Timeline};
pub use verdict::{Finding, Verdict};
