//! A GC pause against etcd: the holder process is frozen with SIGSTOP, so
//! its lease renewals stop with everything else; the leader hears nothing
//! for a lease TTL, revokes the lease and deletes the holder's key;
//! client-B's watch fires and it takes the lock. When the holder is thawed
//! it finishes the purchase it started. etcd did all it could (Jepsen found
//! the same of etcd 3.4.3's locks): only the resource can refuse the stale
//! write, by the token.

mod common;

use common::{LEASE, patience, start};
use harness::observe::Finding;
use harness::scenario::Outcome;
use harness::workload::{Fencing, Sale};
use lockcore::Release;

harness::holder_entry!(stage10::STAGE);

/// The story; returns the outcome and the thawed holder's sale.
async fn paused_holder(fencing: Fencing) -> (Outcome, Sale) {
    let run = start(1, fencing).await;
    let mut holder = run.holder_holding_the_lock("client-A").await.unwrap();
    let read = holder.read_stock().await.unwrap();
    holder.freeze().unwrap();

    let rival = run.client("client-B").await.unwrap();
    run.narrate(format!(
        "client-B asks for up to {}ms while client-A is frozen",
        patience().as_millis()
    ));
    let held = rival
        .acquire(patience())
        .await
        .unwrap()
        .expect("client-A's lease should expire during the pause and free the lock");
    run.narrate("TWO HOLDERS: frozen client-A still believes it holds the lock");
    rival.buy_one(&held, LEASE / 20).await.unwrap();
    rival.release(&held).await.unwrap().answered().unwrap();

    holder.thaw().unwrap();
    // It does not know it was frozen: it writes from the stock it read.
    let sale = holder.sell(read).await.unwrap();
    // Its next renewal is answered with TTL 0: the lease is gone.
    assert!(
        holder.wait_lost(patience()).await.unwrap(),
        "the thawed holder's client should learn that its lease expired"
    );
    // Its key went with its lease: nothing is left to delete.
    assert_eq!(
        holder.release().await.unwrap().unwrap(),
        Release::NothingDeleted
    );
    let a = holder.held().and_then(|h| h.fencing_token).unwrap();
    let b = held.fencing_token.unwrap();
    assert!(a < b, "the cluster orders the tokens: A {a}, B {b}");
    let outcome = run.finish().await.unwrap();
    println!("{}", outcome.timeline.render());
    (outcome, sale)
}

#[tokio::test(flavor = "multi_thread")]
async fn without_the_token_check_the_paused_holder_oversells_exactly_as_with_redis() {
    let (outcome, sale) = paused_holder(Fencing::Unchecked).await;
    assert!(matches!(sale, Sale::Sold(1)), "{sale:?}");
    outcome.assert_fired(&[Finding::Overlap, Finding::Oversold]);
    assert_eq!(outcome.fact("orders"), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn with_the_resource_checking_the_create_revision_the_paused_holders_write_is_refused() {
    let (outcome, sale) = paused_holder(Fencing::ReadsAndWrites).await;
    assert!(matches!(sale, Sale::Rejected { .. }), "{sale:?}");
    outcome.assert_fired(&[Finding::Overlap]);
    outcome.assert_not_fired(&[Finding::Oversold]);
    assert_eq!(outcome.fact("orders"), 1);
}
