//! A partition that leaves the holder with a minority, the matrix's
//! `minority-partition` story (`harness/src/scenario/minority_partition.rs`,
//! modelled by freezing the leader client-A reaches alone): client-A's
//! renewals go unanswered, its client gives the lease up by its own clock
//! a TTL after the last answered renewal, and client-A stops; only later
//! does the majority expire the lease and let client-B in. One holder at a
//! time, where Redis's split brain had two.

use harness::check::Finding;

#[tokio::test(flavor = "multi_thread")]
async fn the_holder_cut_off_with_a_minority_is_told_before_anyone_else_is_let_in() {
    let outcome = harness::scenario::run_in_test("minority-partition", stage10::STAGE).await;
    assert_eq!(outcome.fact("b_acquired"), 1, "the majority goes on");
    assert_eq!(
        outcome.fact("a_told_first"),
        1,
        "client-A's lost signal should fire before client-B gets the lock"
    );
    outcome.assert_not_fired(&[Finding::Overlap, Finding::Oversold]);
    assert_eq!(outcome.fact("orders"), 1);
}
