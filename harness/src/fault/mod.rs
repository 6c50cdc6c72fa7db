//! Faults the harness can cause: at fault points inside a client, and to
//! whole processes and nodes.

mod plan;
pub mod proxy;

pub use plan::{FaultPlan, Gate};
