//! What can be done to a lock node of a run: a proxy in front of each
//! (replies delayed, one client cut off), `kill -9`, a restart without
//! persistence, a clock jump. The harness itself (watchers, checks) always
//! talks to the nodes directly; only the stage's clients go through the
//! proxies.

use std::time::Duration;

use crate::error::{HarnessError, Result};
use crate::fault::proxy::Proxy;
use crate::scenario::{READERS_SERVER, Run};
use crate::server::Node;

/// One proxy per lock node, in the nodes' order.
#[derive(Debug)]
pub struct Proxies(Vec<Proxy>);

impl Proxies {
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

impl Run {
    /// Puts a proxy in front of every lock node. Clients made from now on
    /// (holder processes too) reach the nodes through them.
    pub async fn put_proxies(&mut self) -> Result<Proxies> {
        if self.ensemble.is_some() {
            // ZooKeeper and etcd members are not Redis nodes: no proxy (yet).
            return Ok(Proxies(Vec::new()));
        }
        let mut proxies = Vec::with_capacity(self.nodes.len());
        let mut urls = Vec::with_capacity(self.nodes.len());
        for node in &self.nodes {
            let label = if node.is_own() {
                node.label()
            } else {
                READERS_SERVER
            };
            let proxy = Proxy::start(node.addr(), label, self.timeline()).await?;
            // The node's URL through the proxy: its password and database
            // stay. Clients talk to the proxy; their replies belong to the node.
            let url = through(&node.url(), &proxy.url());
            self.timeline().name_node(&url, label);
            urls.push(url);
            proxies.push(proxy);
        }
        urls.truncate(self.factory.lock_urls.len());
        self.factory.lock_urls = urls;
        Ok(Proxies(proxies))
    }

    /// Kills lock node `index` (`kill -9`): it forgets everything.
    pub async fn kill_node(&mut self, index: usize) -> Result<()> {
        self.unwatch(index).await?;
        let node = self.lock_node_mut(index)?;
        node.kill().await?;
        let label = node.label().to_owned();
        self.narrate(format!("[{label}] KILLED (kill -9): its memory is gone"));
        Ok(())
    }

    /// Starts lock node `index` again, empty (no persistence), at once if
    /// it runs, or after [`Run::kill_node`].
    pub async fn restart_node(&mut self, index: usize, proxies: &Proxies) -> Result<()> {
        self.unwatch(index).await?;
        let node = self.lock_node_mut(index)?;
        node.restart().await?;
        let (label, addr) = (node.label().to_owned(), node.addr());
        if let Some(proxy) = proxies.get(index) {
            proxy.retarget(addr);
        }
        self.watch_again(index).await?;
        self.narrate(format!(
            "[{label}] RESTARTED without persistence: it came back empty"
        ));
        Ok(())
    }

    fn lock_node_mut(&mut self, index: usize) -> Result<&mut Node> {
        self.nodes.get_mut(index).ok_or(HarnessError::NoNode(index))
    }

    /// A clock jump on lock node `index`. A Redis server's clock cannot be
    /// moved from outside, so the harness does what the jump would do to the
    /// lock: it takes `by` off the key's remaining TTL there (`PEXPIRE`); a
    /// key whose time is up by then is given 1 ms, and expires at once.
    /// Returns the key's `PTTL` before and after; a key with no TTL (`-1`)
    /// is left alone, as no clock can make it expire.
    pub async fn jump_clock(&self, index: usize, by: Duration) -> Result<(i64, i64)> {
        let node = self.nodes.get(index).ok_or(HarnessError::NoNode(index))?;
        let key = &self.factory.config.key;
        let mut conn = lockcore::connect(&node.url(), "harness").await?;
        let before: i64 = redis::cmd("PTTL").arg(key).query_async(&mut conn).await?;
        let jump = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        self.narrate(format!(
            "[{}] its clock JUMPS {jump}ms forward (simulated: Redis's clock cannot be moved, so \
             the lock key's remaining TTL is cut by the same amount)",
            node.label()
        ));
        if before < 0 {
            self.narrate(format!(
                "[{}] the lock key has no TTL (PTTL {before}): no clock touches it",
                node.label()
            ));
            return Ok((before, before));
        }
        let left = (before - jump).max(1);
        redis::cmd("PEXPIRE")
            .arg(key)
            .arg(left)
            .query_async::<i64>(&mut conn)
            .await?;
        Ok((before, left))
    }
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
