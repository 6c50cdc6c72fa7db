//! The business fails inside the critical section. Code that releases on
//! its last line skips the release, and stage 1's key, which never expires,
//! locks everyone out for good. A guard that releases on every path (its
//! `Drop` runs on an early return and while a panic unwinds) gives the lock
//! back, and the next client gets in.

use harness::check::{Finding, Verdict};
use harness::holder::Launcher;
use harness::scenario::{Outcome, Run, ScenarioEnv, run_in_test};

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_business_that_skips_its_release_locks_everyone_out() {
    let outcome = run_in_test("business-error", stage1::STAGE).await;
    assert_eq!(outcome.verdict, Verdict::of(&[Finding::Deadlock]));
    assert_eq!(outcome.fact("b_acquired"), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn with_a_guard_an_error_still_releases_and_the_next_client_gets_in() {
    let outcome = guarded_business(false).await;
    assert_eq!(outcome.verdict, Verdict::ok());
    assert_released_by_client_a(&outcome);
}

#[tokio::test(flavor = "multi_thread")]
async fn with_a_guard_a_panic_still_releases_and_the_next_client_gets_in() {
    let outcome = guarded_business(true).await;
    assert_eq!(outcome.verdict, Verdict::ok());
    assert_released_by_client_a(&outcome);
}

/// client-A takes the lock as a guard, and its business fails (an error,
/// or a panic); client-B then asks for the lock for the whole patience.
async fn guarded_business(panics: bool) -> Outcome {
    let env = ScenarioEnv::from_env(Launcher::this_test_binary()).unwrap_or_else(|e| panic!("{e}"));
    let patience = env.timing.patience();
    let mut run = Run::start(stage1::STAGE, env, 1).await.unwrap();
    let a = run.client("client-A").await.unwrap();
    let b = run.client("client-B").await.unwrap();

    let business = tokio::spawn(async move {
        let guard = a.acquire_guarded(patience).await.unwrap().expect("free");
        a.read_stock(guard.held()).await.unwrap();
        if panics {
            panic!("the business panicked inside the critical section");
        }
        Err::<(), _>("the payment service is down") // the guard drops here
    });
    let ended = business.await;
    assert!(
        matches!(&ended, Ok(Err(_))) || ended.as_ref().is_err_and(|e| e.is_panic()),
        "the business failed: {ended:?}"
    );

    let held = run
        .probe_for_deadlock(&b)
        .await
        .unwrap()
        .expect("the guard gave the lock back");
    b.buy_one(&held, run.env.timing.business).await.unwrap();
    b.release(&held).await.unwrap().answered().unwrap();
    let outcome = run.finish().await.unwrap();
    println!("{}", outcome.timeline.render());
    outcome
}

/// The lock node saw client-A's own `DEL`: the lock was given back, not
/// left to anything else.
fn assert_released_by_client_a(outcome: &Outcome) {
    assert!(
        outcome
            .timeline
            .events()
            .iter()
            .any(|e| e.actor == "client-A" && e.text.starts_with("DEL lock:stock")),
        "client-A's guard sent the release"
    );
}
