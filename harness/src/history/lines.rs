//! The history's lines: what the run's sources said (each node's `MONITOR`
//! commands and expiries, the harness's and the clients' words), and the
//! replies the clients received. `MONITOR` shows what a server was sent, not
//! what it said back, so clients made by the harness report their replies
//! (a [`ReplyLog`]) and each is paired with its command's line
//! (`SET lock:stock 9a2e… NX PX 300 -> OK`).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use lockcore::{ReplyLog, SeenReply};
use redis::Value;

use super::{History, lock, short};

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

/// A reply a client received, waiting to be paired with its command.
#[derive(Debug, Clone)]
pub(super) struct Reply {
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

impl History {
    /// Says that clients connecting to `url` talk to the node `label`.
    pub fn name_node(&self, url: &str, label: &str) {
        lock(&self.nodes).insert(url.to_owned(), label.to_owned());
    }

    /// A reply log for clients' connections: what they are answered ends
    /// up after `->` on their command's line.
    pub fn reply_log(&self) -> ReplyLog {
        let replies = self.replies.clone();
        Arc::new(move |seen: SeenReply<'_>| {
            let command = match seen.command.args_iter().next() {
                Some(redis::Arg::Simple(name)) => {
                    String::from_utf8_lossy(name).to_ascii_uppercase()
                }
                _ => String::new(),
            };
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

    /// Adds a line, with its own time and node.
    pub fn record_at(
        &self,
        at: SystemTime,
        actor: &str,
        node: Option<&str>,
        text: impl Into<String>,
    ) {
        lock(&self.events).push(Event {
            at,
            actor: actor.to_owned(),
            node: node.map(str::to_owned),
            text: text.into(),
        });
    }

    /// Every line so far, in time order, commands with their replies.
    pub fn lines(&self) -> Vec<Event> {
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

    /// Time from the start to `at`.
    pub fn offset(&self, at: SystemTime) -> Duration {
        at.duration_since(self.start).unwrap_or_default()
    }
}

/// An answer as a line says it: short, on one line.
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
    short(&text, 16)
}
