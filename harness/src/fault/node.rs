//! What can be done to a Redis node: a proxy in front of it (replies
//! delayed, one client cut off), `kill -9`, a restart without persistence,
//! a clock jump, a promotion. Each says in the timeline what it did. They
//! know nodes, not stories: whoever keeps the lock nodes lends them as
//! [`LockNodes`], and keeps what watches them in step. The harness itself
//! (watchers, checks) always talks to the nodes directly; only the stage's
//! clients go through the proxies.

use std::future::Future;
use std::time::Duration;

use crate::error::{HarnessError, Result};
use crate::fault::proxy::Proxy;
use crate::observe::Timeline;
use crate::server::{Node, external};

/// The lock nodes as a fault takes them, from whoever keeps them: by index,
/// with what watches each one kept in step when it is killed or restarted
/// (a watcher of a killed node must have shown all it saw; a restarted
/// node is a new process, watched anew). A scripted story's run is one;
/// the explorer's nemesis strikes through it without knowing the story.
pub trait LockNodes: Sync {
    /// The lock nodes, in order.
    fn lock_nodes(&self) -> &[Node];

    /// The lock's key on them.
    fn lock_key(&self) -> &str;

    /// Kills lock node `index` ([`kill`]) once what watches it has shown
    /// all it saw.
    fn kill_node(&mut self, index: usize) -> impl Future<Output = Result<()>> + Send;

    /// Starts lock node `index` again, empty ([`restart`]), at once if it
    /// runs or after [`LockNodes::kill_node`]; its proxy among `proxies`
    /// and what watches it follow it.
    fn restart_node(
        &mut self,
        index: usize,
        proxies: &Proxies,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Lock node `index`.
    fn lock_node(&self, index: usize) -> Result<&Node> {
        self.lock_nodes()
            .get(index)
            .ok_or(HarnessError::NoNode(index))
    }

    /// Whether the lock key exists on lock node `index`.
    fn lock_key_exists(&self, index: usize) -> impl Future<Output = Result<bool>> + Send {
        async move {
            let node = self.lock_node(index)?;
            let mut conn = lockcore::connect(&node.url(), "harness").await?;
            Ok(redis::cmd("EXISTS")
                .arg(self.lock_key())
                .query_async(&mut conn)
                .await?)
        }
    }
}

/// One proxy per lock node, in the nodes' order.
#[derive(Debug)]
pub struct Proxies(Vec<Proxy>);

impl Proxies {
    /// No proxy at all (a lock on a consensus store has no Redis node).
    pub fn none() -> Self {
        Self(Vec::new())
    }

    /// The proxy in front of lock node `index`.
    pub fn get(&self, index: usize) -> Option<&Proxy> {
        self.0.get(index)
    }

    /// Holds every reply to `client`, from every node, for `by`.
    pub fn delay_replies(&self, client: &str, by: Duration) {
        for proxy in &self.0 {
            proxy.delay_replies(client, by);
        }
    }

    /// Cuts `client` off from the nodes at `indices`.
    pub fn cut_off(&self, client: &str, indices: impl IntoIterator<Item = usize>) {
        for proxy in indices.into_iter().filter_map(|i| self.0.get(i)) {
            proxy.cut_off(client);
        }
    }

