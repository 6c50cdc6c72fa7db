//! A holder that outlived its lock, frozen or just slow, still writes; the
//! resource sees an old token and refuses the write. Stock is never
//! oversold, although two clients were inside at once, in both orders: the
//! new holder writes first (gc-pause, slow-business, clock-jump), or the
//! stale one does (stale-write-first). The last test shows why the fixed
//! resource registers tokens on reads: one that checks writes only is fooled
//! when the stale write lands first.

use harness::check::Finding;
use harness::scenario::{Outcome, run_in_test, run_in_test_with};
use harness::workload::Fencing;

/// The timeline shows the resource refusing `client`'s write.
fn assert_write_refused(outcome: &Outcome, client: &str) {
    assert!(
        outcome
            .timeline
            .events()
            .iter()
            .any(|e| e.actor == client && e.text.contains("REJECTED")),
        "{client}'s stale write should have been rejected"
    );
}

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
    assert_write_refused(&outcome, "client-A");
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

#[tokio::test(flavor = "multi_thread")]
async fn when_the_stale_write_lands_first_the_read_already_fenced_it_off_and_nothing_is_oversold() {
    let outcome = run_in_test("stale-write-first", stage8::STAGE).await;
    assert_eq!(
        outcome.fact("b_acquired"),
        1,
        "the lock should expire under the slow holder"
    );
    assert_eq!(outcome.fact("a_write_rejected"), 1);
    assert_eq!(outcome.fact("b_write_rejected"), 0);
    assert_write_refused(&outcome, "client-A");
    outcome.assert_fired(&[Finding::Overlap]);
    outcome.assert_not_fired(&[Finding::Oversold]);
    assert_eq!(outcome.fact("orders"), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn fencing_only_the_write_lets_the_stale_write_land_first_and_stock_is_oversold() {
    let outcome = run_in_test_with("stale-write-first", stage8::STAGE, |env| {
        env.fencing = Fencing::WriteOnly;
    })
    .await;
    assert_eq!(outcome.fact("b_acquired"), 1);
    assert_eq!(
        (
            outcome.fact("a_write_rejected"),
            outcome.fact("b_write_rejected")
        ),
        (0, 0),
        "a write-only check accepts both writes"
    );
    outcome.assert_fired(&[Finding::Oversold]);
    assert_eq!(outcome.fact("orders"), 2);
}
