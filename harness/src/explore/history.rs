//! The history: everything a trial observed, in one time order.
//!
//! As in Jepsen, each client operation is recorded twice: when it is
//! *invoked*, and when it *completes*: `ok`, `fail` (it surely did not
//! happen: the lock was not granted, the write was refused) or `info` (we do
//! not know: a timeout, a crash, a lost connection; it may have happened).
//! Beside the clients' operations the history holds what the nemesis did,
//! what the servers recorded (each lock node's `MONITOR` and key-expiry
//! notifications), and a final read of the stock and the orders.
//!
//! Times are monotonic, counted on the same origin as the trial's timeline
//! (`T+…ms`), so a history slice and the timeline can be read side by side.
//! The checkers read nothing else; the history is also written as JSON
//! lines, one entry per line.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use tokio::time::Instant;

use super::schedule::Kind;
use crate::observe::Timeline;

/// A client operation of the workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Take the lock (with the stage's own waiting).
    Acquire,
    /// `GET stock` from the database.
    Read,
    /// Write the stock back one lower and record an order.
    Sell,
    /// Give the lock back.
    Release,
}

impl Op {
    /// Its name in the history.
    pub fn name(self) -> &'static str {
        match self {
            Op::Acquire => "acquire",
            Op::Read => "read",
            Op::Sell => "sell",
            Op::Release => "release",
        }
    }
}

/// Where an operation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Asked for.
    Invoke,
    /// Done, as asked.
    Ok,
    /// Surely not done.
    Fail,
    /// Unknown: may or may not have happened.
    Info,
}

impl Phase {
    /// Its name in the history.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Invoke => "invoke",
            Phase::Ok => "ok",
            Phase::Fail => "fail",
            Phase::Info => "info",
        }
    }
}

/// What an operation carried or returned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Detail {
    /// The lock value (acquire ok).
    pub value: Option<String>,
    /// The fencing token: granted (acquire ok), shown to the resource (read,
    /// sell).
    pub token: Option<u64>,
    /// A number: the stock read, the stock a sale started from.
    pub number: Option<i64>,
    /// A word: `sold`, `sold-out`, `rejected`, `deleted`, `nothing`,
    /// `still-held`, `not-owner`, or the error of an `info`.
    pub result: Option<String>,
}

/// One line of the history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum What {
    /// How the trial was set up.
    Setup {
        /// The stage's name.
        stage: String,
        /// The lock's TTL.
        ttl: Duration,
        /// Items for sale at the start.
        stock: i64,
        /// The labels of the lock's nodes (`lock`, `node1`…, `master`).
        lock_nodes: Vec<String>,
        /// How the resource checks fencing tokens (stage 8).
        fencing: &'static str,
    },
    /// A client operation.
    Op {
        /// Which.
        op: Op,
        /// Invoke or completion.
        phase: Phase,
        /// What it carried or returned.
        detail: Detail,
    },
    /// The nemesis started or ended fault number `fault`.
    Nemesis {
        /// Its number in the schedule.
        fault: usize,
        /// Its kind.
        kind: Kind,
        /// `start` or `end`.
        phase: &'static str,
        /// The client it struck, if it struck one.
        target: Option<String>,
        /// What it did.
        text: String,
    },
    /// A server recorded this (a command from `process`, or an expiry).
    Server {
        /// The node's label.
        node: String,
        /// The command as `MONITOR` printed it, shortened.
        command: String,
    },
    /// The final read, once every client has stopped.
    Final {
        /// Orders recorded.
        orders: i64,
        /// Stock left.
        stock_left: i64,
    },
}

/// One entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its place in the history.
    pub index: usize,
    /// When, on the trial timeline's origin.
    pub at: Duration,
    /// `client-A`…, `nemesis`, `harness`, or (server lines) the client the
    /// server names, or `redis` for an expiry.
    pub process: String,
    /// What happened.
    pub what: What,
}

impl Entry {
    /// The operation, if this entry is one.
    pub fn op(&self) -> Option<(Op, Phase, &Detail)> {
        match &self.what {
            What::Op { op, phase, detail } => Some((*op, *phase, detail)),
            _ => None,
        }
    }

