//! The expected rows of the library rows (`src/libraries/`), beside the
//! stages' (`expected.rs`), in the same columns: each written after running
//! the library and reading its code. Each cell that is not ok is explained
//! by the library's own lines in its file's module docs
//! (`src/libraries/*.rs`). A cell written `ok|OUT-OF-ORDER` is a race
//! between two of the library's processes that no story can order: either
//! verdict is the library's (see `python_redis_lock.rs`). The n/a cells of
//! the cluster columns are the library's own answer (`n/a`, with its
//! reason); duplicate-request and release-before-commit are n/a for every
//! row that is a command (the protocol has no retry of a request id and no
//! open transaction).

/// One row per library: its name and its 28 cells, as in `expected.rs`.
#[rustfmt::skip]
pub const ROWS: &[(&str, [&str; 28])] = &[
    //          contention killed-holder crash-before slow-business       get-del-race gc-pause            failover            restart-w/o-pers.   clock-jump          reentrant       network-delay stale-write-first   business-error sentinel-failover   split-brain         split-brain-min-r. sentinel-f.-wait sentinel-f.-wait-other-replica dead-waiter leader-killed minority-partition cluster-failover cluster-failover-wait cluster-partition duplicate-request arrival-order   release-before-commit eviction
    ("redis-py", ["ok", "ok", "ok", "OVERSOLD OVERLAP", "ok", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "SELF-BLOCKED", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "ok", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "ok", "ok", "OVERSOLD OVERLAP", "ok", "n/a", "n/a", "OVERSOLD OVERLAP", "ok", "OVERSOLD OVERLAP", "n/a", "OUT-OF-ORDER", "n/a", "OVERSOLD OVERLAP"]),
    ("redis-py-no-ttl", ["ok", "DEADLOCK", "DEADLOCK", "ok", "ok", "ok", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "ok", "DEADLOCK", "DEADLOCK", "ok", "DEADLOCK", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "ok", "ok", "OVERSOLD OVERLAP", "ok", "n/a", "n/a", "OVERSOLD OVERLAP", "ok", "OVERSOLD OVERLAP", "n/a", "OUT-OF-ORDER", "n/a", "ok"]),
    ("python-redis-lock", ["ok", "ok", "ok", "OVERSOLD OVERLAP", "ok", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "SELF-BLOCKED", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "ok", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "ok", "ok", "OVERSOLD OVERLAP", "ok", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a", "ok|OUT-OF-ORDER", "n/a", "OVERSOLD OVERLAP"]),
    ("python-redis-lock-renewal", ["ok", "ok", "ok", "ok", "ok", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "DEADLOCK", "OVERSOLD OVERLAP", "ok", "DEADLOCK", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "ok", "ok", "OVERSOLD OVERLAP", "ok", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a", "ok|OUT-OF-ORDER", "n/a", "OVERSOLD OVERLAP"]),
    ("python-redis-lock-no-ttl", ["ok", "DEADLOCK", "DEADLOCK", "ok", "ok", "ok", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "ok", "DEADLOCK", "ok", "ok", "DEADLOCK", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "ok", "ok", "OVERSOLD OVERLAP", "ok", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a", "ok|OUT-OF-ORDER", "n/a", "ok"]),
    ("pottery", ["ok", "ok", "ok", "OVERSOLD OVERLAP", "ok", "OVERSOLD OVERLAP", "n/a", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "SELF-BLOCKED", "REFUSED", "OVERSOLD OVERLAP", "ok", "n/a", "n/a", "n/a", "n/a", "n/a", "ok", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a", "OUT-OF-ORDER", "n/a", "ok"]),
    ("kazoo", ["ok", "ok", "ok", "ok", "n/a", "OVERLAP", "n/a", "n/a", "n/a", "n/a", "n/a", "ok", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a", "ok", "OVERLAP", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a"]),
    ("rslock", ["ok", "ok", "ok", "OVERSOLD OVERLAP", "ok", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "SELF-BLOCKED", "REFUSED", "OVERSOLD OVERLAP", "ok", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "ok", "ok", "OVERSOLD OVERLAP", "ok", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a", "OUT-OF-ORDER", "n/a", "OVERSOLD OVERLAP"]),
];
