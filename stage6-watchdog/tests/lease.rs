//! With a lease, Redisson starts no watchdog, and neither does stage 6: the
//! lock expires when the lease does, finished or not. A business longer than
//! its lease shares the critical section with the next client, as in stage 5.
//!
//! The story itself is in `stories/lease.rs`, which the book's recording
//! (`lockstages book-assets`, run `stage6-lease`) runs too.

use harness::check::Finding;
use harness::holder::Launcher;
use harness::scenario::ScenarioEnv;
use harness::workload::Sale;
use lockcore::LockError;

#[path = "stories/lease.rs"]
mod story;

#[tokio::test(flavor = "multi_thread")]
async fn a_lease_shorter_than_the_business_is_not_renewed() {
    let env = ScenarioEnv::from_env(Launcher::this_test_binary()).unwrap_or_else(|e| panic!("{e}"));
    let run = story::lease(env).await.unwrap_or_else(|e| panic!("{e}"));
    println!("{}", run.outcome.timeline.render());

    assert!(!run.watched, "no watchdog, so nothing could notice a loss");
    assert_eq!(run.late_sale, Sale::Sold(1), "a stale read, sold again");
    assert!(
        matches!(run.unlock, Err(LockError::NotOwner)),
        "its lease expired long ago"
    );
    run.outcome
        .assert_fired(&[Finding::Overlap, Finding::Oversold]);
}
