//! `extend` renews the lock under the rule that took it: a majority of
//! masters must still hold our value.

use std::time::Duration;

use harness::server::{Backend, Node};
use lockcore::{ClientSetup, LockConfig};
use stage7::{Lease, Redlock};
use tokio::time::{Instant, sleep};

const TTL: Duration = Duration::from_secs(10);
const KEY: &str = "lock:stock";

async fn masters() -> Vec<Node> {
    let backend = Backend::from_env().unwrap_or_else(|e| panic!("{e}"));
    let mut nodes = Vec::new();
    for i in 1..=5 {
        nodes.push(
            Node::start(&backend, &format!("node{i}"), &[])
                .await
                .unwrap_or_else(|e| panic!("{e}")),
        );
    }
    nodes
}

async fn redlock(nodes: &[Node]) -> Redlock {
    let config = LockConfig {
        ttl: TTL,
        ..LockConfig::default()
    };
    Redlock::connect(ClientSetup::new(
        nodes.iter().map(Node::url).collect(),
        "client-A",
        config,
    ))
    .await
    .unwrap_or_else(|e| panic!("{e}"))
}

/// Five masters, and client-A holding the lock on all of them.
async fn held_on_five_masters() -> (Vec<Node>, Redlock, Lease) {
    let nodes = masters().await;
    let lock = redlock(&nodes).await;
    let lease = lock
        .try_lock()
        .await
        .unwrap()
        .expect("five free masters grant the lock");
    // The lock is granted at the majority's last yes; the other masters'
    // SETs are still on their way. Wait for them to land.
    for node in &nodes {
        let started = Instant::now();
        while on_node::<Option<String>>(node, redis::cmd("GET").arg(KEY)).await
            != Some(lease.value.clone())
        {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "{} never got the key",
                node.label()
            );
            sleep(Duration::from_millis(2)).await;
        }
    }
    (nodes, lock, lease)
}

async fn on_node<T: redis::FromRedisValue>(node: &Node, command: &mut redis::Cmd) -> T {
    let mut conn = lockcore::connect(&node.url(), "harness").await.unwrap();
    command.query_async(&mut conn).await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn extending_a_held_lock_gives_every_master_a_fresh_ttl() {
    let (nodes, lock, lease) = held_on_five_masters().await;
    // Time passes: the keys have 1 s of their 10 s left.
    for node in &nodes {
        assert_eq!(
            on_node::<i64>(node, redis::cmd("PEXPIRE").arg(KEY).arg(1000)).await,
            1
        );
    }
    let renewed = lock
        .extend(&lease)
        .await
        .unwrap()
        .expect("a majority still holds our value");
    assert_eq!(renewed.value, lease.value);
    for node in &nodes {
        let pttl: i64 = on_node(node, redis::cmd("PTTL").arg(KEY)).await;
        assert!(pttl > 5_000, "{} kept only {pttl} ms", node.label());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lock_lost_on_a_majority_cannot_be_extended() {
    let (nodes, lock, lease) = held_on_five_masters().await;
    // Three masters forgot us and gave the key to someone else.
    for node in &nodes[..3] {
        assert_eq!(on_node::<i64>(node, redis::cmd("DEL").arg(KEY)).await, 1);
        on_node::<()>(
            node,
            redis::cmd("SET")
                .arg(KEY)
                .arg("someone-else")
                .arg("PX")
                .arg(10_000),
        )
        .await;
    }
    assert!(
        lock.extend(&lease).await.unwrap().is_none(),
        "two masters of five are no majority"
    );
    // Nobody else's key was touched: extend only renews our own value.
    for node in &nodes[..3] {
        let value: String = on_node(node, redis::cmd("GET").arg(KEY)).await;
        assert_eq!(value, "someone-else");
    }
}
