//! A wait that is given up from outside: `lock()` dropped while its key
//! waits in the queue, as `tokio::time::timeout` or a `select!` drops it.
//! Its key is on a lease that the client keeps renewing, so a key left
//! behind blocks every later waiter for as long as the client lives. Go's
//! mutex deletes its key when the waiting context is cancelled.

use crate::common;

use common::{etcd_lock, keys_until, lock_prefix, observer, patience, start};
use harness::workload::Fencing;
use lockcore::Release;

#[tokio::test(flavor = "multi_thread")]
async fn a_lock_call_dropped_while_waiting_takes_its_key_out_of_the_queue() {
    let run = start(0, Fencing::default()).await;
    let (a, b) = (
        etcd_lock(&run, "client-A").await,
        etcd_lock(&run, "client-B").await,
    );
    let observer = observer(&run).await;
    let prefix = lock_prefix(&run);
    let held = a.lock(patience()).await.unwrap().expect("a free lock");

    // client-B waits; the moment its key is in the queue, its wait is
    // dropped (the `select!` drops the losing branch, as a timeout would).
    tokio::select! {
        taken = b.lock(patience() * 10) => panic!("client-B cannot hold while A does: {taken:?}"),
        _ = keys_until(&observer, &prefix, patience(), |k| k.len() == 2) => {}
    }
    run.narrate("client-B's lock() dropped while its key waited in the queue");

    let keys = keys_until(&observer, &prefix, patience(), |k| k.len() == 1).await;
    assert_eq!(keys, [held.key.as_str()], "only client-A's key is left");

    assert_eq!(a.unlock(&held).await.unwrap(), Release::Deleted);
    let next = b
        .try_lock()
        .await
        .unwrap()
        .expect("client-B's next lock() finds nothing of its own ahead of it");
    assert!(next.token > held.token);
    b.unlock(&next).await.unwrap();
}
