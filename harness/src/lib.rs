//! The fault-injection harness: real Redis servers, real faults, measured
//! verdicts.
//!
//! - [`server`]: Redis nodes: `redis-server` processes on loopback ports
//!   that die with the test (even on panic or `kill -9` of the test), or
//!   containers (`LOCKSTAGES_BACKEND=docker`) removed by a reaper; with
//!   kill, pause and restart;
//! - [`fault`]: fault-point hooks (crash, pause until released) and a TCP
//!   proxy that delays replies or cuts one client off;
//! - [`holder`]: lock holders in processes of their own, for `kill -9` and
//!   SIGSTOP;
//! - [`workload`]: the articles' stock deduction on a database node;
//! - [`observe`]: the ledger, the observers (oversold, overlap, foreign
//!   delete, deadlock) and the timeline built from `MONITOR`, expiry
//!   notifications and the clients' replies, also drawn as a Mermaid
//!   sequence diagram;
//! - [`scenario`]: the fault stories, runnable against any stage, and the
//!   topologies they need (master + replica, Redlock's masters behind
//!   proxies);
//! - [`control`]: stage 0, the same workload without a lock.
//!
//! The harness drives stages only through [`lockcore`]'s contract and
//! depends on none of them.

pub mod client;
pub mod control;
pub mod error;
pub mod fault;
pub mod holder;
pub mod observe;
pub mod process;
pub mod scenario;
pub mod server;
pub mod workload;

pub use client::{Client, ClientFactory};
pub use error::{HarnessError, Result};
pub use scenario::{Outcome, Run, SCENARIOS, Scenario, ScenarioEnv, Timing};
