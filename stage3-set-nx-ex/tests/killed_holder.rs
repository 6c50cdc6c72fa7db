//! A holder process killed with `kill -9` inside its critical section: its
//! key expires on its own and the next client sells.

use harness::check::Finding;
use harness::scenario::{Timing, run_in_test};

#[tokio::test(flavor = "multi_thread")]
async fn a_holder_killed_with_kill_9_loses_the_lock_at_the_ttl() {
    let outcome = run_in_test("killed-holder", stage3::STAGE).await;
    let ttl_ms =
        i64::try_from(Timing::default().ttl.as_millis()).expect("a TTL of some milliseconds");
    let pttl = outcome.fact("pttl_after_death");
    assert!(
        (1..=ttl_ms).contains(&pttl),
        "the dead holder's key should be expiring, PTTL {pttl}"
    );
    outcome.assert_not_fired(&[Finding::Deadlock]);
    assert_eq!(
        outcome.fact("orders"),
        1,
        "the next client should sell the item"
    );
}
