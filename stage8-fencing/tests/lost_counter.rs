//! Fencing tokens are only as good as the counter that numbers them. When
//! the counter lived on a master that is lost (a failover before the
//! replica had it, a restart without persistence), it starts again, tokens
//! repeat, and the resource cannot tell the stale holder from the new one.

use harness::check::Finding;
use harness::scenario::{Outcome, run_in_test};

/// The fencing tokens `client` was granted, from the timeline.
fn tokens_of(outcome: &Outcome, client: &str) -> Vec<u64> {
    outcome
        .timeline
        .events()
        .iter()
        .filter(|e| e.actor == client && e.text.starts_with("acquired the lock"))
        .filter_map(|e| e.text.split("fencing token ").nth(1))
        .filter_map(|rest| {
            rest.split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failover_loses_the_counter_so_the_new_holder_gets_the_same_token_and_stock_is_oversold()
{
    let outcome = run_in_test("failover", stage8::STAGE).await;
    assert_eq!(outcome.fact("b_acquired"), 1);
    assert_both_were_handed_token_one(&outcome);
    outcome.assert_fired(&[Finding::Oversold]);
}

#[tokio::test(flavor = "multi_thread")]
async fn when_the_sentinels_fail_over_the_counter_is_lost_too_and_tokens_repeat() {
    let outcome = run_in_test("sentinel-failover", stage8::STAGE).await;
    assert_eq!(outcome.fact("b_acquired"), 1);
    assert_both_were_handed_token_one(&outcome);
    outcome.assert_fired(&[Finding::Oversold]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_restart_without_persistence_resets_the_counter_so_tokens_repeat_and_stock_is_oversold() {
    let outcome = run_in_test("restart-without-persistence", stage8::STAGE).await;
    assert_eq!(outcome.fact("contender_acquired"), 1);
    assert_both_were_handed_token_one(&outcome);
    outcome.assert_fired(&[Finding::Oversold]);
}

/// The counter came back empty, so client-A and client-B both got token 1.
fn assert_both_were_handed_token_one(outcome: &Outcome) {
    let (a, b) = (
        tokens_of(outcome, "client-A"),
        tokens_of(outcome, "client-B"),
    );
    assert_eq!(
        (a.as_slice(), b.as_slice()),
        ([1].as_slice(), [1].as_slice()),
        "tokens: A {a:?}, B {b:?}"
    );
}
