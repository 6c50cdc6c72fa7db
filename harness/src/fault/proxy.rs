//! A TCP proxy in front of one Redis node, to make the network misbehave.
//!
//! Clients connect to the proxy instead of the node; the proxy forwards
//! bytes both ways and learns each connection's client name from the
//! `CLIENT SETNAME` every client sends first. Per client name it can then:
//!
//! - **delay replies**: every chunk the node sends back is held for a while,
//!   in order (requests still reach the node at once: the command runs, only
//!   the answer is late);
//! - **cut the client off** (a partition): bytes in both directions are
//!   dropped, so the client hears nothing, as across a broken link. A
//!   connection that lost bytes is closed once the link heals: its stream
//!   can no longer be trusted, and the client reconnects.
//!
//! A node that is down makes the proxy close the client's connection at
//! once, so a dead node is a quick "no", a cut-off one a slow silence.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep_until};

use crate::error::Result;
use crate::observe::Timeline;

/// What the proxy does to one client's traffic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Rule {
    delay: Duration,
    cut_off: bool,
}

#[derive(Debug, Default)]
struct Rules {
    by_client: Mutex<HashMap<String, Rule>>,
}

impl Rules {
    fn for_client(&self, name: Option<&String>) -> Rule {
        name.and_then(|name| self.lock().get(name).copied())
            .unwrap_or_default()
    }

    fn update(&self, client: &str, change: impl FnOnce(&mut Rule)) {
        change(self.lock().entry(client.to_owned()).or_default());
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Rule>> {
        self.by_client
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A proxy in front of one node. Stops (and closes every connection) when
/// dropped.
#[derive(Debug)]
pub struct Proxy {
    label: String,
    addr: SocketAddr,
    upstream: Arc<Mutex<SocketAddr>>,
    rules: Arc<Rules>,
    timeline: Timeline,
    tasks: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl Proxy {
    /// Listens on a free loopback port and forwards to `upstream`
    /// (`127.0.0.1:6379`). `label` names the node in the timeline.
    pub async fn start(upstream: SocketAddr, label: &str, timeline: &Timeline) -> Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let upstream = Arc::new(Mutex::new(upstream));
        let rules = Arc::new(Rules::default());
        let tasks: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let accept_upstream = Arc::clone(&upstream);
        let accept_rules = Arc::clone(&rules);
        let accept_tasks = Arc::clone(&tasks);
        let acceptor = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let node = *accept_upstream.lock().unwrap_or_else(|p| p.into_inner());
                let connection = tokio::spawn(forward(client, node, Arc::clone(&accept_rules)));
                let mut tasks = accept_tasks.lock().unwrap_or_else(|p| p.into_inner());
                tasks.retain(|task| !task.is_finished());
                tasks.push(connection);
            }
        });
        tasks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(acceptor);
        Ok(Self {
            label: label.to_owned(),
            addr,
            upstream,
            rules,
            timeline: timeline.clone(),
            tasks,
        })
    }

    /// Sends new connections to `upstream` from now on (a restarted
    /// container may come back on another port).
    pub fn retarget(&self, upstream: SocketAddr) {
        *self.upstream.lock().unwrap_or_else(|p| p.into_inner()) = upstream;
    }

    /// The URL clients use instead of the node's.
    pub fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// Holds every reply to `client` for `by` before passing it on.
    pub fn delay_replies(&self, client: &str, by: Duration) {
        self.rules.update(client, |rule| rule.delay = by);
        self.narrate(format!(
            "replies to {client} are now held {}ms",
            by.as_millis()
        ));
    }

    /// Drops everything between `client` and the node, both ways.
    pub fn cut_off(&self, client: &str) {
        self.rules.update(client, |rule| rule.cut_off = true);
        self.narrate(format!("{client} is CUT OFF from this node (a partition)"));
    }

    /// Lifts every rule for `client`.
    pub fn heal(&self, client: &str) {
        let had = self.rules.lock().remove(client);
        if had.is_some_and(|rule| rule != Rule::default()) {
            self.narrate(format!("the network to {client} is healthy again"));
        }
    }

    fn narrate(&self, text: String) {
        self.timeline
            .record("harness", format!("proxy [{}]: {text}", self.label));
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        for task in self
            .tasks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
        {
            task.abort();
        }
    }
}

