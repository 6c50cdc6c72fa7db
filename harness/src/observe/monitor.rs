//! What Redis really saw: `MONITOR` and keyspace notifications of a node,
//! written into the run's history: its lines, and its
//! [`KeyRecord`](crate::history::KeyRecord) of who changed each key.
//!
//! `MONITOR` names a connection only by its address, so the watcher learns
//! names from the `CLIENT SETNAME` each client sends first. Commands run by a
//! Lua script appear as `lua>` lines under the client that sent the script.
//!
//! One RESP3 connection carries both the `MONITOR` lines and the keyspace
//! notifications, so they arrive in the order the server executed them;
//! [`NodeKeys`] says why that order is enough to know who changed each key.

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::Timeline;
use super::keyspace::NodeKeys;
use super::notifications::{BorrowedNotifications, NOTIFY};
use crate::error::{HarnessError, Result};
use crate::history::{Change, KeyChange, short};

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
    // Asked by cluster clients for the slots' masters, and by the harness
    // for the cluster's view.
    "CLUSTER",
    "READONLY",
];

/// The channel Sentinels announce themselves on, through every server they
/// watch, every two seconds: plumbing too.
const SENTINEL_HELLO: &str = "__sentinel__:hello";

const FLUSH_MARKER: &str = "lockstages-timeline-flush";
/// How long a server that closed the MONITOR connection may take to take
/// a new one before the watch ends.
const REOPEN_WITHIN: Duration = Duration::from_secs(1);
const FLUSH_WITHIN: Duration = Duration::from_secs(5);

/// Watches one node until dropped.
#[derive(Debug)]
pub struct NodeWatcher {
    url: String,
    seen_markers: watch::Receiver<u64>,
    next_marker: u64,
    tasks: Vec<JoinHandle<()>>,
    /// On a reader's server: its notifications, switched on while watched.
    _notifications: Option<BorrowedNotifications>,
}

impl NodeWatcher {
    /// Starts watching the node at `url`, a server the harness started,
    /// labelled `node`.
    pub async fn start(url: &str, node: &str, timeline: &Timeline) -> Result<Self> {
        Self::start_scoped(url, node, timeline, None).await
    }

    /// Starts watching a reader's own server at `url` (see
    /// [`BorrowedNotifications`]), labelled `node`, for the keys under
    /// `prefix` alone: its other clients' traffic is none of the run's
    /// business and stays out of the timeline and the key record.
    pub async fn start_on_readers_server(
        url: &str,
        node: &str,
        timeline: &Timeline,
        prefix: &str,
    ) -> Result<Self> {
        Self::start_scoped(url, node, timeline, Some(prefix)).await
    }

