//! A holder that asks for its own lock again: stage 1 cannot tell it from a
//! stranger, and its key never expires, so the holder waits for itself for
//! the whole patience window while the key stays. The lock node's record
//! shows the key there all along and nobody acquiring: a deadlock.

use harness::check::{Finding, Verdict};
use harness::scenario::run_in_test;

#[tokio::test(flavor = "multi_thread")]
async fn the_holder_asking_again_waits_for_itself_forever() {
    let outcome = run_in_test("reentrant", stage1::STAGE).await;
    assert_eq!(outcome.verdict, Verdict::of(&[Finding::Deadlock]));
    assert_eq!(outcome.fact("reentered"), 0);
}
