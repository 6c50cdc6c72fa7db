//! Every command the interview chapter names, run: each `run` command
//! with options against the built CLI (its verdict compared with the one
//! the chapter states), each `interview` command straight through, and each
//! `cargo test -p … <file>::` checked to name a file of that package's test
//! binary (and
//! run, with `LOCKSTAGES_BOOK_RUN_TESTS=1`; compiling every stage's tests
//! from inside a test is too slow to do by default).
//!
//! A `run` command without options is a cell of the matrix: the verdict the
//! chapter gives it is the question's, which the CLI's unit tests hold
//! against the expected matrix (`every_run_shows_the_verdict_its_answer_states`),
//! and the matrix itself, CI's main job, holds every cell against a real run.
//! Here such a command is checked to name a scenario the CLI lists, and run
//! only with `LOCKSTAGES_INTERVIEW_RUN_CELLS=1` (the stores' leader-killed
//! runs alone take half a minute).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// Scenarios that other parts of the course are adding. Until
/// `lockstages list` shows one, its runs are skipped, saying so; any other
/// unknown scenario fails.
const PENDING: [&str; 4] = [
    "stale-write-first",
    "business-error",
    "sentinel-failover",
    "split-brain",
];

/// How many runs at once. Only the runs with options are left (six), and
/// they share the machine with this binary's other tests (the explorer's
/// among them): at five at once, a stage 9 holder's ZooKeeper client once
/// went 800 ms without an answer. The walkthroughs run beside them, one at
/// a time.
const JOBS: usize = 2;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The chapter's text, with `{{#include …}}` of a whole file inlined.
fn chapter() -> String {
    let src = root().join("book/src");
    let page = std::fs::read_to_string(src.join("interview.md")).expect("the chapter");
    let mut text = String::new();
    for line in page.lines() {
        match line
            .trim()
            .strip_prefix("{{#include ")
            .and_then(|l| l.strip_suffix("}}"))
        {
            Some(file) => text.push_str(
                &std::fs::read_to_string(src.join(file.trim()))
                    .unwrap_or_else(|e| panic!("{file}: {e}")),
            ),
            None => text.push_str(line),
        }
        text.push('\n');
    }
    text
}

/// Every line of a `sh` block: (command, the comment after `#`, if any).
fn commands(chapter: &str) -> Vec<(String, Option<String>)> {
    let mut in_sh = false;
    let mut out = Vec::new();
    for line in chapter.lines() {
        if line.starts_with("```") {
            in_sh = !in_sh && line.trim() == "```sh";
            continue;
        }
        if in_sh && !line.trim().is_empty() {
            let (command, comment) = match line.split_once('#') {
                Some((command, comment)) => (command, Some(comment.trim().to_owned())),
                None => (line, None),
            };
            out.push((
                command.split_whitespace().collect::<Vec<_>>().join(" "),
                comment,
            ));
        }
    }
    out
}

fn lockstages(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_lockstages"))
        .args(args)
        .output()
        .expect("the CLI runs")
}

/// The directory of the workspace package called `name`.
fn package_dir(name: &str) -> Option<PathBuf> {
    std::fs::read_dir(root())
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|dir| {
            std::fs::read_to_string(dir.join("Cargo.toml"))
                .is_ok_and(|toml| toml.contains(&format!("name = \"{name}\"")))
        })
}

