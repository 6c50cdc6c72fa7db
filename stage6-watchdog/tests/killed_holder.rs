//! A holder that dies stops renewing: its lock expires one watchdog timeout
//! later, and the next client gets it. No deadlock, no guessed TTL. The
//! lock node's `MONITOR` shows no renewal from the killed holder: its
//! watchdog died with its process.

use harness::Timing;
use harness::check::Verdict;
use harness::scenario::run_in_test;

#[tokio::test(flavor = "multi_thread")]
async fn a_holder_killed_with_kill_9_loses_its_lock_within_one_watchdog_timeout() {
    let outcome = run_in_test("killed-holder", stage6::STAGE).await;
    let pttl = outcome.fact("pttl_after_death");
    let timeout = i64::try_from(Timing::default().ttl.as_millis()).unwrap_or(i64::MAX);
    assert!(
        0 < pttl && pttl <= timeout,
        "PTTL after death {pttl}ms, watchdog timeout {timeout}ms"
    );
    assert_eq!(outcome.verdict, Verdict::ok());
    assert_eq!(
        outcome.fact("orders"),
        1,
        "the survivor must get the lock and sell"
    );
    let renewals_after_kill = outcome.timeline.count_after(
        |e| e.actor == "client-A" && e.text.starts_with("KILLED"),
        |e| e.actor == "client-A" && e.text.trim_start().starts_with("lua> pexpire"),
    );
    assert_eq!(
        renewals_after_kill, 0,
        "the killed holder's watchdog stopped"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_holder_that_crashes_right_after_acquiring_stops_its_watchdog() {
    let outcome = run_in_test("crash-before-expire", stage6::STAGE).await;
    assert!(
        outcome.fact("pttl_after_death") > 0,
        "the lock must still expire on its own"
    );
    assert_eq!(outcome.verdict, Verdict::ok());
    assert_eq!(outcome.fact("orders"), 1);
}
