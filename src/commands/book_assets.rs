//! `lockstages book-assets`: every timeline and diagram the book shows,
//! from real runs, written into `book/src/generated/`.
//!
//! Two lists give the runs: [`BOOK_RUNS`], scenarios of the matrix against
//! a stage (`run stage4 get-del-race`), and [`BOOK_STORIES`], stories a
//! stage's test tells that no scenario can (a lease on stage 6's own API,
//! Redlock with masters killed; see [`stories`]). For each run three files
//! are written:
//!
//! - `<name>.events.tsv`: what the run recorded ([`Timeline::recorded`]);
//! - `<name>.timeline.md`: the timeline, folded as `run` prints it, under
//!   the command that reruns it and the one that shows every line, as a
//!   block that wraps to the book's column;
//! - `<name>.diagram.md`: its Mermaid sequence diagram.
//!
//! Chapters show them with `{{#include generated/…}}`; their sentences
//! quote these runs (a count of retries, a time), so adding a run to the
//! book is `book-assets --only <name>`, which leaves the others
//! as they are, and a new format is `book-assets --render-only`, which
//! runs nothing. `--check` runs
//! nothing: it renders every recorded run again with today's code and fails
//! when a committed file differs (the format changed: run `book-assets`
//! again), when a listed run is missing, and when a chapter names a run it
//! does not show ([`chapters`]).

use std::fmt::Write as _;
use std::path::Path;

use harness::ScenarioEnv;
use harness::check::{Finding, verdict_words};
use harness::observe::{Timeline, sequence_diagram};
use harness::server::Backend;
use harness::workload::{Fencing, ReleaseOrder, RequestIds};

use super::run::launcher;
use super::{row_named, scenario_named, stage_named, write_file};
use crate::Failure;
use crate::matrix::{Expected, expected};
use crate::render::html;
use chapters::{Named, chapter_problems};
use stories::BOOK_STORIES;

mod across;
mod chapters;
mod matrix_json;
mod matrix_zh;
mod stage_words;
mod stories;
mod verdicts;

/// A run the book shows, and the chapter that shows it.
#[derive(Debug, Clone, Copy)]
pub struct BookRun {
    /// `stage4`.
    pub stage: &'static str,
    /// `get-del-race`.
    pub scenario: &'static str,
    /// The chapter's file in `book/src`.
    pub chapter: &'static str,
    /// Stage 8's resource: the fix, or the write-only lesson.
    pub fencing: Fencing,
    /// Whether the resource charges a request id once (`--request-ids`).
    pub request_ids: RequestIds,
    /// When `release-before-commit`'s purchase releases the lock.
    pub release_order: ReleaseOrder,
}

