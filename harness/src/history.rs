//! The history: the one record of a run, a scripted story's or an explorer
//! trial's, in one time order.
//!
//! As in Jepsen, each client operation is recorded twice: when it is
//! *invoked*, and when it *completes*: `ok`, `fail` (it surely did not
//! happen: the lock was not granted, the write was refused) or `info` (we do
//! not know: a timeout, a crash, a lost connection; it may have happened).
//! Beside the clients' operations the history holds what the harness and
//! the nemesis did to them (a fault aimed at a client, a death, a patience
//! window opened), what the servers recorded (each lock node's `MONITOR`
//! and keyspace notifications, and [`KeyRecord`], who wrote and deleted
//! each key), and a final read of the stock and the orders.
//!
//! Beside its entries it keeps the run's lines ([`Event`]: what the
//! servers, the harness and the clients said, each client entry among them
//! in words); the timeline and the diagram are drawn from them. Times are monotonic, counted from the run's start (`T+…ms`). The
//! checkers ([`crate::check`]) read the history and nothing else; it is
//! also written as JSON lines, one entry per line.
//!
//! The names of the kinds of fault ([`fault_kind`]) are the record's words:
//! the nemesis writes them here and the checkers read them here, so neither
//! the record nor the judge knows the code that makes faults.

pub mod fault_kind;
mod keys;
mod lines;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use lockcore::{Acquired, LockError, Release};
use serde_json::{Value, json};
use tokio::time::Instant;

use fault_kind::Kind;
pub use keys::{Change, KeyChange, KeyRecord};
pub use lines::Event;

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

impl Detail {
    /// A completion that says `word` (with a number, for some).
    pub fn word(word: &str, number: Option<i64>) -> Self {
        Self {
            result: Some(word.to_owned()),
            number,
            ..Self::default()
        }
    }
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
        /// The lock's key, as the servers' record names it.
        lock_key: String,
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
    /// The harness opens a window of `patience` in which `process` asks
    /// for the lock: if nobody acquires meanwhile while the key stays, that
    /// is a deadlock.
    Ask {
        /// How long the client is prepared to wait.
        patience: Duration,
    },
    /// The lock's server has seen `process` ask for the lock, after every
    /// client already in line: it takes its place at the end of the line.
    /// A story that promises an order lines its waiters up one at a time,
    /// each once the server has seen the one before it ask; the order
    /// checker ([`crate::check::order`]) holds the grants to that line.
    InLine,
    /// The client died holding whatever it held (a crash at a fault point,
    /// `kill -9`).
    Died,
    /// The client left its critical section without releasing (its
    /// business failed and the release was skipped).
    Left,
    /// The final read, once every client has stopped.
    Final {
        /// Orders recorded.
        orders: i64,
        /// Stock left.
        stock_left: i64,
        /// Every order: the seller, and after a space the purchase's
        /// request id when it carried one (`client-B request-1`).
        placed: Vec<String>,
        /// The second applications of a request id that the resource
        /// refused, as the orders they would have been.
        refused: Vec<String>,
    },
}

/// One entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its place in the history.
    pub index: usize,
    /// When, since the run's start.
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

    /// Whether this entry is `op` at `phase`.
    pub fn is(&self, op: Op, phase: Phase) -> bool {
        matches!(self.op(), Some((o, p, _)) if o == op && p == phase)
    }

    /// Whether this entry is the completion of an `op`, however it ended.
    pub fn completes(&self, op: Op) -> bool {
        matches!(self.op(), Some((o, p, _)) if o == op && p != Phase::Invoke)
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
                    detail
                        .value
                        .as_ref()
                        .map(|v| format!("value {}", short(v, 8))),
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
            What::Ask { patience } => format!("asks for up to {}ms", patience.as_millis()),
            What::InLine => "in line (the lock's server saw it ask)".to_owned(),
            What::Died => "died".to_owned(),
            What::Left => "left without releasing".to_owned(),
            What::Final {
                orders, stock_left, ..
            } => format!("final read: {orders} orders, stock left {stock_left}"),
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
                lock_key,
            } => json!({"type": "setup", "stage": stage, "ttl_ms": ttl.as_millis() as u64,
                        "stock": stock, "lock_nodes": lock_nodes, "fencing": fencing,
                        "lock_key": lock_key}),
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
            What::Ask { patience } => {
                json!({"type": "ask", "patience_ms": patience.as_millis() as u64})
            }
            What::InLine => json!({"type": "in-line"}),
            What::Died => json!({"type": "died"}),
            What::Left => json!({"type": "left"}),
            What::Final {
                orders, stock_left, ..
            } => json!({"type": "final", "orders": orders, "stock_left": stock_left}),
        };
        if let (Value::Object(line), Value::Object(extra)) = (&mut line, extra) {
            line.extend(extra.into_iter().filter(|(_, v)| !v.is_null()));
        }
        line
    }
}

