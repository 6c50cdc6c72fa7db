//! A waiter sleeps on the lock's channel and wakes on the unlock message:
//! it sends the acquire script a fixed number of times, however long the
//! holder keeps it waiting, where a sleep-and-retry loop would send it every
//! retry interval.
//!
//! The story itself is in `stories/pubsub_wait.rs`, which the book's
//! recording (`lockstages book-assets`, run `stage6-pubsub-wait`) runs too.

use harness::check::Verdict;
use harness::holder::Launcher;
use harness::scenario::ScenarioEnv;
use lockcore::Release;

#[path = "stories/pubsub_wait.rs"]
mod story;

#[tokio::test(flavor = "multi_thread")]
async fn a_waiter_wakes_on_the_unlock_message_without_polling() {
    let env = ScenarioEnv::from_env(Launcher::this_test_binary()).unwrap_or_else(|e| panic!("{e}"));
    let run = story::pubsub_wait(env)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    println!(
        "wake-up latency: client-B held the lock {:?} after client-A sent its release, \
         {:?} after client-A had its answer",
        run.woke_after_sent, run.woke_after_answered,
    );
    let outcome = run.outcome;
    println!("{}", outcome.timeline.render());
    assert_eq!(run.release, Release::Deleted);
    assert_eq!(outcome.verdict, Verdict::ok());
    // Each run of the acquire script starts with PTTL. client-B runs it
    // once before subscribing, once right after (in case the release came in
    // between), and once when the message wakes it: three, never one per
    // retry interval.
    let attempts = outcome
        .timeline
        .events()
        .iter()
        .filter(|e| e.actor == "client-B" && e.text.trim_start().starts_with("lua> pttl"))
        .count();
    assert!(
        (2..=3).contains(&attempts),
        "client-B ran the acquire script {attempts} times"
    );
}
