//! Faults the harness can cause: at fault points inside a client, and to
//! whole processes, nodes and the ways between them.

mod kind;
pub(crate) mod link;
pub mod node;
mod plan;
pub mod proxy;

pub use kind::Kind;
pub use plan::{FaultPlan, Gate};