/// Every run the book shows. To show another, add its line, run
/// `cargo run --release -- book-assets`, and include its files in the
/// chapter.
pub const BOOK_RUNS: &[BookRun] = &[
    run("stage1", "contention", "stage1.md"),
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
    run("stage6", "dead-waiter", "stage6.md"),
    run("stage6-fair", "dead-waiter", "stage6.md"),
    run("stage7", "network-delay", "stage7.md"),
    run("stage7", "restart-without-persistence", "stage7.md"),
    run("stage7", "clock-jump", "stage7.md"),
    run("stage7", "gc-pause", "stage7.md"),
    run("stage8", "clock-jump", "stage8.md"),
    run("stage8", "gc-pause", "stage8.md"),
    run("stage8", "restart-without-persistence", "stage8.md"),
    run("stage8", "stale-write-first", "stage8.md"),
    run("stage5", "sentinel-failover", "sentinel.md"),
    run("stage5", "split-brain", "sentinel.md"),
    run("stage5", "split-brain-min-replicas", "sentinel.md"),
    run("stage5", "sentinel-failover-wait", "sentinel.md"),
    run(
        "stage5",
        "sentinel-failover-wait-other-replica",
        "sentinel.md",
    ),
    run("stage5", "cluster-failover", "sentinel.md"),
    run("stage3", "cluster-failover", "sentinel.md"),
    run("stage5", "cluster-failover-wait", "sentinel.md"),
    run("stage5", "cluster-partition", "sentinel.md"),
    BookRun {
        fencing: Fencing::WriteOnly,
        ..run("stage8", "stale-write-first", "stage8.md")
    },
    run("stage5", "duplicate-request", "idempotency.md"),
    run("stage6", "duplicate-request", "idempotency.md"),
    BookRun {
        request_ids: RequestIds::Checked,
        ..run("stage5", "duplicate-request", "idempotency.md")
    },
    BookRun {
        request_ids: RequestIds::Checked,
        ..run("stage5", "gc-pause", "idempotency.md")
    },
    run("stage9", "killed-holder", "beyond-redis.md"),
    run("stage10", "killed-holder", "beyond-redis.md"),
    unchecked("stage9", "gc-pause", "beyond-redis.md"),
    run("stage9", "gc-pause", "beyond-redis.md"),
    unchecked("stage10", "gc-pause", "beyond-redis.md"),
    run("stage10", "gc-pause", "beyond-redis.md"),
    run("stage9", "leader-killed", "beyond-redis.md"),
    run("stage10", "leader-killed", "beyond-redis.md"),
    run("stage9", "minority-partition", "beyond-redis.md"),
    run("stage10", "minority-partition", "beyond-redis.md"),
    run("stage5", "release-before-commit", "choosing.md"),
    BookRun {
        release_order: ReleaseOrder::AfterCommit,
        ..run("stage5", "release-before-commit", "choosing.md")
    },
    run("stage8", "release-before-commit", "choosing.md"),
    run("stage5", "eviction", "choosing.md"),
    run("redis-py", "gc-pause", "libraries.md"),
    run("redis-py-no-ttl", "killed-holder", "libraries.md"),
    run("python-redis-lock-renewal", "gc-pause", "libraries.md"),
    run("pottery", "network-delay", "libraries.md"),
    run("kazoo", "minority-partition", "libraries.md"),
];

/// A run against a resource that checks no token (`--fencing none`).
const fn unchecked(stage: &'static str, scenario: &'static str, chapter: &'static str) -> BookRun {
    BookRun {
        fencing: Fencing::Unchecked,
        ..run(stage, scenario, chapter)
    }
}

const fn run(stage: &'static str, scenario: &'static str, chapter: &'static str) -> BookRun {
    BookRun {
        stage,
        scenario,
        chapter,
        fencing: Fencing::ReadsAndWrites,
        request_ids: RequestIds::Ignored,
        release_order: ReleaseOrder::BeforeCommit,
    }
}

impl BookRun {
    /// `stage4-get-del-race`: the name of its files.
    pub fn base(&self) -> String {
        let base = match self.fencing {
            Fencing::ReadsAndWrites => format!("{}-{}", self.stage, self.scenario),
            other => format!("{}-{}-{}", self.stage, self.scenario, other.label()),
        };
        let base = match self.request_ids {
            RequestIds::Ignored => base,
            RequestIds::Checked => format!("{base}-request-ids"),
        };
        match self.release_order {
            ReleaseOrder::BeforeCommit => base,
            ReleaseOrder::AfterCommit => format!("{base}-release-after-commit"),
        }
    }

    /// How a reader runs it.
    pub fn command(&self) -> String {
        let flag = match self.fencing {
            Fencing::ReadsAndWrites => String::new(),
            other => format!(" --fencing {}", other.label()),
        };
        let ids = match self.request_ids {
            RequestIds::Ignored => "",
            RequestIds::Checked => " --request-ids",
        };
        let release = match self.release_order {
            ReleaseOrder::BeforeCommit => "",
            ReleaseOrder::AfterCommit => " --release-after-commit",
        };
        format!(
            "cargo run --release -- run {} {}{flag}{ids}{release}",
            self.stage, self.scenario
        )
    }
}

/// The folder, inside the book's source, of the generated files.
const GENERATED: &str = "generated";

/// One run the book shows, from either list: its files, its chapter, the
/// command its timeline starts with, and how prose names it.
pub struct Shown {
    /// `stage4-get-del-race`: the name of its files.
    pub base: String,
    /// The chapter's file in `book/src`.
    pub chapter: &'static str,
    /// How a reader runs it.
    pub command: String,
    /// How a chapter's prose names it.
    pub named: Named,
}

