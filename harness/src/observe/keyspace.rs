//! How a node's watcher knows who changed each key, for the servers' own
//! record of their keys ([`KeyRecord`], in the history).
//!
//! Each node's watcher reads one connection that carries both `MONITOR` and
//! the node's keyspace notifications (RESP3 lets one connection subscribe
//! and monitor). Redis writes both into that connection's buffer as it
//! executes, so they arrive in execution order:
//!
//! - a plain command's notifications (`set`, `del`, `hincrby`…) come just
//!   before its `MONITOR` line (Redis feeds monitors after the command ran);
//! - `EVAL`/`EVALSHA` is fed before the script runs; each command the script
//!   runs then comes as a `lua` line, after its own notifications;
//! - `expired` comes when the key expires (the server's active expiry, or a
//!   command touching an expired key), before whatever that command wrote.
//!
//! So a notification belongs to the next command line (a `lua` line belongs
//! to the client that sent the script), and an expiry is nobody's doing.
//! Nothing here depends on timing. (A run's last notifications are never
//! left waiting: the watcher's flush sends an `ECHO`, a command line.)

use std::collections::HashMap;
use std::time::SystemTime;

use crate::history::{Change, KeyChange, KeyRecord};

/// One node's keys as its watcher follows them: who owns each, and the
/// notifications waiting for the command line they belong to.
#[derive(Debug)]
pub struct NodeKeys {
    node: String,
    record: KeyRecord,
    owners: HashMap<String, String>,
    pending: Vec<(String, String, SystemTime)>,
}

impl NodeKeys {
    /// Follows the node labelled `node`, into `record`.
    pub fn new(node: &str, record: KeyRecord) -> Self {
        Self {
            node: node.to_owned(),
            record,
            owners: HashMap::new(),
            pending: Vec::new(),
        }
    }

    /// A keyspace notification: `event` (`set`, `del`, `expired`…) on `key`,
    /// arrived at `now`. It waits for the next command line.
    pub fn notified(&mut self, key: &str, event: &str, now: SystemTime) {
        self.pending.push((key.to_owned(), event.to_owned(), now));
    }

    /// A command line from `MONITOR`, run by `actor` at `at`: the pending
    /// notifications were its doing, except expiries, which are nobody's
    /// (the server's active expiry, or this command touching an expired
    /// key) and happened before this line and before they arrived here.
    /// Returns the changes.
    pub fn command(&mut self, actor: &str, at: SystemTime) -> Vec<KeyChange> {
        std::mem::take(&mut self.pending)
            .into_iter()
            .filter_map(|(key, event, arrived)| {
                if event == "expired" || event == "evicted" {
                    self.apply(&key, &event, None, arrived.min(at))
                } else {
                    self.apply(&key, &event, Some(actor), at)
                }
            })
            .collect()
    }

    fn apply(
        &mut self,
        key: &str,
        event: &str,
        actor: Option<&str>,
        at: SystemTime,
    ) -> Option<KeyChange> {
        let owner_before = self.owners.get(key).cloned();
        let change = match (event, actor) {
            ("expired", _) => Change::Expired,
            ("evicted", _) => Change::Evicted,
            ("del" | "unlink", Some(_)) => Change::Deleted,
            // Anything that writes a value: SET, SETNX, INCR, HSET, HINCRBY…
            ("set" | "incrby" | "incrbyfloat" | "hset" | "hincrby" | "hincrbyfloat", Some(by)) => {
                if owner_before.as_deref() == Some(by) {
                    return None;
                }
                Change::Written
            }
            _ => return None,
        };
        match (change, actor) {
            (Change::Written, Some(by)) => {
                self.owners.insert(key.to_owned(), by.to_owned());
            }
            _ => {
                self.owners.remove(key);
            }
        }
        let change = KeyChange {
            at,
            node: self.node.clone(),
            key: key.to_owned(),
            change,
            by: actor.map(str::to_owned),
            owner_before,
        };
        self.record.push(change.clone());
        Some(change)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    fn at(ms: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(ms)
    }

    #[test]
    fn a_delete_after_the_key_expired_and_was_retaken_is_by_the_old_owner_of_the_new_ones_key() {
        let record = KeyRecord::default();
        let mut keys = NodeKeys::new("lock", record.clone());
        keys.notified("lock:stock", "set", at(0));
        keys.notified("lock:stock", "expire", at(0));
        keys.command("client-A", at(1));
        keys.notified("lock:stock", "expired", at(300));
        keys.notified("lock:stock", "set", at(301));
        keys.command("client-B", at(302));
        assert_eq!(record.changes()[1].change, Change::Expired);
        assert_eq!(
            record.changes()[1].at,
            at(300),
            "an expiry keeps its own time"
        );
        keys.notified("lock:stock", "del", at(310));
        let changes = keys.command("client-A", at(311));
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].change, Change::Deleted);
        assert_eq!(changes[0].by.as_deref(), Some("client-A"));
        assert_eq!(changes[0].owner_before.as_deref(), Some("client-B"));
    }

    #[test]
    fn a_failed_set_nx_writes_nothing_so_each_delete_is_by_the_keys_owner() {
        let record = KeyRecord::default();
        let mut keys = NodeKeys::new("lock", record.clone());
        keys.notified("lock:stock", "set", at(0));
        keys.command("client-A", at(1));
        // client-B's SET NX fails: no notification, so its line changes nothing.
        assert!(keys.command("client-B", at(2)).is_empty());
        keys.notified("lock:stock", "del", at(3));
        keys.command("client-A", at(3));
        keys.notified("lock:stock", "set", at(4));
        keys.command("client-B", at(4));
        keys.notified("lock:stock", "del", at(5));
        keys.command("client-B", at(5));
        assert!(
            record
                .changes()
                .iter()
                .filter(|c| c.change == Change::Deleted)
                .all(|c| c.by == c.owner_before)
        );
    }

    #[test]
    fn a_key_that_stayed_existed_throughout_and_one_that_expired_did_not() {
        let record = KeyRecord::default();
        let mut keys = NodeKeys::new("lock", record.clone());
        keys.notified("lock:stock", "set", at(0));
        keys.command("client-A", at(10));
        assert!(record.existed_throughout("lock:stock", at(20), at(900)));
        keys.notified("lock:stock", "expired", at(300));
        keys.command("harness-monitor", at(305));
        assert!(!record.existed_throughout("lock:stock", at(20), at(900)));
        assert!(
            record
                .expired_then_retaken("lock:stock", "client-A")
                .is_none()
        );
        keys.notified("lock:stock", "set", at(310));
        keys.command("client-A", at(310));
        assert!(
            record
                .expired_then_retaken("lock:stock", "client-A")
                .is_some()
        );
    }
}
