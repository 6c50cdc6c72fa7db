//! `--holder-cmd`: a command that speaks the holder protocol as a row of
//! the matrix. The book's example adapter (`adapters/example/lock.sh`) runs
//! on a few stories and gives stage 5's cells; holders that speak wrongly
//! fail their cells with errors that name the command and the line; bad
//! input is refused before anything runs.

use std::process::{Command, Output};

fn lockstages(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lockstages"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .expect("the CLI runs")
}

fn out_dir(name: &str) -> String {
    std::env::temp_dir()
        .join(format!(
            "lockstages-holder-cmd-{name}-{}",
            std::process::id()
        ))
        .display()
        .to_string()
}

/// The verdict of each cell of a `matrix --json` run, by scenario.
fn verdicts(output: &Output) -> Vec<(String, String)> {
    let json: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("matrix --json prints JSON");
    json["cells"]
        .as_array()
        .expect("cells")
        .iter()
        .map(|cell| {
            (
                cell["scenario"].as_str().unwrap_or_default().to_owned(),
                cell["result"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[test]
fn the_books_example_adapter_runs_as_a_row_and_gives_stage_5s_cells() {
    let out = out_dir("example");
    let output = lockstages(&[
        "matrix",
        "--holder-cmd",
        "adapters/example/lock.sh",
        "--name",
        "example",
        "--scenario",
        "contention",
        "--scenario",
        "killed-holder",
        "--scenario",
        "gc-pause",
        "--scenario",
        "duplicate-request",
        "--json",
        "--out",
        &out,
    ]);
    let _ = std::fs::remove_dir_all(&out);
    let errors = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{errors}");
    let got = verdicts(&output);
    let want = [
        ("contention", "ok"),
        ("killed-holder", "ok"),
        // Frozen past its TTL, it sells from a stale read: stage 5's cell.
        ("gc-pause", "OVERSOLD OVERLAP"),
        // The protocol has no retry of a request id.
        ("duplicate-request", "n/a"),
    ];
    for (scenario, verdict) in want {
        assert!(
            got.iter().any(|(s, v)| s == scenario && v == verdict),
            "{scenario}: expected {verdict}, got {got:?}\n{errors}"
        );
    }
}

/// Runs killed-holder on the holder `script` and returns the error lines.
fn failed_cell(script: &str, name: &str) -> String {
    let out = out_dir(name);
    let output = lockstages(&[
        "matrix",
        "--holder-cmd",
        &format!("sh {script}"),
        "--name",
        name,
        "--scenario",
        "killed-holder",
        "--out",
        &out,
    ]);
    let _ = std::fs::remove_dir_all(&out);
    assert_eq!(
        output.status.code(),
        Some(1),
        "a cell that errs fails the matrix"
    );
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_holder_that_exits_at_once_errs_naming_the_command_and_the_line() {
    let error = failed_cell("tests/holders/exits-at-once.sh", "exits");
    assert!(
        error.contains("`sh tests/holders/exits-at-once.sh`"),
        "{error}"
    );
    assert!(error.contains("exit status: 3"), "{error}");
    // The first request: the harness asks `ping` as soon as it starts.
    assert!(error.contains("`ping`"), "{error}");
}

#[test]
fn a_holder_with_a_malformed_answer_errs_naming_the_command_and_the_line() {
    let error = failed_cell("tests/holders/malformed.sh", "malformed");
    assert!(error.contains("`sh tests/holders/malformed.sh`"), "{error}");
    assert!(
        error.contains("malformed answer `granted, I think`"),
        "{error}"
    );
    assert!(error.contains("`acquire "), "{error}");
}

#[test]
fn bad_holder_commands_are_refused_with_exit_2_before_anything_runs() {
    for (args, says) in [
        (
            [
                "--holder-cmd",
                "no-such-lock-program --flag",
                "--name",
                "mine",
            ],
            "no program `no-such-lock-program`",
        ),
        (
            [
                "--holder-cmd",
                "adapters/example/lock.sh",
                "--name",
                "stage4",
            ],
            "`stage4` is already a row",
        ),
        (
            [
                "--holder-cmd",
                "sh 'adapters/example/lock.sh",
                "--name",
                "mine",
            ],
            "unclosed ' quote",
        ),
    ] {
        let output = lockstages(&[&["matrix"][..], &args[..]].concat());
        let error = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {error}");
        assert!(error.contains(says), "{args:?}: {error}");
    }
}
