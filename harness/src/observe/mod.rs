//! Observers: what the servers themselves recorded of a run (their
//! commands, their keys, their failovers), written into the run's record
//! ([`crate::history`]), and the timeline and the diagram drawn from that
//! record. They judge nothing: [`crate::check`] does.

mod cluster;
mod diagram;
mod keyspace;
mod monitor;
mod notifications;
mod sentinel;
mod timeline;

pub use cluster::{ClusterNode, ClusterWatcher, cluster_nodes, parse_cluster_nodes};
pub use diagram::sequence_diagram;
pub use keyspace::NodeKeys;
pub use monitor::NodeWatcher;
pub use notifications::BorrowedNotifications;
pub use sentinel::{SentinelWatcher, Switches, wait_for_switch};
pub use timeline::{Repeated, Timeline};
