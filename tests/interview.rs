//! `lockstages interview`: through a pseudo-terminal, as a reader types,
//! and straight through with `--no-input`, as CI and readers of logs see it.

use std::process::{Command, Output};

use rexpect::session::{PtySession, spawn_command};

/// Long enough for two real runs on a loaded two-core machine.
const PATIENCE_MS: u64 = 120_000;

fn in_a_terminal(args: &[&str], no_color: bool) -> PtySession {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lockstages"));
    command.args(args);
    if no_color {
        command.env("NO_COLOR", "1");
    } else {
        command.env_remove("NO_COLOR");
    }
    spawn_command(command, Some(PATIENCE_MS)).expect("the CLI starts in a pseudo-terminal")
}

fn exits_with(session: &PtySession, code: i32) {
    let status = session.process().wait().expect("the CLI exits");
    assert!(
        format!("{status:?}").ends_with(&format!(", {code})")),
        "expected exit code {code}, got {status:?}"
    );
}

fn piped(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lockstages"))
        .args(args)
        .output()
        .expect("the CLI runs")
}

/// Question 1 runs stage 1 and stage 2 with a killed holder. The reader
/// first types a stage that is not offered, is asked again, then predicts
/// that stage 1 deadlocks: the screen sets the real verdicts beside it.
#[test]
fn in_a_terminal_it_asks_for_a_prediction_first_and_judges_it_by_the_runs() {
    let mut screen = in_a_terminal(&["interview", "1"], false);
    screen.exp_string("Question 1 of").expect("the question");
    screen
        .exp_string("Your prediction")
        .expect("asked before any run");
    screen.send_line("9").expect("typed");
    screen
        .exp_string("`9` is not one of the choices (1 2)")
        .expect("a stage that is not offered is refused");
    screen.exp_string("Your prediction").expect("asked again");
    screen.send_line("1").expect("typed");
    let timeline = screen
        .exp_string("Verdicts (yes: DEADLOCK fired)")
        .expect("the runs happen, then the verdicts");
    assert!(
        timeline.contains(">> ") && timeline.contains("KILLED with kill -9"),
        "the first run's timeline, with the lines that matter marked:\n{timeline}"
    );
    let verdicts = screen.exp_string("The runs say:").expect("the comparison");
    let stage1 = verdicts
        .lines()
        .find(|l| l.contains("stage1 killed-holder"))
        .unwrap_or_else(|| panic!("no stage 1 line in:\n{verdicts}"));
    assert!(
        stage1.contains("DEADLOCK") && stage1.contains("you were right"),
        "{stage1}"
    );
    assert!(
        stage1.contains("\x1b["),
        "colours on a terminal without NO_COLOR: {stage1:?}"
    );
    let stage2 = verdicts
        .lines()
        .find(|l| l.contains("stage2 killed-holder"))
        .unwrap_or_else(|| panic!("no stage 2 line in:\n{verdicts}"));
    assert!(
        stage2.contains("ok") && stage2.contains("you were right"),
        "{stage2}"
    );
    screen
        .exp_string("You predicted: 1")
        .expect("the prediction");
    screen
        .exp_string("You were right about 2 of 2 runs.")
        .expect("the score");
    screen.exp_string("Answer").expect("the answer");
    screen
        .exp_string("Read next: Stage 1")
        .expect("the chapter to read next");
    screen.exp_eof().expect("the end");
    exits_with(&screen, 0);
}

#[test]
fn without_a_number_it_lists_the_questions_and_asks_which_until_a_valid_answer() {
    let mut screen = in_a_terminal(&["interview"], true);
    let list = screen
        .exp_string("Which question")
        .expect("the list, then the question");
    assert!(
        list.contains(" 1. Why not just `SETNX` and `DEL`?"),
        "{list}"
    );
    assert!(list.contains("25. "), "at least 25 questions:\n{list}");
    screen.send_line("0").expect("typed");
    screen
        .exp_string("unknown question `0`")
        .expect("a number out of range is refused");
    screen.exp_string("Which question").expect("asked again");
    screen.send_line("").expect("typed");
    screen.exp_eof().expect("an empty answer leaves");
    exits_with(&screen, 0);
}

#[test]
fn under_no_color_a_terminal_gets_no_colours() {
    let mut screen = in_a_terminal(&["interview", "2"], true);
    let before = screen.exp_string("Your prediction").expect("asked");
    screen.send_line("2").expect("typed");
    let rest = screen.exp_eof().expect("the end");
    for code in ["\x1b[1m", "\x1b[1;31m", "\x1b[32m", "\x1b[2m"] {
        assert!(
            !before.contains(code) && !rest.contains(code),
            "{code:?} under NO_COLOR"
        );
    }
    assert!(rest.contains("you were right"), "{rest}");
    exits_with(&screen, 0);
}

/// The acceptance: question 7 straight through prints the question, the
/// run, the verdicts and the answer, and asks nothing.
#[test]
fn with_no_input_question_7_runs_straight_through() {
    let output = piped(&["interview", "7", "--no-input"]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for part in [
        "Question 7 of",
        "Does the watchdog make the lock safe?",
        "no prediction asked",
        "The run: stage6 x gc-pause",
        ">> ",
        "FROZEN with SIGSTOP",
        "Verdicts (yes: OVERSOLD fired)",
        "Answer",
        "Read next:",
    ] {
        assert!(text.contains(part), "`{part}` missing from:\n{text}");
    }
    assert!(!text.contains("Your prediction"), "nothing is asked");
    assert!(!text.contains('\x1b'), "no colours in a pipe");
    let verdicts: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(" gc-pause ") && (l.contains("OVERSOLD") || l.contains("OVERLAP")))
        .collect();
    assert_eq!(verdicts.len(), 6, "stages 3-8, one verdict each:\n{text}");
}

#[test]
fn an_unknown_question_exits_2_naming_the_range() {
    for bad in ["0", "999", "seven"] {
        let output = piped(&["interview", bad, "--no-input"]);
        assert_eq!(output.status.code(), Some(2), "interview {bad}");
        let error = String::from_utf8_lossy(&output.stderr);
        assert!(
            error.contains(&format!("unknown question `{bad}`")) && error.contains("1 to "),
            "{error}"
        );
    }
}

/// The acceptance of question 35: straight through, the run against the
/// write-only resource oversells, and the two against the resource that
/// registers tokens on reads overlap without overselling.
#[test]
fn with_no_input_question_35_shows_the_write_only_resource_overselling() {
    let output = piped(&["interview", "35", "--no-input"]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let verdict = |run: &str| -> &str {
        text.lines()
            .find(|l| l.contains(run) && (l.contains("OVERLAP") || l.contains(" ok ")))
            .unwrap_or_else(|| panic!("no verdict for `{run}` in:\n{text}"))
    };
    let write_only = verdict("stage8 stale-write-first --fencing write-only");
    assert!(write_only.contains("OVERSOLD"), "{write_only}");
    for fenced in ["stage8 stale-write-first  ", "stage8 gc-pause"] {
        let line = verdict(fenced);
        assert!(
            line.contains("OVERLAP") && !line.contains("OVERSOLD"),
            "{line}"
        );
    }
}