/// Everything the book shows: the scenario runs, then the stories.
fn everything_shown() -> Vec<Shown> {
    let runs = BOOK_RUNS.iter().map(|r| Shown {
        base: r.base(),
        chapter: r.chapter,
        command: r.command(),
        named: Named::Run(r.stage.to_owned(), r.scenario.to_owned()),
    });
    let stories = BOOK_STORIES.iter().map(|s| Shown {
        base: s.name.to_owned(),
        chapter: s.chapter,
        command: s.command(),
        named: Named::Test(s.stage.to_owned(), s.test.to_owned()),
    });
    runs.chain(stories).collect()
}

/// Runs the book's runs and stories (those named in `only`, or all), then
/// checks the result; with `check`, only checks the committed files.
pub async fn run_all(book: &Path, check: bool, only: &[String]) -> Result<(), Failure> {
    if check {
        return check_all(book);
    }
    // Every name first, so a typo fails before any run.
    for r in BOOK_RUNS {
        row_named(r.stage)?;
        scenario_named(r.scenario)?;
    }
    for s in BOOK_STORIES {
        stage_named(s.stage)?;
    }
    let shown = everything_shown();
    for name in only {
        if !shown.iter().any(|s| s.base == *name) {
            let names: Vec<&str> = shown.iter().map(|s| s.base.as_str()).collect();
            return Err(Failure::bad_input(format!(
                "the book shows no run `{name}`; its runs are {}",
                names.join(", ")
            )));
        }
    }
    let chosen = |base: &str| only.is_empty() || only.iter().any(|o| o == base);
    for r in BOOK_RUNS.iter().filter(|r| chosen(&r.base())) {
        let timeline = run_scenario(r).await?;
        write(book, &r.base(), &r.command(), &timeline)?;
    }
    for s in BOOK_STORIES.iter().filter(|s| chosen(s.name)) {
        eprintln!("running {} ({})", s.name, s.command());
        let stage = stage_named(s.stage)?;
        let env = ScenarioEnv::new(Backend::from_env()?, launcher(&stage)?, Fencing::default());
        let timeline = (s.run)(env).await?;
        write(book, s.name, &s.command(), &timeline)?;
    }
    write_verdicts(book)?;
    eprintln!("written to {}", book.join(GENERATED).display());
    check_all(book)
}

/// Writes what is derived from the matrix's record (`generated/matrix.json`
/// and `matrix.md`): each stage's list of what its column says, the lists
/// that read across the matrix ([`across`]), and the Chinese edition's
/// matrix.
fn write_verdicts(book: &Path) -> Result<(), Failure> {
    for (name, text) in derived(book) {
        let text = text.map_err(|missing| Failure::failed(missing.join("\n")))?;
        write_file(&book.join(GENERATED).join(name), &text)?;
    }
    Ok(())
}

/// Every derived file: (name in `generated/`, its text or what is missing).
fn derived(book: &Path) -> Vec<(String, Result<String, Vec<String>>)> {
    let mut files: Vec<(String, Result<String, Vec<String>>)> = Vec::new();
    match matrix_json::Matrix::read(book) {
        Ok(matrix) => {
            for list in [verdicts::all(&matrix), across::all(&matrix)] {
                match list {
                    Ok(list) => files.extend(list.into_iter().map(|(name, text)| (name, Ok(text)))),
                    Err(missing) => files.push(("matrix.json".to_owned(), Err(vec![missing]))),
                }
            }
        }
        Err(unread) => files.push(("matrix.json".to_owned(), Err(vec![unread]))),
    }
    let matrix = std::fs::read_to_string(book.join(GENERATED).join("matrix.md"))
        .map_err(|e| vec![format!("{GENERATED}/matrix.md cannot be read: {e}")]);
    files.push((
        "matrix.zh.md".to_owned(),
        matrix.and_then(|m| matrix_zh::render(&m)),
    ));
    files
}

