//! Observers: what a run saw, measured from the run itself.

mod ledger;
mod monitor;
mod sentinel;
mod timeline;
mod verdict;

pub use ledger::{Entry, ForeignDelete, Ledger, Overlap, short};
pub use monitor::NodeWatcher;
pub use sentinel::{SentinelWatcher, Switches, wait_for_switch};
pub use timeline::{Event, Timeline};
pub use verdict::{Finding, Verdict};
