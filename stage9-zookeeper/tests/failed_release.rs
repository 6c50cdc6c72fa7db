//! A release whose delete does not land. The node is ephemeral, so it
//! would go with the session; but the session lives on (the client
//! reconnects), and a node left behind locks everyone out until the
//! process exits. Curator's answer is a *guaranteed* delete, retried until
//! it lands; and a release that did fail must be one the caller can try
//! again, not one that says "you do not own this lock".

use crate::common;

use common::relay::DELETE;
use common::{World, patience, queue_until};
use harness::workload::Fencing;
use lockcore::{FaultPoints, LockError, Release};
use zookeeper_client::{Acl, AuthId, Permission};

#[tokio::test(flavor = "multi_thread")]
async fn a_delete_lost_with_its_connection_is_sent_again_until_the_node_is_gone() {
    let world = World::start(0, Fencing::default()).await;
    let relays = world.relays().await;
    let a = world
        .zk_lock_at("client-A", relays.urls(), FaultPoints::none())
        .await;
    let held = a.lock(patience()).await.unwrap().expect("a free lock");
    let observer = world.observer().await;
    let path = world.lock_path();

    // The connection breaks with client-A's delete on it: the delete never
    // reaches the ensemble, and client-A's session lives on.
    let broken = relays.break_on(DELETE);
    world.narrate("client-A releases; its connection breaks with the delete on it");
    let released = a.unlock(&held).await;
    broken
        .await
        .expect("the relay should have broken the delete's connection");
    assert!(
        matches!(released, Ok(Release::Deleted)),
        "the release should send its delete again once reconnected: {released:?}"
    );
    queue_until(&observer, &path, patience(), <[String]>::is_empty).await;
    let b = world.zk_lock("client-B").await;
    let next = b.try_lock().await.unwrap().expect("the lock is free again");
    assert!(next.token > held.token);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_delete_the_ensemble_refuses_leaves_the_hold_so_unlock_can_be_tried_again() {
    let world = World::start(0, Fencing::default()).await;
    let a = world.zk_lock("client-A").await;
    let held = a.lock(patience()).await.unwrap().expect("a free lock");
    let operator = world.observer().await;
    let path = world.lock_path();

    // An operator takes DELETE off the lock's parent: deleting a child
    // needs it, so client-A's delete is refused (NoAuth).
    let anyone = |permission| [Acl::new(permission, AuthId::anyone())];
    let no_delete = Permission::READ | Permission::WRITE | Permission::CREATE | Permission::ADMIN;
    operator
        .set_acl(&path, &anyone(no_delete), None)
        .await
        .unwrap();
    world.narrate("an operator takes DELETE off the lock's parent node");
    let refused = a.unlock(&held).await;
    assert!(
        matches!(refused, Err(LockError::ZooKeeper(_))),
        "the ensemble refused the delete: {refused:?}"
    );
    let queue = queue_until(&operator, &path, patience(), |q| q.len() == 1).await;
    assert_eq!(
        format!("{path}/{}", queue[0]),
        held.node,
        "the node is still there"
    );

    operator
        .set_acl(&path, &anyone(Permission::ALL), None)
        .await
        .unwrap();
    world.narrate("the operator puts DELETE back");
    assert_eq!(
        a.unlock(&held).await.unwrap(),
        Release::Deleted,
        "client-A still holds the lock it could not give back, and can try again"
    );
    queue_until(&operator, &path, patience(), <[String]>::is_empty).await;
}
