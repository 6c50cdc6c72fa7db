//! A holder that outlived its lock, frozen or just slow, still writes; the
//! resource sees an old token and refuses the write. Stock is never
//! oversold, although two clients were inside at once.

use harness::observe::Finding;
use harness::scenario::run_in_test;

harness::holder_entry!(stage8::STAGE);

#[tokio::test(flavor = "multi_thread")]
async fn after_a_gc_pause_the_stale_holders_write_is_rejected_and_nothing_is_oversold() {
    let outcome = run_in_test("gc-pause", stage8::STAGE).await;
    assert_eq!(
        outcome.fact("rival_acquired"),
        1,
        "the lock should expire during the pause"
    );
    outcome.assert_not_fired(&[Finding::Oversold]);
    assert_eq!(outcome.fact("orders"), 1);
    assert!(
        outcome
            .timeline
            .events()
            .iter()
            .any(|e| e.actor == "client-A" && e.text.contains("REJECTED")),
        "client-A's stale write should have been rejected"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn after_slow_business_the_stale_holders_write_is_rejected_and_nothing_is_oversold() {
    let outcome = run_in_test("slow-business", stage8::STAGE).await;
    assert_eq!(
        outcome.fact("b_acquired"),
        1,
        "the lock should expire under the slow holder"
    );
    assert_eq!(outcome.fact("a_write_rejected"), 1);
    outcome.assert_not_fired(&[Finding::Oversold]);
    assert_eq!(outcome.fact("orders"), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn after_a_clock_jump_two_clients_overlap_but_the_older_token_cannot_write() {
    let outcome = run_in_test("clock-jump", stage8::STAGE).await;
    assert_eq!(outcome.fact("contender_acquired"), 1);
    outcome.assert_fired(&[Finding::Overlap]);
    outcome.assert_not_fired(&[Finding::Oversold]);
    assert_eq!(outcome.fact("orders"), 1);
}
