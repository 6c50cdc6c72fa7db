//! The book takes its code from the crates by anchor, and its timelines and
//! diagrams from real runs (`book/src/generated/`, written by
//! `lockstages book-assets`). mdBook silently includes nothing for an anchor
//! that does not exist, so this checks every `{{#include file:anchor}}` in
//! the book against the file it names; and it checks that every generated
//! file is what today's code makes of its recorded run and that no chapter
//! names a run it does not show.

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
