//! The book takes its code from the crates by anchor, and its timelines and
//! diagrams from real runs (`book/src/generated/`, written by
//! `lockstages book-assets`). mdBook silently includes nothing for an anchor
//! that does not exist, so this checks every `{{#include file:anchor}}` in
//! the book against the file it names; and it checks that every generated
//! file is what today's code makes of its recorded run and that no chapter
//! names a run it does not show.
//!
//! # Sentences about the matrix carry claims
//!
//! Everything that names stages and stories in bulk is generated from
//! `book/src/generated/matrix.json` (`book-assets`). A sentence that must
//! stay prose and says what the matrix shows carries a machine-readable
//! claim, an HTML comment inside it or right after its end (before the next
//! sentence starts), which mdBook does not show:
//!
//! ```text
//! … a paused holder still overlaps there. <!-- claim: stage9,stage10 gc-pause OVERLAP -->
//! ```
//!
//! One comment may hold several claims, separated by `;`. A claim is one of:
//!
//! - `STAGES STORIES VERDICT`: every named cell is VERDICT. STAGES is a
//!   comma list of columns, or a range in column order (`stage2..stage7`,
//!   stage6-fair included); STORIES a comma list of rows. VERDICT is `ok`,
//!   `n/a`, `broken` (a finding other than REFUSED), `+LABEL` (has that
//!   label among others) or the exact labels (`OVERSOLD OVERLAP`).
//! - `STAGE = STAGE`: the two columns are equal in every row.
//! - `rows STORY = STORY`: the two rows are equal in every column.
//! - `last STAGE`: the matrix's last column is STAGE ("the last stage").
//! - `run STAGE STORY [--fencing F] [--request-ids] [--release-after-commit] VERDICT`: the run the
//!   book shows (`generated/<run>.timeline.md`) ended with that verdict (for
//!   the runs the matrix does not make, like `--fencing none`).
//! - `test STAGE FILE`: the sentence rests on a test, not a cell: the stage's
//!   crate has `tests/FILE.rs` (`cargo test -p STAGE FILE::`).
//!
//! Every claim on every page is checked. And a sentence that needs a claim
//! and has none fails the test, so a new sentence cannot slip past by
//! carrying none. A sentence (a table row counts as one) needs a claim when
//! it names a story or a verdict (a scenario's name, a legend label, `ok`,
//! `n/a`, or the words for them: oversells, overlap, deadlock, fixes,
//! survives, reenters, paused, frozen, failover, restart, a second holder,
//! does not apply; 超卖、重入、暂停、主从切换、死锁、不适用… in Chinese) and:
//!
//! - on the pages that read across the matrix without showing its cells
//!   (introduction, choosing, matrix, beyond-redis): names any stage (`stage
//!   6`, `stages 2 to 5`, `stage6-fair`, the fair variant, ZooKeeper, etcd, a
//!   table row whose first cell is a stage) or speaks of stages in bulk
//!   ("every Redis stage", "the TTL stages", "both");
//! - on any other page: names two stages or more, or one stage and a word for
//!   many ("every lock before this one", "the first stage where", "only
//!   stage"), or is a table row whose first cell is a stage. A stage
//!   chapter's sentences about its own stage alone need none: the chapter
//!   shows that stage's runs and includes its generated column beside them.
//!
//! "The last stage" always needs one (`last STAGE`). The interview page is
//! left out: its answers are its runs (`interview N --no-input` runs each
//! question's cells against the expected matrix). The rule reads words, so
//! it can be fooled by a sentence that avoids them; it is meant to catch the
//! drift that happened (issue 43), each sentence of which it flags, as
//! `the_claim_check_catches_the_sentences_the_matrix_contradicted` shows.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common;

#[test]
fn every_include_in_the_book_names_an_existing_file_and_anchor() {
    let (checked, broken) = common::broken_includes(&common::book_src("book/src"));
    assert!(
        checked > 20,
        "only {checked} includes found: is the book there?"
    );
    assert!(broken.is_empty(), "broken includes:\n{}", broken.join("\n"));
}

fn book_assets_check(book: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lockstages"))
        .args(["book-assets", "--check", "--book"])
        .arg(book)
        .output()
        .expect("the CLI runs")
}

