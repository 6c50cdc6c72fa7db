//! The fault-injection harness: real Redis servers, real faults, measured
//! verdicts.
//!
//! - [`server`]: Redis nodes: `redis-server` processes on loopback ports
//!   that die with the test (even on panic or `kill -9` of the test), or
//!   containers (`LOCKSTAGES_BACKEND=docker`, on testcontainers), each run
//!   on a Docker network of its own and removed by a reaper; with kill,
//!   pause and restart (and, for containers, a real network disconnect); or
//!   a reader's own server (`LOCKSTAGES_REDIS_URL`), never faulted;
//! - [`topology`]: the shapes of servers a story runs on (one node,
//!   Redlock's masters, master + replica, master + two replicas + three
//!   Sentinels that decide the failover, a Redis Cluster of three masters
//!   and three replicas that decides its own);
//! - [`fault`]: fault-point hooks (crash, pause until released), a TCP
//!   proxy that delays replies or cuts one client off, and what is done to
//!   a node (kill, restart, clock jump);
//! - [`holder`]: lock holders in processes of their own, for `kill -9` and
//!   SIGSTOP, driven over a line protocol written down once
//!   ([`holder::protocol`]); a row of the matrix may be any program that
//!   speaks it (a library's adapter, a reader's own lock), every client of
//!   its stories a holder process;
//! - [`workload`]: the articles' stock deduction on a database node;
//! - [`guard`]: the release that runs on every path (drop, error, panic);
//! - [`observe`]: the servers' own record (each node's `MONITOR` and
//!   keyspace notifications, who wrote and deleted each key, Sentinel and
//!   Cluster events) and the timeline with the clients' replies, also drawn
//!   as a Mermaid sequence diagram;
//! - [`history`]: the one record of a run: every client operation as
//!   invoke then ok / fail / info, what was done to the clients, what the
//!   servers recorded, the final read;
//! - [`check`]: the one judge: checkers over a history, the only code that
//!   turns records into findings, one [`Finding`](check::Finding) type;
//! - [`scenario`]: the fault stories, runnable against any stage; each
//!   returns its record, and [`Scenario::play`] has it judged;
//! - [`control`]: stage 0, the same workload without a lock;
//! - [`explore`]: random fault schedules against many clients, a recorded
//!   history, and checkers that judge the history alone (Jepsen-style).
//!
//! The harness drives stages only through [`lockcore`]'s contract and
//! depends on none of them.

pub mod check;
pub mod client;
pub mod control;
pub mod error;
pub mod explore;
pub mod fault;
pub mod guard;
pub mod history;
pub mod holder;
pub mod holder_child;
pub mod observe;
pub mod process;
pub mod scenario;
pub mod server;
pub mod topology;
pub mod workload;

pub use client::{Client, ClientFactory};
pub use error::{HarnessError, Result};
pub use guard::Released;
pub use scenario::{FlightRecorder, Outcome, Run, SCENARIOS, Scenario, ScenarioEnv, Timing};
