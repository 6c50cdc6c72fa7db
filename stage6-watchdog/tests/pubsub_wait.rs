//! A waiter sleeps on the lock's channel and wakes on the unlock message:
//! it sends the acquire script a fixed number of times, however long the
//! holder keeps it waiting, where a sleep-and-retry loop would send it every
//! retry interval.

use std::time::Duration;

use harness::holder::Launcher;
use harness::observe::Verdict;
use harness::scenario::{Run, ScenarioEnv, Timing};
use lockcore::Release;
use tokio::time::{Instant, sleep};

/// Long, so that the waiter's other wake-up (the holder's PTTL running out)
/// cannot come first: only the unlock message can wake it.
const WATCHDOG: Duration = Duration::from_secs(10);
/// How long the holder keeps the waiter waiting: sixty retry intervals of a
/// polling lock (5 ms in tests).
const HOLD: Duration = Duration::from_millis(300);

#[tokio::test(flavor = "multi_thread")]
async fn a_waiter_wakes_on_the_unlock_message_without_polling() {
    let mut env =
        ScenarioEnv::from_env(Launcher::this_test_binary()).unwrap_or_else(|e| panic!("{e}"));
    env.timing = Timing {
        ttl: WATCHDOG,
        ..Timing::default()
    };
    let run = Run::start(stage6::STAGE, env, 1).await.unwrap();
    let holder = run.client("client-A").await.unwrap();
    let waiter = run.client("client-B").await.unwrap();
    let channel = stage6::channel_name(&run.factory.config.key);
    let mut admin = lockcore::connect(&run.nodes[0].url(), "harness")
        .await
        .unwrap();

    let held = holder
        .acquire(Duration::ZERO)
        .await
        .unwrap()
        .expect("the lock is free");
    let (waited, (release_sent, release_answered)) = tokio::join!(
        async {
            let held = waiter.acquire(WATCHDOG).await;
            (held, Instant::now())
        },
        async {
            // Synchronise on the waiter's SUBSCRIBE, then keep it waiting.
            let subscribed = Instant::now();
            loop {
                let (_, subscribers): (String, u32) = redis::cmd("PUBSUB")
                    .arg("NUMSUB")
                    .arg(&channel)
                    .query_async(&mut admin)
                    .await
                    .unwrap();
                if subscribers == 1 {
                    break;
                }
                assert!(
                    subscribed.elapsed() < Duration::from_secs(10),
                    "client-B never subscribed"
                );
                sleep(Duration::from_millis(2)).await;
            }
            sleep(HOLD).await;
            let release_sent = Instant::now();
            assert_eq!(
                holder.release(&held).await.unwrap().unwrap(),
                Release::Deleted
            );
            (release_sent, Instant::now())
        },
    );
    let (waited, woke_at) = waited;
    let next_held = waited
        .unwrap()
        .expect("client-B must get the released lock");
    println!(
        "wake-up latency: client-B held the lock {:?} after client-A sent its release, \
         {:?} after client-A had its answer",
        woke_at.saturating_duration_since(release_sent),
        woke_at.saturating_duration_since(release_answered),
    );
    waiter.release(&next_held).await.unwrap().unwrap();

    let outcome = run.finish().await.unwrap();
    println!("{}", outcome.timeline.render());
    assert_eq!(outcome.verdict, Verdict::ok());
    // Each run of the acquire script starts with EXISTS. client-B runs it
    // once before subscribing, once right after (in case the release came in
    // between), and once when the message wakes it: three, never one per
    // retry interval.
    let attempts = outcome
        .timeline
        .events()
        .iter()
        .filter(|e| e.actor == "client-B" && e.text.trim_start().starts_with("lua> exists"))
        .count();
    assert!(
        (2..=3).contains(&attempts),
        "client-B ran the acquire script {attempts} times"
    );
}
