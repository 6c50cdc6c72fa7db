//! Faults the harness can cause: at fault points inside a client, and to
//! whole processes and nodes.

pub mod node;
mod plan;
pub mod proxy;

pub use plan::{FaultPlan, Gate};
