//! A lock lives on one master. Replication is asynchronous, so a master
//! that dies right after granting the lock takes the only copy with it:
//! the promoted replica grants the same lock again, and there are two
//! holders.

use harness::check::Finding;
use harness::scenario::run_in_test;

#[tokio::test(flavor = "multi_thread")]
async fn after_a_failover_the_lock_is_gone_and_two_clients_hold_it() {
    let outcome = run_in_test("failover", stage5::STAGE).await;
    assert_eq!(
        outcome.fact("lock_on_new_master"),
        0,
        "the promoted replica should never have seen client-A's lock"
    );
    assert_eq!(
        outcome.fact("b_acquired"),
        1,
        "client-B should take the lock on the new master at once"
    );
    outcome.assert_fired(&[Finding::Overlap, Finding::Oversold]);
    assert_eq!(outcome.fact("orders"), 2, "one item, two orders");
}
