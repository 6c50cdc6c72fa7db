//! The lock is granted at the majority's last yes, without waiting for the
//! masters still to answer. A master that answers late may still have
//! written our key: that key carries the TTL (it expires if the holder never
//! releases), and the release deletes it like the others.

use std::time::Duration;

use harness::fault::proxy::Proxy;
use harness::observe::Timeline;
use harness::server::{Backend, Node};
use lockcore::{ClientSetup, LockConfig};
use stage7::{NODES, Redlock, node_timeout};
use tokio::time::{Instant, sleep};

const TTL: Duration = Duration::from_secs(10);
const KEY: &str = "lock:stock";
/// How long the test waits for something before it says it never came.
const PATIENCE: Duration = Duration::from_secs(20);

async fn on_node<T: redis::FromRedisValue>(node: &Node, command: &mut redis::Cmd) -> T {
    let mut conn = lockcore::connect(&node.url(), "harness").await.unwrap();
    command.query_async(&mut conn).await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn late_masters_get_our_key_with_its_ttl_and_the_release_deletes_it() {
    let backend = Backend::from_env().unwrap_or_else(|e| panic!("{e}"));
    let mut nodes = Vec::new();
    for i in 0..NODES {
        nodes.push(
            Node::start(&backend, &format!("node{i}"), &[])
                .await
                .unwrap(),
        );
    }
    // The last two masters sit behind proxies.
    let timeline = Timeline::new();
    let mut urls: Vec<String> = nodes[..3].iter().map(Node::url).collect();
    let mut proxies = Vec::new();
    for node in &nodes[3..] {
        let proxy = Proxy::start(node.addr(), node.label(), &timeline)
            .await
            .unwrap();
        urls.push(proxy.url());
        proxies.push(proxy);
    }
    let lock = Redlock::connect(ClientSetup::new(
        urls,
        "client-A",
        LockConfig::with_ttl(TTL),
    ))
    .await
    .unwrap();
    // From now on they answer client-A three per-master timeouts late: they
    // run its commands at once, but their answers count as no.
    for proxy in &proxies {
        proxy.delay_replies("client-A", node_timeout(TTL) * 3);
    }

    let lease = lock
        .try_lock()
        .await
        .unwrap()
        .expect("three prompt masters are a majority");

    // The late masters ran our SET: the key is there, ours, with a TTL.
    for node in &nodes[3..] {
        let started = Instant::now();
        loop {
            let value: Option<String> = on_node(node, redis::cmd("GET").arg(KEY)).await;
            if value.is_some() {
                assert_eq!(value.as_deref(), Some(lease.value.as_str()));
                break;
            }
            assert!(
                started.elapsed() < PATIENCE,
                "{} never got the SET",
                node.label()
            );
            sleep(Duration::from_millis(5)).await;
        }
        let pttl: i64 = on_node(node, redis::cmd("PTTL").arg(KEY)).await;
        assert!(
            pttl > 0,
            "{}: a late key without a TTL ({pttl})",
            node.label()
        );
    }

    // The release reaches every master, the late ones too.
    lock.unlock(&lease).await;
    for node in &nodes {
        let started = Instant::now();
        while on_node::<i64>(node, redis::cmd("EXISTS").arg(KEY)).await == 1 {
            assert!(
                started.elapsed() < PATIENCE,
                "{} kept our key",
                node.label()
            );
            sleep(Duration::from_millis(5)).await;
        }
    }
}
