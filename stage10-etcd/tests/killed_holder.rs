//! A killed holder: `kill -9` of the holder process. It never deletes its
//! key, and never revokes its lease; but nobody renews the lease either, so
//! one TTL later the leader revokes it, the key goes with it, and the next
//! client in the queue holds. The articles' "released when the client
//! disconnects", measured: it is the lease's expiry, not the disconnection,
//! that frees the lock.

use crate::common;

use common::{LEASE, patience, start};
use harness::check::Finding;
use harness::workload::Fencing;
use tokio::time::Instant;

#[tokio::test(flavor = "multi_thread")]
async fn the_lock_of_a_killed_holder_comes_back_when_its_lease_expires() {
    let mut run = start(1, Fencing::default()).await;
    let mut holder = run.holder_holding_the_lock("client-A").await.unwrap();
    holder.read_stock().await.unwrap();
    let survivor = run.client("client-B").await.unwrap();
    holder.kill().unwrap();
    let killed = Instant::now();

    let held = survivor
        .acquire(patience())
        .await
        .unwrap()
        .expect("the dead holder's lease should expire and free the lock");
    let waited = killed.elapsed();
    run.narrate(format!(
        "the lock came back {}ms after kill -9 (lease TTL {}ms)",
        waited.as_millis(),
        LEASE.as_millis()
    ));
    println!("measured: lock back after {}ms", waited.as_millis());
    run.facts.insert(
        "lock_back_after_ms",
        i64::try_from(waited.as_millis()).unwrap_or(i64::MAX),
    );
    survivor.buy_one(&held, LEASE / 20).await.unwrap();
    survivor.release(&held).await.unwrap().answered().unwrap();

    let outcome = run.finish().await.unwrap();
    println!("{}", outcome.timeline.render());
    outcome.assert_not_fired(&[Finding::Oversold, Finding::Overlap]);
    assert_eq!(outcome.fact("orders"), 1);
}
