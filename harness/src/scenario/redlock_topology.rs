//! What the node-fault stories need on top of [`Run`]: a proxy in front of
//! every lock node (network delay, partitions), node restarts now or after
//! a delay, a clock jump, and a holder that owns exactly a bare majority of
//! Redlock's masters.
//!
//! The harness itself (watchers, the checks below) always talks to the
//! nodes directly; only the stage's clients go through the proxies.

use std::time::Duration;

use lockcore::{Acquired, LockError};
use tokio::time::{Instant, sleep};

use super::Run;
pub use super::restart_without_persistence::run_with_restart_delay;
use super::run::READERS_SERVER;
use crate::client::Client;
use crate::error::{HarnessError, Result};
use crate::fault::proxy::Proxy;
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
            // ZooKeeper's members are not Redis nodes: no proxy (yet).
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

    /// How many lock nodes must agree: one of one, or N/2+1 of N.
    pub fn quorum(&self) -> usize {
        self.factory.lock_urls.len() / 2 + 1
    }

    /// How long a contender tries while the holder's lock is still good:
    /// from now until a fifth of the TTL before the holder's lock could
    /// expire on its own (its validity on Redlock, its TTL elsewhere,
    /// counted from the start of its acquire), so that what the contender
    /// gets it gets from the fault, not from an expiry, and an attempt begun
    /// at the very end must itself take a fifth of a TTL to reach the
    /// holder's natural expiry. Never less than a fifth of the TTL: when the
    /// fault itself took most of the lock's time (a restart on a loaded
    /// machine), the contender still gets that long, and the timeline says
    /// how much of the holder's time was left.
    pub fn contender_window(&self) -> Duration {
        let margin = self.env.timing.ttl / 5;
        self.holder_time_left().saturating_sub(margin).max(margin)
    }

    /// How long the holder's lock is still sure to be valid (zero when it
    /// was not taken through [`Run::hold_bare_majority`]).
    fn holder_time_left(&self) -> Duration {
        self.holder_valid_until
            .map(|until| until.saturating_duration_since(tokio::time::Instant::now()))
            .unwrap_or_default()
    }

    /// Right after a fault, client `name` tries for the
    /// [contender window](Run::contender_window); if it gets the lock it buys
    /// one item and gives the lock back. `true` if it got in, which means
    /// the fault handed the lock to a second holder.
    pub async fn contend_while_held(&mut self, name: &str) -> Result<bool> {
        let contender = self.client(name).await?;
        let window = self.contender_window();
        self.narrate(format!(
            "{name} tries for {}ms; client-A's lock is good for {}ms more",
            window.as_millis(),
            self.holder_time_left().as_millis()
        ));
        let taken = contender.acquire(window).await?;
        self.facts
            .insert("contender_acquired", i64::from(taken.is_some()));
        let Some(theirs) = taken else {
            self.narrate(format!(
                "{name} could not take the lock: client-A's still stands"
            ));
            return Ok(false);
        };
        self.narrate(format!(
            "TWO HOLDERS: client-A still believes it holds the lock, and {name} got it too"
        ));
        contender.buy_one(&theirs, self.env.timing.business).await?;
        contender.release(&theirs).await??;
        Ok(true)
    }

    /// Lets `client` take the lock. On Redlock, the nodes past a bare
    /// majority are cut off from it first, so it holds exactly N/2+1 of them
    /// (`node1`…`node3` of five); on one node it simply takes the lock.
    pub async fn hold_bare_majority(
        &mut self,
        proxies: &Proxies,
        client: &Client,
    ) -> Result<Acquired> {
        let quorum = self.quorum();
        let count = self.factory.lock_urls.len();
        if count > 1 {
            proxies.cut_off(client.name(), quorum..count);
        }
        let asked = tokio::time::Instant::now();
        let held = client.acquire(self.env.timing.patience()).await?;
        proxies.heal(client.name());
        let held = held.ok_or_else(|| {
            HarnessError::Unsupported(format!("{} could not take a free lock", client.name()))
        })?;
        self.holder_valid_until = Some(asked + held.validity.unwrap_or(self.env.timing.ttl));
        let holding = self.nodes_holding_lock().await?;
        self.facts
            .insert("holder_nodes", i64::try_from(holding).unwrap_or(-1));
        if count > 1 {
            self.narrate(format!(
                "{} holds the lock on exactly {holding} of {count} nodes",
                client.name()
            ));
        }
        Ok(held)
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
        self.nodes
            .get_mut(index)
            .ok_or_else(|| HarnessError::Unsupported(format!("there is no lock node {index}")))
    }

    /// On how many lock nodes the lock key exists (dead nodes count as
    /// not holding it).
    pub async fn nodes_holding_lock(&self) -> Result<usize> {
        let mut holding = 0;
        for node in &self.nodes {
            let Ok(mut conn) = lockcore::connect(&node.url(), "harness").await else {
                continue;
            };
            let exists: bool = redis::cmd("EXISTS")
                .arg(&self.factory.config.key)
                .query_async(&mut conn)
                .await?;
            holding += usize::from(exists);
        }
        Ok(holding)
    }

    /// Counts the lock nodes holding the lock key, again and again, until
    /// `done(count)` or until `within` has passed. Returns the last count.
    pub async fn wait_for_lock_keys(
        &self,
        done: impl Fn(usize) -> bool,
        within: Duration,
    ) -> Result<usize> {
        let deadline = Instant::now() + within;
        loop {
            let holding = self.nodes_holding_lock().await?;
            if done(holding) || Instant::now() > deadline {
                return Ok(holding);
            }
            sleep(Duration::from_millis(5)).await;
        }
    }

    /// A clock jump on lock node `index`. A Redis server's clock cannot be
    /// moved from outside, so the harness does what the jump would do to the
    /// lock: it takes `by` off the key's remaining TTL there (`PEXPIRE`); a
    /// key whose time is up by then is given 1 ms, and expires at once.
    /// Returns the key's `PTTL` before and after; a key with no TTL (`-1`)
    /// is left alone, as no clock can make it expire.
    pub async fn jump_clock(&self, index: usize, by: Duration) -> Result<(i64, i64)> {
        let node = self
            .nodes
            .get(index)
            .ok_or_else(|| HarnessError::Unsupported(format!("there is no lock node {index}")))?;
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

impl Run {
    /// `client` gives back `held` after a fault that may have broken its
    /// connection (the node it talked to was restarted): a failed release
    /// is told in the timeline, not raised.
    pub async fn release_after_fault(&self, client: &Client, held: &Acquired) -> Result<()> {
        match client.release(held).await {
            Ok(_) => Ok(()),
            Err(HarnessError::Lock(LockError::Redis(e))) => {
                self.narrate(format!("{}'s release failed: {e}", client.name()));
                Ok(())
            }
            Err(other) => Err(other),
        }
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
