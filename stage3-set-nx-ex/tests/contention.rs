//! Under contention, SET NX PX takes turns as well as SETNX did.

use harness::check::Verdict;
use harness::scenario::run_in_test;

#[tokio::test(flavor = "multi_thread")]
async fn with_set_nx_px_eight_clients_sell_exactly_ten_items() {
    let outcome = run_in_test("contention", stage3::STAGE).await;
    assert_eq!(outcome.verdict, Verdict::ok());
    assert_eq!(outcome.fact("orders"), 10);
    assert_eq!(outcome.fact("stock_left"), 0);
}
