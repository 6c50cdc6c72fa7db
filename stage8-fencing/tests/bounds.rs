//! Every bound the stage promises: settings Redis or the clock cannot
//! honour are refused with a clear configuration error, instead of a
//! retry loop that never sleeps, a panic, or a `PX` Redis rejects.

use std::time::Duration;

use harness::server::{Backend, Node};
use lockcore::{ClientSetup, LockConfig, LockError, MAX_EXPIRY};
use stage8::FencedLock;

async fn lock_node() -> Node {
    let backend = Backend::from_env().unwrap_or_else(|e| panic!("{e}"));
    Node::start(&backend, "lock", &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

async fn connect(node: &Node, config: LockConfig) -> Result<FencedLock, LockError> {
    FencedLock::connect(ClientSetup::new(vec![node.url()], "client-A", config)).await
}

fn refusal<T>(result: Result<T, LockError>) -> String {
    match result {
        Err(LockError::Config(message)) => message,
        Err(other) => panic!("expected a configuration error, got {other}"),
        Ok(_) => panic!("expected a configuration error, got a lock"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_retry_that_never_sleeps_and_a_ttl_redis_refuses_are_configuration_errors() {
    let node = lock_node().await;
    let spinning = LockConfig {
        retry_interval: Duration::ZERO,
        ..LockConfig::with_ttl(Duration::from_secs(1))
    };
    assert!(refusal(connect(&node, spinning).await).contains("retry interval"));
    let endless = LockConfig::with_ttl(Duration::MAX);
    assert!(refusal(connect(&node, endless).await).contains("the TTL must be at most"));

    // The bound itself is a TTL Redis takes: the lock is granted, expiring.
    let longest = connect(&node, LockConfig::with_ttl(MAX_EXPIRY))
        .await
        .unwrap();
    let fenced = longest.try_lock().await.unwrap().expect("the lock is free");
    assert_eq!(fenced.token, 1);
    assert!(longest.unlock(&fenced).await.unwrap());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wait_without_end_is_a_configuration_error_not_a_panic() {
    let node = lock_node().await;
    let lock = connect(&node, LockConfig::with_ttl(Duration::from_secs(1)))
        .await
        .unwrap();
    assert!(refusal(lock.lock(Duration::MAX).await).contains("wait less"));
    // A long but countable wait is fine.
    let fenced = lock.lock(Duration::from_secs(3600)).await.unwrap();
    assert!(fenced.is_some(), "the lock is free");
}
