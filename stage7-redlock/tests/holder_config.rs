//! A holder process is a lock of its own in another process: it must run
//! with the configuration it was given, every field of it. Stage 7's drift
//! factor is the field a child used to lose (it fell back to the default).

use harness::scenario::{Run, ScenarioEnv};
use harness::{HarnessError, holder::Launcher};

#[tokio::test(flavor = "multi_thread")]
async fn a_holder_process_runs_with_the_drift_factor_it_was_given() -> Result<(), HarnessError> {
    let env = ScenarioEnv::from_env(Launcher::this_test_binary())?;
    let run = Run::start(stage7::STAGE, env, 1).await?;
    let patience = run.env.timing.patience();

    // A drift factor of 0.999 (the factor must stay below 1) reserves more
    // than the whole TTL for clock drift once the 2 ms margin is added: the
    // child's configuration check refuses it, naming the allowance that only
    // this factor gives. With the default factor (0.01) it would take the
    // lock at once.
    let mut given = run.factory.clone();
    given.config.drift_factor = 0.999;
    // The child refuses as soon as it starts, before its first request.
    let refused = match given.spawn_holder(&run.env.launcher, "client-A").await {
        Ok(mut doubtful) => doubtful.acquire(patience).await.map(|_| ()),
        Err(refused) => Err(refused),
    };
    match refused {
        Ok(taken) => panic!(
            "a holder given drift factor 0.999 answered {taken:?} instead of refusing its configuration: it ran with another factor"
        ),
        Err(refused) => assert!(
            refused.to_string().contains("drift allowance"),
            "the child refused for another reason: {refused}"
        ),
    }

    // The same child with the run's own factor takes the same free lock.
    let mut trusting = run
        .factory
        .spawn_holder(&run.env.launcher, "client-B")
        .await?;
    assert!(
        trusting.acquire(patience).await?,
        "a holder with the default drift factor could not take a free lock"
    );
    let outcome = run.finish().await?;
    assert_eq!(outcome.fact("orders"), 0);
    Ok(())
}