    /// One readable line.
    pub fn render(&self) -> String {
        let head = format!(
            "  {:>4} T+{:<7} {:<9}",
            self.index,
            format!("{}ms", self.at.as_millis()),
            self.process
        );
        let body = match &self.what {
            What::Setup {
                stage, ttl, stock, ..
            } => format!("setup {stage}, TTL {}ms, stock {stock}", ttl.as_millis()),
            What::Op { op, phase, detail } => {
                let mut text = format!("{} {}", phase.name(), op.name());
                for part in [
                    detail.value.as_ref().map(|v| format!("value {}", short(v))),
                    detail.token.map(|t| format!("token {t}")),
                    detail.number.map(|n| format!("stock {n}")),
                    detail.result.clone(),
                ]
                .into_iter()
                .flatten()
                {
                    text.push_str(&format!(" {part}"));
                }
                text
            }
            What::Nemesis {
                fault, phase, text, ..
            } => format!("fault #{fault} {phase}: {text}"),
            What::Server { node, command } => format!("[{node}] {command}"),
            What::Final { orders, stock_left } => {
                format!("final read: {orders} orders, stock left {stock_left}")
            }
        };
        format!("{head} {body}")
    }

    /// The entry as one JSON object.
    pub fn json(&self) -> Value {
        let mut line = json!({
            "index": self.index,
            "at_us": u64::try_from(self.at.as_micros()).unwrap_or(u64::MAX),
            "process": self.process,
        });
        let extra = match &self.what {
            What::Setup {
                stage,
                ttl,
                stock,
                lock_nodes,
                fencing,
            } => json!({"type": "setup", "stage": stage, "ttl_ms": ttl.as_millis() as u64,
                        "stock": stock, "lock_nodes": lock_nodes, "fencing": fencing}),
            What::Op { op, phase, detail } => json!({"type": phase.name(), "f": op.name(),
                "value": detail.value, "token": detail.token, "number": detail.number,
                "result": detail.result}),
            What::Nemesis {
                fault,
                kind,
                phase,
                target,
                text,
            } => json!({"type": "nemesis", "fault": fault, "kind": kind.name(),
                        "phase": phase, "target": target, "text": text}),
            What::Server { node, command } => {
                json!({"type": "server", "node": node, "command": command})
            }
            What::Final { orders, stock_left } => {
                json!({"type": "final", "orders": orders, "stock_left": stock_left})
            }
        };
        if let (Value::Object(line), Value::Object(extra)) = (&mut line, extra) {
            line.extend(extra.into_iter().filter(|(_, v)| !v.is_null()));
        }
        line
    }
}

fn short(value: &str) -> String {
    crate::observe::short(value)
}

/// A trial's history, shared by its clients and its nemesis; clones share it.
#[derive(Debug, Clone)]
pub struct History {
    origin: Instant,
    origin_offset: Duration,
    entries: Arc<Mutex<Vec<Entry>>>,
}

impl History {
    /// An empty history whose times are on `timeline`'s origin.
    pub fn new(timeline: &Timeline) -> Self {
        Self {
            origin: Instant::now(),
            origin_offset: timeline.offset(SystemTime::now()),
            entries: Arc::default(),
        }
    }

    /// A history of these entries (read back, or made by a test).
    pub fn of(entries: Vec<Entry>) -> Self {
        Self {
            origin: Instant::now(),
            origin_offset: Duration::ZERO,
            entries: Arc::new(Mutex::new(entries)),
        }
    }

    /// Now, on the history's clock.
    pub fn now(&self) -> Duration {
        self.origin_offset + self.origin.elapsed()
    }

    /// Appends `what` by `process`, now.
    pub fn push(&self, process: &str, what: What) {
        let at = self.now();
        self.push_at(at, process, what);
    }

    fn push_at(&self, at: Duration, process: &str, what: What) {
        let mut entries = self.lock();
        let index = entries.len();
        entries.push(Entry {
            index,
            at,
            process: process.to_owned(),
            what,
        });
    }

    /// `process` invokes `op`.
    pub fn invoke(&self, process: &str, op: Op, detail: Detail) {
        self.push(
            process,
            What::Op {
                op,
                phase: Phase::Invoke,
                detail,
            },
        );
    }

