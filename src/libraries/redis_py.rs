//! redis-py's `Lock` (PyPI `redis` 8.1.0, `redis/lock.py`), the lock
//! Celery and Django's Redis cache take, as two rows: as its documentation
//! configures it, `r.lock(name, timeout=ttl)`, and with `timeout` left at
//! its default, `None`. The adapter is `adapters/python/redis_py.py`.
//!
//! What it does, read in `redis/lock.py`:
//!
//! - acquire: one `SET name token NX PX ttl` (lines 237-245), the token
//!   `uuid1().hex`; a waiter polls every 0.1 s until `blocking_timeout`
//!   (lines 223-235): no queue, no pub/sub.
//! - release: a Lua compare-and-delete (lines 30-37); a key that is not
//!   ours raises `LockNotOwnedError`. So stage 5's release.
//! - no renewal (`extend` and `reacquire` exist, called by hand), no
//!   fencing token, no lost-lock signal.
//! - `timeout=None`, the default, sends no `PX` (lines 238-243): the key
//!   never expires, and a crashed holder's lock is never given again.
//! - under it, redis-py 8's client waits 5 s for a reply and retries a
//!   command 10 times on a connection error or a timeout.

use lockcore::Home;

use super::{Library, Runs};

/// `r.lock(name, timeout=ttl)`.
pub const LIBRARY: Library = Library {
    name: "redis-py",
    version: "8.1.0",
    title: "redis-py's Lock (PyPI redis), r.lock(name, timeout=ttl)",
    nodes: 1,
    home: Home::REDIS,
    runs: Runs::Python(&["redis_py"]),
};

/// `r.lock(name)`: its default `timeout=None`, no expiry.
pub const NO_TIMEOUT: Library = Library {
    name: "redis-py-no-ttl",
    title: "redis-py's Lock at its default timeout=None: the key never expires",
    runs: Runs::Python(&["redis_py", "--no-timeout"]),
    ..LIBRARY
};
