//! The recipe itself: clients taking turns sell exactly the stock, and a
//! holder that asks again is let in at once (its key is named after its
//! lease, so it finds it there), its key deleted only when the last hold
//! is given back.

use crate::common;

use common::{LEASE, patience, start};
use harness::check::Finding;
use harness::workload::Fencing;
use lockcore::Release;

#[tokio::test(flavor = "multi_thread")]
async fn clients_in_the_queue_sell_exactly_the_stock() {
    let run = start(6, Fencing::default()).await;
    let mut clients = Vec::new();
    for name in ["client-A", "client-B", "client-C", "client-D"] {
        clients.push(run.client(name).await.unwrap());
    }
    let shoppers = clients
        .iter()
        .map(|c| c.shop_until_sold_out(patience(), LEASE / 40));
    let sold: u32 = futures_util::future::join_all(shoppers)
        .await
        .into_iter()
        .map(Result::unwrap)
        .sum();
    assert_eq!(sold, 6);
    let outcome = run.finish().await.unwrap();
    outcome.assert_not_fired(&[Finding::Overlap, Finding::Oversold]);
    assert_eq!(outcome.fact("orders"), 6);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_holder_reenters_and_its_key_goes_with_the_last_release() {
    let run = start(1, Fencing::default()).await;
    let holder = run.client("client-A").await.unwrap();
    let first = holder.acquire(patience()).await.unwrap().unwrap();
    let again = holder.try_acquire().await.unwrap().expect("reentrant");
    assert_eq!(first.value, again.value, "the same key");
    assert_eq!(first.fencing_token, again.fencing_token);

    let rival = run.client("client-B").await.unwrap();
    assert!(rival.try_acquire().await.unwrap().is_none());
    assert_eq!(
        holder.release(&again).await.unwrap().answered().unwrap(),
        Release::StillHeld(1)
    );
    assert!(rival.try_acquire().await.unwrap().is_none());
    assert_eq!(
        holder.release(&first).await.unwrap().answered().unwrap(),
        Release::Deleted
    );
    let next = rival.try_acquire().await.unwrap().expect("free now");
    assert!(next.fencing_token > first.fencing_token);
    rival.release(&next).await.unwrap().answered().unwrap();
    let outcome = run.finish().await.unwrap();
    outcome.assert_not_fired(&[Finding::Overlap, Finding::Oversold]);
}
