//! What Redis really saw: `MONITOR` and key-expiry notifications of a node,
//! fed into the [`Timeline`].
//!
//! `MONITOR` names a connection only by its address, so the watcher learns
//! names from the `CLIENT SETNAME` each client sends first. Commands run by a
//! Lua script appear as `lua>` lines under the client that sent the script.

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_util::StreamExt;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::Timeline;
use crate::error::{HarnessError, Result};

/// Commands that are plumbing, not part of any story.
const HIDDEN: &[&str] = &[
    "CLIENT",
    "PING",
    "ECHO",
    "CONFIG",
    "INFO",
    "HELLO",
    "SELECT",
    "SUBSCRIBE",
    "MONITOR",
    "REPLCONF",
    "PSYNC",
    "SYNC",
    "COMMAND",
    // Asked by clients that find the master through Sentinel.
    "ROLE",
];

/// The channel Sentinels announce themselves on, through every server they
/// watch, every two seconds: plumbing too.
const SENTINEL_HELLO: &str = "__sentinel__:hello";

const FLUSH_MARKER: &str = "lockstages-timeline-flush";
const FLUSH_WITHIN: Duration = Duration::from_secs(5);

/// Watches one node until dropped.
#[derive(Debug)]
pub struct NodeWatcher {
    url: String,
    seen_markers: watch::Receiver<u64>,
    next_marker: u64,
    tasks: Vec<JoinHandle<()>>,
}

impl NodeWatcher {
    /// Starts watching the node at `url` (reachable at `addr`), labelled `node`.
    pub async fn start(url: &str, node: &str, timeline: &Timeline) -> Result<Self> {
        timeline.name_node(url, node);
        let client = redis::Client::open(url)?;
        let addr = client.get_connection_info().addr().to_string();
        let addr = addr.trim_start_matches("redis://").to_owned();

        // Expiries: `Ex` publishes every expired key on __keyevent@0__:expired.
        let mut admin = client.get_multiplexed_async_connection().await?;
        redis::cmd("CONFIG")
            .arg("SET")
            .arg("notify-keyspace-events")
            .arg("Ex")
            .query_async::<()>(&mut admin)
            .await?;
        let mut pubsub = client.get_async_pubsub().await?;
        pubsub.subscribe("__keyevent@0__:expired").await?;
        let expiry_timeline = timeline.clone();
        let expiry_node = node.to_owned();
        let expiries = tokio::spawn(async move {
            let mut messages = pubsub.into_on_message();
            while let Some(message) = messages.next().await {
                let key: String = message.get_payload().unwrap_or_default();
                expiry_timeline.record_at(
                    SystemTime::now(),
                    "redis",
                    Some(&expiry_node),
                    format!("expired {key} (TTL ran out)"),
                );
            }
        });

        let mut stream = TcpStream::connect(&addr)
            .await
            .map_err(|e| HarnessError::ServerStart(format!("MONITOR connection to {addr}: {e}")))?;
        stream.write_all(b"MONITOR\r\n").await?;
        let mut lines = BufReader::new(stream).lines();
        match lines.next_line().await? {
            Some(line) if line == "+OK" => {}
            other => {
                return Err(HarnessError::ServerStart(format!(
                    "MONITOR answered {other:?}"
                )));
            }
        }
        let (seen_tx, seen_markers) = watch::channel(0u64);
        let monitor_timeline = timeline.clone();
        let monitor_node = node.to_owned();
        let monitor = tokio::spawn(async move {
            let mut names: HashMap<String, String> = HashMap::new();
            let mut last_client = String::from("?");
            while let Ok(Some(line)) = lines.next_line().await {
                let Some(seen) = parse_monitor_line(&line) else {
                    continue;
                };
                let command = seen
                    .args
                    .first()
                    .map(|c| c.to_ascii_uppercase())
                    .unwrap_or_default();
                if command == "ECHO"
                    && let Some(n) = seen.args.get(1).and_then(|m| m.strip_prefix(FLUSH_MARKER))
                {
                    let _ = seen_tx.send(n.trim_start_matches('-').parse().unwrap_or(0));
                }
                if command == "CLIENT"
                    && seen
                        .args
                        .get(1)
                        .is_some_and(|a| a.eq_ignore_ascii_case("SETNAME"))
                    && let Some(name) = seen.args.get(2)
                {
                    names.insert(seen.source.clone(), name.clone());
                }
                if HIDDEN.contains(&command.as_str())
                    || (command == "PUBLISH"
                        && seen.args.get(1).is_some_and(|c| c == SENTINEL_HELLO))
                {
                    continue;
                }
                let (actor, text) = if seen.source == "lua" {
                    (
                        last_client.clone(),
                        format!("  lua> {}", render_args(&seen.args)),
                    )
                } else {
                    let actor = names
                        .get(&seen.source)
                        .cloned()
                        .unwrap_or_else(|| seen.source.clone());
                    last_client = actor.clone();
                    (actor, render_args(&seen.args))
                };
                monitor_timeline.record_at(seen.at, &actor, Some(&monitor_node), text);
            }
        });

        Ok(Self {
            url: url.to_owned(),
            seen_markers,
            next_marker: 0,
            tasks: vec![expiries, monitor],
        })
    }

