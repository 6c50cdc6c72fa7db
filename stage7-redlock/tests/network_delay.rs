//! Answers that come too late are no answers: the lock is refused, and the
//! keys the late answers were about are deleted on every master.

use harness::check::{Finding, Verdict};
use harness::scenario::run_in_test;

#[tokio::test(flavor = "multi_thread")]
async fn replies_three_ttls_late_get_a_refusal_and_every_key_written_is_deleted_not_left_to_expire()
{
    let outcome = run_in_test("network-delay", stage7::STAGE).await;
    assert_eq!(outcome.verdict, Verdict::of(&[Finding::Refused]));
    assert_eq!(
        outcome.fact("lock_keys_left"),
        0,
        "keys were left on some masters"
    );
    assert_eq!(
        outcome.fact("lock_keys_expired"),
        0,
        "a key was left to expire instead of deleted"
    );
    // The lock is free at once for a client whose network is fine.
    assert_eq!(outcome.fact("orders"), 1);
}
