//! With the value and the expiry written by one command, there is no moment
//! at which the key lives without an expiry: a holder that crashes right
//! after taking the lock costs the others one TTL, never a deadlock.

use harness::check::Finding;
use harness::scenario::{Timing, run_in_test};

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_right_after_set_nx_px_leaves_a_key_that_expires() {
    let outcome = run_in_test("crash-before-expire", stage3::STAGE).await;
    let ttl_ms =
        i64::try_from(Timing::default().ttl.as_millis()).expect("a TTL of some milliseconds");
    let pttl = outcome.fact("pttl_after_death");
    assert!(
        (1..=ttl_ms).contains(&pttl),
        "the key should carry its expiry from the start, PTTL {pttl}"
    );
    outcome.assert_not_fired(&[Finding::Deadlock]);
    assert_eq!(
        outcome.fact("orders"),
        1,
        "the next client should sell the item"
    );
}
