//! A release says truly what happened on the masters. Masters that cannot
//! be reached (cut off by a partition, still holding our key) are named as
//! unreachable, and the release is *unconfirmed*; it is not "nothing
//! deleted", which would read as "the lock had slipped away". Only masters
//! that answered "not ours" say that.

use std::time::Duration;

use harness::fault::proxy::Proxy;
use harness::observe::Timeline;
use harness::server::{Backend, Node};
use lockcore::{ClientSetup, LockConfig, Release};
use stage7::{NODES, Redlock};

/// Long enough that no key expires while a test looks at it.
const TTL: Duration = Duration::from_secs(30);
const KEY: &str = "lock:stock";

/// Five masters, each behind a proxy, and client-A on the proxies.
struct Masters {
    nodes: Vec<Node>,
    proxies: Vec<Proxy>,
    lock: Redlock,
}

async fn masters() -> Masters {
    let backend = Backend::from_env().unwrap_or_else(|e| panic!("{e}"));
    let timeline = Timeline::new();
    let mut nodes = Vec::new();
    let mut proxies = Vec::new();
    for i in 0..NODES {
        let node = Node::start(&backend, &format!("node{i}"), &[])
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        proxies.push(
            Proxy::start(node.addr(), node.label(), &timeline)
                .await
                .unwrap(),
        );
        nodes.push(node);
    }
    let urls = proxies.iter().map(Proxy::url).collect();
    let lock = Redlock::connect(ClientSetup::new(
        urls,
        "client-A",
        LockConfig::with_ttl(TTL),
    ))
    .await
    .unwrap();
    Masters {
        nodes,
        proxies,
        lock,
    }
}

async fn on_node<T: redis::FromRedisValue>(node: &Node, command: &mut redis::Cmd) -> T {
    let mut conn = lockcore::connect(&node.url(), "inspector").await.unwrap();
    command.query_async(&mut conn).await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn masters_cut_off_during_the_release_are_named_unreachable_not_not_ours() {
    let m = masters().await;
    let lease = m.lock.try_lock().await.unwrap().expect("five masters up");
    // A partition: three of five masters no longer hear client-A.
    for proxy in &m.proxies[2..] {
        proxy.cut_off("client-A");
    }
    let unlocked = m.lock.unlock(&lease).await;

    let urls: Vec<String> = m.proxies.iter().map(Proxy::url).collect();
    let mut deleted = unlocked.deleted.clone();
    deleted.sort();
    let mut unreachable = unlocked.unreachable.clone();
    unreachable.sort();
    let (mut reached, mut cut) = (urls[..2].to_vec(), urls[2..].to_vec());
    reached.sort();
    cut.sort();
    assert_eq!(deleted, reached, "{unlocked:?}");
    assert_eq!(unreachable, cut, "{unlocked:?}");
    assert!(unlocked.not_ours.is_empty(), "{unlocked:?}");
    assert_eq!(
        unlocked.outcome(3),
        Release::Unconfirmed {
            deleted: 2,
            not_ours: 0,
            unreachable: 3
        }
    );
    // The servers agree: the cut-off masters still hold our key, with its
    // TTL running; the reachable ones do not.
    for node in &m.nodes[2..] {
        let value: Option<String> = on_node(node, redis::cmd("GET").arg(KEY)).await;
        assert_eq!(
            value.as_deref(),
            Some(lease.value.as_str()),
            "{}",
            node.label()
        );
        let pttl: i64 = on_node(node, redis::cmd("PTTL").arg(KEY)).await;
        assert!(pttl > 0, "{}: {pttl}", node.label());
    }
    for node in &m.nodes[..2] {
        let exists: i64 = on_node(node, redis::cmd("EXISTS").arg(KEY)).await;
        assert_eq!(exists, 0, "{}", node.label());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lock_gone_from_a_majority_is_nothing_deleted_with_the_masters_named() {
    let m = masters().await;
    let lease = m.lock.try_lock().await.unwrap().expect("five masters up");
    // Our key vanished from three masters (it expired there, say).
    for node in &m.nodes[..3] {
        let () = on_node(node, redis::cmd("DEL").arg(KEY)).await;
    }
    let unlocked = m.lock.unlock(&lease).await;
    assert_eq!(unlocked.not_ours.len(), 3, "{unlocked:?}");
    assert_eq!(unlocked.deleted.len(), 2, "{unlocked:?}");
    assert!(unlocked.unreachable.is_empty(), "{unlocked:?}");
    assert_eq!(unlocked.outcome(3), Release::NothingDeleted);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_release_confirmed_by_a_majority_is_deleted() {
    let m = masters().await;
    let lease = m.lock.try_lock().await.unwrap().expect("five masters up");
    // Two masters out of reach do not change a confirmed majority.
    for proxy in &m.proxies[3..] {
        proxy.cut_off("client-A");
    }
    let unlocked = m.lock.unlock(&lease).await;
    assert!(unlocked.deleted.len() >= 3, "{unlocked:?}");
    assert_eq!(unlocked.outcome(3), Release::Deleted);
}
