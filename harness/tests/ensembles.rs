//! The consensus clusters stages 9 and 10 run on, a ZooKeeper ensemble and
//! an etcd cluster: three real members that elect one leader, leave no
//! process behind (dropped, or their test killed with `kill -9`), and a
//! clear error where Java, ZooKeeper or etcd is missing.

use std::path::Path;
use std::process::Command;

use harness::server::ensemble::Ensemble;
use harness::server::etcd::{EtcdCluster, etcd_installed};
use harness::server::zookeeper::{ZkEnsemble, zookeeper_classpath};

/// Starts a three-member cluster of `store` (`zookeeper` or `etcd`).
async fn start(store: &str) -> Box<dyn Ensemble> {
    let started: harness::Result<Box<dyn Ensemble>> = match store {
        "zookeeper" => ZkEnsemble::start(3).await.map(|c| Box::new(c) as _),
        "etcd" => EtcdCluster::start(3).await.map(|c| Box::new(c) as _),
        other => panic!("no store `{other}`"),
    };
    started.unwrap_or_else(|e| panic!("{e}"))
}

#[test]
#[ignore = "the body of the child that the missing-program tests start; not a test"]
fn installed_child() {
    match zookeeper_classpath() {
        Ok(_) => println!("@zk found"),
        Err(e) => println!("@zk {e}"),
    }
    match etcd_installed() {
        Ok(()) => println!("@etcd found"),
        Err(e) => println!("@etcd {e}"),
    }
}

#[test]
fn without_java_or_etcd_on_the_path_the_errors_say_what_to_install() {
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["installed_child", "--exact", "--ignored", "--nocapture"])
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("apt-get install zookeeper") && text.contains("no `java` on PATH"),
        "{text}"
    );
    assert!(
        text.contains("apt-get install etcd-server") && text.contains("no `etcd` on PATH"),
        "{text}"
    );
}

async fn three_members_elect_one_leader_and_none_outlives_the_cluster(store: &str) {
    let cluster = start(store).await;
    let roles = cluster.roles().await;
    let leaders = roles.iter().flatten().filter(|m| *m == "leader").count();
    let followers = roles.iter().flatten().filter(|m| *m == "follower").count();
    assert_eq!((leaders, followers), (1, 2), "{store}: {roles:?}");
    let pids = cluster.pids();
    assert_eq!(pids.len(), 3);
    drop(cluster);
    for pid in pids {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "{store} member {pid} outlived its cluster"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn three_zookeeper_members_elect_one_leader_and_none_outlives_the_ensemble() {
    three_members_elect_one_leader_and_none_outlives_the_cluster("zookeeper").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn three_etcd_members_elect_one_leader_and_none_outlives_the_cluster() {
    three_members_elect_one_leader_and_none_outlives_the_cluster("etcd").await;
}

/// Which store the kill -9 child starts.
const ROLE: &str = "LOCKSTAGES_ORPHAN_TEST_STORE";

/// The child's body: start a cluster, say its members' pids, then wait to
/// be killed with `kill -9`, where no destructor runs.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "the body of the child the kill -9 tests start; not a test"]
async fn child_holding_a_cluster() {
    let Ok(store) = std::env::var(ROLE) else {
        return;
    };
    let cluster = start(&store).await;
    let pids: Vec<String> = cluster.pids().iter().map(u32::to_string).collect();
    println!("MEMBER_PIDS {}", pids.join(","));
    std::future::pending::<()>().await;
}

fn a_test_killed_with_kill_9_leaves_no_member_behind(store: &str) {
    use std::io::{BufRead, BufReader};
    use std::time::{Duration, Instant};
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "child_holding_a_cluster",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env(ROLE, store)
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
        assert!(gone, "{store} member {pid} outlived its killed parent");
    }
}

#[test]
fn a_test_killed_with_kill_9_leaves_no_zookeeper_member_behind() {
    a_test_killed_with_kill_9_leaves_no_member_behind("zookeeper");
}

#[test]
fn a_test_killed_with_kill_9_leaves_no_etcd_member_behind() {
    a_test_killed_with_kill_9_leaves_no_member_behind("etcd");
}
