//! `lockstages book-assets`: every timeline and diagram the book shows,
//! from real runs, written into `book/src/generated/`.
//!
//! For each run in [`BOOK_RUNS`] three files are written:
//!
//! - `<stage>-<scenario>.events.tsv`: what the run recorded
//!   ([`Timeline::recorded`]);
//! - `<stage>-<scenario>.timeline.md`: the timeline, every line of it, as a
//!   block that wraps to the book's column;
//! - `<stage>-<scenario>.diagram.md`: its Mermaid sequence diagram.
//!
//! Chapters show them with `{{#include generated/…}}`; their sentences
//! quote these runs (a count of retries, a time), so adding a run to the
//! book is `book-assets --only <stage>-<scenario>`, which leaves the others
//! as they are, and a new format is `book-assets --render-only`, which
//! runs nothing. `--check` runs
//! nothing: it renders every recorded run again with today's code and fails
//! when a committed file differs (the format changed: run `book-assets`
//! again), when a listed run is missing, and when a chapter names a run it
//! does not show.

use std::fmt::Write as _;
use std::path::Path;

use harness::ScenarioEnv;
use harness::observe::{Timeline, sequence_diagram};

use super::run::launcher;
use super::{scenario_named, stage_named, write_file};
use crate::Failure;
use crate::matrix::{Expected, expected};
use crate::render::html;

/// A run the book shows, and the chapter that shows it.
#[derive(Debug, Clone, Copy)]
pub struct BookRun {
    /// `stage4`.
    pub stage: &'static str,
    /// `get-del-race`.
    pub scenario: &'static str,
    /// The chapter's file in `book/src`.
    pub chapter: &'static str,
}

/// Every run the book shows. To show another, add its line, run
/// `cargo run --release -- book-assets`, and include its files in the
/// chapter.
pub const BOOK_RUNS: &[BookRun] = &[
    run("stage1", "killed-holder", "stage1.md"),
    run("stage2", "killed-holder", "stage2.md"),
    run("stage2", "crash-before-expire", "stage2.md"),
    run("stage2", "slow-business", "stage2.md"),
    run("stage3", "crash-before-expire", "stage3.md"),
    run("stage3", "slow-business", "stage3.md"),
    run("stage4", "slow-business", "stage4.md"),
    run("stage4", "get-del-race", "stage4.md"),
    run("stage5", "get-del-race", "stage5.md"),
    run("stage5", "slow-business", "stage5.md"),
    run("stage5", "failover", "stage5.md"),
    run("stage6", "killed-holder", "stage6.md"),
    run("stage6", "gc-pause", "stage6.md"),
    run("stage6", "failover", "stage6.md"),
    run("stage7", "network-delay", "stage7.md"),
    run("stage7", "restart-without-persistence", "stage7.md"),
    run("stage7", "clock-jump", "stage7.md"),
    run("stage7", "gc-pause", "stage7.md"),
    run("stage8", "clock-jump", "stage8.md"),
    run("stage8", "gc-pause", "stage8.md"),
    run("stage8", "restart-without-persistence", "stage8.md"),
];

const fn run(stage: &'static str, scenario: &'static str, chapter: &'static str) -> BookRun {
    BookRun {
        stage,
        scenario,
        chapter,
    }
}

impl BookRun {
    /// `stage4-get-del-race`: the name of its files.
    pub fn base(&self) -> String {
        format!("{}-{}", self.stage, self.scenario)
    }

    /// How a reader runs it.
    pub fn command(&self) -> String {
        format!(
            "cargo run --release -- run {} {}",
            self.stage, self.scenario
        )
    }
}

/// The folder, inside the book's source, of the generated files.
const GENERATED: &str = "generated";