/// Runs one scenario of the list; its timeline, if it told the story the
/// book tells.
async fn run_scenario(r: &BookRun) -> Result<Timeline, Failure> {
    let row = row_named(r.stage)?;
    let scenario = scenario_named(r.scenario)?;
    eprintln!("running {} x {}", r.stage, r.scenario);
    let env = row
        .env(Backend::from_env()?, r.fencing)?
        .with_request_ids(r.request_ids)
        .with_release_order(r.release_order);
    let outcome = scenario.play(row.entry, env).await?;
    // With request ids checked the matrix's cell does not apply: a retry
    // must not be charged twice, and two different requests are not one.
    if r.request_ids == RequestIds::Checked && outcome.verdict.has(Finding::Duplicate) {
        return Err(Failure::failed(format!(
            "{} gave {}, but a resource that checks request ids charges one once: nothing \
             written for it",
            r.base(),
            outcome.verdict
        )));
    }
    // The book tells the story the matrix asserts (the matrix runs the
    // fixed resource; the write-only lesson and the resource that checks
    // nothing must oversell); a run that came out otherwise is not written.
    if r.fencing != Fencing::ReadsAndWrites && !outcome.verdict.has(Finding::Oversold) {
        return Err(Failure::failed(format!(
            "{} gave {}, but a resource with `--fencing {}` must oversell: nothing written for it",
            r.base(),
            outcome.verdict,
            r.fencing.label()
        )));
    }
    // The fix's variant of release-before-commit must not oversell.
    if r.release_order == ReleaseOrder::AfterCommit && !outcome.verdict.is_ok() {
        return Err(Failure::failed(format!(
            "{} gave {}, but a purchase that commits before it releases must be ok: nothing \
             written for it",
            r.base(),
            outcome.verdict
        )));
    }
    if let Some(Expected::Verdict(want)) = expected(r.stage, r.scenario)
        && r.fencing == Fencing::ReadsAndWrites
        && r.request_ids == RequestIds::Ignored
        && r.release_order == ReleaseOrder::BeforeCommit
        && want != outcome.verdict
    {
        return Err(Failure::failed(format!(
            "{} x {} gave {}, the expected matrix says {want}: nothing written for it",
            r.stage, r.scenario, outcome.verdict
        )));
    }
    Ok(outcome.timeline)
}

/// Writes a run's recording and its rendered files.
fn write(book: &Path, base: &str, command: &str, timeline: &Timeline) -> Result<(), Failure> {
    let dir = book.join(GENERATED);
    write_file(
        &dir.join(format!("{base}.events.tsv")),
        &timeline.recorded(),
    )?;
    for (name, text) in rendered(base, command, timeline) {
        write_file(&dir.join(name), &text)?;
    }
    Ok(())
}

/// Writes every run's files again from what it recorded, in today's format.
pub fn render_again(book: &Path) -> Result<(), Failure> {
    let dir = book.join(GENERATED);
    for s in everything_shown() {
        let recorded = dir.join(format!("{}.events.tsv", s.base));
        let text = std::fs::read_to_string(&recorded).map_err(|e| {
            Failure::failed(format!(
                "cannot read {} ({e}): run `book-assets --only {}`",
                recorded.display(),
                s.base
            ))
        })?;
        let timeline = Timeline::from_recorded(&text)
            .map_err(|e| Failure::failed(format!("{}: {e}", recorded.display())))?;
        for (name, text) in rendered(&s.base, &s.command, &timeline) {
            write_file(&dir.join(name), &text)?;
        }
    }
    write_verdicts(book)?;
    check_all(book)
}

/// The files the book includes for a run: `(file name, text)`.
fn rendered(base: &str, command: &str, timeline: &Timeline) -> [(String, String); 2] {
    let header = format!(
        "<!-- Generated by `cargo run --release -- book-assets` from {base}.events.tsv; do not edit. -->\n",
    );
    let mut lines = format!("$ {command}\n");
    if timeline.folds_anything() {
        // The full run, one command away.
        let every_line = if command.contains(" -- run ") {
            format!("{command} --every-line")
        } else {
            format!("book/src/generated/{base}.events.tsv")
        };
        let _ = writeln!(
            lines,
            "# repeats folded, (xN until T+…) each; every line: {every_line}"
        );
    }
    lines.push_str(&timeline.render());
    let timeline_md = format!("{header}{}", html::timeline(&lines));
    let diagram_md = format!(
        "{header}\n```mermaid\n{}```\n",
        sequence_diagram(timeline, &verdict_words())
    );
    [
        (format!("{base}.timeline.md"), timeline_md),
        (format!("{base}.diagram.md"), diagram_md),
    ]
}

