//! Every process a command started is gone, zombies included, at the
//! instant the command returns: after a matrix that ends by itself, and
//! after one stopped by Ctrl-C (SIGINT) or `kill` (SIGTERM).
//!
//! How "every process it started" is seen: this test process makes itself a
//! *child subreaper* (`PR_SET_CHILD_SUBREAPER`) before it starts the
//! command. Any process the command leaves behind, running or already dead
//! and unreaped, is then handed to us when the command exits, rather than to
//! the system's init, where a late reap would hide it or an early one would
//! make the check flaky. So "left behind" is exact: a child of ours that is
//! not one we started ourselves. The check runs with no pause after the
//! command has been waited for.
//!
//! A test binary of its own: the subreaper setting is the whole process's,
//! and the tests in `tests/main.rs` start commands of their own side by
//! side. The two tests here take turns.
#![allow(unsafe_code)]

use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The tests here take turns: each counts this process's children.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The cells: the Sentinel pool (split-brain, whose masters are killed
/// while a replica may be syncing from them: a snapshot child of a killed
/// master was the process a matrix left behind), the main pool
/// (killed-holder: holder processes), stage 9's shared ZooKeeper ensemble
/// and stage 10's etcd clusters (killed-holder on those rows).
const CELLS: &[&str] = &[
    "--scenario",
    "split-brain",
    "--scenario",
    "split-brain-min-replicas",
    "--scenario",
    "killed-holder",
];

fn become_subreaper() {
    // SAFETY: prctl(2) with PR_SET_CHILD_SUBREAPER takes a plain integer.
    let done = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) };
    assert_eq!(done, 0, "prctl(PR_SET_CHILD_SUBREAPER) failed");
}

/// A process as `/proc/<pid>/stat` shows it.
#[derive(Debug)]
struct Entry {
    pid: u32,
    name: String,
    state: char,
    parent: u32,
}

fn process_table() -> Vec<Entry> {
    std::fs::read_dir("/proc")
        .expect("/proc is readable")
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            let name = stat[stat.find('(')? + 1..stat.rfind(')')?].to_owned();
            let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace();
            let state = fields.next()?.chars().next()?;
            let parent = fields.next()?.parse().ok()?;
            Some(Entry {
                pid,
                name,
                state,
                parent,
            })
        })
        .collect()
}

/// Our children: after the command has been waited for, whatever it left.
fn children_of_ours() -> Vec<Entry> {
    let me = std::process::id();
    process_table()
        .into_iter()
        .filter(|entry| entry.parent == me)
        .collect()
}

/// Every descendant of `root` (not `root` itself).
fn descendants_of(root: u32) -> Vec<Entry> {
    let table = process_table();
    let mut found: Vec<u32> = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(
            table
                .iter()
                .filter(|entry| entry.parent == parent)
                .map(|entry| entry.pid),
        );
        i += 1;
    }
    table
        .into_iter()
        .filter(|entry| entry.pid != root && found.contains(&entry.pid))
        .collect()
}

fn matrix(out: &std::path::Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lockstages"));
    command
        .arg("matrix")
        .args(CELLS)
        .arg("--out")
        .arg(out)
        .arg("--json")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    command
}

fn out_dir(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("lockstages-reaping-{name}-{}", std::process::id()))
}

/// Kills and reaps what a command left (once it has been counted), so the
/// next test starts with no child of ours.
fn clear(left: &[Entry]) {
    for entry in left {
        let pid = libc::pid_t::try_from(entry.pid).expect("a pid fits");
        // SAFETY: kill(2) and waitpid(2) on a child of ours.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
    }
}

/// The processes left behind, described for an assertion's message.
fn left_behind(children: &[Entry]) -> String {
    children
        .iter()
        .map(|c| format!("pid {} `{}` state {}", c.pid, c.name, c.state))
        .collect::<Vec<_>>()
        .join("; ")
}

