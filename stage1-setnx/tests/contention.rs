//! Under contention, SETNX stops the overselling that no lock allows.

use harness::check::{Finding, Verdict};
use harness::control::STAGE0;
use harness::scenario::run_in_test;

#[tokio::test(flavor = "multi_thread")]
async fn without_a_lock_eight_clients_oversell_ten_items() {
    let outcome = run_in_test("contention", STAGE0).await;
    outcome.assert_fired(&[Finding::Oversold]);
    assert!(
        outcome.fact("orders") > 10,
        "only {} orders",
        outcome.fact("orders")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn with_setnx_eight_clients_sell_exactly_ten_items() {
    let outcome = run_in_test("contention", stage1::STAGE).await;
    assert_eq!(outcome.verdict, Verdict::ok());
    assert_eq!(outcome.fact("orders"), 10);
    assert_eq!(outcome.fact("stock_left"), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_waiter_spins_refused_setnx_after_refused_setnx() {
    let outcome = run_in_test("contention", stage1::STAGE).await;
    let refused = outcome
        .timeline
        .events()
        .iter()
        .filter(|e| e.text.starts_with("SETNX lock:stock") && e.text.ends_with("-> 0"))
        .count();
    assert!(
        refused >= 2,
        "the timeline shows the waiters' refused tries ({refused})"
    );
}
