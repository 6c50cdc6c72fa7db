//! A release whose delete transaction fails (no member could be reached):
//! the caller must be able to try again. A hold that was dropped before the
//! transaction answers "you do not own this lock" to the second try,
//! although nobody could say whether the key was deleted.

use crate::common;

use common::relay::Relays;
use common::{etcd_lock, etcd_lock_at, keys_until, lock_prefix, observer, patience, start};
use harness::workload::Fencing;
use lockcore::Release;

#[tokio::test(flavor = "multi_thread")]
async fn a_release_that_could_not_reach_the_cluster_can_be_tried_again() {
    let run = start(0, Fencing::default()).await;
    let relays = Relays::start(&run.factory.lock_urls).await;
    let a = etcd_lock_at(&run, "client-A", relays.urls()).await;
    let held = a.lock(patience()).await.unwrap().expect("a free lock");

    relays.refuse();
    run.narrate("client-A CUT OFF from every member; it releases");
    let failed = a.unlock(&held).await;
    assert!(failed.is_err(), "no member could be reached: {failed:?}");

    relays.allow();
    run.narrate("client-A's network is back; it releases again");
    let again = a.unlock(&held).await;
    assert!(
        matches!(again, Ok(Release::Deleted | Release::NothingDeleted)),
        "the second try should say what became of the key: {again:?}"
    );
    let observer = observer(&run).await;
    keys_until(
        &observer,
        &lock_prefix(&run),
        patience(),
        <[String]>::is_empty,
    )
    .await;
    let b = etcd_lock(&run, "client-B").await;
    let next = b.try_lock().await.unwrap().expect("the lock is free again");
    assert!(next.token > held.token);
}
