//! A GC pause against ZooKeeper: the holder process is frozen with
//! SIGSTOP, so its client's pings stop with everything else; the ensemble
//! hears nothing for a session timeout, expires the session and deletes its
//! node; client-B takes the lock. When the holder is thawed it finishes the
//! purchase it started. ZooKeeper did all it could: only the resource can
//! refuse the stale write, by the token.

use crate::common;

use common::{SESSION, World, patience};
use harness::Released;
use harness::check::Finding;
use harness::scenario::Outcome;
use harness::workload::{Fencing, Sale};
use lockcore::Release;

/// The story; returns the outcome and the thawed holder's sale.
async fn paused_holder(fencing: Fencing) -> (Outcome, Sale) {
    let world = World::start(1, fencing).await;
    let mut holder = world.holder_holding_the_lock("client-A").await;
    let read = holder.read_stock().await.unwrap();
    holder.freeze().unwrap();

    let rival = world.client("client-B").await;
    world.narrate(format!(
        "client-B asks for up to {}ms while client-A is frozen",
        patience().as_millis()
    ));
    let held = rival
        .acquire(patience())
        .await
        .unwrap()
        .expect("client-A's session should expire during the pause and free the lock");
    world.narrate("TWO HOLDERS: frozen client-A still believes it holds the lock");
    rival.buy_one(&held, SESSION / 20).await.unwrap();
    rival.release(&held).await.unwrap().answered().unwrap();

    holder.thaw().unwrap();
    // It does not know it was frozen: it writes from the stock it read.
    let sale = holder.sell(read).await.unwrap();
    // Its client learns of the expiry when it talks to the ensemble again.
    assert!(
        holder.wait_lost(patience()).await.unwrap(),
        "the thawed holder's client should learn that its session expired"
    );
    // Its node went with its session: nothing is left to delete.
    assert_eq!(
        holder.release().await.unwrap(),
        Released::Answered(Release::NothingDeleted)
    );
    let a = holder.held().and_then(|h| h.fencing_token).unwrap();
    let b = held.fencing_token.unwrap();
    assert!(a < b, "the ensemble orders the tokens: A {a}, B {b}");
    (world.finish().await, sale)
}

#[tokio::test(flavor = "multi_thread")]
async fn without_the_token_check_the_paused_holder_oversells_exactly_as_with_redis() {
    let (outcome, sale) = paused_holder(Fencing::Unchecked).await;
    assert!(matches!(sale, Sale::Sold(1)), "{sale:?}");
    outcome.assert_fired(&[Finding::Overlap, Finding::Oversold]);
    assert_eq!(outcome.fact("orders"), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn with_the_resource_checking_the_czxid_the_paused_holders_write_is_refused() {
    let (outcome, sale) = paused_holder(Fencing::ReadsAndWrites).await;
    assert!(matches!(sale, Sale::Rejected { .. }), "{sale:?}");
    outcome.assert_fired(&[Finding::Overlap]);
    outcome.assert_not_fired(&[Finding::Oversold]);
    assert_eq!(outcome.fact("orders"), 1);
}