#[test]
fn every_command_the_interview_chapter_names_runs() {
    let chapter = chapter();
    let listed = String::from_utf8_lossy(&lockstages(&["list"]).stdout).into_owned();
    let run_cells = std::env::var_os("LOCKSTAGES_INTERVIEW_RUN_CELLS").is_some();
    let mut runs = BTreeSet::new();
    let mut cells = BTreeSet::new();
    let mut interviews = BTreeSet::new();
    let mut tests = BTreeSet::new();
    let mut unknown = Vec::new();
    for (command, comment) in commands(&chapter) {
        let words: Vec<&str> = command.split(' ').collect();
        match words.as_slice() {
            [
                "cargo",
                "run",
                "--release",
                "--",
                "run",
                stage,
                scenario,
                options @ ..,
            ] => {
                let options: Vec<String> = options.iter().map(|w| w.to_string()).collect();
                if options.is_empty() && !run_cells {
                    cells.insert((stage.to_string(), scenario.to_string()));
                } else {
                    runs.insert((stage.to_string(), scenario.to_string(), options, comment));
                }
            }
            ["cargo", "run", "--release", "--", "interview", rest @ ..] => {
                // Straight through: on a terminal it would ask first.
                let mut args: Vec<String> = rest.iter().map(|w| w.to_string()).collect();
                args.retain(|a| a != "--no-input");
                interviews.insert(args);
            }
            ["cargo", "test", "-p", package, filter] if filter.ends_with("::") => {
                let file = filter.trim_end_matches("::");
                tests.insert((package.to_string(), file.to_string()));
            }
            _ => unknown.push(command),
        }
    }
    assert!(
        unknown.is_empty(),
        "commands this test cannot run:\n{}",
        unknown.join("\n")
    );
    assert!(
        runs.len() + cells.len() > 25 && tests.len() > 10,
        "is the chapter there?"
    );

    // The matrix's cells name scenarios the CLI lists.
    let unlisted: Vec<String> = cells
        .iter()
        .filter(|(_, scenario)| {
            !listed.contains(&format!("  {scenario} ")) && !PENDING.contains(&scenario.as_str())
        })
        .map(|(stage, scenario)| format!("run {stage} {scenario}: no such scenario"))
        .collect();
    assert!(unlisted.is_empty(), "{}", unlisted.join("\n"));

    // Each names a file of its package's test binary.
    for (package, target) in &tests {
        let dir = package_dir(package).unwrap_or_else(|| panic!("no package `{package}`"));
        let file = dir.join("tests").join(format!("{target}.rs"));
        assert!(
            file.exists(),
            "cargo test -p {package} {target}::: no {}",
            file.display()
        );
        let binary = std::fs::read_to_string(dir.join("tests/main.rs")).unwrap_or_default();
        assert!(
            binary.lines().any(|l| l == format!("mod {target};")),
            "cargo test -p {package} {target}::: tests/main.rs does not list `mod {target};`"
        );
    }

    // The runs, JOBS at a time, and the walkthroughs beside them.
    // Taken from the end: the consensus stores' runs (ten seconds and more
    // each, three TTLs of two to six seconds) first, so none is left alone
    // at the end.
    let mut runs: Vec<_> = runs.into_iter().collect();
    runs.sort_by_key(|(stage, ..)| matches!(stage.as_str(), "stage9" | "stage10"));
    let queue = Mutex::new(runs);
    let failures = Mutex::new(Vec::<String>::new());
    std::thread::scope(|scope| {
        // The walkthrough commands, straight through, one after another.
        scope.spawn(|| {
            for args in &interviews {
                let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
                args.insert(0, "interview");
                args.push("--no-input");
                let output = lockstages(&args);
                if !output.status.success() {
                    failures.lock().unwrap().push(format!(
                        "{args:?}: {}",
                        String::from_utf8_lossy(&output.stderr)
                    ));
                }
            }
        });
        for _ in 0..JOBS {
            scope.spawn(|| {
                loop {
                    let Some((stage, scenario, options, expected)) = queue.lock().unwrap().pop()
                    else {
                        break;
                    };
                    if !listed.contains(&format!("  {scenario} ")) {
                        if PENDING.contains(&scenario.as_str()) {
                            println!("skipped: run {stage} {scenario} (`list` does not show it yet)");
                        } else {
                            failures
                                .lock()
                                .unwrap()
                                .push(format!("run {stage} {scenario}: no such scenario"));
                        }
                        continue;
                    }
                    let mut args = vec!["run", &stage, &scenario];
                    args.extend(options.iter().map(String::as_str));
                    let output = lockstages(&args);
                    let text = String::from_utf8_lossy(&output.stdout);
                    let verdict = text
                        .lines()
                        .find_map(|l| l.strip_prefix("verdict: "))
                        .unwrap_or("(none)")
                        .to_owned();
                    let wrong = !output.status.success()
                        || expected.as_ref().is_some_and(|e| *e != verdict);
                    if wrong {
                        failures.lock().unwrap().push(format!(
                            "run {stage} {scenario} {options:?}: exit {:?}, verdict {verdict}, the chapter says {:?}\n{}",
                            output.status.code(),
                            expected,
                            String::from_utf8_lossy(&output.stderr)
                        ));
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    if std::env::var_os("LOCKSTAGES_BOOK_RUN_TESTS").is_some() {
        for (package, target) in &tests {
            let status = Command::new(env!("CARGO"))
                .args(["test", "-p", package, &format!("{target}::")])
                .status()
                .expect("cargo runs");
            assert!(status.success(), "cargo test -p {package} {target}::");
        }
    }
}
