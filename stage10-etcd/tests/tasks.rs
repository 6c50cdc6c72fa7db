//! Reentrancy in async code: whose hold is it? Holds are counted per tokio
//! task, the unit that stays put for a whole critical section, as Curator
//! counts them per thread. One `EtcdLock` shared by two tasks is two
//! contenders: the task that holds re-enters, the other one waits its turn
//! and gets the lock when the first lets go.

use std::sync::Arc;

use crate::common;

use common::{etcd_lock, patience, start};
use harness::workload::Fencing;
use lockcore::Release;

#[tokio::test(flavor = "multi_thread")]
async fn two_tasks_sharing_one_lock_are_two_contenders() {
    let run = start(0, Fencing::default()).await;
    let lock = Arc::new(etcd_lock(&run, "client-A").await);

    let first = {
        let lock = Arc::clone(&lock);
        tokio::spawn(async move {
            let held = lock.lock(patience()).await.unwrap().expect("a free lock");
            let again = lock
                .try_lock()
                .await
                .unwrap()
                .expect("the holder re-enters");
            assert_eq!(again, held, "the same key, the same token");
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

    let other = Arc::clone(&lock);
    let waiting = tokio::spawn(async move { other.lock(patience()).await });
    assert_eq!(lock.unlock(&first).await.unwrap(), Release::Deleted);
    let next = waiting.await.unwrap().unwrap().expect("its turn came");
    assert!(next.token > first.token);
    assert_eq!(lock.unlock(&next).await.unwrap(), Release::Deleted);
}
