//! pottery's `Redlock` (pottery 3.0.1, `pottery/redlock.py`): Redlock over
//! independent masters, as its README configures it:
//! `Redlock(key=..., masters={...}, auto_release_time=ttl)`. The adapter is
//! `adapters/python/pottery_redlock.py`.
//!
//! It keeps its lock at `redlock:<key>` on each master, so the harness
//! watches that key; it is given stage 7's five masters.

use std::time::Duration;

use lockcore::{Home, Store};

use super::{Library, Runs};

/// The row.
pub const LIBRARY: Library = Library {
    name: "pottery",
    version: "3.0.1",
    title: "pottery's Redlock over 5 masters, Redlock(key, masters, auto_release_time=ttl)",
    nodes: stage7::NODES,
    home: Home {
        store: Store::Redis,
        key_prefix: "redlock:",
        shortest_ttl: Duration::ZERO,
    },
    runs: Runs::Python(&["pottery_redlock"]),
};
