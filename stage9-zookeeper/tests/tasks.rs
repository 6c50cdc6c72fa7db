//! Reentrancy in async code: whose hold is it? Curator counts holds per
//! thread; a tokio task is the unit that stays put for a whole critical
//! section, so stage 9 counts them per task. One `ZkLock` shared by two
//! tasks is two contenders: the task that holds re-enters, the other one
//! queues with a node of its own and gets the lock when the first lets go.

use std::sync::Arc;

use crate::common;

use common::{World, patience, queue_until};
use harness::workload::Fencing;
use lockcore::Release;

#[tokio::test(flavor = "multi_thread")]
async fn two_tasks_sharing_one_lock_are_two_contenders() {
    let world = World::start(0, Fencing::default()).await;
    let lock = Arc::new(world.zk_lock("client-A").await);
    let observer = world.observer().await;
    let path = world.lock_path();

    let first = {
        let lock = Arc::clone(&lock);
        tokio::spawn(async move {
            let held = lock.lock(patience()).await.unwrap().expect("a free lock");
            // The same task asks again: it re-enters, as Curator's thread does.
            let again = lock
                .try_lock()
                .await
                .unwrap()
                .expect("the holder re-enters");
            assert_eq!(again, held, "the same node, the same token");
            assert_eq!(lock.unlock(&again).await.unwrap(), Release::StillHeld(1));
            held
        })
        .await
        .unwrap()
    };

    let other = Arc::clone(&lock);
    let shared = tokio::spawn(async move { other.try_lock().await })
        .await
        .unwrap();
    assert!(
        matches!(shared, Ok(None)),
        "another task of the same client must not share the first task's hold: {shared:?}"
    );

    // It waits its turn in the queue, with a node of its own.
    let other = Arc::clone(&lock);
    let waiting = tokio::spawn(async move { other.lock(patience()).await });
    queue_until(&observer, &path, patience(), |q| q.len() == 2).await;
    assert_eq!(lock.unlock(&first).await.unwrap(), Release::Deleted);
    let next = waiting.await.unwrap().unwrap().expect("its turn came");
    assert_ne!(next.node, first.node);
    assert!(next.token > first.token);
    assert_eq!(lock.unlock(&next).await.unwrap(), Release::Deleted);
}
