//! The lock is a hash of owners and hold counts: the same owner may take it
//! again, and must give it back as many times. Anyone else is refused.

use std::sync::Arc;
use std::time::Duration;

use harness::check::Verdict;
use harness::scenario::run_in_test;
use harness::server::{Backend, Node};
use lockcore::{ClientSetup, LockConfig, LockError, Release};
use stage6::RLock;

const WATCHDOG: Duration = Duration::from_millis(300);

async fn lock_node() -> Node {
    let backend = Backend::from_env().unwrap_or_else(|e| panic!("{e}"));
    Node::start(&backend, "lock", &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

async fn client(node: &Node, name: &str) -> RLock {
    let setup = ClientSetup::new(vec![node.url()], name, LockConfig::with_ttl(WATCHDOG));
    RLock::connect(setup)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn the_holder_asking_again_gets_the_lock_at_once() {
    let outcome = run_in_test("reentrant", stage6::STAGE).await;
    assert_eq!(outcome.fact("reentered"), 1);
    assert_eq!(outcome.verdict, Verdict::ok());
    assert_eq!(outcome.fact("orders"), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lock_taken_twice_needs_two_unlocks() {
    let node = lock_node().await;
    let lock = client(&node, "client-A").await;
    let first = lock.lock().await.unwrap();
    let second = lock
        .try_lock(Duration::ZERO, None)
        .await
        .unwrap()
        .expect("reentered without waiting");
    assert_eq!(first.value, second.value, "one owner, two holds");
    assert_eq!(lock.hold_count().await.unwrap(), 2);

    // What redis-cli shows: HGETALL lock:stock -> <client-uuid>:<task> 2
    let mut conn = lockcore::connect(&node.url(), "inspector").await.unwrap();
    let hash: Vec<(String, u32)> = redis::cmd("HGETALL")
        .arg("lock:stock")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(hash, [(first.value.clone(), 2)]);

    assert_eq!(lock.unlock().await.unwrap(), Release::StillHeld(1));
    assert!(lock.is_held_by_current_task().await.unwrap());
    assert_eq!(lock.unlock().await.unwrap(), Release::Deleted);
    assert!(!lock.is_locked().await.unwrap());
    assert!(
        matches!(lock.unlock().await, Err(LockError::NotOwner)),
        "a third unlock has nothing to give back"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn another_clients_unlock_is_refused_and_the_lock_survives() {
    let node = lock_node().await;
    let owner = client(&node, "client-A").await;
    let stranger = client(&node, "client-B").await;
    owner.lock().await.unwrap();

    assert!(matches!(stranger.unlock().await, Err(LockError::NotOwner)));
    assert_eq!(
        owner.hold_count().await.unwrap(),
        1,
        "the refused unlock must not touch the owner's hold"
    );
    assert!(
        stranger
            .try_lock(Duration::ZERO, None)
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(owner.unlock().await.unwrap(), Release::Deleted);
}

#[tokio::test(flavor = "multi_thread")]
async fn another_task_of_the_same_client_is_another_owner() {
    let node = lock_node().await;
    let lock = Arc::new(client(&node, "client-A").await);
    lock.lock().await.unwrap();

    let other_task = Arc::clone(&lock);
    let (took, unlocked) = tokio::spawn(async move {
        let took = other_task
            .try_lock(Duration::ZERO, None)
            .await
            .unwrap()
            .is_some();
        (took, other_task.unlock().await)
    })
    .await
    .unwrap();
    assert!(!took, "a task is not reentrant into another task's hold");
    assert!(matches!(unlocked, Err(LockError::NotOwner)));
    assert_eq!(lock.unlock().await.unwrap(), Release::Deleted);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_forced_unlock_fires_the_holders_lost_signal() {
    let node = lock_node().await;
    let owner = client(&node, "client-A").await;
    let admin = client(&node, "admin").await;
    let held = owner.lock().await.unwrap();
    let mut lost = held
        .lost
        .expect("a lock kept by the watchdog carries a lost signal");

    assert!(admin.force_unlock().await.unwrap());
    // The owner's watchdog renews every third of its timeout, so it looks
    // nine times in three timeouts.
    tokio::time::timeout(WATCHDOG * 3, lost.lost())
        .await
        .expect("the lost signal must fire");
    assert!(matches!(owner.unlock().await, Err(LockError::NotOwner)));
}
