//! Seed 000's advice, "one Redis master plus Sentinel is enough", put to
//! the test: a master, two replicas, three Sentinels that decide the
//! failover themselves, and clients that find the master through them.

use harness::check::Finding;
use harness::scenario::run_in_test;

#[tokio::test(flavor = "multi_thread")]
async fn when_the_sentinels_fail_over_the_lock_is_gone_and_two_clients_hold_it() {
    let outcome = run_in_test("sentinel-failover", stage5::STAGE).await;
    assert!(
        outcome.timeline.render().contains("+switch-master"),
        "the Sentinels announced the new master"
    );
    assert_eq!(
        outcome.fact("lock_on_new_master"),
        0,
        "the replica the Sentinels promoted never saw client-A's lock"
    );
    assert_eq!(outcome.fact("b_acquired"), 1, "client-B took the lock");
    outcome.assert_fired(&[Finding::Overlap, Finding::Oversold]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_partition_gives_two_masters_and_the_heal_throws_the_old_ones_lock_away() {
    let outcome = run_in_test("split-brain", stage5::STAGE).await;
    assert_eq!(
        outcome.fact("a_acquired"),
        1,
        "the cut-off master granted it"
    );
    assert_eq!(outcome.fact("b_acquired"), 1, "the promoted one granted it");
    assert_eq!(
        outcome.fact("old_master_kept_lock"),
        0,
        "the demoted master resynced and lost client-A's key"
    );
    outcome.assert_fired(&[Finding::Overlap, Finding::Oversold]);
}

#[tokio::test(flavor = "multi_thread")]
async fn min_replicas_to_write_makes_the_cut_off_master_refuse_the_lock() {
    let outcome = run_in_test("split-brain-min-replicas", stage5::STAGE).await;
    assert_eq!(
        outcome.fact("a_acquired"),
        0,
        "a master that hears from no replica refuses writes"
    );
    assert_eq!(outcome.fact("b_acquired"), 1, "the promoted one granted it");
    outcome.assert_not_fired(&[Finding::Overlap, Finding::Oversold]);
}
