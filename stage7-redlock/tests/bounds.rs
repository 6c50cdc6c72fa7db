//! Every bound the stage promises: settings that would make Redlock refuse
//! forever, spin, panic, or send a `PX` Redis rejects are refused when the
//! client is made, with a clear configuration error.

use std::time::Duration;

use harness::server::{Backend, Node};
use lockcore::{ClientSetup, LockConfig, LockError};
use stage7::{NODES, Redlock, drift_allowance};

async fn masters() -> Vec<Node> {
    let backend = Backend::from_env().unwrap_or_else(|e| panic!("{e}"));
    let mut nodes = Vec::new();
    for i in 0..NODES {
        nodes.push(
            Node::start(&backend, &format!("node{i}"), &[])
                .await
                .unwrap_or_else(|e| panic!("{e}")),
        );
    }
    nodes
}

async fn connect(nodes: &[Node], config: LockConfig) -> Result<Redlock, LockError> {
    let urls = nodes.iter().map(Node::url).collect();
    Redlock::connect(ClientSetup::new(urls, "client-A", config)).await
}

fn refusal<T>(result: Result<T, LockError>) -> String {
    match result {
        Err(LockError::Config(message)) => message,
        Err(other) => panic!("expected a configuration error, got {other}"),
        Ok(_) => panic!("expected a configuration error, got a lock"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_ttl_the_drift_allowance_eats_is_refused_instead_of_refusing_every_attempt() {
    let nodes = masters().await;
    // 3 ms: 2.03 ms of drift allowance and a millisecond to ask leave
    // nothing: every attempt would come back too late to be trusted.
    let short = LockConfig::with_ttl(Duration::from_millis(3));
    assert!(drift_allowance(&short) + Duration::from_millis(1) > short.ttl);
    let message = refusal(connect(&nodes, short).await);
    assert!(message.contains("drift allowance"), "{message}");
    // 2 ms is all drift allowance.
    let all_drift = LockConfig {
        ttl: Duration::from_millis(2),
        ..LockConfig::with_ttl(Duration::from_secs(1))
    };
    let message = refusal(connect(&nodes, all_drift).await);
    assert!(message.contains("drift allowance"), "{message}");

    // A TTL with room left is granted.
    let lock = connect(&nodes, LockConfig::with_ttl(Duration::from_secs(10)))
        .await
        .unwrap();
    assert!(lock.try_lock().await.unwrap().is_some());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_retry_that_never_sleeps_a_ttl_redis_refuses_and_an_endless_wait_are_errors() {
    let nodes = masters().await;
    let spinning = LockConfig {
        retry_interval: Duration::ZERO,
        ..LockConfig::with_ttl(Duration::from_secs(1))
    };
    assert!(refusal(connect(&nodes, spinning).await).contains("retry interval"));
    let endless = LockConfig::with_ttl(Duration::MAX);
    assert!(refusal(connect(&nodes, endless).await).contains("the TTL must be at most"));

    let lock = connect(&nodes, LockConfig::with_ttl(Duration::from_secs(1)))
        .await
        .unwrap();
    assert!(refusal(lock.lock(Duration::MAX).await).contains("wait less"));
    assert!(
        lock.lock(Duration::from_secs(3600))
            .await
            .unwrap()
            .is_some()
    );
}
