//! A holder that asks for its own lock again: stage 3 cannot tell it from a
//! stranger, so the holder waits for itself until its own key expires, and
//! then takes the lock anew. Not a re-entry (its first hold is gone, and
//! with it the protection of its outer section), not a deadlock either (it
//! did get in): the lock node records the expiry, then the holder's new
//! write. SELF-BLOCKED.

use harness::check::{Finding, Verdict};
use harness::scenario::run_in_test;

#[tokio::test(flavor = "multi_thread")]
async fn the_holder_asking_again_gets_in_only_after_its_own_key_expired() {
    let outcome = run_in_test("reentrant", stage3::STAGE).await;
    assert_eq!(outcome.verdict, Verdict::of(&[Finding::SelfBlocked]));
    assert_eq!(outcome.fact("reentered"), 0);
    let events = outcome.timeline.events();
    let expired = events
        .iter()
        .position(|e| e.actor == "redis" && e.text.starts_with("expired lock:stock"));
    let taken_again = events
        .iter()
        .rposition(|e| e.actor == "client-A" && e.text.starts_with("acquired the lock"));
    assert!(
        matches!((expired, taken_again), (Some(e), Some(t)) if e < t),
        "the timeline shows the key expiring before client-A takes the lock again"
    );
}
