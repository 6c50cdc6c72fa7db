//! The race stage 4 lost every time: client-A's release is held up until
//! its key has expired and client-B holds the lock. The script compares and
//! deletes in one step, sees client-B's value, and deletes nothing.
//!
//! The pause is as late as stage 5's release allows, as for stage 4: the
//! last moment before the release's final command. For stage 4 that is
//! between its `GET` and its `DEL`; stage 5's release is one script, so it
//! is just before the script is sent. No later point exists: once the
//! script runs, nothing can come between its compare and its delete.

use harness::check::Verdict;
use harness::scenario::run_in_test;

#[tokio::test(flavor = "multi_thread")]
async fn a_late_release_leaves_the_next_holders_lock_alone() {
    let outcome = run_in_test("get-del-race", stage5::STAGE).await;
    assert_eq!(
        outcome.fact("b_acquired"),
        1,
        "the lock should expire while client-A's release waits"
    );
    assert_eq!(
        outcome.fact("a_release_deleted"),
        0,
        "the script should see client-B's value and delete nothing"
    );
    assert_eq!(
        outcome.fact("b_lock_survived"),
        1,
        "client-B's lock should survive client-A's release"
    );
    assert_eq!(outcome.verdict, Verdict::ok());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_first_release_on_a_fresh_server_falls_back_from_evalsha_to_eval() {
    let outcome = run_in_test("get-del-race", stage5::STAGE).await;
    let rendered = outcome.timeline.render();
    let a_lines: Vec<&str> = rendered
        .lines()
        .filter(|line| line.contains("client-A") && line.contains("[lock]"))
        .collect();
    let evalsha = a_lines.iter().position(|line| line.contains("EVALSHA"));
    let eval = a_lines.iter().position(|line| line.contains(" EVAL "));
    assert!(
        matches!((evalsha, eval), (Some(first), Some(then)) if first < then),
        "expected client-A's EVALSHA, then its EVAL, in:\n{rendered}"
    );
}
