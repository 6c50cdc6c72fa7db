//! The fair variant: waiters get the lock in the order they asked, the
//! client that just released cannot barge back in, and a waiter killed in
//! the queue, or frozen there, holds it up for one waiter timeout at most.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use harness::check::Verdict;
use harness::scenario::run_in_test;
use harness::server::{Backend, Node};
use lockcore::{ClientSetup, LockConfig, Release};
use stage6::fair::{FairLock, queue_name, timeout_name};

const WATCHDOG: Duration = Duration::from_millis(300);
/// How long a test waits for something the server must show.
const PATIENCE: Duration = Duration::from_secs(10);

async fn lock_node() -> Node {
    let backend = Backend::from_env().unwrap_or_else(|e| panic!("{e}"));
    Node::start(&backend, "lock", &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

async fn client(node: &Node, name: &str) -> Arc<FairLock> {
    client_with(node, name, WATCHDOG).await
}

async fn client_with(node: &Node, name: &str, watchdog: Duration) -> Arc<FairLock> {
    let setup = ClientSetup::new(vec![node.url()], name, LockConfig::with_ttl(watchdog));
    Arc::new(
        FairLock::connect(setup)
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
}

/// Waits until the server's queue holds `len` waiters.
async fn queue_reaches(node: &Node, len: usize) {
    count_reaches(
        node,
        "LLEN",
        &queue_name("lock:stock"),
        len,
        "waiter(s) in the queue",
    )
    .await;
}

/// Waits until `len` waiters have written their deadline (each has looked
/// at the lock once, after subscribing).
async fn deadlines_reach(node: &Node, len: usize) {
    count_reaches(
        node,
        "ZCARD",
        &timeout_name("lock:stock"),
        len,
        "deadline(s) written",
    )
    .await;
}

/// Waits until `command` (a count: `LLEN`, `ZCARD`) on `key` answers `len`
/// or more, for at most the patience window.
async fn count_reaches(node: &Node, command: &str, key: &str, len: usize, what: &str) {
    let mut conn = lockcore::connect(&node.url(), "inspector").await.unwrap();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let count: usize = redis::cmd(command)
            .arg(key)
            .query_async(&mut conn)
            .await
            .unwrap();
        if count >= len {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{count} {what}, never {len}"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn waiters_get_the_lock_in_the_order_they_queued_and_the_releaser_cannot_barge_in() {
    // A waiter that does not look for a whole waiter timeout loses its
    // place (the others' looks drop it); a 3 s watchdog gives the waiters
    // half a second, where they look every 167 ms, so that a loaded
    // machine cannot reorder them.
    let watchdog = Duration::from_secs(3);
    let node = lock_node().await;
    let first = client_with(&node, "client-A", watchdog).await;
    first
        .try_lock(PATIENCE)
        .await
        .unwrap()
        .expect("a free lock");

    let order = Arc::new(Mutex::new(Vec::new()));
    // Each waiter keeps the lock until the test lets it go on.
    let go = Arc::new(tokio::sync::Semaphore::new(0));
    let mut waiters = Vec::new();
    for (i, name) in ["client-B", "client-C", "client-D"].into_iter().enumerate() {
        let lock = client_with(&node, name, watchdog).await;
        let order = Arc::clone(&order);
        let go = Arc::clone(&go);
        waiters.push(tokio::spawn(async move {
            let held = lock
                .try_lock(PATIENCE)
                .await
                .unwrap()
                .expect("its turn came");
            order.lock().unwrap().push(name);
            go.acquire().await.unwrap().forget();
            assert_eq!(
                lockcore::DistributedLock::release(lock.as_ref(), &held)
                    .await
                    .unwrap(),
                Release::Deleted
            );
        }));
        queue_reaches(&node, i + 1).await;
    }

    let line = first.queued().await.unwrap();
    assert_eq!(line.len(), 3, "client-B, client-C, client-D in line");
    assert_eq!(first.unlock().await.unwrap(), Release::Deleted);
    // The release itself gave the lock to the head of the line: the hash
    // names client-B's owner before client-B has sent anything.
    assert_eq!(
        owners(&node).await,
        line[..1],
        "handed to the head of the queue"
    );
    assert!(
        first.try_lock(Duration::ZERO).await.unwrap().is_none(),
        "the client that just released must queue behind the others"
    );
    go.add_permits(3);
    for waiter in waiters {
        waiter.await.unwrap();
    }
    assert_eq!(*order.lock().unwrap(), ["client-B", "client-C", "client-D"]);
    assert!(
        first.queued().await.unwrap().is_empty(),
        "nobody left in line"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_waiter_killed_in_the_queue_is_dropped_and_the_next_one_gets_the_lock() {
    let outcome = run_in_test("dead-waiter", stage6::fair::STAGE).await;
    assert_eq!(outcome.verdict, Verdict::ok());
    assert_eq!(outcome.fact("late_waiter_acquired"), 1);
    assert_eq!(outcome.fact("orders"), 1);
    let dropped = outcome.timeline.count_after(
        |e| e.actor == "client-B" && e.text.starts_with("KILLED"),
        |e| e.text.trim_start().starts_with("lua> lpop"),
    );
    // One LPOP drops the dead head, one takes client-C off the queue as it
    // takes the lock.
    assert!(
        dropped >= 2,
        "the dead waiter must leave the queue by a script's LPOP ({dropped} after the kill)"
    );
}

/// How many ms the lock key has left (`PTTL`).
async fn pttl(node: &Node) -> i64 {
    let mut conn = lockcore::connect(&node.url(), "inspector").await.unwrap();
    redis::cmd("PTTL")
        .arg("lock:stock")
        .query_async(&mut conn)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_head_named_in_time_takes_the_lock_on_the_message_and_its_watchdog_keeps_it() {
    let node = lock_node().await;
    let holder = client(&node, "client-A").await;
    let waiter = client(&node, "client-B").await;
    holder
        .try_lock(PATIENCE)
        .await
        .unwrap()
        .expect("a free lock");
    let waiting = {
        let waiter = Arc::clone(&waiter);
        tokio::spawn(async move { waiter.try_lock(PATIENCE).await.unwrap() })
    };
    queue_reaches(&node, 1).await;
    assert_eq!(holder.unlock().await.unwrap(), Release::Deleted);
    let held = waiting
        .await
        .unwrap()
        .expect("the lock was handed to client-B");
    assert_eq!(
        owners(&node).await,
        std::slice::from_ref(&held.value),
        "client-B's owner field"
    );

    // The release gave client-B a waiter timeout (50 ms here). Three of
    // them later the lock must still be client-B's: its watchdog renewed
    // the hand-over's short lease to the whole one before it ran out.
    let waiter_timeout = waiter.waiter_timeout();
    tokio::time::sleep(waiter_timeout * 3).await;
    assert_eq!(
        owners(&node).await,
        std::slice::from_ref(&held.value),
        "client-B lost the lock it was handed: nothing renewed the short lease"
    );
    let left = pttl(&node).await;
    assert!(
        left > i64::try_from(waiter_timeout.as_millis()).unwrap(),
        "the lock has {left} ms left: no more than a hand-over's lease, so never renewed"
    );
    assert_eq!(
        lockcore::DistributedLock::release(waiter.as_ref(), &held)
            .await
            .unwrap(),
        Release::Deleted
    );
}

/// The owner fields of the lock hash: one while someone holds it.
async fn owners(node: &Node) -> Vec<String> {
    let mut conn = lockcore::connect(&node.url(), "inspector").await.unwrap();
    redis::cmd("HKEYS")
        .arg("lock:stock")
        .query_async(&mut conn)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_frozen_head_holds_the_line_up_for_a_waiter_timeout_and_is_not_let_in_when_it_thaws() {
    // A watchdog long enough that a waiter timeout (a sixth, 1 s) and the
    // whole lease (6 s) cannot be mistaken: client-C must get the lock in
    // 4 s, three times the bound of a waiter timeout plus a third.
    let lease = Duration::from_secs(6);
    let node = lock_node().await;
    let connect = |name: &str| {
        let setup = ClientSetup::new(vec![node.url()], name, LockConfig::with_ttl(lease));
        async move { Arc::new(FairLock::connect(setup).await.unwrap()) }
    };
    let holder = connect("client-A").await;
    let frozen = connect("client-B").await;
    let late = connect("client-C").await;
    holder
        .try_lock(PATIENCE)
        .await
        .unwrap()
        .expect("a free lock");

    // client-B asks, and once it sleeps in line its waiting task is never
    // run again until the test says so: to the server, a frozen waiter (its
    // connections stay up; it sends nothing). It sleeps once its first look
    // has written its deadline: that look's reply is then on its way, and
    // is read at the thaw, not lost to the reply timeout (freezing the task
    // between a request and its reply once turned the thaw into an error).
    let mut frozen_wait = Box::pin(frozen.try_lock(PATIENCE * 3));
    tokio::select! {
        held = &mut frozen_wait => panic!("client-B got the lock while client-A held it: {held:?}"),
        () = deadlines_reach(&node, 1) => {}
    }
    let late_wait = {
        let late = Arc::clone(&late);
        tokio::spawn(async move { late.try_lock(lease * 2 / 3).await.unwrap() })
    };
    queue_reaches(&node, 2).await;
    assert_eq!(holder.unlock().await.unwrap(), Release::Deleted);
    let left = pttl(&node).await;
    let waiter_timeout = i64::try_from(frozen.waiter_timeout().as_millis()).unwrap();
    assert!(
        (1..=waiter_timeout).contains(&left),
        "the lock handed to the frozen head has {left} ms, not a waiter timeout ({waiter_timeout} ms)"
    );

    let held = late_wait.await.unwrap().expect(
        "client-C waited longer than a waiter timeout and a third, three times over, behind a frozen head",
    );
    assert_eq!(owners(&node).await, std::slice::from_ref(&held.value));

    // client-B thaws: its message is old, so it asks, and is told the lock
    // is client-C's. It waits in line instead of walking in beside client-C.
    tokio::select! {
        held = &mut frozen_wait => panic!("client-B was let in beside client-C on a stale message: {held:?}"),
        () = tokio::time::sleep(frozen.waiter_timeout()) => {}
    }
    assert_eq!(
        owners(&node).await,
        std::slice::from_ref(&held.value),
        "still client-C's"
    );
    assert_eq!(
        lockcore::DistributedLock::release(late.as_ref(), &held)
            .await
            .unwrap(),
        Release::Deleted
    );
    let thawed = frozen_wait
        .await
        .unwrap()
        .expect("client-B's turn came after client-C");
    assert_eq!(
        lockcore::DistributedLock::release(frozen.as_ref(), &thawed)
            .await
            .unwrap(),
        Release::Deleted
    );
}
