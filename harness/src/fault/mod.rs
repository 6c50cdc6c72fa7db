//! Faults the harness can cause: at fault points inside a client, and to
//! whole processes and nodes.

mod kind;
pub mod node;
mod plan;
pub mod proxy;

pub use kind::Kind;
pub use plan::{FaultPlan, Gate};
