//! A master that forgets a key it granted, by restarting empty or by its
//! clock jumping forward, lets a second client win a majority of its own
//! while the first still trusts its lock. Keeping a restarted master down
//! for longer than the TTL closes the hole for restarts.

use harness::check::{Finding, Verdict};
use harness::holder::Launcher;
use harness::scenario::run_with_restart_delay;
use harness::scenario::{Outcome, ScenarioEnv, run_in_test};

#[tokio::test(flavor = "multi_thread")]
async fn a_master_restarting_empty_gives_the_lock_to_two_holders_and_the_item_is_sold_twice() {
    let outcome = run_in_test("restart-without-persistence", stage7::STAGE).await;
    assert_eq!(
        outcome.fact("holder_nodes"),
        3,
        "client-A should hold a bare majority"
    );
    assert_eq!(outcome.fact("contender_acquired"), 1);
    outcome.assert_fired(&[Finding::Overlap, Finding::Oversold]);
    assert_eq!(outcome.fact("orders"), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_master_kept_down_three_ttls_before_restarting_lets_nobody_in_beside_the_holder() {
    let env = ScenarioEnv::from_env(Launcher::this_test_binary()).unwrap_or_else(|e| panic!("{e}"));
    let down_for = env.timing.ttl * 3;
    let recorded = run_with_restart_delay(stage7::STAGE, env, down_for)
        .await
        .unwrap();
    let outcome = Outcome::judged(recorded);
    println!("{}", outcome.timeline.render());
    assert_eq!(outcome.fact("holder_nodes"), 3);
    assert_eq!(outcome.fact("contender_acquired"), 0);
    assert_eq!(outcome.verdict, Verdict::ok());
    assert_eq!(outcome.fact("orders"), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_clock_jump_on_one_of_the_holders_masters_gives_the_lock_to_two_holders() {
    let outcome = run_in_test("clock-jump", stage7::STAGE).await;
    assert_eq!(outcome.fact("holder_nodes"), 3);
    assert_eq!(
        outcome.fact("pttl_after_jump"),
        1,
        "the jump should leave the key 1 ms"
    );
    assert_eq!(outcome.fact("contender_acquired"), 1);
    outcome.assert_fired(&[Finding::Overlap, Finding::Oversold]);
}
