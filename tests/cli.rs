//! The CLI end to end: the README's commands, bad input, exit codes.

use std::process::{Command, Output};

fn lockstages(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lockstages"))
        .args(args)
        .output()
        .expect("the CLI runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn run_stage1_killed_holder_ends_in_deadlock_with_its_timeline() {
    let output = lockstages(&["run", "stage1", "killed-holder"]);
    let text = stdout(&output);
    assert!(
        output.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(text.contains("KILLED with kill -9"), "{text}");
    assert!(
        text.contains("SETNX lock:stock 1"),
        "the timeline shows what Redis saw:\n{text}"
    );
    assert!(
        text.trim_end()
            .lines()
            .any(|l| l.starts_with("verdict: DEADLOCK")),
        "{text}"
    );
}

/// `--request-ids` reaches the resource: the retried request that the
/// plain run charges twice is charged once.
#[test]
fn run_with_request_ids_charges_the_retried_request_once() {
    let verdict = |args: &[&str]| {
        let output = lockstages(args);
        let text = stdout(&output);
        assert!(output.status.success(), "{text}");
        text.lines()
            .find_map(|l| l.strip_prefix("verdict: "))
            .map(str::to_owned)
            .unwrap_or_else(|| panic!("no verdict in\n{text}"))
    };
    assert_eq!(
        verdict(&["run", "stage5", "duplicate-request"]),
        "DUPLICATE"
    );
    assert_eq!(
        verdict(&["run", "stage5", "duplicate-request", "--request-ids"]),
        "ok"
    );
}

/// The holder of stage 1's contention sells ten items in ten rounds: the
/// timeline folds nine of them, `--every-line` prints each one.
#[test]
fn every_line_prints_the_rounds_the_timeline_folds() {
    let folded = stdout(&lockstages(&["run", "stage1", "contention"]));
    let every = stdout(&lockstages(&[
        "run",
        "stage1",
        "contention",
        "--every-line",
    ]));
    assert!(
        folded.contains("lines again, new values aside"),
        "the holder's rounds fold:\n{folded}"
    );
    assert!(
        !every.contains(" again") && !every.contains("   (x"),
        "nothing folded:\n{every}"
    );
    let sales = |text: &str| text.lines().filter(|l| l.contains("sold one:")).count();
    assert_eq!(sales(&every), 10, "every sale its own line:\n{every}");
    assert!(sales(&folded) < 10, "{folded}");
}

#[test]
fn an_unknown_stage_exits_2_naming_the_choices() {
    let output = lockstages(&["run", "stage99", "x"]);
    assert_eq!(output.status.code(), Some(2));
    let error = String::from_utf8_lossy(&output.stderr);
    assert!(
        error.contains("unknown stage `stage99`") && error.contains("stage1"),
        "{error}"
    );
}

#[test]
fn an_unknown_scenario_exits_2_naming_the_choices() {
    let output = lockstages(&["run", "stage1", "no-such-fault"]);
    assert_eq!(output.status.code(), Some(2));
    let error = String::from_utf8_lossy(&output.stderr);
    assert!(
        error.contains("unknown scenario `no-such-fault`") && error.contains("killed-holder"),
        "{error}"
    );
}

#[test]
fn list_shows_every_scenario() {
    let output = lockstages(&["list"]);
    assert!(output.status.success());
    let text = stdout(&output);
    for scenario in harness::SCENARIOS {
        assert!(
            text.contains(scenario.name),
            "{} missing from:\n{text}",
            scenario.name
        );
    }
}

#[test]
fn list_lines_up_every_scenario_title_after_the_longest_name() {
    let output = lockstages(&["list"]);
    let text = stdout(&output);
    let columns: Vec<usize> = harness::SCENARIOS
        .iter()
        .map(|scenario| {
            let line = text
                .lines()
                .find(|l| l.trim_start().starts_with(&format!("{} ", scenario.name)))
                .unwrap_or_else(|| panic!("no line for {} in:\n{text}", scenario.name));
            line.find(scenario.title)
                .unwrap_or_else(|| panic!("no title on: {line}"))
        })
        .collect();
    assert!(
        columns.windows(2).all(|w| w[0] == w[1]),
        "titles start at columns {columns:?}:\n{text}"
    );
}

/// A folder the results cannot go to is refused before anything runs: with
/// no redis-server on the PATH, the first complaint is about the folder.
#[test]
fn an_unwritable_output_folder_is_refused_before_the_work() {
    for (args, option) in [
        (&["matrix", "--out", "/proc/x"][..], "--out"),
        (
            &["matrix", "--stage", "stage1", "--html", "/proc/x"][..],
            "--html",
        ),
        (
            &["run", "stage1", "contention", "--html", "/proc/nope/x.html"][..],
            "--html",
        ),
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_lockstages"))
            .args(args)
            .env("PATH", "/nonexistent")
            .env_remove("LOCKSTAGES_BACKEND")
            .output()
            .expect("the CLI runs");
        let error = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {error}");
        assert!(
            error.contains(option) && error.contains("/proc/"),
            "{args:?}: {error}"
        );
        assert!(
            !error.contains("apt-get"),
            "{args:?} looked for Redis first: {error}"
        );
        assert!(
            !stdout(&output).contains("verdict"),
            "{args:?} ran the story"
        );
    }
}

#[test]
fn with_neither_redis_server_nor_docker_the_error_says_how_to_get_one() {
    let output = Command::new(env!("CARGO_BIN_EXE_lockstages"))
        .args(["matrix", "--stage", "stage1"])
        .env("PATH", "/nonexistent")
        .env_remove("LOCKSTAGES_BACKEND")
        .output()
        .expect("the CLI runs");
    assert_eq!(output.status.code(), Some(1));
    let error = String::from_utf8_lossy(&output.stderr);
    assert!(error.contains("apt-get install redis-server"), "{error}");
    assert!(error.contains("brew install redis"), "{error}");
    assert!(error.contains("LOCKSTAGES_BACKEND=docker"), "{error}");
}

#[test]
fn run_with_diagram_prints_a_sequence_diagram_with_a_lifeline_per_client() {
    let output = lockstages(&["run", "stage4", "get-del-race", "--diagram"]);
    let text = stdout(&output);
    assert!(output.status.success(), "{text}");
    assert!(text.contains("\nsequenceDiagram\n"), "{text}");
    for lifeline in ["as client-A", "as client-B", "as [lock]", "as harness"] {
        assert!(text.contains(lifeline), "no `{lifeline}` in:\n{text}");
    }
    assert!(
        text.starts_with("---\n") && !text.lines().any(|l| l.starts_with("verdict:")),
        "stdout is the diagram alone:\n{text}"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("verdict: FOREIGN-DELETE"), "{stderr}");
}

#[test]
fn matrix_html_writes_an_index_and_a_page_per_cell() {
    let dir = std::env::temp_dir().join(format!("lockstages-html-{}", std::process::id()));
    let out = dir.join("matrix");
    let html = dir.join("pages");
    let output = Command::new(env!("CARGO_BIN_EXE_lockstages"))
        .args(["matrix", "--stage", "stage4", "--stage", "stage0"])
        .args(["--scenario", "get-del-race", "--out"])
        .arg(&out)
        .arg("--html")
        .arg(&html)
        .output()
        .expect("the CLI runs");
    let read = |name: &str| std::fs::read_to_string(html.join(name)).unwrap_or_default();
    let (index, cell, na) = (
        read("index.html"),
        read("stage4-get-del-race.html"),
        read("stage0-get-del-race.html"),
    );
    let mermaid_written = html.join("mermaid.min.js").exists();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        index.contains("href=\"stage4-get-del-race.html\">FOREIGN-DELETE</a>"),
        "{index}"
    );
    assert!(index.contains("<td class=\"failure\">"), "{index}");
    // The terminal's table: a row per scenario, short marks, no colour when
    // stdout is not a terminal, and where the time went.
    let printed = stdout(&output);
    let row = printed
        .lines()
        .find(|l| l.starts_with("get-del-race "))
        .unwrap_or_default();
    assert!(row.contains("FD") && row.contains("n/a"), "{printed}");
    assert!(!printed.contains('\x1b'), "{printed}");
    assert!(printed.contains("Time per scenario"), "{printed}");
    assert!(cell.contains("sequenceDiagram") && cell.contains("class=\"timeline\""));
    assert!(na.contains("n/a: no lock"), "{na}");
    assert!(mermaid_written, "the pages' Mermaid is written beside them");
}

#[test]
fn book_assets_with_an_unknown_run_exits_2_naming_the_runs() {
    let output = lockstages(&["book-assets", "--only", "stage9-nothing"]);
    assert_eq!(output.status.code(), Some(2));
    let error = String::from_utf8_lossy(&output.stderr);
    assert!(
        error.contains("no run `stage9-nothing`") && error.contains("stage4-get-del-race"),
        "{error}"
    );
}

#[test]
fn the_readme_counts_the_interview_questions_the_cli_lists() {
    let listed = stdout(&lockstages(&["interview"]))
        .lines()
        .filter(|line| {
            let line = line.trim_start();
            line.split_once(". ")
                .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
        .count();
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("the README is there");
    assert!(
        readme.contains(&format!("lists {listed} questions")),
        "`interview` lists {listed} questions; the README says another number"
    );
}
