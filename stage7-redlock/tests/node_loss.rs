//! Redlock survives the loss of any minority of its masters, and refuses
//! cleanly when a majority is gone.
//!
//! The stories themselves are in `stories/node_loss.rs`, which the book's
//! recording (`lockstages book-assets`, runs `stage7-node-loss-minority` and
//! `stage7-node-loss-majority`) runs too.

use harness::check::Verdict;
use harness::holder::Launcher;
use harness::scenario::ScenarioEnv;

#[path = "stories/node_loss.rs"]
mod story;

fn env() -> ScenarioEnv {
    ScenarioEnv::from_env(Launcher::this_test_binary()).unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn with_two_of_five_masters_killed_three_clients_take_turns_and_sell_exactly_the_stock() {
    let run = story::minority_lost(env())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let outcome = run.outcome;
    println!("{}", outcome.timeline.render());
    assert_eq!(outcome.verdict, Verdict::ok());
    assert_eq!(
        (run.sold, outcome.fact("orders"), outcome.fact("stock_left")),
        (5, 5, 0)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn with_three_of_five_masters_killed_the_lock_is_refused_and_nothing_is_left_behind() {
    let run = story::majority_lost(env())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    println!("{}", run.outcome.timeline.render());
    assert!(!run.granted, "two masters of five granted a lock");
    // The two live masters did write the key; the failed attempt deleted it.
    assert_eq!(run.keys_left, 0);
    // Waiting does not help, and does not hang either.
    assert!(!run.granted_after_waiting);
    assert_eq!(run.outcome.fact("orders"), 0);
}
