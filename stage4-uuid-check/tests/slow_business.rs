//! Comparing values before deleting fixes what stage 3 broke after slow
//! business: client-A's late release sees client-B's UUID and deletes
//! nothing. It fixes nothing else: the lock still expired under client-A,
//! both were inside at once, and one item sold twice.

use harness::check::Finding;
use harness::scenario::run_in_test;

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_holders_release_no_longer_deletes_the_next_holders_lock() {
    let outcome = run_in_test("slow-business", stage4::STAGE).await;
    assert_eq!(
        outcome.fact("b_acquired"),
        1,
        "the lock should expire under client-A"
    );
    assert_eq!(
        outcome.fact("a_release_deleted"),
        0,
        "client-A's GET should see client-B's value and send no DEL"
    );
    assert_eq!(
        outcome.fact("b_key_survived_a_release"),
        1,
        "client-B's lock should survive client-A's release"
    );
    assert_eq!(
        outcome.fact("c_acquired"),
        0,
        "client-C should find client-B's lock in place"
    );
    outcome.assert_not_fired(&[Finding::ForeignDelete]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_holder_and_the_next_holder_still_overlap_and_oversell() {
    let outcome = run_in_test("slow-business", stage4::STAGE).await;
    outcome.assert_fired(&[Finding::Overlap, Finding::Oversold]);
    assert_eq!(outcome.fact("orders"), 2, "one item, two orders");
}
