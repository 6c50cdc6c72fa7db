//! The watchdog renews a lock on one master. When that master dies before
//! its replica has the lock, the promoted replica never heard of it: the
//! next client takes it while the first is still working.

use harness::check::Finding;
use harness::scenario::run_in_test;

#[tokio::test(flavor = "multi_thread")]
async fn a_failover_before_the_replica_has_the_lock_loses_it() {
    let outcome = run_in_test("failover", stage6::STAGE).await;
    assert_eq!(
        outcome.fact("lock_on_new_master"),
        0,
        "the replica must not have the lock"
    );
    assert_eq!(
        outcome.fact("b_acquired"),
        1,
        "client-B must get the lock on the new master"
    );
    outcome.assert_fired(&[Finding::Overlap, Finding::Oversold]);
}