/// Runs the book's stories (those named in `only`, or all), then checks
/// the result; with `check`, only checks the committed files.
pub async fn run_all(book: &Path, check: bool, only: &[String]) -> Result<(), Failure> {
    if check {
        return check_all(book);
    }
    // Every name first, so a typo fails before any run.
    for r in BOOK_RUNS {
        stage_named(r.stage)?;
        scenario_named(r.scenario)?;
    }
    for name in only {
        if !BOOK_RUNS.iter().any(|r| r.base() == *name) {
            let names: Vec<String> = BOOK_RUNS.iter().map(BookRun::base).collect();
            return Err(Failure::bad_input(format!(
                "the book shows no run `{name}`; its runs are {}",
                names.join(", ")
            )));
        }
    }
    let chosen = BOOK_RUNS
        .iter()
        .filter(|r| only.is_empty() || only.contains(&r.base()));
    for r in chosen {
        let stage = stage_named(r.stage)?;
        let scenario = scenario_named(r.scenario)?;
        eprintln!("running {} x {}", r.stage, r.scenario);
        let env = ScenarioEnv::from_env(launcher(&stage)?)?;
        let outcome = (scenario.run)(stage, env).await?;
        // The book tells the story the matrix asserts; a run that came out
        // otherwise is not written.
        if let Some(Expected::Verdict(want)) = expected(r.stage, r.scenario)
            && want != outcome.verdict
        {
            return Err(Failure::failed(format!(
                "{} x {} gave {}, the expected matrix says {want}: nothing written for it",
                r.stage, r.scenario, outcome.verdict
            )));
        }
        let dir = book.join(GENERATED);
        let recorded = outcome.timeline.recorded();
        write_file(&dir.join(format!("{}.events.tsv", r.base())), &recorded)?;
        for (name, text) in rendered(r, &outcome.timeline) {
            write_file(&dir.join(name), &text)?;
        }
    }
    eprintln!("written to {}", book.join(GENERATED).display());
    check_all(book)
}

/// Writes every run's files again from what it recorded, in today's format.
pub fn render_again(book: &Path) -> Result<(), Failure> {
    let dir = book.join(GENERATED);
    for r in BOOK_RUNS {
        let recorded = dir.join(format!("{}.events.tsv", r.base()));
        let text = std::fs::read_to_string(&recorded).map_err(|e| {
            Failure::failed(format!(
                "cannot read {} ({e}): run `book-assets --only {}`",
                recorded.display(),
                r.base()
            ))
        })?;
        let timeline = Timeline::from_recorded(&text)
            .map_err(|e| Failure::failed(format!("{}: {e}", recorded.display())))?;
        for (name, text) in rendered(r, &timeline) {
            write_file(&dir.join(name), &text)?;
        }
    }
    check_all(book)
}

/// The files the book includes for a run: `(file name, text)`.
fn rendered(r: &BookRun, timeline: &Timeline) -> [(String, String); 2] {
    let header = format!(
        "<!-- Generated by `cargo run --release -- book-assets` from {}.events.tsv; do not edit. -->\n",
        r.base()
    );
    let lines = format!("$ {}\n{}", r.command(), timeline.render());
    let timeline_md = format!("{header}{}", html::timeline(&lines));
    let diagram_md = format!("{header}\n```mermaid\n{}```\n", sequence_diagram(timeline));
    [
        (format!("{}.timeline.md", r.base()), timeline_md),
        (format!("{}.diagram.md", r.base()), diagram_md),
    ]
}

/// Every committed file is what today's code makes of its recorded run,
/// and every chapter shows what it names.
fn check_all(book: &Path) -> Result<(), Failure> {
    let mut problems = Vec::new();
    let dir = book.join(GENERATED);
    for r in BOOK_RUNS {
        let recorded = dir.join(format!("{}.events.tsv", r.base()));
        let Ok(text) = std::fs::read_to_string(&recorded) else {
            problems.push(format!("{} is missing", recorded.display()));
            continue;
        };
        let timeline = match Timeline::from_recorded(&text) {
            Ok(timeline) => timeline,
            Err(e) => {
                problems.push(format!("{}: {e}", recorded.display()));
                continue;
            }
        };
        for (name, want) in rendered(r, &timeline) {
            let path = dir.join(&name);
            match std::fs::read_to_string(&path) {
                Ok(got) if got == want => {}
                Ok(_) => problems.push(format!(
                    "{} is not in the current format (or was edited by hand)",
                    path.display()
                )),
                Err(_) => problems.push(format!("{} is missing", path.display())),
            }
        }
    }
    problems.extend(chapter_problems(book));
    if problems.is_empty() {
        println!(
            "book assets: {} runs, every file current, every named run shown",
            BOOK_RUNS.len()
        );
        return Ok(());
    }
    let mut message = String::from("the book's generated files are out of date:\n");
    for p in &problems {
        let _ = writeln!(message, "  {p}");
    }
    message.push_str("run `cargo run --release -- book-assets` and include what a chapter names");
    Err(Failure::failed(message))
}

