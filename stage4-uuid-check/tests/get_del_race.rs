//! GET, compare and DEL are separate steps. client-A's release is stopped
//! right after its GET matched; its key expires, client-B takes the lock,
//! and client-A's DEL, which compares nothing, deletes client-B's lock.
//! The pause makes the rare race happen on every run. It sits on the last
//! moment before the release's final command, the `DEL`; stage 5's test
//! pauses at the same place of its own release, just before the script.

use harness::check::{Finding, Verdict};
use harness::scenario::run_in_test;

#[tokio::test(flavor = "multi_thread")]
async fn a_release_stopped_between_get_and_del_deletes_the_next_holders_lock() {
    let outcome = run_in_test("get-del-race", stage4::STAGE).await;
    assert_eq!(
        outcome.fact("b_acquired"),
        1,
        "the lock should expire while client-A's release waits"
    );
    assert_eq!(
        outcome.fact("a_release_deleted"),
        1,
        "client-A's DEL should delete a key"
    );
    assert_eq!(
        outcome.fact("b_lock_survived"),
        0,
        "the key client-A's DEL deleted was client-B's"
    );
    assert_eq!(outcome.verdict, Verdict::of(&[Finding::ForeignDelete]));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_race_shows_in_the_timeline_as_get_pause_del() {
    let outcome = run_in_test("get-del-race", stage4::STAGE).await;
    let rendered = outcome.timeline.render();
    let position = |needle: &str| {
        rendered
            .lines()
            .position(|line| line.contains("client-A") && line.contains(needle))
            .unwrap_or_else(|| panic!("no client-A line with `{needle}` in:\n{rendered}"))
    };
    let get = position("GET lock:stock");
    let paused = position("paused at between-get-and-del");
    let del = position("DEL lock:stock");
    let b_set = rendered
        .lines()
        .position(|line| line.contains("client-B") && line.contains("acquired the lock"))
        .unwrap_or_else(|| panic!("client-B never acquired in:\n{rendered}"));
    assert!(
        get < paused && paused < b_set && b_set < del,
        "expected GET, pause, client-B's acquisition, DEL in that order:\n{rendered}"
    );
}
