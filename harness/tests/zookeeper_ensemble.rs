//! The ZooKeeper ensemble stage 9 runs on: three real members that elect a
//! leader, leave no process behind, and a clear error where Java or
//! ZooKeeper is missing.

use std::path::Path;
use std::process::Command;

use harness::server::zookeeper::{ZkEnsemble, zookeeper_classpath};

#[test]
#[ignore = "the body of the child that the missing-Java test starts; not a test"]
fn classpath_child() {
    match zookeeper_classpath() {
        Ok(_) => println!("@zk found"),
        Err(e) => println!("@zk {e}"),
    }
}

#[test]
fn without_java_on_the_path_the_error_says_what_to_install() {
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["classpath_child", "--exact", "--ignored", "--nocapture"])
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("apt-get install zookeeper") && text.contains("no `java` on PATH"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn three_members_elect_one_leader_and_none_outlives_the_ensemble() {
    let ensemble = ZkEnsemble::start(3).await.unwrap_or_else(|e| panic!("{e}"));
    let modes = ensemble.modes().await;
    let leaders = modes.iter().flatten().filter(|m| *m == "leader").count();
    let followers = modes.iter().flatten().filter(|m| *m == "follower").count();
    assert_eq!((leaders, followers), (1, 2), "{modes:?}");
    let pids = ensemble.pids();
    assert_eq!(pids.len(), 3);
    drop(ensemble);
    for pid in pids {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "member {pid} outlived its ensemble"
        );
    }
}

const ROLE: &str = "LOCKSTAGES_ZK_ORPHAN_TEST";

/// The child's body: start an ensemble, say its members' pids, then wait
/// to be killed with `kill -9`, where no destructor runs.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "the body of the child the kill -9 test starts; not a test"]
async fn child_holding_an_ensemble() {
    if std::env::var(ROLE).is_err() {
        return;
    }
    let ensemble = ZkEnsemble::start(3).await.expect("an ensemble starts");
    let pids: Vec<String> = ensemble.pids().iter().map(u32::to_string).collect();
    println!("MEMBER_PIDS {}", pids.join(","));
    std::future::pending::<()>().await;
}

#[test]
fn a_test_killed_with_kill_9_leaves_no_zookeeper_member_behind() {
    use std::io::{BufRead, BufReader};
    use std::time::{Duration, Instant};
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "child_holding_an_ensemble",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env(ROLE, "kill")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let pids: Vec<u32> = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find_map(|line| {
            line.split("MEMBER_PIDS ")
                .nth(1)
                .map(|p| p.trim().split(',').filter_map(|n| n.parse().ok()).collect())
        })
        .expect("the child reports its members' pids");
    assert_eq!(pids.len(), 3);
    child.kill().unwrap(); // SIGKILL: no destructor runs in the child
    child.wait().unwrap();
    for pid in pids {
        // The kernel's parent-death signal finishes each member off; give
        // it a bounded while (a zombie counts as gone).
        let deadline = Instant::now() + Duration::from_secs(10);
        let gone = loop {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            if stat.is_empty() || stat.contains(") Z ") {
                break true;
            }
            if Instant::now() > deadline {
                break false;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        assert!(gone, "ZooKeeper member {pid} outlived its killed parent");
    }
}