    /// `process`'s `op` completed.
    pub fn complete(&self, process: &str, op: Op, phase: Phase, detail: Detail) {
        self.push(process, What::Op { op, phase, detail });
    }

    /// The nemesis did something.
    pub fn nemesis(
        &self,
        fault: usize,
        kind: Kind,
        phase: &'static str,
        target: Option<&str>,
        text: &str,
    ) {
        self.push(
            "nemesis",
            What::Nemesis {
                fault,
                kind,
                phase,
                target: target.map(str::to_owned),
                text: text.to_owned(),
            },
        );
    }

    /// Adds what the lock nodes recorded (commands and expiries in
    /// `timeline` that happened on a node, the database excepted), then
    /// puts every entry in time order.
    pub fn absorb_servers(&self, timeline: &Timeline, lock_nodes: &[String]) {
        for event in timeline.events() {
            let Some(node) = event.node.as_ref() else {
                continue;
            };
            if !lock_nodes.contains(node) {
                continue;
            }
            self.push_at(
                timeline.offset(event.at),
                &event.actor,
                What::Server {
                    node: node.clone(),
                    command: event.text.trim().to_owned(),
                },
            );
        }
        let mut entries = self.lock();
        entries.sort_by_key(|e| (e.at, e.index));
        for (i, entry) in entries.iter_mut().enumerate() {
            entry.index = i;
        }
    }

    /// Every entry, in order.
    pub fn entries(&self) -> Vec<Entry> {
        self.lock().clone()
    }

    /// The history as JSON lines, each tagged with `trial`.
    pub fn json_lines(&self, trial: &str) -> String {
        self.lock()
            .iter()
            .map(|e| {
                let mut line = e.json();
                if let Value::Object(map) = &mut line {
                    map.insert("trial".into(), Value::String(trial.to_owned()));
                }
                format!("{line}\n")
            })
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Entry>> {
        self.entries
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// One operation: its invocation and, unless the trial ended first, its
/// completion.
#[derive(Debug, Clone)]
pub struct Operation {
    /// The client.
    pub process: String,
    /// Which operation.
    pub op: Op,
    /// The invoke entry.
    pub invoke: Entry,
    /// The completion entry.
    pub done: Option<Entry>,
}

impl Operation {
    /// How it completed (`None`: never).
    pub fn phase(&self) -> Option<Phase> {
        self.done.as_ref().and_then(|d| d.op()).map(|(_, p, _)| p)
    }

    /// The completion's detail (empty when none).
    pub fn result(&self) -> Detail {
        self.done
            .as_ref()
            .and_then(|d| d.op())
            .map(|(_, _, d)| d.clone())
            .unwrap_or_default()
    }
}

/// Pairs each invocation with its completion: a client does one operation
/// at a time, so its next completion of the same operation is the one.
pub fn operations(entries: &[Entry]) -> Vec<Operation> {
    let mut done: Vec<Operation> = Vec::new();
    let mut open: Vec<Operation> = Vec::new();
    for entry in entries {
        let Some((op, phase, _)) = entry.op() else {
            continue;
        };
        if phase == Phase::Invoke {
            open.push(Operation {
                process: entry.process.clone(),
                op,
                invoke: entry.clone(),
                done: None,
            });
        } else if let Some(at) = open
            .iter()
            .position(|o| o.process == entry.process && o.op == op)
        {
            let mut operation = open.remove(at);
            operation.done = Some(entry.clone());
            done.push(operation);
        }
    }
    done.extend(open);
    done.sort_by_key(|o| o.invoke.index);
    done
}

/// The setup entry's TTL and lock nodes (defaults if there is none).
pub fn setup(entries: &[Entry]) -> (Duration, i64, Vec<String>) {
    entries
        .iter()
        .find_map(|e| match &e.what {
            What::Setup {
                ttl,
                stock,
                lock_nodes,
                ..
            } => Some((*ttl, *stock, lock_nodes.clone())),
            _ => None,
        })
        .unwrap_or((Duration::from_millis(300), 0, Vec::new()))
}
