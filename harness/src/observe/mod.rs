//! Observers: what a run saw, measured from the run itself.

mod diagram;
mod ledger;
mod monitor;
mod timeline;
mod verdict;

pub use diagram::sequence_diagram;
pub use ledger::{Entry, ForeignDelete, Ledger, Overlap, short};
pub use monitor::NodeWatcher;
pub use timeline::{Event, Repeated, Timeline};
pub use verdict::{Finding, Verdict};
