//! The timeline: one line per thing that happened, from every source.
//!
//! Redis's own view (each node's `MONITOR`, key expiries) and the harness's
//! (acquired, paused, killed, failover) are merged by wall-clock time and
//! printed relative to the start:
//!
//! ```text
//! T+305ms  client-B  [lock] SET lock:stock 9a2e… NX PX 300 -> OK
//! ```
//!
//! The answer after `->` is what the client received: `MONITOR` shows what
//! a server was sent, not what it said back, so clients made by the harness
//! report their replies (a [`ReplyLog`]) and each is paired with its
//! command when the timeline is printed.

use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use lockcore::{ReplyLog, SeenReply};
use redis::Value;

use super::KeyRecord;

mod fold;

use fold::{fold, fold_for_reading};

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

impl Event {
    /// The same thing again: same actor, node and text.
    pub fn same_as(&self, other: &Event) -> bool {
        self.actor == other.actor && self.node == other.node && self.text == other.text
    }
}

/// An event, a run of the same event back to back, or a client's attempt
/// made again and again ([`fold`](self::fold) says which).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repeated {
    /// The first of the run; for repeated attempts, a line that says so.
    pub event: Event,
    /// How many times it happened (1: once).
    pub count: usize,
    /// When the last of the run happened.
    pub last: SystemTime,
    /// For repeated attempts, one attempt's lines (what a diagram's `loop`
    /// draws); empty otherwise.
    pub again: Vec<Event>,
}

/// A reply a client received, waiting to be paired with its command.
#[derive(Debug, Clone)]
struct Reply {
    sent: SystemTime,
    at: SystemTime,
    client: String,
    url: String,
    command: String,
    text: String,
}

/// Where the replies of a cluster client's connection are queued: it
/// does not say which node answered.
const ANY_NODE: &str = "*";

