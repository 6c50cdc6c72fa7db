//! A GC pause against etcd, the matrix's `gc-pause` story
//! (`harness/src/scenario/gc_pause.rs`): the holder process is frozen with
//! SIGSTOP, so its lease renewals stop with everything else; the leader
//! hears nothing for a lease TTL, revokes the lease and deletes the
//! holder's key; client-B's watch fires and it takes the lock. When the
//! holder is thawed it finishes the purchase it started, and its next
//! renewal is answered with TTL 0. etcd did all it could (Jepsen found the
//! same of etcd 3.4.3's locks): only the resource can refuse the stale
//! write, by the token, the key's create revision.

use harness::check::Finding;
use harness::scenario::{Outcome, run_in_test_with};
use harness::workload::Fencing;

async fn paused_holder(fencing: Fencing) -> Outcome {
    let outcome = run_in_test_with("gc-pause", stage10::STAGE, |env| env.fencing = fencing).await;
    assert_eq!(
        outcome.fact("rival_acquired"),
        1,
        "client-A's lease should expire during the pause and free the lock"
    );
    assert_eq!(
        outcome.fact("lost_signal_fired"),
        1,
        "the thawed holder's client should learn that its lease expired"
    );
    outcome
}

#[tokio::test(flavor = "multi_thread")]
async fn without_the_token_check_the_paused_holder_oversells_exactly_as_with_redis() {
    let outcome = paused_holder(Fencing::Unchecked).await;
    outcome.assert_fired(&[Finding::Overlap, Finding::Oversold]);
    assert_eq!(outcome.fact("orders"), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn with_the_resource_checking_the_create_revision_the_paused_holders_write_is_refused() {
    let outcome = paused_holder(Fencing::ReadsAndWrites).await;
    outcome.assert_fired(&[Finding::Overlap]);
    outcome.assert_not_fired(&[Finding::Oversold]);
    assert_eq!(outcome.fact("orders"), 1);
}
