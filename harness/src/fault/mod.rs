//! Faults the harness can cause: at fault points inside a client, and to
//! whole processes, nodes and the ways between them.

pub(crate) mod link;
pub mod node;
mod plan;
pub mod proxy;
pub(crate) mod relay;

pub use plan::{FaultPlan, Gate};
