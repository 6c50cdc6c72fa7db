//! No majority can help a holder that is not running: frozen past its
//! validity, it wakes up, still sure of its lock, and sells an item that a
//! second holder has sold meanwhile.

use harness::check::Finding;
use harness::scenario::run_in_test;

#[tokio::test(flavor = "multi_thread")]
async fn a_holder_frozen_past_its_validity_wakes_up_beside_a_second_holder_and_oversells() {
    let outcome = run_in_test("gc-pause", stage7::STAGE).await;
    assert_eq!(outcome.fact("rival_acquired"), 1);
    outcome.assert_fired(&[Finding::Overlap, Finding::Oversold]);
    assert_eq!(outcome.fact("orders"), 2);
}
