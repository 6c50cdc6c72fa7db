//! Observers: what the servers themselves recorded of a run (their
//! commands, their keys, their failovers), and the timeline that tells the
//! run in words. They judge nothing: [`crate::check`] does.

mod cluster;
mod diagram;
mod keyspace;
mod monitor;
mod notifications;
mod sentinel;
mod timeline;

pub use cluster::{ClusterNode, ClusterWatcher, cluster_nodes, parse_cluster_nodes};
pub use diagram::sequence_diagram;
pub use keyspace::{Change, KeyChange, KeyRecord, NodeKeys};
pub use monitor::NodeWatcher;
pub use notifications::BorrowedNotifications;
pub use sentinel::{SentinelWatcher, Switches, wait_for_switch};
pub use timeline::short;
pub use timeline::{Event, Repeated, Timeline};