/// Every committed file is what today's code makes of its recorded run,
/// and every chapter shows what it names.
fn check_all(book: &Path) -> Result<(), Failure> {
    let mut problems = Vec::new();
    let dir = book.join(GENERATED);
    let shown = everything_shown();
    for s in &shown {
        let recorded = dir.join(format!("{}.events.tsv", s.base));
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
        for (name, want) in rendered(&s.base, &s.command, &timeline) {
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
    problems.extend(chapter_problems(book, &shown));
    problems.extend(verdict_problems(book));
    if problems.is_empty() {
        println!(
            "book assets: {} runs and {} stories, every file current, every named run shown",
            BOOK_RUNS.len(),
            BOOK_STORIES.len()
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

/// Each stage's generated list is current, and both editions' chapters
/// include it.
fn verdict_problems(book: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let dir = book.join(GENERATED);
    for (name, want) in derived(book) {
        let want = match want {
            Ok(want) => want,
            Err(missing) => {
                problems.extend(missing);
                continue;
            }
        };
        let path = dir.join(&name);
        match std::fs::read_to_string(&path) {
            Ok(got) if got == want => {}
            Ok(_) => problems.push(format!(
                "{} does not say what the matrix says",
                path.display()
            )),
            Err(_) => problems.push(format!("{} is missing", path.display())),
        }
    }
    let zh = book.join("../zh/src");
    let included = verdicts::CHAPTERS
        .iter()
        .map(|(stage, chapter)| (format!("{stage}-verdicts"), *chapter))
        .chain(
            across::INCLUDED_BY
                .iter()
                .map(|(base, chapter)| ((*base).to_owned(), *chapter)),
        );
    for (base, chapter) in included {
        for (chapter_dir, include) in [
            (book.to_path_buf(), format!("{GENERATED}/{base}.md")),
            (zh.clone(), format!("../../src/{GENERATED}/{base}.zh.md")),
        ] {
            if !chapter_dir.exists() {
                continue;
            }
            let chapter = chapter_dir.join(chapter);
            let text = std::fs::read_to_string(&chapter).unwrap_or_default();
            if !text.contains(&format!("{{{{#include {include}}}}}")) {
                problems.push(format!("{} does not include {include}", chapter.display()));
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_run_names_a_real_stage_and_scenario() {
        for r in BOOK_RUNS {
            assert!(row_named(r.stage).is_ok(), "{}", r.stage);
            assert!(scenario_named(r.scenario).is_ok(), "{}", r.scenario);
        }
        for s in BOOK_STORIES {
            assert!(stage_named(s.stage).is_ok(), "{}", s.stage);
        }
    }

    #[test]
    fn every_story_is_told_by_a_test_file_of_its_stage() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        for s in BOOK_STORIES {
            let crate_dir = std::fs::read_dir(root)
                .expect("the workspace")
                .filter_map(|e| e.ok().map(|e| e.path()))
                .find(|p| {
                    std::fs::read_to_string(p.join("Cargo.toml"))
                        .is_ok_and(|t| t.contains(&format!("name = \"{}\"", s.stage)))
                })
                .unwrap_or_else(|| panic!("no package {}", s.stage));
            let test = crate_dir.join("tests").join(format!("{}.rs", s.test));
            assert!(test.is_file(), "{} has no {}", s.name, test.display());
        }
    }

    #[test]
    fn names_are_unique() {
        let shown = everything_shown();
        for (i, s) in shown.iter().enumerate() {
            assert!(
                shown[i + 1..].iter().all(|t| t.base != s.base),
                "{} twice",
                s.base
            );
        }
    }
}