#[test]
fn every_generated_timeline_and_diagram_is_current_and_every_named_run_is_shown() {
    let book = Path::new(env!("CARGO_MANIFEST_DIR")).join("book/src");
    let output = book_assets_check(&book);
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A copy of the book's source to spoil.
fn book_copy(name: &str) -> PathBuf {
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("book/src");
    let to = std::env::temp_dir().join(format!("lockstages-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&to);
    for dir in ["", "generated"] {
        std::fs::create_dir_all(to.join(dir)).expect("a temporary folder");
        for entry in std::fs::read_dir(from.join(dir)).expect("book/src exists") {
            let path = entry.expect("readable").path();
            if path.is_file() {
                std::fs::copy(&path, to.join(dir).join(path.file_name().expect("a name")))
                    .expect("copied");
            }
        }
    }
    to
}

#[test]
fn a_timeline_trimmed_by_hand_is_caught() {
    let book = book_copy("trimmed");
    let file = book.join("generated/stage4-get-del-race.timeline.md");
    let text = std::fs::read_to_string(&file).expect("the stage 4 timeline");
    let trimmed: Vec<&str> = text.lines().filter(|l| !l.contains("[db]")).collect();
    std::fs::write(&file, trimmed.join("\n")).expect("written");
    let output = book_assets_check(&book);
    let _ = std::fs::remove_dir_all(&book);
    let error = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{error}");
    assert!(
        error.contains("stage4-get-del-race.timeline.md is not in the current format"),
        "{error}"
    );
}

#[test]
fn a_chapter_that_names_a_run_it_does_not_show_is_caught() {
    let book = book_copy("unshown");
    let chapter = book.join("stage4.md");
    let text = std::fs::read_to_string(&chapter).expect("stage 4's chapter");
    let text = text.replace(
        "{{#include generated/stage4-get-del-race.timeline.md}}",
        "(see `cargo run --release -- run stage4 get-del-race`)",
    );
    let text = text.replace("{{#include generated/stage4-get-del-race.diagram.md}}", "");
    std::fs::write(&chapter, text).expect("written");
    let output = book_assets_check(&book);
    let _ = std::fs::remove_dir_all(&book);
    let error = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{error}");
    assert!(
        error.contains("stage4.md names `run stage4 get-del-race` but shows neither its timeline nor its diagram"),
        "{error}"
    );
}

#[test]
fn a_chapter_that_names_a_story_it_does_not_show_is_caught() {
    // Stories a stage's test tells (BOOK_STORIES) are named by that test's
    // command, as a reader reruns them.
    let book = book_copy("unshown-story");
    let chapter = book.join("stage6.md");
    let text = std::fs::read_to_string(&chapter).expect("stage 6's chapter");
    let text = text.replace("{{#include generated/stage6-pubsub-wait.timeline.md}}", "");
    std::fs::write(&chapter, text).expect("written");
    let output = book_assets_check(&book);
    let _ = std::fs::remove_dir_all(&book);
    let error = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{error}");
    for problem in [
        "stage6.md shows neither generated/stage6-pubsub-wait.timeline.md nor stage6-pubsub-wait.diagram.md",
        "stage6.md names `cargo test -p stage6 pubsub_wait::` but shows neither its timeline nor its diagram",
    ] {
        assert!(error.contains(problem), "{error}");
    }
}

/// The matrix has a row per scenario and a column per stage. Prose written
/// when it was the other way round ("the contention column", "row by row"
/// for stages) would send a reader to the wrong axis.
#[test]
fn no_sentence_calls_a_scenario_a_column_in_either_edition() {
    let scenarios: Vec<&str> = harness::SCENARIOS.iter().map(|s| s.name).collect();
    let mut wrong = Vec::new();
    for edition in ["book/src", "book/zh/src"] {
        for page in common::pages(&common::book_src(edition)) {
            let text = std::fs::read_to_string(&page).unwrap_or_default();
            for (number, line) in text.lines().enumerate() {
                let lower = line.to_lowercase();
                let scenario_column = scenarios.iter().any(|s| {
                    [
                        format!("`{s}` column"),
                        format!("{s} column"),
                        format!("`{s}` 列"),
                        format!("{s} 列"),
                    ]
                    .iter()
                    .any(|phrase| lower.contains(phrase))
                });
                let stale = [
                    "last five columns",
                    "row by row",
                    "the only row",
                    "最后五列",
                    "按行来读",
                ]
                .iter()
                .any(|phrase| lower.contains(phrase));
                if scenario_column || stale {
                    wrong.push(format!("{}:{}: {line}", page.display(), number + 1));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "scenarios are rows, stages columns:\n{}",
        wrong.join("\n")
    );
}

/// Every claim in the English edition is true, and every sentence that
/// needs one has one (the rule is at the top of this file).
#[test]
fn every_sentence_about_the_matrix_carries_a_true_claim() {
    common::claims::assert_every_claim_true(
        &common::book_src("book/src"),
        common::claims::Lang::English,
    );
}

/// The sentences issue 43 found contradicted by the matrix, as they read
/// on 5e8312c: each one needs a claim, and where it carries the claim it
/// made, the claim is false.
#[test]
fn the_claim_check_catches_the_sentences_the_matrix_contradicted() {
    use common::claims::{Lang, Matrix, check_claim, needs_a_claim, sentences};
    let matrix = Matrix::of_the_book();
    let old: [(&str, &str, &str); 9] = [
        (
            "matrix.md",
            "Only stage 6 (and its fair variant, which shares its hash) and stage 9 (which counts holds in the client, as Curator does) reenter.",
            "stage6,stage6-fair,stage9 reentrant ok; stage1..stage5,stage7,stage8,stage10 reentrant broken",
        ),
        (
            "introduction.md",
            "against real `redis-server` processes (and, for the last stage, a real ZooKeeper ensemble):",
            "last stage9",
        ),
        (
            "choosing.md",
            "For a lock that protects correctness it is not enough: add fencing tokens with the counter where a failover cannot set it back (stage 8's counter on the same master oversells in `failover`, `sentinel-failover` and `cluster-failover`), or keep the lock in a consensus store (stage 9 on ZooKeeper, stage 10 on etcd), where these rows do not apply.",
            "stage9,stage10 gc-pause ok",
        ),
        (
            "beyond-redis.md",
            "So: a Redis lock (stage 5 or 6) where a rare second holder after a failover is survivable because the data catches it (a fencing token, a unique request id, a conditional write); a ZooKeeper or etcd lock, with its token checked, where a second holder must not happen even when the store's own machines fail, and especially where the team already runs one (Kafka's and Hadoop's ZooKeeper, Kubernetes's etcd).",
            "stage9,stage10 gc-pause ok",
        ),
        (
            "choosing.md",
            "- **Stage 8** (fencing) is the first stage where a paused or slow holder cannot corrupt the data — *because the resource checks*, not because the lock holds, and only if it checks every access the decision rests on: a resource that checks the token on writes alone still oversells when the stale holder writes first (`stale-write-first`).",
            "stage1..stage7 slow-business broken",
        ),
        (
            "stage8.md",
            "Every lock before this one can be outlived by its holder.",
            "stage1..stage7 slow-business broken",
        ),
        (
            "introduction.md",
            "| 6-fair | stage 6's hash, plus Redisson's queue of waiters | hands the lock to the queue's head | waiters served in arrival order (a dead waiter costs its place's timeout) |",
            "stage6-fair dead-waiter broken",
        ),
        (
            "choosing.md",
            "- **Stage 7** (Redlock) survives the loss of a minority of masters.",
            "stage7 failover ok",
        ),
        (
            "choosing.md",
            "- **Stage 9** (ZooKeeper, Curator's recipe) keeps the lock on an ensemble that agrees by majority, and takes the token from it (the lock node's `czxid`), so no failover or restart of a single server can forget either: the Redis topologies' scenarios do not apply to it.",
            "stage9 failover,restart-without-persistence ok",
        ),
    ];
    for (page, text, what_it_said) in old {
        let sentence = sentences(text, Lang::English)
            .into_iter()
            .next()
            .expect("a sentence");
        assert!(
            needs_a_claim(page, &sentence, Lang::English, &matrix),
            "{page}: not flagged: {text}"
        );
        // What the sentence said, as claims: the matrix denies one of them
        // at least (an n/a cell included: a cell no run fills shows nothing).
        assert!(
            what_it_said
                .split(';')
                .any(|claim| check_claim(claim.trim(), &matrix).is_err()),
            "{page}: the matrix does not deny `{what_it_said}`"
        );
    }
}

#[test]
fn a_claim_is_read_and_checked() {
    use common::claims::{Lang, Matrix, check_claim, sentences};
    let matrix = Matrix::of_the_book();
    for claim in [
        "stage9,stage10 gc-pause OVERLAP",
        "stage2..stage7 gc-pause OVERSOLD OVERLAP",
        "stage6 slow-business,stale-write-first ok",
        "stage6-fair arrival-order ok",
        "last stage10",
        "stage7 failover n/a",
        "stage5 gc-pause +OVERSOLD",
        "stage6 business-error broken",
        "run stage9 gc-pause --fencing none OVERSOLD OVERLAP",
        "test stage6 fair",
    ] {
        assert_eq!(check_claim(claim, &matrix), Ok(()), "{claim}");
    }
    for claim in [
        "stage9 gc-pause ok",
        "stage6 = stage5",
        "stage6-fair = stage6",
        "last stage9",
        "stage6 gc-pause +DEADLOCK",
        "stage11 gc-pause ok",
        "stage6 no-such-story ok",
        "run stage9 gc-pause OVERSOLD",
        "test stage6 no_such_file",
    ] {
        assert!(check_claim(claim, &matrix).is_err(), "{claim}");
    }
    // A claim right after a sentence's end is that sentence's.
    let text = "Stage 9 overlaps. <!-- claim: stage9 gc-pause OVERLAP --> Stage 10 too.";
    let found = sentences(text, Lang::English);
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(found[0].claims, ["stage9 gc-pause OVERLAP"]);
    assert!(found[1].claims.is_empty());
    let zh =
        "阶段 9 和 10 都是 OVERLAP。<!-- claim: stage9,stage10 gc-pause OVERLAP -->阶段 8 也是。";
    let found = sentences(zh, Lang::Chinese);
    assert_eq!(
        found[0].claims,
        ["stage9,stage10 gc-pause OVERLAP"],
        "{found:?}"
    );
    assert!(found[1].claims.is_empty());
}