    async fn start_scoped(
        url: &str,
        node: &str,
        timeline: &Timeline,
        prefix: Option<&str>,
    ) -> Result<Self> {
        timeline.history().name_node(url, node);
        let client = redis::Client::open(url)?;
        let info = client.get_connection_info();
        let addr = info.addr().to_string();
        let addr = addr.trim_start_matches("redis://").to_owned();
        let settings = info.redis_settings();
        let keyspace = format!("__keyspace@{}__:", settings.db());
        let notifications = match prefix {
            Some(_) => Some(BorrowedNotifications::switch_on(url).await?),
            None => None,
        };

        let mut hello = vec!["HELLO".to_owned(), "3".to_owned()];
        if let Some(password) = settings.password() {
            hello.extend([
                "AUTH".to_owned(),
                settings.username().unwrap_or("default").to_owned(),
                password.to_owned(),
            ]);
        }
        let pattern = format!("{keyspace}{}*", prefix.unwrap_or_default());
        let mut setup = vec![hello];
        if prefix.is_none() {
            setup.push(
                ["CONFIG", "SET", "notify-keyspace-events", NOTIFY]
                    .map(str::to_owned)
                    .into(),
            );
        }
        setup.extend([
            vec!["PSUBSCRIBE".to_owned(), pattern],
            vec!["MONITOR".to_owned()],
        ]);
        let mut stream = open_monitor(&addr, &setup).await?;

        let (seen_tx, seen_markers) = watch::channel(0u64);
        let history = timeline.history().clone();
        let node = node.to_owned();
        let mut scope = prefix.map(RunScope::new);
        // The run's prefix says nothing a reader needs: keys are shown and
        // recorded without it (`lock:stock`, as on the harness's servers).
        let hidden_prefix = prefix.unwrap_or_default().to_owned();
        let monitor = tokio::spawn(async move {
            let mut keys = NodeKeys::new(&node, history.keys());
            let mut names: HashMap<String, String> = HashMap::new();
            let mut last_client = String::from("?");
            // Owner values (`<uuid>:task-<n>`) and the client that sent them.
            let mut owner_values: HashMap<String, String> = HashMap::new();
            let note_expiries = |changes: &[KeyChange]| {
                for change in changes {
                    let said = match change.change {
                        Change::Expired => format!("expired {} (TTL ran out)", change.key),
                        Change::Evicted => {
                            format!("EVICTED {} (memory full: maxmemory)", change.key)
                        }
                        Change::Written | Change::Deleted => continue,
                    };
                    history.record_at(change.at, "redis", Some(&node), said);
                }
            };
            loop {
                let line = match read_value(&mut stream).await {
                    Ok(Resp::Simple(line)) => line,
                    Ok(Resp::Push(items)) => {
                        // ["pmessage", pattern, "__keyspace@0__:<key>", event]
                        if let [kind, _, channel, event] = items.as_slice()
                            && kind == "pmessage"
                            && let Some(key) = channel.strip_prefix(&keyspace)
                        {
                            let key = key.strip_prefix(&hidden_prefix).unwrap_or(key);
                            keys.notified(key, event, SystemTime::now());
                        }
                        continue;
                    }
                    Ok(Resp::Error(_) | Resp::Other) => continue,
                    Ok(Resp::Eof) | Err(_) => {
                        // A Sentinel that reconfigures a server closes its
                        // clients' connections (CLIENT KILL TYPE normal),
                        // this MONITOR among them. While the server lives,
                        // watch it again at once; a dead one ends the watch.
                        let again =
                            tokio::time::timeout(REOPEN_WITHIN, open_monitor(&addr, &setup)).await;
                        match again {
                            Ok(Ok(again)) => {
                                stream = again;
                                history.narrate(
                                    "harness",
                                    format!("[{node}] its MONITOR connection was closed by the server; watching it again"),
                                );
                                continue;
                            }
                            _ => break,
                        }
                    }
                };
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
                let actor = if seen.source == "lua" {
                    last_client.clone()
                } else {
                    let actor = names
                        .get(&seen.source)
                        .cloned()
                        .unwrap_or_else(|| seen.source.clone());
                    last_client = actor.clone();
                    actor
                };
                // A script may write a hash field that names another
                // client's owner: the fair lock's release hands the lock to
                // the head of its queue. The key is then that client's, not
                // the releaser's.
                let writer = if seen.source == "lua" {
                    seen.args
                        .get(2)
                        .filter(|_| command == "HSET")
                        .and_then(|field| owner_values.get(field))
                        .cloned()
                        .unwrap_or_else(|| actor.clone())
                } else {
                    for arg in seen.args.iter().skip(1) {
                        if arg.contains(":task-") || arg.contains(":thread-") {
                            owner_values.insert(arg.clone(), actor.clone());
                        }
                    }
                    actor.clone()
                };
                note_expiries(&keys.command(&writer, seen.at));
                if scope.as_mut().is_some_and(|scope| !scope.keeps(&seen)) {
                    continue;
                }
                if HIDDEN.contains(&command.as_str())
                    || (command == "PUBLISH"
                        && seen.args.get(1).is_some_and(|c| c == SENTINEL_HELLO))
                {
                    continue;
                }
                let args: Vec<String> = seen
                    .args
                    .iter()
                    .map(|arg| arg.replace(&hidden_prefix, ""))
                    .collect();
                let text = if seen.source == "lua" {
                    format!("  lua> {}", render_args(&args))
                } else {
                    render_args(&args)
                };
                history.record_at(seen.at, &actor, Some(&node), text);
            }
        });

        Ok(Self {
            url: url.to_owned(),
            seen_markers,
            next_marker: 0,
            tasks: vec![monitor],
            _notifications: notifications,
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
        .map_err(|_| HarnessError::Monitor("MONITOR fell silent".into()))?
        .map_err(|_| HarnessError::Monitor("MONITOR connection closed".into()))?;
        Ok(())
    }
}

/// Which lines of a reader's server belong to the run: those that name a
/// key of its prefix, everything else its connections send once they have
/// (a `SCRIPT LOAD` after a `NOSCRIPT`), and the lines a script of theirs
/// runs. Other clients never touch the run's keys, so they never count.
#[derive(Debug)]
struct RunScope {
    prefix: String,
    connections: std::collections::HashSet<String>,
    last_kept: bool,
}

impl RunScope {
    fn new(prefix: &str) -> Self {
        Self {
            prefix: prefix.to_owned(),
            connections: std::collections::HashSet::new(),
            last_kept: false,
        }
    }

    fn keeps(&mut self, seen: &MonitorLine) -> bool {
        // A script's commands come right after the script's own line.
        if seen.source == "lua" {
            return self.last_kept;
        }
        if seen.args.iter().any(|arg| arg.contains(&self.prefix)) {
            self.connections.insert(seen.source.clone());
        }
        self.last_kept = self.connections.contains(&seen.source);
        self.last_kept
    }
}

impl Drop for NodeWatcher {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// One RESP3 value, as far as the watcher cares.
#[derive(Debug)]
enum Resp {
    /// `+…`: a `MONITOR` line or an `OK`.
    Simple(String),
    /// `-…`.
    Error(String),
    /// `>…`: a pub/sub message, its parts as text.
    Push(Vec<String>),
    /// Anything else (HELLO's map, numbers…).
    Other,
    /// The connection closed.
    Eof,
}

/// Connects to `addr` and sends `setup` (HELLO, notifications, PSUBSCRIBE,
/// MONITOR), each answered before the next.
async fn open_monitor(addr: &str, setup: &[Vec<String>]) -> Result<BufReader<TcpStream>> {
    let stream = TcpStream::connect(addr)
        .await
        .map_err(|e| HarnessError::Monitor(format!("MONITOR connection to {addr}: {e}")))?;
    let mut stream = BufReader::new(stream);
    for command in setup {
        let args: Vec<&str> = command.iter().map(String::as_str).collect();
        stream.get_mut().write_all(&encode(&args)).await?;
        match read_value(&mut stream).await? {
            Resp::Error(e) => {
                // Never print a password.
                let name = args.iter().take(2).copied().collect::<Vec<_>>();
                return Err(HarnessError::Monitor(format!(
                    "{} answered {e}",
                    name.join(" ")
                )));
            }
            Resp::Eof => {
                return Err(HarnessError::Monitor(
                    "the MONITOR connection closed".into(),
                ));
            }
            _ => {}
        }
    }
    Ok(stream)
}

fn encode(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend(format!("${}\r\n{arg}\r\n", arg.len()).into_bytes());
    }
    out
}

/// Reads one RESP3 value; aggregates other than pushes are read and dropped.
async fn read_value<R: AsyncBufRead + Unpin + Send>(reader: &mut R) -> std::io::Result<Resp> {
    let mut line = String::new();
    if reader.read_line(&mut line).await? == 0 {
        return Ok(Resp::Eof);
    }
    let line = line.trim_end_matches(['\r', '\n']);
    let (kind, rest) = line.split_at(line.len().min(1));
    let count = || rest.parse::<i64>().unwrap_or(-1);
    Ok(match kind {
        "+" => Resp::Simple(rest.to_owned()),
        "-" | "!" => Resp::Error(rest.to_owned()),
        "$" | "=" if count() >= 0 => {
            let mut bytes = vec![0; usize::try_from(count()).unwrap_or(0) + 2];
            reader.read_exact(&mut bytes).await?;
            bytes.truncate(bytes.len() - 2);
            Resp::Simple(String::from_utf8_lossy(&bytes).into_owned())
        }
        "*" | "~" | ">" | "%" | "|" => {
            let items = if kind == "%" || kind == "|" {
                count() * 2
            } else {
                count()
            };
            let mut parts = Vec::new();
            for _ in 0..items.max(0) {
                match Box::pin(read_value(reader)).await? {
                    Resp::Simple(text) => parts.push(text),
                    Resp::Eof => return Ok(Resp::Eof),
                    _ => parts.push(String::new()),
                }
            }
            if kind == ">" {
                Resp::Push(parts)
            } else if kind == "|" {
                // An attribute comes before the value it describes.
                Box::pin(read_value(reader)).await?
            } else {
                Resp::Other
            }
        }
        _ => Resp::Other,
    })
}

struct MonitorLine {
    at: SystemTime,
    source: String,
    args: Vec<String>,
}

/// Parses `+1700000000.123456 [0 127.0.0.1:5555] "SET" "k" "v"`.
fn parse_monitor_line(line: &str) -> Option<MonitorLine> {
    let line = line.strip_prefix('+').unwrap_or(line);
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
            short(&one_line, 16)
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
