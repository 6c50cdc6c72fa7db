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

#[test]
fn an_unknown_stage_exits_2_naming_the_choices() {
    let output = lockstages(&["run", "stage9", "x"]);
    assert_eq!(output.status.code(), Some(2));
    let error = String::from_utf8_lossy(&output.stderr);
    assert!(
        error.contains("unknown stage `stage9`") && error.contains("stage1"),
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