/// A run's history, shared by its clients, its harness and its nemesis;
/// clones share it.
#[derive(Debug, Clone)]
pub struct History {
    /// The run's start on the monotonic clock, for the entries' times.
    origin: Instant,
    /// The same moment on the wall clock, which the lines are stamped on.
    start: SystemTime,
    entries: Arc<Mutex<Vec<Entry>>>,
    /// The run's lines, in the order they were added.
    events: Arc<Mutex<Vec<Event>>>,
    /// The replies clients received, to pair with their commands' lines.
    replies: Arc<Mutex<Vec<lines::Reply>>>,
    /// The node label of each URL clients connect to (a node, its proxy).
    nodes: Arc<Mutex<HashMap<String, String>>>,
    /// What the servers did to their keys, as their watchers saw it.
    keys: KeyRecord,
}

impl Default for History {
    fn default() -> Self {
        Self::new()
    }
}

impl History {
    /// An empty history, its times counted from now.
    pub fn new() -> Self {
        Self::starting(SystemTime::now())
    }

    /// An empty history whose lines count from `start` (lines read back).
    pub fn starting(start: SystemTime) -> Self {
        Self {
            origin: Instant::now(),
            start,
            entries: Arc::default(),
            events: Arc::default(),
            replies: Arc::default(),
            nodes: Arc::default(),
            keys: KeyRecord::default(),
        }
    }

    /// A history of these entries (read back, or made by a test).
    pub fn of(entries: Vec<Entry>) -> Self {
        let history = Self::new();
        *history.lock() = entries;
        history
    }

    /// The wall-clock moment of `at` (the servers' record is stamped on the
    /// wall clock).
    pub fn wall(&self, at: Duration) -> SystemTime {
        self.start + at
    }

    /// The servers' record of their keys: who wrote and who deleted each.
    pub fn keys(&self) -> KeyRecord {
        self.keys.clone()
    }

    /// `process` says `text`: a line of the run, no entry of the history.
    pub fn narrate(&self, process: &str, text: impl Into<String>) {
        self.record_at(SystemTime::now(), process, None, text);
    }

    /// `process` was told it holds the lock.
    pub fn acquired(&self, process: &str, held: &Acquired) {
        let mut text = format!("acquired the lock (value {})", short(&held.value, 8));
        if let Some(token) = held.fencing_token {
            text.push_str(&format!(", fencing token {token}"));
        }
        if let Some(validity) = held.validity {
            text.push_str(&format!(", valid for {}ms", validity.as_millis()));
        }
        let detail = Detail {
            value: Some(held.value.clone()),
            token: held.fencing_token,
            ..Detail::default()
        };
        self.told(process, Op::Acquire, Phase::Ok, detail, text);
    }

    /// The lock told `process` "not acquired" (it did not error).
    pub fn not_acquired(&self, process: &str) {
        let text = "was not granted the lock".to_owned();
        self.told(process, Op::Acquire, Phase::Fail, Detail::default(), text);
    }

    /// `process` leaves its critical section and sends its release.
    pub fn release_sent(&self, process: &str) {
        let text = "leaves the critical section and releases".to_owned();
        self.told(process, Op::Release, Phase::Invoke, Detail::default(), text);
    }