    /// Lifts every rule for `client` on every node.
    pub fn heal(&self, client: &str) {
        for proxy in &self.0 {
            proxy.heal(client);
        }
    }
}

/// Puts a proxy in front of each of `nodes`, and returns them with each
/// node's URL through its proxy (password and database kept): clients given
/// those URLs reach the nodes through the proxies.
pub async fn put_proxies(nodes: &[Node], timeline: &Timeline) -> Result<(Proxies, Vec<String>)> {
    let mut proxies = Vec::with_capacity(nodes.len());
    let mut urls = Vec::with_capacity(nodes.len());
    for node in nodes {
        let label = if node.is_own() {
            node.label()
        } else {
            external::LABEL
        };
        let proxy = Proxy::start(node.addr(), label, timeline).await?;
        // Clients talk to the proxy; their replies belong to the node.
        let url = through(&node.url(), &proxy.url());
        timeline.history().name_node(&url, label);
        urls.push(url);
        proxies.push(proxy);
    }
    Ok((Proxies(proxies), urls))
}

/// Kills `node` (`kill -9`): it forgets everything.
pub async fn kill(node: &mut Node, timeline: &Timeline) -> Result<()> {
    node.kill().await?;
    narrate(
        timeline,
        format!("[{}] KILLED (kill -9): its memory is gone", node.label()),
    );
    Ok(())
}

/// Starts `node` again, empty (no persistence), at once if it runs, or
/// after [`kill`]; its proxy, if it has one, follows it to its new address.
pub async fn restart(node: &mut Node, proxy: Option<&Proxy>, timeline: &Timeline) -> Result<()> {
    node.restart().await?;
    if let Some(proxy) = proxy {
        proxy.retarget(node.addr());
    }
    narrate(
        timeline,
        format!(
            "[{}] RESTARTED without persistence: it came back empty",
            node.label()
        ),
    );
    Ok(())
}

/// Makes `node` a master of its own: `REPLICAOF NO ONE`, as Sentinel or an
/// operator does in a failover.
pub async fn promote(node: &Node) -> Result<()> {
    let mut conn = lockcore::connect(&node.url(), "harness").await?;
    redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query_async::<()>(&mut conn)
        .await?;
    Ok(())
}

/// A clock jump on `node`. A Redis server's clock cannot be moved from
/// outside, so the harness does what the jump would do to the lock: it
/// takes `by` off `key`'s remaining TTL there (`PEXPIRE`); a key whose time
/// is up by then is given 1 ms, and expires at once. Returns the key's
/// `PTTL` before and after; a key with no TTL (`-1`) is left alone, as no
/// clock can make it expire.
pub async fn jump_clock(
    node: &Node,
    key: &str,
    by: Duration,
    timeline: &Timeline,
) -> Result<(i64, i64)> {
    let mut conn = lockcore::connect(&node.url(), "harness").await?;
    let before: i64 = redis::cmd("PTTL").arg(key).query_async(&mut conn).await?;
    let jump = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
    narrate(
        timeline,
        format!(
            "[{}] its clock JUMPS {jump}ms forward (simulated: Redis's clock cannot be moved, so \
             the lock key's remaining TTL is cut by the same amount)",
            node.label()
        ),
    );
    if before < 0 {
        narrate(
            timeline,
            format!(
                "[{}] the lock key has no TTL (PTTL {before}): no clock touches it",
                node.label()
            ),
        );
        return Ok((before, before));
    }
    let left = (before - jump).max(1);
    // The lock as it is (value, not TTL), to tell its renewal from a new lock.
    let held: Option<Vec<u8>> = redis::cmd("DUMP").arg(key).query_async(&mut conn).await?;
    redis::cmd("PEXPIRE")
        .arg(key)
        .arg(left)
        .query_async::<i64>(&mut conn)
        .await?;
    // A jump past the key's end makes it due now. PEXPIRE cannot say "in
    // the past" without deleting the key outright (not the expiry a jump
    // makes), so the key gets a millisecond, and the story goes on once
    // the node has expired it: a client that asked within that millisecond
    // would still find the lock held (seen on a loaded machine).
    if left == 1 {
        until_expired(&mut conn, key, held).await?;
    }
    Ok((before, left))
}

/// Returns once the lock `held` (`key`'s DUMP), given a millisecond, is
/// gone (within a second). A watchdog that renewed it within that
/// millisecond renewed it on a clock that has already passed its end: the
/// jump applies again. A new lock under the key (another value) is not
/// the jump's to cut.
async fn until_expired(
    conn: &mut lockcore::Connection,
    key: &str,
    held: Option<Vec<u8>>,
) -> Result<()> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(1);
    loop {
        let left: i64 = redis::cmd("PTTL").arg(key).query_async(conn).await?;
        if left == -2 {
            return Ok(());
        }
        let now: Option<Vec<u8>> = redis::cmd("DUMP").arg(key).query_async(conn).await?;
        if now != held {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            return Err(HarnessError::Bug(format!(
                "{key} was due to expire a second ago and is still there"
            )));
        }
        if left > 1 {
            redis::cmd("PEXPIRE")
                .arg(key)
                .arg(1)
                .query_async::<i64>(conn)
                .await?;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// What the harness did, in the timeline.
fn narrate(timeline: &Timeline, text: String) {
    timeline.record("harness", text);
}

/// `url` (`redis://[user:password@]host:port[/db]`) with its host and port
/// replaced by those of `proxy` (`redis://host:port`).
fn through(url: &str, proxy: &str) -> String {
    let proxy_addr = proxy.trim_start_matches("redis://");
    let rest = url.trim_start_matches("redis://");
    let (auth, rest) = match rest.rsplit_once('@') {
        Some((auth, rest)) => (format!("{auth}@"), rest),
        None => (String::new(), rest),
    };
    let db = rest.find('/').map_or("", |slash| &rest[slash..]);
    format!("redis://{auth}{proxy_addr}{db}")
}

#[cfg(test)]
mod tests {
    use super::through;

    #[test]
    fn a_url_through_a_proxy_keeps_its_password_and_database() {
        let proxy = "redis://127.0.0.1:4000";
        assert_eq!(through("redis://127.0.0.1:6379", proxy), proxy);
        assert_eq!(
            through("redis://:s3cret@db.example:6379/3", proxy),
            "redis://:s3cret@127.0.0.1:4000/3"
        );
        assert_eq!(
            through("redis://user:p@ss@h:1/0", proxy),
            "redis://user:p@ss@127.0.0.1:4000/0"
        );
    }
}
