//! A run's lock nodes faulted: the faults themselves are
//! [`crate::fault::node`]'s; a run points them at its nodes by index and
//! keeps its watchers in step (a killed node's `MONITOR` is flushed first,
//! a restarted one is watched again).

use std::time::Duration;

use super::Run;
use crate::error::{HarnessError, Result};
use crate::fault::node::{self, Proxies};
use crate::server::Node;

impl Run {
    /// Puts a proxy in front of every lock node. Clients made from now on
    /// (holder processes too) reach the nodes through them.
    pub async fn put_proxies(&mut self) -> Result<Proxies> {
        if super::ensemble::on_consensus_store(&self.stage.description) {
            // ZooKeeper and etcd members are not Redis nodes: no proxy (yet).
            return Ok(Proxies::none());
        }
        let (proxies, mut urls) = node::put_proxies(&self.nodes, self.timeline()).await?;
        urls.truncate(self.factory.lock_urls.len());
        self.factory.lock_urls = urls;
        Ok(proxies)
    }

    /// Kills lock node `index` (`kill -9`): it forgets everything.
    pub async fn kill_node(&mut self, index: usize) -> Result<()> {
        self.unwatch(index).await?;
        let timeline = self.timeline().clone();
        node::kill(self.lock_node_mut(index)?, &timeline).await
    }

    /// Starts lock node `index` again, empty (no persistence), at once if
    /// it runs, or after [`Run::kill_node`].
    pub async fn restart_node(&mut self, index: usize, proxies: &Proxies) -> Result<()> {
        self.unwatch(index).await?;
        let timeline = self.timeline().clone();
        node::restart(self.lock_node_mut(index)?, proxies.get(index), &timeline).await?;
        self.watch_again(index).await
    }

    /// A clock jump on lock node `index` ([`node::jump_clock`]): the lock
    /// key's TTL there cut by `by`. Returns its `PTTL` before and after.
    pub async fn jump_clock(&self, index: usize, by: Duration) -> Result<(i64, i64)> {
        let node = self.nodes.get(index).ok_or(HarnessError::NoNode(index))?;
        node::jump_clock(node, &self.factory.config.key, by, self.timeline()).await
    }

    fn lock_node_mut(&mut self, index: usize) -> Result<&mut Node> {
        self.nodes.get_mut(index).ok_or(HarnessError::NoNode(index))
    }
}