/// A chapter shows (by its timeline or its diagram) each run the list
/// gives it; it includes only listed runs; and a run it names in its prose
/// (`run stage4 get-del-race`) is one it shows.
fn chapter_problems(book: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let Ok(entries) = std::fs::read_dir(book) else {
        return vec![format!("{} cannot be read", book.display())];
    };
    let mut chapters: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    chapters.sort();
    for path in chapters {
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        // Its timeline or its diagram shows a run.
        let shows = |r: &BookRun| {
            ["timeline", "diagram"].iter().any(|kind| {
                text.contains(&format!(
                    "{{{{#include {GENERATED}/{}.{kind}.md}}}}",
                    r.base()
                ))
            })
        };
        for r in BOOK_RUNS.iter().filter(|r| r.chapter == name) {
            if !shows(r) {
                problems.push(format!(
                    "{name} shows neither {GENERATED}/{0}.timeline.md nor {0}.diagram.md",
                    r.base()
                ));
            }
        }
        for include in text.split(&format!("{{{{#include {GENERATED}/")).skip(1) {
            let file = include.split("}}").next().unwrap_or_default();
            let listed = BOOK_RUNS.iter().any(|r| {
                r.chapter == name
                    && [".timeline.md", ".diagram.md"]
                        .iter()
                        .any(|ext| file == format!("{}{ext}", r.base()))
            });
            if file.ends_with(".md") && file != "matrix.md" && !listed {
                problems.push(format!(
                    "{name} includes {GENERATED}/{file}, which no line of BOOK_RUNS gives it"
                ));
            }
        }
        for (stage, scenario) in named_runs(&text) {
            let shown = BOOK_RUNS
                .iter()
                .any(|r| r.stage == stage && r.scenario == scenario && shows(r));
            if !shown {
                problems.push(format!(
                    "{name} names `run {stage} {scenario}` but shows neither its timeline nor its diagram"
                ));
            }
        }
    }
    problems
}

/// The runs a chapter's prose names: `-- run <stage> <scenario>`, and in a
/// paragraph that says "real run", `cargo test -p <stage> --test <file>`
/// whose file is a scenario's (`get_del_race`: `get-del-race`). Code
/// blocks, which tell readers what to type, are left out.
fn named_runs(text: &str) -> Vec<(String, String)> {
    let mut runs = Vec::new();
    let mut in_code = false;
    let mut prose = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if !in_code {
            prose.push_str(line);
            prose.push('\n');
        }
    }
    // The first words of `text`, without the Markdown around them.
    let words = |text: &str, n: usize| -> Vec<String> {
        text.split(|c: char| c.is_whitespace() || c == '`' || c == ')' || c == ':')
            .filter(|w| !w.is_empty())
            .take(n)
            .map(str::to_owned)
            .collect()
    };
    for paragraph in prose.split("\n\n") {
        let paragraph = paragraph.replace('\n', " ");
        for named in paragraph.split("-- run ").skip(1) {
            if let [stage, scenario] = &words(named, 2)[..] {
                runs.push((stage.clone(), scenario.clone()));
            }
        }
        if !paragraph.contains("real run") {
            continue;
        }
        for test in paragraph.split("cargo test -p ").skip(1) {
            if let [stage, flag, file] = &words(test, 3)[..]
                && flag == "--test"
                && scenario_named(&file.replace('_', "-")).is_ok()
            {
                runs.push((stage.clone(), file.replace('_', "-")));
            }
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_run_names_a_real_stage_and_scenario() {
        for r in BOOK_RUNS {
            assert!(stage_named(r.stage).is_ok(), "{}", r.stage);
            assert!(scenario_named(r.scenario).is_ok(), "{}", r.scenario);
        }
    }

    #[test]
    fn a_real_run_of_a_scenarios_test_names_that_run() {
        let text = "A real run of\n`cargo test -p stage4 --test get_del_race -- --nocapture`:\n\n\
                    See `cargo test -p stage4 --test slow_business`.\n\n\
                    A real run of `cargo test -p stage6 --test pubsub_wait`:\n";
        assert_eq!(
            named_runs(text),
            vec![("stage4".to_owned(), "get-del-race".to_owned())],
            "only a real run, and only of a scenario"
        );
    }

    #[test]
    fn prose_names_runs_and_code_blocks_do_not() {
        let text = "A real run (`cargo run --release -- run stage1 killed-holder`):\n\
                    ```sh\ncargo run --release -- run stage4 get-del-race\n```\n";
        assert_eq!(
            named_runs(text),
            vec![("stage1".to_owned(), "killed-holder".to_owned())]
        );
    }
}
