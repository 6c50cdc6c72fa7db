//! kazoo's `Lock` (kazoo 2.11.0, `kazoo/recipe/lock.py`), ZooKeeper's lock
//! recipe in Python, on the ensemble stage 9 runs on, as its documentation
//! configures it: `KazooClient(hosts=...)`, `zk.Lock(path, identifier)`,
//! `acquire(timeout=...)`. The adapter is `adapters/python/kazoo_lock.py`.
//!
//! As for stage 9, the story's TTL is the session timeout, and the fencing
//! token is the lock node's `czxid`, read by the adapter once the lock is
//! granted (kazoo hands out none itself).

use lockcore::Home;

use super::{Library, Runs};

/// The row.
pub const LIBRARY: Library = Library {
    name: "kazoo",
    version: "2.11.0",
    title: "kazoo's Lock (ZooKeeper's recipe in Python) on a 3-member ensemble",
    nodes: 3,
    home: Home::ZOOKEEPER,
    runs: Runs::Python(&["kazoo_lock"]),
};
