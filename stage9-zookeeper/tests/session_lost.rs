//! The session is the lock: when it ends, the lock is gone, and the holder
//! must hear of it. Two ways it could not: a session that ends in the
//! instant between the last look at the queue ("ours is first") and the
//! start of the watch on the session; and a holder that asks again after
//! the loss, and is handed its old node and token as if nothing happened.
//! The session is ended from outside with its own id and password
//! (`Relays::end_session`), so the ensemble deletes the node at once.

use std::sync::Arc;

use crate::common;

use common::{World, patience, queue_until};
use harness::fault::FaultPlan;
use harness::workload::Fencing;
use lockcore::{DistributedLock, FaultPoints, LockError, Point, Release};
use tokio::time::timeout;

#[tokio::test(flavor = "multi_thread")]
async fn a_session_that_ends_as_the_lock_is_granted_is_reported_not_handed_out_as_held() {
    let world = World::start(0, Fencing::default()).await;
    let relays = world.relays().await;
    let plan = FaultPlan::new("client-A", world.timeline());
    // After its node was found first in the queue, before anything else.
    let gate = plan.pause_at(Point::AfterAcquire);
    let a = Arc::new(
        world
            .zk_lock_at("client-A", relays.urls(), FaultPoints::with_hook(plan))
            .await,
    );
    let observer = world.observer().await;
    let path = world.lock_path();

    let taking = {
        let a = Arc::clone(&a);
        tokio::spawn(async move { a.acquire(patience()).await })
    };
    gate.arrived().await;
    let told = relays.next_told_gone();
    relays.end_session().await;
    world.narrate("client-A's session ENDED while it stood first in the queue");
    queue_until(&observer, &path, patience(), <[String]>::is_empty).await;
    timeout(patience(), told)
        .await
        .expect("client-A should reconnect and be told that its session is gone");
    gate.open();

    match taking.await.unwrap() {
        Err(refused) => assert!(refused.to_string().contains("session"), "{refused}"),
        Ok(Some(acquired)) => {
            let mut lost = acquired.lost.expect("stage 9 hands out a lost signal");
            timeout(patience(), lost.lost())
                .await
                .expect("the session ended before the lock was handed out: it must be lost");
        }
        Ok(None) => panic!("client-A was first in the queue"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn asking_again_after_the_session_ended_fails_instead_of_handing_out_the_old_token() {
    let world = World::start(0, Fencing::default()).await;
    let relays = world.relays().await;
    let a = world
        .zk_lock_at("client-A", relays.urls(), FaultPoints::none())
        .await;
    let held = a.acquire(patience()).await.unwrap().expect("a free lock");
    let mut lost = held.lost.clone().expect("stage 9 hands out a lost signal");

    relays.end_session().await;
    world.narrate("client-A's session ENDED while it held the lock");
    timeout(patience(), lost.lost())
        .await
        .expect("client-A's lost signal should fire");

    let again = a.try_lock().await;
    assert!(
        matches!(&again, Err(LockError::ZooKeeper(why)) if why.contains("lost")),
        "a lock that is gone must not be re-entered: {again:?}"
    );
    // The outer hold is still there to give back; its node went with the
    // session. Then a new session takes the lock anew, with a new token.
    assert_eq!(a.release(&held).await.unwrap(), Release::NothingDeleted);
    let fresh = a.try_lock().await.unwrap().expect("the lock is free");
    assert!(Some(fresh.token) > held.fencing_token);
    a.unlock(&fresh).await.unwrap();
}
