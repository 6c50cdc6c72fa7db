//! An atomic acquire does not make the release safe: when the business
//! outlives the TTL, client-A's DEL still deletes client-B's lock and
//! client-C walks in while client-B is inside.

use harness::check::Finding;
use harness::scenario::run_in_test;

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_holder_still_deletes_the_next_holders_lock_and_one_item_sells_twice() {
    let outcome = run_in_test("slow-business", stage3::STAGE).await;
    assert_eq!(
        outcome.fact("b_acquired"),
        1,
        "the lock should expire under client-A"
    );
    assert_eq!(
        outcome.fact("a_release_deleted"),
        1,
        "client-A's DEL should delete a key"
    );
    assert_eq!(
        outcome.fact("b_key_survived_a_release"),
        0,
        "that key was client-B's"
    );
    assert_eq!(
        outcome.fact("c_acquired"),
        1,
        "client-C should get in while client-B is inside"
    );
    outcome.assert_fired(&[Finding::ForeignDelete, Finding::Overlap, Finding::Oversold]);
    assert_eq!(outcome.fact("orders"), 2, "one item, two orders");
}
