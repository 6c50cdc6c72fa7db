//! Observers: what a run saw, measured from the run itself.

mod ledger;
mod monitor;
mod timeline;
mod verdict;

pub use ledger::{Entry, ForeignDelete, Ledger, Overlap, short};
pub use monitor::NodeWatcher;
pub use timeline::{Event, Timeline};
pub use verdict::{Finding, Verdict};