/// What both directions of one connection share.
#[derive(Default)]
struct Link {
    /// The client's name, once its `CLIENT SETNAME` went by.
    name: OnceLock<String>,
    /// Bytes were dropped: the stream is broken for good.
    lost_bytes: AtomicBool,
}

impl Link {
    /// Whether a chunk may pass now. Drops it (and remembers that) while
    /// the client is cut off.
    fn admits(&self, rule: Rule) -> Passage {
        if rule.cut_off {
            self.lost_bytes.store(true, Ordering::SeqCst);
            Passage::Drop
        } else if self.lost_bytes.load(Ordering::SeqCst) {
            Passage::Close
        } else {
            Passage::Forward
        }
    }
}

enum Passage {
    Forward,
    Drop,
    Close,
}

async fn forward(client: TcpStream, upstream: SocketAddr, rules: Arc<Rules>) {
    // A node that is down: close the client's connection at once.
    let Ok(node) = TcpStream::connect(upstream).await else {
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = node.set_nodelay(true);
    let (from_client, to_client) = client.into_split();
    let (from_node, to_node) = node.into_split();
    let link = Arc::new(Link::default());
    // When either direction ends, both sockets close.
    tokio::select! {
        () = requests(from_client, to_node, Arc::clone(&link), Arc::clone(&rules)) => {}
        () = replies(from_node, to_client, link, rules) => {}
    }
}

async fn requests(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    link: Arc<Link>,
    rules: Arc<Rules>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    let mut preamble = Vec::new();
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if link.name.get().is_none() && preamble.len() < 64 * 1024 {
            preamble.extend_from_slice(&buf[..n]);
            if let Some(name) = client_name(&preamble) {
                let _ = link.name.set(name);
            }
        }
        match link.admits(rules.for_client(link.name.get())) {
            Passage::Forward => {
                if to.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
            Passage::Drop => {}
            Passage::Close => return,
        }
    }
}

async fn replies(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    link: Arc<Link>,
    rules: Arc<Rules>,
) {
    // Chunks are stamped with their delivery time when they arrive and
    // delivered in order, so a delay holds each reply once, not cumulatively.
    let (held_tx, mut held_rx) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let deliver = async move {
        while let Some((due, chunk)) = held_rx.recv().await {
            sleep_until(due).await;
            if to.write_all(&chunk).await.is_err() {
                return;
            }
        }
    };
    let receive = async move {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match from.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let rule = rules.for_client(link.name.get());
            match link.admits(rule) {
                Passage::Forward => {
                    if held_tx
                        .send((Instant::now() + rule.delay, buf[..n].to_vec()))
                        .is_err()
                    {
                        return;
                    }
                }
                Passage::Drop => {}
                Passage::Close => return,
            }
        }
    };
    // The node closing its side ends `receive`; replies still held are
    // delivered before the client's side closes.
    let (_, ()) = tokio::join!(receive, deliver);
}

/// Finds `CLIENT SETNAME <name>` in the first bytes a client sent (RESP:
/// `$7\r\nSETNAME\r\n$8\r\nclient-A\r\n`).
fn client_name(bytes: &[u8]) -> Option<String> {
    const MARK: &[u8] = b"SETNAME\r\n$";
    let at = bytes
        .windows(MARK.len())
        .position(|w| w.eq_ignore_ascii_case(MARK))?
        + MARK.len();
    let rest = &bytes[at..];
    let eol = rest.windows(2).position(|w| w == b"\r\n")?;
    let len: usize = std::str::from_utf8(&rest[..eol]).ok()?.parse().ok()?;
    let name = rest.get(eol + 2..eol + 2 + len)?;
    Some(String::from_utf8_lossy(name).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_name_is_read_from_client_setname() {
        let bytes = b"*3\r\n$6\r\nCLIENT\r\n$7\r\nSETINFO\r\n$8\r\nLIB-NAME\r\n\
                      *3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$8\r\nclient-A\r\n";
        assert_eq!(client_name(bytes).as_deref(), Some("client-A"));
        assert_eq!(
            client_name(b"*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$8\r\nclie"),
            None
        );
        assert_eq!(client_name(b"*1\r\n$4\r\nPING\r\n"), None);
    }
}
