//! Observers: what a run saw, measured from the run itself, and the judge
//! ([`judge()`]) that alone turns those records into findings.

mod judge;
mod keyspace;
mod ledger;
mod monitor;
mod timeline;
mod verdict;

pub use judge::{Evidence, judge};
pub use keyspace::{Change, KeyChange, KeyRecord, NodeKeys};
pub use ledger::{Ask, Entry, ForeignDelete, Ledger, Overlap, short};
pub use monitor::NodeWatcher;
pub use timeline::{Event, Timeline};
pub use verdict::{Finding, Verdict};
