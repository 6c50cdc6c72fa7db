//! A killed holder: `kill -9` of the holder process. It never deletes its
//! node, but the node is ephemeral: when the session goes unheard for its
//! timeout the ensemble deletes it, and the next client in the queue holds.
//! The articles' "released when the client disconnects", measured: it is
//! the session's expiry, not the disconnection, that frees the lock.

use crate::common;

use common::{SESSION, World, patience};
use harness::check::Finding;
use harness::workload::Fencing;
use tokio::time::Instant;

#[tokio::test(flavor = "multi_thread")]
async fn the_lock_of_a_killed_holder_comes_back_when_its_session_expires() {
    let world = World::start(1, Fencing::default()).await;
    let mut holder = world.holder_holding_the_lock("client-A").await;
    holder.read_stock().await.unwrap();
    let survivor = world.client("client-B").await;
    holder.kill().unwrap();
    let killed = Instant::now();

    let held = survivor
        .acquire(patience())
        .await
        .unwrap()
        .expect("the dead holder's session should expire and free the lock");
    let waited = killed.elapsed();
    world.narrate(format!(
        "the lock came back {}ms after kill -9 (session timeout {}ms)",
        waited.as_millis(),
        SESSION.as_millis()
    ));
    println!("measured: lock back after {}ms", waited.as_millis());
    survivor.buy_one(&held, SESSION / 20).await.unwrap();
    survivor.release(&held).await.unwrap().answered().unwrap();

    let outcome = world.finish().await;
    outcome.assert_not_fired(&[Finding::Oversold, Finding::Overlap]);
    assert_eq!(outcome.fact("orders"), 1);
}
