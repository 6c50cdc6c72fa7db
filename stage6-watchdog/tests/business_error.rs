//! The business fails inside the critical section and the release is
//! skipped, while the client lives on. Stage 6's watchdog belongs to the
//! client, not to the business: it keeps renewing the lock for as long as
//! the client lives, so nobody else ever gets in. With a watchdog, a
//! forgotten unlock is a deadlock, not a wait for the TTL.

use harness::check::{Finding, Verdict};
use harness::scenario::run_in_test;

#[tokio::test(flavor = "multi_thread")]
async fn a_skipped_release_is_renewed_forever_by_the_living_clients_watchdog() {
    let outcome = run_in_test("business-error", stage6::STAGE).await;
    assert_eq!(outcome.verdict, Verdict::of(&[Finding::Deadlock]));
    assert_eq!(outcome.fact("b_acquired"), 0);
    let renewals = outcome.timeline.count_after(
        |e| e.actor == "client-A" && e.text.starts_with("business FAILED"),
        |e| e.actor == "client-A" && e.text.trim_start().starts_with("lua> pexpire"),
    );
    assert!(
        renewals >= 2,
        "the watchdog kept renewing after the failure ({renewals} renewals)"
    );
}