#[test]
fn a_matrix_that_returns_has_reaped_every_process_it_started() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    become_subreaper();
    let out = out_dir("returns");
    let run = matrix(&out).output().expect("the matrix starts");
    // At once: the command has been waited for, nothing else.
    let left = children_of_ours();
    clear(&left);
    let _ = std::fs::remove_dir_all(&out);
    assert!(
        run.status.success(),
        "the matrix failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(
        left.is_empty(),
        "the matrix returned with {} process(es) of its own in the process table: {}",
        left.len(),
        left_behind(&left)
    );
}

/// Starts the matrix, waits until it runs servers of each kind (so the
/// signal lands in the middle of its work), sends `signal`, and checks
/// that the command has stopped and reaped them all when it returns.
fn interrupted_matrix_reaps_everything(signal: libc::c_int, name: &str) {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    become_subreaper();
    let out = out_dir(name);
    let mut child: Child = matrix(&out).spawn().expect("the matrix starts");
    let pid = child.id();
    // Servers, holders and an ensemble member running at once: the work is
    // under way. A minute is far beyond what it takes (a few seconds).
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let running = descendants_of(pid);
        let redis = running.iter().filter(|e| e.name == "redis-server").count();
        let others = running.iter().filter(|e| e.name != "redis-server").count();
        if redis >= 3 && others >= 1 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the matrix started no servers within a minute"
        );
        assert!(
            child.try_wait().expect("waitable").is_none(),
            "the matrix ended before it was interrupted"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let before = descendants_of(pid).len();
    let pid_t = libc::pid_t::try_from(pid).expect("a pid fits");
    // SAFETY: kill(2) on our own child.
    assert_eq!(unsafe { libc::kill(pid_t, signal) }, 0);
    let status = child.wait().expect("the matrix is waited for");
    let left = children_of_ours();
    clear(&left);
    let _ = std::fs::remove_dir_all(&out);
    assert!(
        !status.success(),
        "the interrupted matrix exited with success"
    );
    assert!(
        left.is_empty(),
        "the matrix, interrupted with {name} while {before} process(es) of its own ran, \
         returned with {} of them in the process table: {}",
        left.len(),
        left_behind(&left)
    );
}

#[test]
fn a_matrix_stopped_by_ctrl_c_has_reaped_every_process_it_started() {
    interrupted_matrix_reaps_everything(libc::SIGINT, "SIGINT");
}

#[test]
fn a_matrix_stopped_by_sigterm_has_reaped_every_process_it_started() {
    interrupted_matrix_reaps_everything(libc::SIGTERM, "SIGTERM");
}

/// A row whose holder never answers (`tests/holders/silent.sh`), stopped
/// by Ctrl-C while its holders and servers run: nothing is left.
#[test]
fn a_matrix_of_a_silent_holder_stopped_by_ctrl_c_has_reaped_everything() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    become_subreaper();
    let out = out_dir("silent-holder");
    let mut child: Child = Command::new(env!("CARGO_BIN_EXE_lockstages"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["matrix", "--holder-cmd", "tests/holders/silent.sh"])
        .args(["--name", "silent", "--scenario", "killed-holder", "--out"])
        .arg(&out)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the matrix starts");
    let pid = child.id();
    // Its servers up and the silent holder waiting to be answered; a
    // minute is far beyond what that takes.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let running = descendants_of(pid);
        let redis = running.iter().filter(|e| e.name == "redis-server").count();
        let holders = running.iter().filter(|e| e.name == "cat").count();
        if redis >= 2 && holders >= 1 {
            break;
        }
        assert!(Instant::now() < deadline, "no holder within a minute");
        assert!(child.try_wait().expect("waitable").is_none(), "it ended");
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid_t = libc::pid_t::try_from(pid).expect("a pid fits");
    // SAFETY: kill(2) on our own child.
    assert_eq!(unsafe { libc::kill(pid_t, libc::SIGINT) }, 0);
    let status = child.wait().expect("the matrix is waited for");
    let left = children_of_ours();
    clear(&left);
    let _ = std::fs::remove_dir_all(&out);
    assert_eq!(status.code(), Some(130), "Ctrl-C's exit status");
    assert!(
        left.is_empty(),
        "the matrix of a silent holder, interrupted, left {}: {}",
        left.len(),
        left_behind(&left)
    );
}
