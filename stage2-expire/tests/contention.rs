//! The expiry changes nothing when every holder finishes in time: eight
//! clients still sell exactly ten items.

use harness::check::Verdict;
use harness::scenario::run_in_test;

#[tokio::test(flavor = "multi_thread")]
async fn with_setnx_and_expire_eight_clients_sell_exactly_ten_items() {
    let outcome = run_in_test("contention", stage2::STAGE).await;
    assert_eq!(outcome.verdict, Verdict::ok());
    assert_eq!(outcome.fact("orders"), 10);
    assert_eq!(outcome.fact("stock_left"), 0);
}
