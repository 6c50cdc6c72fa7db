//! The lease is the lock: when it is gone, the lock is gone, and asking
//! again must say so, not hand out the old key and token as if nothing had
//! happened. An operator revokes the holder's lease (the cluster would do
//! the same when the lease expires): the cluster deletes the key, and the
//! holder's next renewal hears that the lease is gone.

use crate::common;

use common::{etcd_lock, lease_of, observer, patience, start};
use harness::workload::Fencing;
use lockcore::{DistributedLock, LockError, Release};
use tokio::time::timeout;

#[tokio::test(flavor = "multi_thread")]
async fn asking_again_after_the_lease_is_lost_fails_instead_of_handing_out_the_old_token() {
    let run = start(0, Fencing::default()).await;
    let a = etcd_lock(&run, "client-A").await;
    let held = a.acquire(patience()).await.unwrap().expect("a free lock");
    let mut lost = held.lost.clone().expect("stage 10 hands out a lost signal");

    let mut operator = observer(&run).await;
    operator.lease_revoke(lease_of(&held.value)).await.unwrap();
    run.narrate("an operator REVOKES client-A's lease");
    timeout(patience(), lost.lost())
        .await
        .expect("client-A's lost signal should fire");

    let again = a.try_lock().await;
    assert!(
        matches!(&again, Err(LockError::Etcd(why)) if why.contains("lost")),
        "a lock that is gone must not be re-entered: {again:?}"
    );
    // The outer hold is still there to give back; its key went with the
    // lease. Then a new lease takes the lock anew, with a new token.
    assert_eq!(a.release(&held).await.unwrap(), Release::NothingDeleted);
    let fresh = a.try_lock().await.unwrap().expect("the lock is free");
    assert!(Some(fresh.token) > held.fencing_token);
    a.unlock(&fresh).await.unwrap();
}
