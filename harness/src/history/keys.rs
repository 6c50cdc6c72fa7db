//! The servers' own record of every key: who wrote it, who deleted it, when
//! it expired or was evicted. Verdicts about keys (a release that deleted
//! another client's lock; a lock key that stayed for a whole patience
//! window) are read from here, not from what the clients believe. Each
//! node's watcher ([`crate::observe::NodeKeys`] says how) writes into it.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use super::lock;

/// What happened to a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// It came into existence, or someone else wrote over it.
    Written,
    /// A command deleted it (`DEL`, or a script's `DEL`).
    Deleted,
    /// Its TTL ran out.
    Expired,
    /// The server dropped it to make room (`maxmemory`): for whoever held
    /// it, the same end as an expiry, before its time.
    Evicted,
}

/// One change of one key on one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyChange {
    /// When: the command's time as `MONITOR` stamps it; for an expiry, when
    /// the notification arrived.
    pub at: SystemTime,
    /// The node's label.
    pub node: String,
    /// The key.
    pub key: String,
    /// What happened.
    pub change: Change,
    /// Whose command did it: a client's name (`CLIENT SETNAME`), or its
    /// address when it never named itself. `None` for an expiry.
    pub by: Option<String>,
    /// Who had written the key before this change (`None` when nobody seen
    /// by this watcher had).
    pub owner_before: Option<String>,
}

/// Every node's key changes, in the order each node made them. Clones share it.
#[derive(Debug, Clone, Default)]
pub struct KeyRecord(Arc<Mutex<Vec<KeyChange>>>);

impl KeyRecord {
    /// Every change so far.
    pub fn changes(&self) -> Vec<KeyChange> {
        lock(&self.0).clone()
    }

    /// Adds a change a node's watcher saw.
    pub(crate) fn push(&self, change: KeyChange) {
        lock(&self.0).push(change);
    }

    /// Whether `key` existed on some node for the whole of `from..=to`:
    /// written before `from` and neither deleted nor expired until `to`.
    pub fn existed_throughout(&self, key: &str, from: SystemTime, to: SystemTime) -> bool {
        let changes = self.changes();
        let nodes: BTreeSet<&str> = changes.iter().map(|c| c.node.as_str()).collect();
        nodes.into_iter().any(|node| {
            let mine = changes.iter().filter(|c| c.key == key && c.node == node);
            let present_at_start = mine
                .clone()
                .rfind(|c| c.at <= from)
                .is_some_and(|c| c.change == Change::Written);
            let removed_inside = mine
                .filter(|c| c.at > from && c.at <= to)
                .any(|c| c.change != Change::Written);
            present_at_start && !removed_inside
        })
    }

    /// The expiry of `owner`'s `key` after which `owner` wrote the key
    /// again on the same node: it held the lock, lost it to the TTL, and
    /// took it anew. Read from the order of the record, not from its times.
    pub fn expired_then_retaken(&self, key: &str, owner: &str) -> Option<KeyChange> {
        let changes = self.changes();
        changes.iter().enumerate().find_map(|(i, c)| {
            let expired = c.key == key
                && c.change == Change::Expired
                && c.owner_before.as_deref() == Some(owner);
            let retaken = changes[i + 1..].iter().any(|later| {
                later.key == key
                    && later.node == c.node
                    && later.change == Change::Written
                    && later.by.as_deref() == Some(owner)
            });
            (expired && retaken).then(|| c.clone())
        })
    }
}
