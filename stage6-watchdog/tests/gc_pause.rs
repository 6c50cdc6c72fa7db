//! The watchdog lives in the holder's process, so a stop-the-world pause
//! freezes it too: the lock expires, another client buys, and the holder
//! wakes up to sell stock it read before the pause. Its lost-lock signal
//! fires, but only after the thaw, when the damage is a write away.

use harness::check::Finding;
use harness::scenario::run_in_test;

#[tokio::test(flavor = "multi_thread")]
async fn a_frozen_holder_loses_its_lock_oversells_and_learns_it_too_late() {
    let outcome = run_in_test("gc-pause", stage6::STAGE).await;
    assert_eq!(
        outcome.fact("rival_acquired"),
        1,
        "client-B must get the lock during the pause"
    );
    outcome.assert_fired(&[Finding::Overlap, Finding::Oversold]);
    assert_eq!(outcome.fact("orders"), 2);
    assert_eq!(
        outcome.fact("lost_signal_fired"),
        1,
        "the watchdog must notice the loss after the thaw"
    );
}
