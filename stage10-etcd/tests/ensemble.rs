//! The cluster's own failure, the matrix's `leader-killed` story
//! (`harness/src/scenario/leader_killed.rs`): the leader is killed with
//! `kill -9` while client-A holds the lock. The two survivors elect a new
//! leader, which extends every lease as it takes over; client-A's renewals
//! reach a surviving member, and its lease and key live on. Client-B,
//! asking for three lease TTLs after the election, is not let in: one
//! holder, where Redis's failover handed the lock out twice.

use harness::check::Finding;

#[tokio::test(flavor = "multi_thread")]
async fn killing_the_leader_keeps_one_holder() {
    let outcome = harness::scenario::run_in_test("leader-killed", stage10::STAGE).await;
    assert_eq!(
        outcome.fact("b_acquired_while_a_held"),
        0,
        "client-A's key survived the election: nobody else may hold"
    );
    outcome.assert_not_fired(&[Finding::Overlap, Finding::Oversold]);
    assert_eq!(outcome.fact("orders"), 1);
    println!("measured: election took {}ms", outcome.fact("election_ms"));
}
