//! The other half of seed 000's advice, "Sentinel or Cluster is enough":
//! a Redis Cluster of three masters and three replicas that finds a dead
//! master and promotes its replica by itself, and clients that follow the
//! lock key's slot wherever the cluster says it is served.

use harness::check::Finding;
use harness::scenario::run_in_test;

#[tokio::test(flavor = "multi_thread")]
async fn when_the_cluster_fails_over_the_lock_is_gone_and_two_clients_hold_it() {
    let outcome = run_in_test("cluster-failover", stage5::STAGE).await;
    let timeline = outcome.timeline.render();
    assert!(
        timeline.contains("+fail master1") && timeline.contains("+promoted replica1"),
        "the cluster itself called master1 down and promoted replica1"
    );
    assert!(
        timeline.contains(&format!("slot {}", outcome.fact("slot"))),
        "the timeline names the lock key's slot"
    );
    assert_eq!(
        outcome.fact("lock_on_new_master"),
        0,
        "the replica the cluster promoted never saw client-A's lock"
    );
    assert_eq!(outcome.fact("b_acquired"), 1, "client-B took the lock");
    outcome.assert_fired(&[Finding::Overlap, Finding::Oversold]);
    assert_eq!(outcome.fact("orders"), 2, "one item, two orders");
}

#[tokio::test(flavor = "multi_thread")]
async fn wait_1_on_the_slots_master_keeps_client_a_out() {
    let outcome = run_in_test("cluster-failover-wait", stage5::STAGE).await;
    assert_eq!(
        outcome.fact("replicas_acknowledged"),
        0,
        "replication was held back, so no replica acknowledged"
    );
    assert_eq!(outcome.fact("b_acquired"), 1, "client-B took the lock");
    outcome.assert_not_fired(&[Finding::Overlap, Finding::Oversold]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cut_off_master_grants_the_lock_until_the_node_timeout_and_the_majority_grants_it_again()
{
    let outcome = run_in_test("cluster-partition", stage5::STAGE).await;
    assert_eq!(
        outcome.fact("a_acquired"),
        1,
        "the cut-off master granted it"
    );
    assert_eq!(
        outcome.fact("b_acquired"),
        1,
        "the promoted replica granted it"
    );
    assert!(
        outcome.fact("ms_until_writes_refused") > 0,
        "the cut-off master refused writes at last"
    );
    assert_eq!(
        outcome.fact("old_master_kept_lock"),
        0,
        "the demoted master resynced and lost client-A's key"
    );
    outcome.assert_fired(&[Finding::Overlap, Finding::Oversold]);
}
