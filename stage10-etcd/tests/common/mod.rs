//! A world for stage 10's stories: the harness's own run on a real
//! three-member etcd cluster (started by `Run::start` for stage 10), a
//! Redis "database" node for the stock (never faulted), the history and
//! its timeline, and the judge at the end.

#![allow(dead_code)] // each test file uses its own part

pub mod relay;

use std::time::Duration;

use etcd_client::{Client, GetOptions, SortOrder, SortTarget, WatchOptions};
use harness::holder::Launcher;
use harness::scenario::{Run, ScenarioEnv};
use harness::workload::Fencing;
use lockcore::ClientSetup;
use stage10::EtcdLock;
use tokio::time::Instant;

/// Leases of two seconds, the shortest etcd grants with its default 1 s
/// election timeout: renewed every ~670 ms, so a loaded machine does not
/// expire a living lease by accident, and a story still takes seconds.
pub const LEASE: Duration = Duration::from_secs(2);

/// How long a rival waits: three lease TTLs, so a lease that does expire
/// always frees the lock well within it.
pub fn patience() -> Duration {
    LEASE * 3
}

/// Starts the cluster and the database with `stock` items, the resource
/// checking tokens as `fencing` says; holder processes are this test
/// binary (its `holder_entry!`).
pub async fn start(stock: i64, fencing: Fencing) -> Run {
    let mut env =
        ScenarioEnv::from_env(Launcher::this_test_binary()).unwrap_or_else(|e| panic!("{e}"));
    env.fencing = fencing;
    env.timing.ttl = LEASE;
    let run = Run::start(stage10::STAGE, env, stock)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    run.narrate(format!("the resource's fencing: {}", fencing.label()));
    run
}

/// A stage 10 lock of its own (its natural API, not the harness's client),
/// on the members `urls` name, with the run's settings.
pub async fn etcd_lock_at(run: &Run, name: &str, urls: Vec<String>) -> EtcdLock {
    let setup = ClientSetup::new(urls, name, run.factory.config.clone());
    EtcdLock::connect(setup)
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// A stage 10 lock on the cluster itself.
pub async fn etcd_lock(run: &Run, name: &str) -> EtcdLock {
    etcd_lock_at(run, name, run.factory.lock_urls.clone()).await
}

/// The lock's prefix: its queue is the keys under it.
pub fn lock_prefix(run: &Run) -> String {
    format!("{}{}/", stage10::ROOT, run.factory.config.key)
}

/// A plain etcd client of the cluster, to look at the queue (and revoke a
/// lease) as an operator would.
pub async fn observer(run: &Run) -> Client {
    Client::connect(run.factory.lock_urls.clone(), None)
        .await
        .unwrap()
}

/// The lease a lock key belongs to: its name is the lease id in hex.
pub fn lease_of(key: &str) -> i64 {
    i64::from_str_radix(key.rsplit('/').next().unwrap(), 16).unwrap()
}

/// Waits, on an etcd watch, until the keys under `prefix` (in create
/// revision order) satisfy `wanted`; panics after `within`, saying what
/// they were.
pub async fn keys_until(
    observer: &Client,
    prefix: &str,
    within: Duration,
    wanted: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    let deadline = Instant::now() + within;
    let mut client = observer.clone();
    loop {
        let in_order = GetOptions::new()
            .with_prefix()
            .with_sort(SortTarget::Create, SortOrder::Ascend);
        let now = client.get(prefix, Some(in_order)).await.unwrap();
        let keys: Vec<String> = now
            .kvs()
            .iter()
            .map(|kv| kv.key_str().unwrap().to_owned())
            .collect();
        if wanted(&keys) {
            return keys;
        }
        let after = now.header().map_or(0, |h| h.revision()) + 1;
        let mut changes = client
            .watch(
                prefix,
                Some(WatchOptions::new().with_prefix().with_start_revision(after)),
            )
            .await
            .unwrap();
        let changed = async {
            while let Ok(Some(reply)) = changes.message().await {
                if !reply.events().is_empty() {
                    return;
                }
            }
        };
        if tokio::time::timeout_at(deadline, changed).await.is_err() {
            panic!("the keys were still {keys:?} after {within:?}");
        }
    }
}
