//! The book's stories that are no scenario: they use a stage's own API (a
//! lease on stage 6's `RLock`) or a topology the matrix does not build
//! (Redlock with masters killed before anyone asks). Each is told once, in
//! a file beside its stage's tests (`stage6-watchdog/tests/stories/`), and
//! both the test and this recorder run that file: the test asserts on what
//! the story returns, and the book shows the run recorded here. The files
//! are included by `#[path]` because they drive the lock with the harness,
//! and a stage's own crate depends on nothing of the harness.
//!
//! A reader reruns a story with its test
//! (`cargo test -p stage6 lease:: -- --nocapture`), so that is the
//! command its timeline starts with, and the command a chapter names it by.

use std::future::Future;
use std::pin::Pin;

use harness::check::{Finding, Verdict};
use harness::observe::Timeline;
use harness::workload::Sale;
use harness::{Outcome, ScenarioEnv};
use lockcore::LockError;

use crate::Failure;

#[path = "../../../stage6-watchdog/tests/stories/lease.rs"]
mod stage6_lease;
#[path = "../../../stage6-watchdog/tests/stories/pubsub_wait.rs"]
mod stage6_pubsub_wait;
#[path = "../../../stage7-redlock/tests/stories/node_loss.rs"]
mod stage7_node_loss;

/// What a story's recording gives: its timeline, or why the run is not
/// the one the chapter tells.
pub type StoryFuture = Pin<Box<dyn Future<Output = Result<Timeline, Failure>>>>;

/// A story the book shows, and the chapter that shows it.
#[derive(Clone, Copy)]
pub struct BookStory {
    /// `stage6-lease`: the name of its files.
    pub name: &'static str,
    /// `stage6`: the package whose test tells it.
    pub stage: &'static str,
    /// `lease`: the test file (`tests/lease.rs`) that tells it.
    pub test: &'static str,
    /// The chapter's file in `book/src`.
    pub chapter: &'static str,
    /// Runs it, and checks it came out as the chapter tells it.
    pub run: fn(ScenarioEnv) -> StoryFuture,
}

impl BookStory {
    /// How a reader runs it.
    pub fn command(&self) -> String {
        format!(
            "cargo test -p {} {}:: -- --nocapture",
            self.stage, self.test
        )
    }
}

/// Every story the book shows besides the scenarios.
pub const BOOK_STORIES: &[BookStory] = &[
    BookStory {
        name: "stage6-pubsub-wait",
        stage: "stage6",
        test: "pubsub_wait",
        chapter: "stage6.md",
        run: |env| Box::pin(pubsub_wait(env)),
    },
    BookStory {
        name: "stage6-lease",
        stage: "stage6",
        test: "lease",
        chapter: "stage6.md",
        run: |env| Box::pin(lease(env)),
    },
    BookStory {
        name: "stage7-node-loss-minority",
        stage: "stage7",
        test: "node_loss",
        chapter: "stage7.md",
        run: |env| Box::pin(node_loss_minority(env)),
    },
    BookStory {
        name: "stage7-node-loss-majority",
        stage: "stage7",
        test: "node_loss",
        chapter: "stage7.md",
        run: |env| Box::pin(node_loss_majority(env)),
    },
];

/// The timeline, when the run came out as `told` says; the chapter's
/// sentences depend on it, so otherwise nothing is written.
fn as_told(told: bool, name: &str, story: &str, outcome: Outcome) -> Result<Timeline, Failure> {
    if told {
        Ok(outcome.timeline)
    } else {
        Err(Failure::failed(format!(
            "{name} gave {}, not the story the chapter tells ({story}): nothing written for it",
            outcome.verdict
        )))
    }
}

async fn pubsub_wait(env: ScenarioEnv) -> Result<Timeline, Failure> {
    let run = stage6_pubsub_wait::pubsub_wait(env).await?;
    // The chapter quotes the hand-over time: measured, never asserted.
    eprintln!(
        "wake-up latency: client-B held the lock {:?} after client-A sent its release, \
         {:?} after client-A had its answer (hold {:?}, watchdog {:?})",
        run.woke_after_sent,
        run.woke_after_answered,
        stage6_pubsub_wait::HOLD,
        stage6_pubsub_wait::WATCHDOG,
    );
    let told = run.release == lockcore::Release::Deleted && run.outcome.verdict == Verdict::ok();
    as_told(
        told,
        "stage6-pubsub-wait",
        "client-A's release deletes the lock, client-B takes it: ok",
        run.outcome,
    )
}

async fn lease(env: ScenarioEnv) -> Result<Timeline, Failure> {
    let run = stage6_lease::lease(env).await?;
    let v = &run.outcome.verdict;
    let told = v.has(Finding::Overlap)
        && v.has(Finding::Oversold)
        && !run.watched
        && run.late_sale == Sale::Sold(1)
        && matches!(run.unlock, Err(LockError::NotOwner));
    as_told(
        told,
        "stage6-lease",
        "no watchdog, a stale sale, NotOwner: OVERLAP OVERSOLD",
        run.outcome,
    )
}

async fn node_loss_minority(env: ScenarioEnv) -> Result<Timeline, Failure> {
    let run = stage7_node_loss::minority_lost(env).await?;
    let o = &run.outcome;
    let told = o.verdict == Verdict::ok()
        && (run.sold, o.fact("orders"), o.fact("stock_left")) == (5, 5, 0);
    as_told(
        told,
        "stage7-node-loss-minority",
        "five items sold, five orders: ok",
        run.outcome,
    )
}

async fn node_loss_majority(env: ScenarioEnv) -> Result<Timeline, Failure> {
    let run = stage7_node_loss::majority_lost(env).await?;
    let o = &run.outcome;
    let told =
        !run.granted && run.keys_left == 0 && !run.granted_after_waiting && o.fact("orders") == 0;
    as_told(
        told,
        "stage7-node-loss-majority",
        "refused, no key left, no order",
        run.outcome,
    )
}
