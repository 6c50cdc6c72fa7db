//! Under contention, a unique value per acquisition takes turns as well as
//! stage 3's SET NX PX did: the value changes who may release, not who may
//! acquire.

use harness::check::Verdict;
use harness::scenario::run_in_test;

#[tokio::test(flavor = "multi_thread")]
async fn with_a_uuid_per_acquisition_eight_clients_sell_exactly_ten_items() {
    let outcome = run_in_test("contention", stage4::STAGE).await;
    assert_eq!(outcome.verdict, Verdict::ok());
    assert_eq!(outcome.fact("orders"), 10);
    assert_eq!(outcome.fact("stock_left"), 0);
}
