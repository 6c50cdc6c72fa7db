//! Fencing tokens do not de-duplicate either. The gateway's retry of a
//! request waits for the lock like any client and gets the newer token, so
//! its write is legitimate to the resource: the same request is charged
//! twice. With request ids checked too, the resource refuses the retry.

use harness::check::Finding;
use harness::scenario::{run_in_test, run_in_test_with};
use harness::workload::RequestIds;

#[tokio::test(flavor = "multi_thread")]
async fn the_retry_carries_the_newer_token_and_the_same_request_is_charged_twice() {
    let outcome = run_in_test("duplicate-request", stage8::STAGE).await;
    assert_eq!(outcome.fact("retry_waited"), 1);
    assert_eq!(
        (outcome.fact("first_charged"), outcome.fact("retry_charged")),
        (1, 1)
    );
    outcome.assert_fired(&[Finding::Duplicate]);
    assert_eq!(outcome.fact("orders"), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn with_request_ids_and_tokens_checked_the_retry_is_refused() {
    let outcome = run_in_test_with("duplicate-request", stage8::STAGE, |env| {
        env.request_ids = RequestIds::Checked;
    })
    .await;
    assert_eq!(outcome.fact("retry_charged"), 0);
    outcome.assert_not_fired(&[Finding::Duplicate]);
    assert_eq!(outcome.fact("orders"), 1);
    assert!(
        outcome
            .timeline
            .events()
            .iter()
            .any(|e| e.actor == "client-B" && e.text.contains("DUPLICATE REFUSED")),
        "client-B's retry should have been refused as a duplicate"
    );
}
