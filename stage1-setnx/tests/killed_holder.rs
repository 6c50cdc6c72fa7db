//! A holder that dies before its DEL leaves a key with no expiry behind,
//! and nobody ever gets the lock again.

use harness::check::Finding;
use harness::scenario::run_in_test;

/// `PTTL` answers -1 for a key that exists and never expires.
const NO_EXPIRY: i64 = -1;

#[tokio::test(flavor = "multi_thread")]
async fn a_holder_killed_with_kill_9_leaves_the_lock_for_ever() {
    let outcome = run_in_test("killed-holder", stage1::STAGE).await;
    assert_eq!(outcome.fact("pttl_after_death"), NO_EXPIRY);
    outcome.assert_fired(&[Finding::Deadlock]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_holder_that_crashes_right_after_setnx_leaves_the_lock_for_ever() {
    let outcome = run_in_test("crash-before-expire", stage1::STAGE).await;
    assert_eq!(outcome.fact("pttl_after_death"), NO_EXPIRY);
    outcome.assert_fired(&[Finding::Deadlock]);
    assert_eq!(
        outcome.fact("orders"),
        0,
        "nobody may sell while the dead holder's key stays"
    );
}