    /// Waits until every command sent to the node so far is in the
    /// timeline: sends a marker and waits for `MONITOR` to echo it.
    pub async fn flush(&mut self) -> Result<()> {
        self.next_marker += 1;
        let marker = self.next_marker;
        let mut conn = lockcore::connect(&self.url, "harness-monitor").await?;
        redis::cmd("ECHO")
            .arg(format!("{FLUSH_MARKER}-{marker}"))
            .query_async::<String>(&mut conn)
            .await?;
        tokio::time::timeout(
            FLUSH_WITHIN,
            self.seen_markers.wait_for(|seen| *seen >= marker),
        )
        .await
        .map_err(|_| HarnessError::ServerStart("MONITOR fell silent".into()))?
        .map_err(|_| HarnessError::ServerStart("MONITOR connection closed".into()))?;
        Ok(())
    }
}

impl Drop for NodeWatcher {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

struct MonitorLine {
    at: SystemTime,
    source: String,
    args: Vec<String>,
}

/// Parses `+1700000000.123456 [0 127.0.0.1:5555] "SET" "k" "v"`.
fn parse_monitor_line(line: &str) -> Option<MonitorLine> {
    let line = line.strip_prefix('+')?;
    let (stamp, rest) = line.split_once(' ')?;
    let (secs, micros) = stamp.split_once('.')?;
    let at = UNIX_EPOCH
        + Duration::from_secs(secs.parse().ok()?)
        + Duration::from_micros(micros.parse().ok()?);
    let rest = rest.strip_prefix('[')?;
    let (bracket, args) = rest.split_once("] ")?;
    let source = bracket
        .split_once(' ')
        .map(|(_, s)| s)
        .unwrap_or(bracket)
        .to_owned();
    Some(MonitorLine {
        at,
        source,
        args: parse_quoted(args),
    })
}

/// Splits `"SET" "k" "a \"b\""` into its unescaped arguments.
fn parse_quoted(text: &str) -> Vec<String> {
    let mut args = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '"' {
            continue;
        }
        let mut arg = String::new();
        while let Some(c) = chars.next() {
            match c {
                '"' => break,
                '\\' => match chars.next() {
                    Some('n') => arg.push('\n'),
                    Some('r') => arg.push('\r'),
                    Some('t') => arg.push('\t'),
                    Some('x') => {
                        let hex: String = chars.by_ref().take(2).collect();
                        arg.push(u8::from_str_radix(&hex, 16).map(char::from).unwrap_or('?'));
                    }
                    Some(other) => arg.push(other),
                    None => {}
                },
                other => arg.push(other),
            }
        }
        args.push(arg);
    }
    args
}

/// Shortens long values (UUIDs, scripts) so a line stays readable.
fn render_args(args: &[String]) -> String {
    args.iter()
        .map(|arg| {
            let one_line = arg.split_whitespace().collect::<Vec<_>>().join(" ");
            if one_line.chars().count() > 16 {
                format!("{}…", one_line.chars().take(8).collect::<String>())
            } else {
                one_line
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monitor_lines_parse_with_escapes() {
        let line = r#"+1700000000.000250 [0 127.0.0.1:5555] "SET" "lock:stock" "a \"b\"" "NX""#;
        let seen = parse_monitor_line(line).unwrap();
        assert_eq!(seen.source, "127.0.0.1:5555");
        assert_eq!(seen.args, ["SET", "lock:stock", "a \"b\"", "NX"]);
        assert_eq!(
            seen.at,
            UNIX_EPOCH + Duration::from_micros(1_700_000_000_000_250)
        );
    }

    #[test]
    fn lua_lines_name_their_source_lua() {
        let seen = parse_monitor_line(r#"+1.5 [0 lua] "get" "k""#).unwrap();
        assert_eq!(seen.source, "lua");
    }

    #[test]
    fn long_values_are_shortened() {
        let uuid = "9a2e1b3c-0000-4000-8000-000000000000".to_owned();
        assert_eq!(render_args(&["SET".into(), uuid]), "SET 9a2e1b3c…");
    }
}
