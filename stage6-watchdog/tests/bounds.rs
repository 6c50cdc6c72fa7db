//! Every bound the stage promises, checked against a real server: a lease
//! or watchdog timeout Redis would refuse is refused first, with a clear
//! configuration error, so the lock is never left without an expiry; and a
//! wait too long for the clock is an error, not a panic.
//!
//! Why it matters here: the acquire script runs `HINCRBY` and then
//! `PEXPIRE`. Given a time Redis refuses, the `PEXPIRE` fails and the
//! `HINCRBY` stays (a script is not a transaction): a lock that never
//! expires, against the promise that a dead holder's lock is gone within
//! one timeout.

use std::time::Duration;

use harness::server::{Backend, Node};
use lockcore::{ClientSetup, LockConfig, LockError, MAX_EXPIRY, Release};
use stage6::RLock;

const KEY: &str = "lock:stock";

async fn lock_node() -> Node {
    let backend = Backend::from_env().unwrap_or_else(|e| panic!("{e}"));
    Node::start(&backend, "lock", &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

async fn pttl(node: &Node) -> i64 {
    let mut conn = lockcore::connect(&node.url(), "inspector").await.unwrap();
    redis::cmd("PTTL")
        .arg(KEY)
        .query_async(&mut conn)
        .await
        .unwrap()
}

fn is_config(result: &Result<impl std::fmt::Debug, LockError>, says: &str) -> bool {
    matches!(result, Err(LockError::Config(message)) if message.contains(says))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lease_redis_would_refuse_is_refused_and_leaves_no_key_without_a_ttl() {
    let node = lock_node().await;
    let setup = ClientSetup::new(
        vec![node.url()],
        "client-A",
        LockConfig::with_ttl(Duration::from_secs(30)),
    );
    let lock = RLock::connect(setup).await.unwrap();

    let refused = lock.try_lock(Duration::ZERO, Some(Duration::MAX)).await;
    assert!(
        is_config(&refused, "a lease must be at most"),
        "{refused:?}"
    );
    assert_eq!(pttl(&node).await, -2, "nothing was written: no key at all");

    // The bound itself is one Redis takes: the lock is there, and expires.
    let held = lock.try_lock(Duration::ZERO, Some(MAX_EXPIRY)).await;
    assert!(matches!(held, Ok(Some(_))), "{held:?}");
    assert!(pttl(&node).await > 0, "the longest lease still expires");
    assert_eq!(lock.unlock().await.unwrap(), Release::Deleted);

    let zero = lock.try_lock(Duration::ZERO, Some(Duration::ZERO)).await;
    assert!(is_config(&zero, "at least 1 ms"), "{zero:?}");
    assert_eq!(pttl(&node).await, -2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_watchdog_timeout_redis_would_refuse_is_a_configuration_error() {
    let node = lock_node().await;
    let config = LockConfig {
        watchdog_timeout: Duration::MAX,
        ..LockConfig::with_ttl(Duration::from_secs(30))
    };
    let refused = RLock::connect(ClientSetup::new(vec![node.url()], "client-A", config)).await;
    assert!(
        is_config(&refused.map(|_| ()), "the watchdog timeout must be at most"),
        "no client is made that would write a lock with no expiry"
    );
    assert_eq!(pttl(&node).await, -2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wait_without_end_is_a_configuration_error_not_a_panic() {
    let node = lock_node().await;
    let setup = ClientSetup::new(
        vec![node.url()],
        "client-A",
        LockConfig::with_ttl(Duration::from_secs(30)),
    );
    let lock = RLock::connect(setup).await.unwrap();
    let refused = lock.try_lock(Duration::MAX, None).await;
    assert!(is_config(&refused, "wait less"), "{refused:?}");
    assert_eq!(pttl(&node).await, -2, "refused before anything was sent");
    // `lock()` is the way to wait without a limit.
    lock.lock().await.unwrap();
    assert!(pttl(&node).await > 0);
    assert_eq!(lock.unlock().await.unwrap(), Release::Deleted);
}
