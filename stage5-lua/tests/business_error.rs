//! The business fails inside the critical section and the release, on its
//! last line, is skipped. Stage 5's key has a TTL, so nobody is locked out
//! for good: everyone waits for the key to expire. The lock node records
//! the expiry before the next client's turn. (The fix, a guard that
//! releases on every path, is in stage 1's `tests/business_error.rs`.)

use harness::check::Verdict;
use harness::scenario::run_in_test;

#[tokio::test(flavor = "multi_thread")]
async fn a_skipped_release_makes_the_next_client_wait_out_the_ttl() {
    let outcome = run_in_test("business-error", stage5::STAGE).await;
    assert_eq!(outcome.verdict, Verdict::ok());
    assert_eq!(outcome.fact("b_acquired"), 1);
    let events = outcome.timeline.events();
    let expired = events
        .iter()
        .position(|e| e.actor == "redis" && e.text.starts_with("expired lock:stock"));
    let b_in = events
        .iter()
        .position(|e| e.actor == "client-B" && e.text.starts_with("acquired the lock"));
    assert!(
        matches!((expired, b_in), (Some(e), Some(b)) if e < b),
        "client-B gets in only after client-A's key expired"
    );
    assert!(
        !events
            .iter()
            .any(|e| e.actor == "client-A" && e.text.contains("releases")),
        "client-A never released"
    );
}
