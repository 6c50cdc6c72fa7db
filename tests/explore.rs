//! The explorer end to end, through the CLI: it finds what the stories
//! predict, replays a seed's schedule, agrees with the matrix, refuses bad
//! input, and leaves no process behind when interrupted.

use std::collections::BTreeSet;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use harness::Timing;
use harness::explore::{Kind, TrialSpec};

fn lockstages(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lockstages"))
        .args(args)
        .output()
        .expect("the CLI runs")
}

fn text(output: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn a_seed_gives_the_same_schedule_and_the_replay_plays_it() {
    let spec = TrialSpec {
        stage: stage3::STAGE,
        seed: 5,
        trial: 2,
        clients: 4,
        kinds: Kind::ALL
            .into_iter()
            .filter(|k| k.applies_to(&stage3::STAGE.description))
            .collect(),
        keep: None,
    };
    let ttl = Timing::default().ttl;
    let schedule = spec.schedule(ttl);
    assert_eq!(
        schedule,
        spec.schedule(ttl),
        "the same seed, the same faults"
    );
    let output = lockstages(&["explore", "--stage", "3", "--replay", "5:2"]);
    let printed = text(&output);
    assert!(output.status.success(), "{printed}");
    assert!(
        printed.contains(&schedule.render()),
        "the replay plays seed 5 trial 2's schedule:\n{}\nnot found in:\n{printed}",
        schedule.render()
    );
}

/// Stage 3's lock expires under a frozen holder; the explorer, told only to
/// freeze holders at random, must find the oversell on its own.
#[test]
fn random_freezes_oversell_stage3() {
    let output = lockstages(&[
        "explore",
        "--stage",
        "3",
        "--kind",
        "freeze",
        "--seconds",
        "15",
        "--seed",
        "1",
        "--no-shrink",
        // The budget is an upper bound: the run ends at the first oversell.
        "--until-found",
        "oversold",
        "--json",
    ]);
    let printed = text(&output);
    assert!(output.status.success(), "{printed}");
    let report: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("--json prints JSON");
    let stage = &report["stages"][0];
    assert_eq!(stage["stage"], "stage3");
    let oversold = &stage["violations"]["oversold"];
    assert!(oversold.is_object(), "no oversell found:\n{printed}");
    assert!(
        oversold["replay"]
            .as_str()
            .is_some_and(|r| r.contains("--replay 1:")),
        "{printed}"
    );
    assert!(
        stage["faults"]["freeze"].as_u64().unwrap_or(0) > 0,
        "{printed}"
    );
}

/// The explorer aims its faults at the lock's life, so what the matrix
/// says breaks a stage is found within seconds, on a seed it was not tuned
/// on: the short form of issue 21's acceptance run (which takes 5 seeds).
#[test]
fn known_failures_are_found_within_the_budget() {
    let seed = "424242";
    // Stage 8 with the fixed resource oversells only after a failover (the
    // promoted replica hands out a token again), and only when the fault
    // lands in a window of a few milliseconds around a holder's read. Among
    // every kind, on a loaded machine, fifteen trials (four failovers) once
    // missed it; aimed at failovers alone it is found in the first or second
    // trial, loaded or not.
    let cases = [
        ("8", "write-only", &["stale-write", "oversold"][..], None),
        ("6", "reads-and-writes", &["oversold"][..], None),
        ("3", "reads-and-writes", &["foreign-delete"][..], None),
        ("8", "reads-and-writes", &["oversold"][..], Some("failover")),
    ];
    // The four explorations at once: each one's budget is counted in its
    // own seconds, and its first find in operations, not in time.
    let explored: Vec<(&str, &str, &[&str], Output)> = std::thread::scope(|scope| {
        let running: Vec<_> = cases
            .into_iter()
            .map(|(stage, fencing, wanted, kind)| {
                scope.spawn(move || {
                    let mut args = vec![
                        "explore",
                        "--stage",
                        stage,
                        "--fencing",
                        fencing,
                        "--seconds",
                        "30",
                        "--seed",
                        seed,
                        "--no-shrink",
                        "--json",
                    ];
                    for check in wanted {
                        args.extend(["--until-found", check]);
                    }
                    if let Some(kind) = kind {
                        args.extend(["--kind", kind]);
                    }
                    (stage, fencing, wanted, lockstages(&args))
                })
            })
            .collect();
        running
            .into_iter()
            .map(|exploring| exploring.join().expect("the exploration's thread"))
            .collect()
    });
    for (stage, fencing, wanted, output) in explored {
        let printed = text(&output);
        assert!(output.status.success(), "{printed}");
        let report: serde_json::Value =
            serde_json::from_slice(&output.stdout).expect("--json prints JSON");
        let found = &report["stages"][0]["violations"];
        let first = wanted
            .iter()
            .find_map(|check| found[*check].as_object())
            .unwrap_or_else(|| {
                panic!("stage {stage} ({fencing}): none of {wanted:?} in 30 s:\n{printed}")
            });
        assert!(
            first["first_operations"].as_u64().unwrap_or(0) > 0,
            "the first appearance is counted in operations: {printed}"
        );
    }
}

/// Stage 0 (no lock) oversells with or without faults; a kill or a freeze
/// adds nothing the matrix does not expect, so the check agrees.
#[test]
fn check_matrix_agrees_on_the_control_stage() {
    let output = lockstages(&[
        "explore",
        "--check-matrix",
        "--stage",
        "0",
        "--kind",
        "kill",
        "--seconds",
        "2",
        "--seed",
        "3",
    ]);
    let printed = text(&output);
    assert!(output.status.success(), "{printed}");
    // A row per fault kind (none, kill), a column per stage (stage0).
    assert!(
        printed.lines().any(|l| l.trim_end().ends_with("stage0")),
        "{printed}"
    );
    for kind in ["none", "kill"] {
        let row = printed
            .lines()
            .find(|l| l.starts_with(&format!("{kind} ")))
            .unwrap_or_else(|| panic!("no {kind} row in:\n{printed}"));
        assert!(row.contains(" ok"), "{kind} agrees: {printed}");
    }
    assert!(printed.contains("kill -> killed-holder"), "{printed}");
}

#[test]
fn bad_input_exits_2_naming_the_choices() {
    for (args, says) in [
        (
            &["explore", "--kind", "meteor"][..],
            "unknown fault kind `meteor`; the kinds are kill, freeze",
        ),
        (
            &["explore", "--stage", "3", "--replay", "one"][..],
            "--replay wants SEED:TRIAL",
        ),
        (&["explore", "--replay", "1:2"][..], "exactly one --stage"),
        (&["explore", "--clients", "0"][..], "--clients must be"),
        (&["explore", "--stage", "99"][..], "unknown stage `99`"),
    ] {
        let output = lockstages(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", text(&output));
        assert!(text(&output).contains(says), "{args:?}: {}", text(&output));
    }
}

/// The pids of every process below `root`, read from /proc.
fn descendants(root: u32) -> BTreeSet<(u32, String)> {
    let mut found = BTreeSet::new();
    let mut parents = vec![root];
    while let Some(parent) = parents.pop() {
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // pid (comm) state ppid ...
            let Some((comm, rest)) = stat.split_once(") ") else {
                continue;
            };
            let ppid: u32 = rest
                .split_whitespace()
                .nth(1)
                .and_then(|p| p.parse().ok())
                .unwrap_or(0);
            let comm = comm.split_once('(').map_or("", |(_, c)| c).to_owned();
            if ppid == parent && found.insert((pid, comm)) {
                parents.push(pid);
            }
        }
    }
    found
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| !stat.contains(") Z "))
}

#[test]
fn ctrl_c_leaves_no_server_and_no_holder_behind() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lockstages"))
        .args(["explore", "--stage", "3", "--seconds", "60", "--seed", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the CLI starts");
    // Wait until a trial is under way: servers and holders are running.
    let deadline = Instant::now() + Duration::from_secs(60);
    let running = loop {
        let below = descendants(child.id());
        let servers = below.iter().filter(|(_, c)| c == "redis-server").count();
        let holders = below.iter().filter(|(_, c)| c == "lockstages").count();
        if servers >= 2 && holders >= 2 {
            break below;
        }
        assert!(
            Instant::now() < deadline,
            "no trial started within 60 s: {below:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let exit = child.wait().expect("the CLI exits");
    assert_eq!(exit.code(), Some(130), "Ctrl-C exits 130");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left: Vec<_> = running.iter().filter(|(pid, _)| alive(*pid)).collect();
        if left.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "still running after Ctrl-C: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
