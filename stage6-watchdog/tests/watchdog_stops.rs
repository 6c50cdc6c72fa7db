//! The watchdog renews only while its lock is held: the lock node's
//! `MONITOR` shows renewals while client-A works, and none once it has
//! unlocked. (A holder killed with `kill -9` takes its watchdog with it:
//! `tests/killed_holder.rs`.)

use harness::holder::Launcher;
use harness::observe::Event;
use harness::scenario::{Run, ScenarioEnv};

/// A renewal by client-A, as the lock node saw it: the watchdog script's
/// `PEXPIRE` (the acquire script's own `PEXPIRE` comes before the
/// "acquired" line, so it is never counted after it).
fn renewal(e: &Event) -> bool {
    e.actor == "client-A" && e.text.trim_start().starts_with("lua> pexpire")
}

#[tokio::test(flavor = "multi_thread")]
async fn the_lock_node_sees_renewals_while_held_and_none_after_unlock() {
    let env = ScenarioEnv::from_env(Launcher::this_test_binary()).unwrap_or_else(|e| panic!("{e}"));
    let ttl = env.timing.ttl;
    let run = Run::start(stage6::STAGE, env, 1).await.unwrap();
    let a = run.client("client-A").await.unwrap();
    let held = a.acquire(ttl).await.unwrap().expect("the lock is free");
    // Business of one watchdog timeout: three renewal periods.
    a.buy_one(&held, ttl).await.unwrap();
    a.release(&held).await.unwrap().unwrap();
    // As long again after the unlock, for a renewal that must not come.
    tokio::time::sleep(ttl).await;
    let outcome = run.finish().await.unwrap();
    println!("{}", outcome.timeline.render());

    let timeline = &outcome.timeline;
    let after_acquire = timeline.count_after(
        |e| e.actor == "client-A" && e.text.starts_with("acquired the lock"),
        renewal,
    );
    let after_unlock = timeline.count_after(
        |e| e.actor == "client-A" && e.text.starts_with("leaves the critical section"),
        renewal,
    );
    assert!(after_acquire >= 1, "the watchdog renewed while held");
    assert_eq!(after_unlock, 0, "no renewal after the unlock");
}
