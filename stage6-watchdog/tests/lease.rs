//! With a lease, Redisson starts no watchdog, and neither does stage 6: the
//! lock expires when the lease does, finished or not. A business longer than
//! its lease shares the critical section with the next client, as in stage 5.

use std::time::Duration;

use harness::holder::Launcher;
use harness::observe::Finding;
use harness::scenario::{Run, ScenarioEnv};
use harness::workload::{Database, Sale};
use lockcore::{ClientSetup, LockError};
use stage6::RLock;

#[tokio::test(flavor = "multi_thread")]
async fn a_lease_shorter_than_the_business_is_not_renewed() {
    let env = ScenarioEnv::from_env(Launcher::this_test_binary()).unwrap_or_else(|e| panic!("{e}"));
    let timing = env.timing;
    let run = Run::start(stage6::STAGE, env, 1).await.unwrap();
    let ledger = run.factory.ledger.clone();
    let setup = ClientSetup {
        replies: Some(ledger.timeline().reply_log()),
        ..ClientSetup::new(
            run.factory.lock_urls.clone(),
            "client-A",
            run.factory.config.clone(),
        )
    };
    let leased_db = Database::connect(&setup, &run.db.url()).await.unwrap();
    let leased = RLock::connect(setup).await.unwrap();
    let next = run.client("client-B").await.unwrap();

    let lease = timing.ttl;
    let held = leased
        .try_lock(Duration::ZERO, Some(lease))
        .await
        .unwrap()
        .expect("the lock is free");
    assert!(
        held.lost.is_none(),
        "no watchdog, so nothing could notice a loss"
    );
    ledger.acquired("client-A", &held);
    let read = leased_db.read_stock(None).await.unwrap();

    // client-A's business is slow: it lasts until client-B, who waits at
    // most three leases, has come and gone. Nobody renews client-A's lease.
    let next_held = next
        .acquire(timing.patience())
        .await
        .unwrap()
        .expect("the lease runs out");
    next.buy_one(&next_held, timing.business).await.unwrap();
    next.release(&next_held).await.unwrap().unwrap();

    assert_eq!(
        leased_db.sell(read, None).await.unwrap(),
        Sale::Sold(1),
        "a stale read, sold again"
    );
    ledger.release_sent("client-A");
    assert!(
        matches!(leased.unlock().await, Err(LockError::NotOwner)),
        "its lease expired long ago"
    );

    let outcome = run.finish().await.unwrap();
    println!("{}", outcome.timeline.render());
    outcome.assert_fired(&[Finding::Overlap, Finding::Oversold]);
}
