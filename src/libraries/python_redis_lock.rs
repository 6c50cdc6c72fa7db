//! python-redis-lock 4.0.1 (`redis_lock.Lock`), as three rows: with the
//! story's TTL as `expire`; with `auto_renewal=True`, its watchdog; and as
//! its README's usage shows it, with no `expire` at all. The adapter is
//! `adapters/python/python_redis_lock.py`.
//!
//! What it does, read in `redis_lock/__init__.py`:
//!
//! - acquire: `SET lock:<name> <id> NX EX <expire>` (line 232): the key is
//!   always `lock:` and the name, the TTL whole seconds.
//! - `expire` goes through `int()` and a falsy one means no expiry
//!   (lines 146-152): 0.3 s would be a key that never expires. Its rows
//!   therefore run at one second, the least it can keep, and each story's
//!   other times scale with the TTL.
//! - a waiter blocks in `BLPOP lock-signal:<name>` (lines 228-240); a
//!   release pushes one element there, an expiry pushes nothing.
//! - release: Lua compares the id, deletes, signals (lines 20-30,
//!   337-354); a key not ours raises `NotAcquired`.
//! - `auto_renewal=True`: a thread extends the key every two thirds of
//!   `expire` (lines 168, 272-286); when an extension fails, the thread
//!   ends and nobody is told.

use std::time::Duration;

use lockcore::{Home, Store};

use super::{Library, Runs};

/// Where it keeps its lock: the key as given (the adapter passes the name
/// after `lock:`), for one second at least.
const HOME: Home = Home {
    store: Store::Redis,
    key_prefix: "",
    shortest_ttl: Duration::from_secs(1),
};

/// `Lock(conn, name, expire=ttl)`.
pub const LIBRARY: Library = Library {
    name: "python-redis-lock",
    version: "4.0.1",
    title: "python-redis-lock, Lock(conn, name, expire=ttl), whole seconds",
    nodes: 1,
    home: HOME,
    runs: Runs::Python(&["python_redis_lock"]),
};

/// `Lock(conn, name, expire=ttl, auto_renewal=True)`.
pub const AUTO_RENEWAL: Library = Library {
    name: "python-redis-lock-renewal",
    title: "python-redis-lock with auto_renewal=True: a thread extends the key",
    runs: Runs::Python(&["python_redis_lock", "--auto-renewal"]),
    ..LIBRARY
};

/// `Lock(conn, name)`, its README's usage: no expiry.
pub const NO_EXPIRE: Library = Library {
    name: "python-redis-lock-no-ttl",
    title: "python-redis-lock as its README uses it, no expire: the key never expires",
    runs: Runs::Python(&["python_redis_lock", "--no-expire"]),
    ..LIBRARY
};
