//! A safe release is no help to a holder that is still working when its
//! lock expires: client-B gets in, both read the one item, both sell it.

use harness::check::Finding;
use harness::scenario::run_in_test;

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_holder_deletes_nothing_but_still_overlaps_and_oversells() {
    let outcome = run_in_test("slow-business", stage5::STAGE).await;
    assert_eq!(
        outcome.fact("b_acquired"),
        1,
        "the lock should expire under client-A"
    );
    assert_eq!(
        outcome.fact("a_release_deleted"),
        0,
        "client-A's script should delete nothing"
    );
    assert_eq!(
        outcome.fact("b_key_survived_a_release"),
        1,
        "client-B's lock should survive client-A's release"
    );
    outcome.assert_not_fired(&[Finding::ForeignDelete]);
    outcome.assert_fired(&[Finding::Overlap, Finding::Oversold]);
    assert_eq!(outcome.fact("orders"), 2, "one item, two orders");
}
