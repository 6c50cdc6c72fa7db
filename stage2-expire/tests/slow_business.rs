//! Business that outlives the TTL: the lock expires under client-A while it
//! still works, client-B takes it, client-A's DEL deletes client-B's key,
//! and client-C walks in while client-B is still inside.

use harness::check::Finding;
use harness::scenario::run_in_test;

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_holder_deletes_the_next_holders_lock_and_one_item_sells_twice() {
    let outcome = run_in_test("slow-business", stage2::STAGE).await;
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
