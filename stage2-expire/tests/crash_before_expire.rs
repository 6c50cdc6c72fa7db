//! SETNX and EXPIRE are two commands. A holder that dies between them leaves
//! a key with no expiry, and stage 2 deadlocks exactly as stage 1 did; one
//! that dies after EXPIRE costs the others a single TTL.

use harness::HarnessError;
use harness::check::Finding;
use harness::holder::Launcher;
use harness::scenario::{Run, ScenarioEnv, run_in_test};
use lockcore::{LockError, Point};

/// `PTTL` answers -1 for a key that exists and never expires.
const NO_EXPIRY: i64 = -1;

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_between_setnx_and_expire_leaves_the_lock_for_ever() {
    let outcome = run_in_test("crash-before-expire", stage2::STAGE).await;
    assert_eq!(outcome.fact("pttl_after_death"), NO_EXPIRY);
    outcome.assert_fired(&[Finding::Deadlock]);
    assert_eq!(
        outcome.fact("orders"),
        0,
        "nobody may sell while the dead holder's key stays"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_right_after_expire_costs_the_others_one_ttl() {
    let env = ScenarioEnv::from_env(Launcher::this_test_binary()).unwrap_or_else(|e| panic!("{e}"));
    let mut run = Run::start(stage2::STAGE, env, 1)
        .await
        .expect("the run starts");
    let ttl_ms = i64::try_from(run.env.timing.ttl.as_millis()).expect("a TTL of some milliseconds");

    let doomed = run.client("client-A").await.expect("client-A connects");
    doomed.faults().crash_at(Point::AfterExpire);
    let crash = doomed.try_acquire().await;
    assert!(
        matches!(
            crash,
            Err(HarnessError::Lock(LockError::Crashed(Point::AfterExpire)))
        ),
        "client-A should die right after its EXPIRE, got {crash:?}"
    );
    drop(doomed);
    let pttl = run.lock_pttl().await.expect("PTTL answers");
    run.narrate(format!("PTTL of the lock key after the crash: {pttl}"));
    assert!(
        (1..=ttl_ms).contains(&pttl),
        "the dead holder's key should expire within {ttl_ms}ms, PTTL {pttl}"
    );

    let survivor = run.client("client-B").await.expect("client-B connects");
    let held = run
        .probe_for_deadlock(&survivor)
        .await
        .expect("client-B asks");
    assert!(
        held.is_some(),
        "client-B should get the lock once the dead holder's key expires"
    );
    let outcome = run.finish().await.expect("the run finishes");
    println!("{}", outcome.timeline.render());
    outcome.assert_not_fired(&[Finding::Deadlock]);
}