    /// `process`'s release came back with `outcome`. A release some masters
    /// did not answer is `info`: whether the lock was still ours is unknown.
    pub fn released(&self, process: &str, outcome: Release) {
        let (phase, word, text) = match outcome {
            Release::Deleted => (
                Phase::Ok,
                "deleted",
                "release deleted the lock key".to_owned(),
            ),
            Release::NothingDeleted => (Phase::Ok, "nothing", "release deleted nothing".to_owned()),
            Release::StillHeld(n) => (
                Phase::Ok,
                "still-held",
                format!("released one hold; still held {n} time(s)"),
            ),
            Release::Unconfirmed {
                deleted,
                not_ours,
                unreachable,
            } => (
                Phase::Info,
                "unconfirmed",
                format!(
                    "release UNCONFIRMED: {unreachable} master(s) unreachable (they may keep \
                     the key until it expires); deleted on {deleted}, not ours on {not_ours}"
                ),
            ),
        };
        let held = match outcome {
            Release::StillHeld(n) => Some(i64::from(n)),
            _ => None,
        };
        self.told(process, Op::Release, phase, Detail::word(word, held), text);
    }

    /// `process`'s release failed with `error`: surely not done when the
    /// lock refused it (not the owner), unknown otherwise.
    pub fn release_failed(&self, process: &str, error: &LockError) {
        let (phase, word, text) = match error {
            LockError::NotOwner => (
                Phase::Fail,
                "not-owner".to_owned(),
                "release REFUSED: not the owner".to_owned(),
            ),
            other => (
                Phase::Info,
                other.to_string(),
                format!("release failed: {other}"),
            ),
        };
        self.told(process, Op::Release, phase, Detail::word(&word, None), text);
    }

    /// `process` left its critical section without releasing; `why`.
    pub fn left(&self, process: &str, why: &str) {
        self.narrate(process, why);
        self.push(process, What::Left);
    }

    /// `process` died (`how`: "died at after-setnx", "KILLED with kill -9").
    pub fn died(&self, process: &str, how: &str) {
        self.narrate(process, how);
        self.push(process, What::Died);
    }

    /// The lock's server has seen `process` ask: it is now in line, behind
    /// every client that lined up before it.
    pub fn in_line(&self, process: &str) {
        self.narrate(process, "is in line: the lock's server has seen it ask");
        self.push(process, What::InLine);
    }

    /// `process` starts asking for the lock for up to `patience`.
    pub fn asking(&self, process: &str, patience: Duration) {
        let text = format!(
            "asks for the lock, waiting up to {}ms",
            patience.as_millis()
        );
        self.narrate(process, text);
        self.push(process, What::Ask { patience });
    }

    /// A fault of `kind` aimed at `process` begins; `what` says which.
    pub fn fault_began(&self, process: &str, kind: Kind, what: &str) {
        self.narrate(process, format!("FAULT begins: {what}"));
        self.nemesis(0, kind, "start", Some(process), what);
    }

    /// The fault of `kind` aimed at `process` is over.
    pub fn fault_ended(&self, process: &str, kind: Kind) {
        self.narrate(process, "fault over");
        self.nemesis(0, kind, "end", Some(process), "fault over");
    }

    /// A completion (or an invocation), said in words as `text`.
    fn told(&self, process: &str, op: Op, phase: Phase, detail: Detail, text: String) {
        self.narrate(process, text);
        self.push(process, What::Op { op, phase, detail });
    }

    /// Now, on the history's clock.
    pub fn now(&self) -> Duration {
        self.origin.elapsed()
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

    /// Adds what the lock nodes recorded (the lines of commands and
    /// expiries that happened on a node, the database excepted), then puts
    /// every entry in time order.
    pub fn absorb_servers(&self, lock_nodes: &[String]) {
        for event in self.lines() {
            let Some(node) = event.node.as_ref() else {
                continue;
            };
            if !lock_nodes.contains(node) {
                continue;
            }
            self.push_at(
                self.offset(event.at),
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

    fn lock(&self) -> MutexGuard<'_, Vec<Entry>> {
        lock(&self.entries)
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

/// What a run recorded, handed to the judge: its history (its lines with
/// it) and the numbers the scenario measured.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The one record.
    pub history: History,
    /// Numbers the scenario measured: `orders`, `initial_stock`,
    /// `pttl_after_death`…
    pub facts: BTreeMap<&'static str, i64>,
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

/// Locks a part of the record; one left poisoned by a client that panicked
/// still holds what was recorded, and is read all the same.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `value` as a line shows it: whole, or when it is longer than
/// `longest` characters (a UUID, a script), its first eight and `…`.
pub fn short(value: &str, longest: usize) -> String {
    if value.chars().count() > longest {
        format!("{}…", value.chars().take(8).collect::<String>())
    } else {
        value.to_owned()
    }
}
