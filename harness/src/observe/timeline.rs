//! The timeline: one line per thing that happened, from every source.
//!
//! Redis's own view (each node's `MONITOR`, key expiries) and the harness's
//! (acquired, paused, killed, failover) are merged by wall-clock time and
//! printed relative to the start:
//!
//! ```text
//! T+305ms  client-B  [lock] SET lock:stock 9a2e… NX PX 300
//! ```

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// Who did it, where, and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// When it happened (wall clock: `MONITOR` reports server wall time).
    pub at: SystemTime,
    /// `client-A`, `harness`, `redis`…
    pub actor: String,
    /// The node it happened on, when it happened on one.
    pub node: Option<String>,
    /// What happened.
    pub text: String,
}

/// A shared, append-only log of events. Clones share it.
#[derive(Debug, Clone)]
pub struct Timeline {
    start: SystemTime,
    events: Arc<Mutex<Vec<Event>>>,
}

impl Default for Timeline {
    fn default() -> Self {
        Self::new()
    }
}

impl Timeline {
    /// An empty timeline starting now.
    pub fn new() -> Self {
        Self {
            start: SystemTime::now(),
            events: Arc::default(),
        }
    }

    /// Records something the harness did or saw, now.
    pub fn record(&self, actor: &str, text: impl Into<String>) {
        self.record_at(SystemTime::now(), actor, None, text);
    }

    /// Records an event with its own time and node.
    pub fn record_at(
        &self,
        at: SystemTime,
        actor: &str,
        node: Option<&str>,
        text: impl Into<String>,
    ) {
        self.lock().push(Event {
            at,
            actor: actor.to_owned(),
            node: node.map(str::to_owned),
            text: text.into(),
        });
    }

    /// Every event so far, in time order.
    pub fn events(&self) -> Vec<Event> {
        let mut events = self.lock().clone();
        events.sort_by_key(|e| e.at);
        events
    }

    /// Time since the start.
    pub fn offset(&self, at: SystemTime) -> Duration {
        at.duration_since(self.start).unwrap_or_default()
    }

    /// The printed timeline, one event per line. A run of the same event
    /// (a client retrying `SETNX`) prints once, with its count and its last
    /// time.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let events = self.events();
        let mut i = 0;
        while i < events.len() {
            let event = &events[i];
            let same = |other: &Event| {
                other.actor == event.actor && other.node == event.node && other.text == event.text
            };
            let repeats = events[i + 1..].iter().take_while(|e| same(e)).count();
            let node = event
                .node
                .as_deref()
                .map(|n| format!("[{n}] "))
                .unwrap_or_default();
            let _ = write!(
                out,
                "T+{:<6} {:<9} {node}{}",
                format!("{}ms", self.offset(event.at).as_millis()),
                event.actor,
                event.text
            );
            if repeats > 0 {
                let last = self.offset(events[i + repeats].at).as_millis();
                let _ = write!(out, "   (x{} until T+{last}ms)", repeats + 1);
            }
            out.push('\n');
            i += repeats + 1;
        }
        out
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Event>> {
        self.events
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
