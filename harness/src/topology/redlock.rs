//! Redlock's independent masters (one node for the single-node stages), as
//! the node-fault stories see them: the quorum, a holder that owns exactly
//! a bare majority of the masters, a contender that tries while that hold
//! is still good, and how many nodes hold the lock key. What is done to the
//! nodes (proxies, kills, restarts, clock jumps) is in
//! [`crate::fault::node`].

use std::time::Duration;

use lockcore::{Acquired, LockError};
use tokio::time::{Instant, sleep};

use crate::client::Client;
use crate::error::{HarnessError, Result};
pub use crate::fault::node::Proxies;
use crate::scenario::Run;
pub use crate::scenario::run_with_restart_delay;

/// The shortest TTL a Redlock holder gets in the stories where a master
/// restarts or its clock jumps (the matrix's 300 ms elsewhere). Those
/// stories race the holder's validity: the fault, then a new client
/// connecting to five masters and asking them, must all fit in it with
/// room to spare. On a loaded machine (a matrix tried with 14 cells at
/// once on two cores) a restart and a connection took most of 300 ms, the
/// contender got only its last fifth of a TTL and missed it, and 3 of 10
/// whole matrices came out `ok` on stage 7's restart or clock-jump cell;
/// with a second, none of the next 10 did.
const NODE_FAULT_TTL: Duration = Duration::from_secs(1);

/// The TTL for a story in which a node that granted `stage`'s lock
/// forgets it while the holder still trusts it: at least
/// [`NODE_FAULT_TTL`] on Redlock, `ttl` on one node (where the contender
/// needs no more than the one node that forgot).
pub(crate) fn node_fault_ttl(stage: &lockcore::Description, ttl: Duration) -> Duration {
    if stage.nodes > 1 {
        ttl.max(NODE_FAULT_TTL)
    } else {
        ttl
    }
}

impl Run {
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
        contender.release(&theirs).await?.answered()?;
        Ok(true)
    }

    /// Lets `client` take the lock. On Redlock, the nodes past a bare
    /// majority are cut off from it first, so it holds exactly N/2+1 of them
    /// (`node1`…`node3` of five); on one node it simply takes the lock.
    ///
    /// The partition lasts for the rest of the run. A Redlock client stops
    /// counting at a majority, but its votes to the nodes it did not hear
    /// from are still in line behind its earlier rounds' (each waits for
    /// the one before it, then for its own timeout): a heal, however late,
    /// could let one of them through and give `client` a fourth and fifth
    /// node (seen in a whole matrix on a busy machine: "holds the lock on
    /// exactly 5 of 5 nodes", and client-B kept out).
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
        let held = held.ok_or_else(|| {
            HarnessError::StoryNotTold(format!("{} could not take a free lock", client.name()))
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

impl Run {
    /// Whether the lock still holds `value` on a majority of the lock nodes
    /// (on the one node, for single-node stages).
    pub async fn lock_holds(&self, value: &str) -> Result<bool> {
        let key = &self.factory.config.key;
        let mut holding = 0;
        for node in &self.nodes {
            if node_holds(&node.url(), key, value).await? {
                holding += 1;
            }
        }
        Ok(holding > self.nodes.len() / 2)
    }
}

/// Whether `key` on the node at `url` holds `value`: as its string value
/// (stages 1–5, 7, 8) or as a field of its hash (stage 6).
async fn node_holds(url: &str, key: &str, value: &str) -> Result<bool> {
    let mut conn = lockcore::connect(url, "harness").await?;
    let kind: String = redis::cmd("TYPE").arg(key).query_async(&mut conn).await?;
    Ok(match kind.as_str() {
        "string" => {
            let current: Option<String> = redis::cmd("GET").arg(key).query_async(&mut conn).await?;
            current.as_deref() == Some(value)
        }
        "hash" => {
            redis::cmd("HEXISTS")
                .arg(key)
                .arg(value)
                .query_async(&mut conn)
                .await?
        }
        _ => false,
    })
}