/// A shared, append-only log of events. Clones share it.
#[derive(Debug, Clone)]
pub struct Timeline {
    start: SystemTime,
    events: Arc<Mutex<Vec<Event>>>,
    replies: Arc<Mutex<Vec<Reply>>>,
    /// Node label of every URL clients connect to (a node, or a proxy
    /// in front of one).
    nodes: Arc<Mutex<HashMap<String, String>>>,
    /// What the servers did to their keys, as their watchers saw it.
    keys: KeyRecord,
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
            replies: Arc::default(),
            nodes: Arc::default(),
            keys: KeyRecord::default(),
        }
    }

    /// The servers' own record of their keys (who wrote, deleted, expired).
    pub fn key_record(&self) -> KeyRecord {
        self.keys.clone()
    }

    /// Says that clients connecting to `url` talk to the node `label`.
    pub fn name_node(&self, url: &str, label: &str) {
        lock(&self.nodes).insert(url.to_owned(), label.to_owned());
    }

    /// A reply log for clients' connections: what they are answered ends
    /// up after `->` on their command's line.
    pub fn reply_log(&self) -> ReplyLog {
        let replies = self.replies.clone();
        Arc::new(move |seen: SeenReply<'_>| {
            let command = seen
                .command
                .args_iter()
                .next()
                .map(|arg| match arg {
                    redis::Arg::Simple(bytes) => {
                        String::from_utf8_lossy(bytes).to_ascii_uppercase()
                    }
                    _ => String::new(),
                })
                .unwrap_or_default();
            lock(&replies).push(Reply {
                sent: seen.sent,
                at: SystemTime::now(),
                client: seen.client.to_owned(),
                url: seen.url.to_owned(),
                command,
                text: render_reply(seen.reply),
            });
        })
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

    /// Every event so far, in time order, commands with their replies.
    pub fn events(&self) -> Vec<Event> {
        let mut events = lock(&self.events).clone();
        events.sort_by_key(|e| e.at);
        self.pair_replies(&mut events);
        events
    }

    /// Appends `-> reply` to each command line that has one. Replies of one
    /// client from one node come in the order its commands ran there, and a
    /// command ran after its request was sent and before its reply came
    /// back; a request abandoned after a timeout has no reply, and the next
    /// reply, sent later, cannot be mistaken for its.
    fn pair_replies(&self, events: &mut [Event]) {
        let nodes = lock(&self.nodes).clone();
        let mut queues: HashMap<(String, String), VecDeque<Reply>> = HashMap::new();
        let mut replies = lock(&self.replies).clone();
        replies.sort_by_key(|r| r.at);
        for reply in replies {
            // A cluster client's reply may come from any of its nodes: it
            // is paired with the client's next command, wherever it ran.
            let node = if reply.url.starts_with(lockcore::CLUSTER_SCHEME) {
                Some(ANY_NODE.to_owned())
            } else {
                nodes.get(&reply.url).cloned()
            };
            if let Some(node) = node {
                queues
                    .entry((reply.client.clone(), node))
                    .or_default()
                    .push_back(reply);
            }
        }
        let is_command =
            |e: &Event| e.node.is_some() && e.actor != "redis" && !e.text.starts_with(' ');
        for event in events.iter_mut().filter(|e| is_command(e)) {
            let command = event
                .text
                .split(' ')
                .next()
                .unwrap_or_default()
                .to_ascii_uppercase();
            // The node's own queue first, then the client's cluster
            // connection's, which any node may have answered.
            let node = event.node.clone().unwrap_or_default();
            for key in [node, ANY_NODE.to_owned()] {
                let Some(queue) = queues.get_mut(&(event.actor.clone(), key)) else {
                    continue;
                };
                // Replies received before this command ran answered something else.
                while queue.front().is_some_and(|r| r.at < event.at) {
                    queue.pop_front();
                }
                // The server ran the command between the request and its reply.
                let fits = queue
                    .front()
                    .is_some_and(|r| r.command == command && r.sent <= event.at);
                if fits && let Some(reply) = queue.pop_front() {
                    event.text = format!("{} -> {}", event.text, reply.text);
                    break;
                }
            }
        }
    }

    /// How many events match `counted` after the first event that matches
    /// `after` (none if nothing matches `after`): "renewals after the
    /// unlock", read from the timeline rather than from a clock.
    pub fn count_after(
        &self,
        after: impl Fn(&Event) -> bool,
        counted: impl Fn(&Event) -> bool,
    ) -> usize {
        let events = self.events();
        events
            .iter()
            .position(after)
            .map_or(0, |i| events[i + 1..].iter().filter(|e| counted(e)).count())
    }

    /// When it started, on the wall clock.
    pub fn start(&self) -> SystemTime {
        self.start
    }

    /// Time since the start.
    pub fn offset(&self, at: SystemTime) -> Duration {
        at.duration_since(self.start).unwrap_or_default()
    }

    /// The events with each run of the same event (a client retrying
    /// `SETNX`) and each client's repeated attempts folded into one, with
    /// its count and its last time: what the printed timeline and the
    /// sequence diagram show.
    pub fn folded(&self) -> Vec<Repeated> {
        fold(self.events())
    }

    /// The printed timeline, one event per line. A run of the same event,
    /// or of a client's same attempt, prints once, with its count and its
    /// last time.
    pub fn render(&self) -> String {
        self.render_part(Duration::ZERO, Duration::MAX, |_| true)
    }

    /// The printed timeline, only the events from `from` to `to` after the
    /// start that `keep` keeps (the part of a long run that shows one thing).
    pub fn render_part(
        &self,
        from: Duration,
        to: Duration,
        keep: impl Fn(&Event) -> bool,
    ) -> String {
        let events = self
            .events()
            .into_iter()
            .filter(|e| (from..=to).contains(&self.offset(e.at)) && keep(e));
        self.print(fold_for_reading(events))
    }

    /// The printed timeline with nothing folded: every line the run
    /// recorded (`run … --every-line`).
    pub fn render_every_line(&self) -> String {
        self.print(self.events().into_iter().map(|event| Repeated {
            last: event.at,
            count: 1,
            again: Vec::new(),
            event,
        }))
    }

    /// Whether the printed timeline folds anything: then it says how to
    /// see every line.
    pub fn folds_anything(&self) -> bool {
        fold_for_reading(self.events()).len() < self.events().len()
    }

    fn print(&self, runs: impl IntoIterator<Item = Repeated>) -> String {
        let mut out = String::new();
        for run in runs {
            let event = &run.event;
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
            if run.count > 1 || !run.again.is_empty() {
                let last = self.offset(run.last).as_millis();
                let _ = write!(out, "   (x{} until T+{last}ms)", run.count);
            }
            out.push('\n');
        }
        out
    }

    /// The events as text, one per line: microseconds since the start,
    /// actor, node (`-` for none) and text, separated by tabs. Replies are
    /// already paired, so [`Timeline::from_recorded`] gives back a timeline
    /// that renders exactly as this one: the book keeps its runs this way,
    /// so a change of format can be applied to them without running again.
    pub fn recorded(&self) -> String {
        self.events()
            .iter()
            .map(|e| {
                format!(
                    "{}\t{}\t{}\t{}\n",
                    self.offset(e.at).as_micros(),
                    e.actor,
                    e.node.as_deref().unwrap_or("-"),
                    e.text.replace(['\t', '\n'], " ")
                )
            })
            .collect()
    }

    /// A timeline read back from [`Timeline::recorded`]'s text; the error
    /// names the first line that is not in that format.
    pub fn from_recorded(text: &str) -> Result<Self, String> {
        let timeline = Self {
            start: SystemTime::UNIX_EPOCH,
            ..Self::new()
        };
        for (number, line) in text.lines().enumerate() {
            let mut fields = line.splitn(4, '\t');
            let (Some(micros), Some(actor), Some(node), Some(text)) =
                (fields.next(), fields.next(), fields.next(), fields.next())
            else {
                return Err(format!(
                    "line {}: expected 4 tab-separated fields",
                    number + 1
                ));
            };
            let micros: u64 = micros
                .parse()
                .map_err(|_| format!("line {}: `{micros}` is not a time", number + 1))?;
            let at = SystemTime::UNIX_EPOCH + Duration::from_micros(micros);
            let node = (node != "-").then_some(node);
            timeline.record_at(at, actor, node, text);
        }
        Ok(timeline)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Event>> {
        lock(&self.events)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// An answer as a timeline prints it: short, on one line.
fn render_reply(reply: Result<&Value, &redis::RedisError>) -> String {
    match reply {
        Ok(value) => render_value(value),
        Err(e) if e.is_timeout() => "(no answer in time)".to_owned(),
        Err(e) => e
            .code()
            .map_or_else(|| format!("error: {e}"), |code| format!("(error) {code}")),
    }
}

fn render_value(value: &Value) -> String {
    let text = match value {
        Value::Nil => "nil".to_owned(),
        Value::Okay => "OK".to_owned(),
        Value::Int(n) => n.to_string(),
        Value::SimpleString(s) => s.clone(),
        Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(render_value)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::ServerError(error) => return format!("(error) {}", error.code()),
        other => format!("{other:?}"),
    };
    if text.chars().count() > 16 {
        format!("{}…", text.chars().take(8).collect::<String>())
    } else {
        text
    }
}

/// The first eight characters of a value, for the timeline.
pub fn short(value: &str) -> String {
    if value.chars().count() > 8 {
        format!("{}…", value.chars().take(8).collect::<String>())
    } else {
        value.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_timeline_reads_back_and_renders_the_same() {
        let timeline = Timeline::new();
        timeline.record("harness", "stage4: TTL 300ms");
        for _ in 0..3 {
            timeline.record_at(
                SystemTime::now(),
                "client-B",
                Some("lock"),
                "SET lock:stock b NX PX 300 -> nil",
            );
        }
        timeline.record("client-B", "acquired the lock (value b)");
        let back = Timeline::from_recorded(&timeline.recorded()).expect("its own format");
        assert_eq!(back.render(), timeline.render());
        assert!(back.render().contains("(x3 until"), "{}", back.render());
    }

    #[test]
    fn a_line_in_another_format_is_named() {
        let error = Timeline::from_recorded("12\tharness\t-\tok\nT+5ms harness ok\n")
            .expect_err("not the recorded format");
        assert!(error.starts_with("line 2:"), "{error}");
    }
}
