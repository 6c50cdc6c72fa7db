//! No redis-server outlives the process that started it: not after a
//! panic, and not after `kill -9`, where no destructor runs at all.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use harness::server::RedisProcess;

const ROLE: &str = "LOCKSTAGES_ORPHAN_TEST_ROLE";

/// The child's body: start a server, say its pid, then die as told.
#[tokio::test]
#[ignore = "the body of the child process the orphan tests start; not a test"]
async fn child_holding_a_server() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let server = RedisProcess::start(&[]).await.expect("a server starts");
    println!("SERVER_PID {}", server.pid().expect("it runs"));
    match role.as_str() {
        "panic" => panic!("a test panics while holding a server"),
        _ => std::future::pending::<()>().await, // wait for kill -9
    }
}

/// Starts the child, returns it and the pid of its server.
fn start_child(role: &str) -> (std::process::Child, u32) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "child_holding_a_server",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env(ROLE, role)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let pid = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find_map(|line| {
            line.split("SERVER_PID ")
                .nth(1)
                .and_then(|p| p.trim().parse().ok())
        })
        .expect("the child reports its server's pid");
    (child, pid)
}

/// Waits (bounded) for the kernel to finish off `pid`.
fn gone(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let status = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // Gone, or a zombie waiting for its (dead) parent to be reaped.
        if !Path::new(&format!("/proc/{pid}")).exists() || status.contains(") Z ") {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

#[test]
fn a_test_that_panics_while_holding_a_server_leaves_none_behind() {
    let (mut child, server_pid) = start_child("panic");
    assert!(
        !child.wait().unwrap().success(),
        "the child was meant to panic"
    );
    assert!(
        gone(server_pid),
        "redis-server {server_pid} outlived the panicking test"
    );
}

#[test]
fn a_test_killed_with_kill_9_leaves_no_server_behind() {
    let (mut child, server_pid) = start_child("kill");
    child.kill().unwrap(); // SIGKILL: no destructor runs in the child
    child.wait().unwrap();
    assert!(
        gone(server_pid),
        "redis-server {server_pid} outlived its killed parent"
    );
}
