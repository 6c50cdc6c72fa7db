//! Idempotency, the last defence: what request ids add to stage 5's lock,
//! and what they do not.
//!
//! A lock serialises the gateway's retry of a request but cannot tell it is
//! the same request: charged twice. A resource that charges each request id
//! once refuses the retry. It cannot refuse two *different* requests, so a
//! paused holder's stale write still oversells.

use harness::check::Finding;
use harness::scenario::{Outcome, run_in_test, run_in_test_with};
use harness::workload::RequestIds;

/// The timeline shows the resource refusing `client`'s second charge.
fn assert_retry_refused(outcome: &Outcome, client: &str) {
    assert!(
        outcome
            .timeline
            .events()
            .iter()
            .any(|e| e.actor == client && e.text.contains("DUPLICATE REFUSED")),
        "{client}'s retry should have been refused as a duplicate"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_retried_request_waits_for_the_lock_and_is_charged_twice() {
    let outcome = run_in_test("duplicate-request", stage5::STAGE).await;
    assert_eq!(
        outcome.fact("retry_waited"),
        1,
        "the lock held the retry back"
    );
    assert_eq!(
        (outcome.fact("first_charged"), outcome.fact("retry_charged")),
        (1, 1)
    );
    outcome.assert_fired(&[Finding::Duplicate]);
    outcome.assert_not_fired(&[Finding::Overlap, Finding::Oversold]);
    assert_eq!(outcome.fact("orders"), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn with_request_ids_the_retry_is_refused_and_charged_once() {
    let outcome = run_in_test_with("duplicate-request", stage5::STAGE, |env| {
        env.request_ids = RequestIds::Checked;
    })
    .await;
    assert_eq!(outcome.fact("retry_waited"), 1);
    assert_eq!(
        (outcome.fact("first_charged"), outcome.fact("retry_charged")),
        (1, 0)
    );
    outcome.assert_not_fired(&[Finding::Duplicate]);
    assert_eq!(outcome.fact("orders"), 1);
    assert_eq!(
        outcome.fact("stock_left"),
        outcome.fact("initial_stock") - 1
    );
    assert_retry_refused(&outcome, "client-B");
}

#[tokio::test(flavor = "multi_thread")]
async fn request_ids_do_not_stop_two_different_requests_overselling_after_a_gc_pause() {
    let outcome = run_in_test_with("gc-pause", stage5::STAGE, |env| {
        env.request_ids = RequestIds::Checked;
    })
    .await;
    assert_eq!(
        outcome.fact("rival_acquired"),
        1,
        "the lock expired in the pause"
    );
    outcome.assert_fired(&[Finding::Oversold]);
    outcome.assert_not_fired(&[Finding::Duplicate]);
    assert_eq!(outcome.fact("orders"), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn without_request_ids_the_gc_pause_oversells_the_same_way() {
    // The control for the test above: the check changed nothing here.
    let outcome = run_in_test("gc-pause", stage5::STAGE).await;
    outcome.assert_fired(&[Finding::Oversold]);
    assert_eq!(outcome.fact("orders"), 2);
}
