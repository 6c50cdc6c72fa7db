//! A wait that is given up from outside: `lock()` dropped while its node
//! waits in the queue, as `tokio::time::timeout` or a `select!` drops it.
//! Its node must go with it (Curator deletes its node on any exception or
//! interrupt): a node left behind lives as long as the session, and every
//! later waiter, this client's next `lock()` included, queues behind it.

use crate::common;

use common::{World, patience, queue_until};
use harness::workload::Fencing;
use lockcore::Release;

#[tokio::test(flavor = "multi_thread")]
async fn a_lock_call_dropped_while_waiting_takes_its_node_out_of_the_queue() {
    let world = World::start(0, Fencing::default()).await;
    let (a, b) = (
        world.zk_lock("client-A").await,
        world.zk_lock("client-B").await,
    );
    let observer = world.observer().await;
    let path = world.lock_path();
    let held = a.lock(patience()).await.unwrap().expect("a free lock");

    // client-B waits; the moment its node is in the queue, its wait is
    // dropped (the `select!` drops the losing branch, as a timeout would).
    tokio::select! {
        taken = b.lock(patience() * 10) => panic!("client-B cannot hold while A does: {taken:?}"),
        _ = queue_until(&observer, &path, patience(), |q| q.len() == 2) => {}
    }
    world.narrate("client-B's lock() dropped while its node waited in the queue");

    let queue = queue_until(&observer, &path, patience(), |q| q.len() == 1).await;
    assert_eq!(
        format!("{path}/{}", queue[0]),
        held.node,
        "only client-A's node is left"
    );

    // Nothing of client-B's is left ahead of its next try.
    assert_eq!(a.unlock(&held).await.unwrap(), Release::Deleted);
    let next = b
        .try_lock()
        .await
        .unwrap()
        .expect("client-B's next lock() is not queued behind an orphan of its own");
    assert!(next.token > held.token);
    b.unlock(&next).await.unwrap();
}
