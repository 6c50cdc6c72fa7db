//! The Docker backend's guarantees, on a real engine: each node at its own
//! address on its run's network; a restart comes back empty at the same
//! address; a node cut off its network is unreachable until it rejoins, by
//! its peers too, while a node on the clients' network is still reached
//! there; and no container outlives the process that made it (panic,
//! Ctrl-C, `kill -9`).
//!
//! They need a Docker engine and an image (`LOCKSTAGES_REDIS_IMAGE`, built
//! here with `docker/build-local-image.sh`; CI does). Without an engine, or
//! with no image named and none to pull, they say so and pass.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use harness::server::docker::{check_image, containers_owned_by};
use harness::server::{Backend, DEFAULT_IMAGE, IMAGE_VAR, Node, Spares, docker_answers};

const ROLE: &str = "LOCKSTAGES_DOCKER_ORPHAN_TEST_ROLE";

/// The Docker backend, or `None` (and a note) when no engine answers, or
/// when no image was named and the default one cannot be had (CI names
/// one it built). An image that was named must work.
fn docker_backend() -> Option<Backend> {
    if !docker_answers() {
        eprintln!("no Docker engine answers: the Docker backend is not tested here");
        return None;
    }
    let named = std::env::var(IMAGE_VAR).ok();
    let image = named.clone().unwrap_or_else(|| DEFAULT_IMAGE.to_owned());
    match check_image(&image) {
        Ok(()) => {}
        Err(e) if named.is_none() => {
            eprintln!("the Docker backend is not tested here: {e}");
            return None;
        }
        Err(e) => panic!("{e}"),
    }
    Some(Backend::Docker {
        image,
        network: Arc::default(),
        spares: None,
        rig: None,
    })
}

async fn query(node: &Node, command: &[&str]) -> redis::RedisResult<Option<String>> {
    let mut conn = lockcore::connect(&node.url(), "test")
        .await
        .map_err(|e| redis::RedisError::from((redis::ErrorKind::Io, "connect", e.to_string())))?;
    let mut cmd = redis::cmd(command[0]);
    for arg in &command[1..] {
        cmd.arg(*arg);
    }
    cmd.query_async(&mut conn).await
}

#[tokio::test(flavor = "multi_thread")]
async fn nodes_of_a_run_are_hosts_with_addresses_of_their_own() {
    let Some(backend) = docker_backend() else {
        return;
    };
    let a = Node::start(&backend, "a", &[]).await.unwrap();
    let b = Node::start(&backend, "b", &[]).await.unwrap();
    assert_ne!(a.addr().ip(), b.addr().ip());
    assert_eq!(a.addr().port(), b.addr().port(), "both listen on 6379");
    // b replicates a over the network, at a's own address.
    let (host, port) = a.host_port();
    let port = port.to_string();
    query(&b, &["REPLICAOF", &host, &port]).await.unwrap();
    query(&a, &["SET", "k", "v"]).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while query(&b, &["GET", "k"]).await.unwrap().as_deref() != Some("v") {
        assert!(Instant::now() < deadline, "b never received a's write");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_restarted_node_comes_back_empty_at_the_same_address() {
    let Some(backend) = docker_backend() else {
        return;
    };
    let mut node = Node::start(&backend, "lock", &[]).await.unwrap();
    let url = node.url();
    query(&node, &["SET", "k", "v"]).await.unwrap();
    node.restart().await.unwrap();
    assert_eq!(node.url(), url);
    assert_eq!(query(&node, &["GET", "k"]).await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_cut_off_its_network_answers_nobody_until_it_rejoins() {
    let Some(backend) = docker_backend() else {
        return;
    };
    let node = Node::start(&backend, "lock", &[]).await.unwrap();
    let container = node.container().expect("a Docker node");
    container.leave_network().await.unwrap();
    let cut = tokio::time::timeout(Duration::from_secs(2), query(&node, &["PING"])).await;
    assert!(
        !matches!(cut, Ok(Ok(_))),
        "a node off its network answered: {cut:?}"
    );
    container.join_network().await.unwrap();
    assert_eq!(
        query(&node, &["PING"]).await.unwrap().as_deref(),
        Some("PONG")
    );
}

/// Polls `node` (bounded) until `GET k` answers `wanted`; whether it did.
async fn sees(node: &Node, wanted: Option<&str>, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    loop {
        let answer = tokio::time::timeout(Duration::from_secs(1), query(node, &["GET", "k"])).await;
        if matches!(&answer, Ok(Ok(got)) if got.as_deref() == wanted) {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The split brain's partition: the master's replica reaches it only on the
/// run's network, the harness also on the clients' network.
#[tokio::test(flavor = "multi_thread")]
async fn a_node_cut_off_from_its_peers_is_still_reached_on_the_clients_network() {
    let Some(backend) = docker_backend() else {
        return;
    };
    let master = Node::start_with_clients_network(&backend, "master", &[])
        .await
        .unwrap();
    let replica = Node::start(&backend, "replica", &[]).await.unwrap();
    let (on_run_network, for_clients) = (master.peer_addr(), master.addr());
    assert_ne!(on_run_network.ip(), for_clients.ip());
    let host = on_run_network.ip().to_string();
    let port = on_run_network.port().to_string();
    query(&replica, &["REPLICAOF", &host, &port]).await.unwrap();
    query(&master, &["SET", "k", "before"]).await.unwrap();
    assert!(
        sees(&replica, Some("before"), Duration::from_secs(20)).await,
        "the replica never followed the master on the run's network"
    );

    let container = master.container().expect("a Docker node");
    container.leave_network().await.unwrap();
    // The harness still reaches the master (as client-A does) and writes.
    query(&master, &["SET", "k", "during"]).await.unwrap();
    // Its peers do not: the write does not reach the replica (over a link
    // it takes a millisecond or so), and nothing answers at its address on
    // the run's network.
    assert!(
        !sees(&replica, Some("during"), Duration::from_secs(2)).await,
        "the replica received a write of a master cut off from it"
    );
    let cut = tokio::time::timeout(Duration::from_secs(2), async {
        let url = format!("redis://{on_run_network}");
        let mut conn = lockcore::connect(&url, "test")
            .await
            .map_err(|e| e.to_string())?;
        redis::cmd("PING")
            .query_async::<String>(&mut conn)
            .await
            .map_err(|e| e.to_string())
    })
    .await;
    assert!(
        !matches!(cut, Ok(Ok(_))),
        "the master answered on the network it was cut off: {cut:?}"
    );

    // The heal: at the same address, and the replica catches up.
    container.join_network().await.unwrap();
    assert_eq!(master.peer_addr(), on_run_network);
    assert!(
        sees(&replica, Some("during"), Duration::from_secs(30)).await,
        "the replica did not catch up with the master after the heal"
    );
}

/// The child's body: start a node, say its owner, then end as told.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "the body of the child process the orphan tests start; not a test"]
async fn child_holding_a_container() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let backend = docker_backend().expect("the parent checked for Docker");
    let _node = Node::start(&backend, "lock", &[]).await.unwrap();
    println!("OWNER {}", std::process::id());
    match role.as_str() {
        "panic" => panic!("a test panics while holding a container"),
        _ => std::future::pending::<()>().await, // wait for a signal
    }
}

/// Starts the child in a process group of its own (as a terminal would),
/// waits until its container runs, and returns the child and its pid.
fn start_child(role: &str) -> (std::process::Child, String) {
    use std::os::unix::process::CommandExt as _;
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "child_holding_a_container",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env(ROLE, role)
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let owner = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix("OWNER ").map(str::to_owned))
        .expect("the child reports that its container runs");
    assert_eq!(
        containers_owned_by(&owner).unwrap().len(),
        1,
        "the child's container runs"
    );
    (child, owner)
}

/// Waits (bounded) until no container of `owner` is left.
fn none_left(owner: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if containers_owned_by(owner).unwrap().is_empty() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

/// Sends `signal` to the child's whole process group, as a terminal's
/// Ctrl-C does.
fn signal_group(child: &std::process::Child, signal: &str) {
    let status = Command::new("kill")
        .args([&format!("-{signal}"), "--", &format!("-{}", child.id())])
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn a_panic_while_holding_a_container_leaves_none_behind() {
    if docker_backend().is_none() {
        return;
    }
    let (mut child, owner) = start_child("panic");
    assert!(
        !child.wait().unwrap().success(),
        "the child was meant to panic"
    );
    assert!(none_left(&owner), "the panicking test left its container");
}

#[test]
fn ctrl_c_leaves_no_container_behind() {
    if docker_backend().is_none() {
        return;
    }
    let (mut child, owner) = start_child("wait");
    signal_group(&child, "INT");
    child.wait().unwrap();
    assert!(none_left(&owner), "Ctrl-C left the container behind");
}

#[test]
fn kill_9_leaves_no_container_behind() {
    if docker_backend().is_none() {
        return;
    }
    let (mut child, owner) = start_child("wait");
    child.kill().unwrap(); // SIGKILL: no destructor runs in the child
    child.wait().unwrap();
    assert!(none_left(&owner), "kill -9 left the container behind");
}

#[test]
fn a_missing_image_is_one_clear_error_that_says_how_to_build_one() {
    if !docker_answers() {
        return;
    }
    let error = check_image("lockstages/no-such-image:never")
        .unwrap_err()
        .to_string();
    assert!(error.contains("docker/build-local-image.sh"), "{error}");
}

/// A matrix's spares: a plain server its run left alone comes back to a
/// later run wiped (no key, its configuration as it started); one that was
/// faulted does not come back at all.
#[tokio::test(flavor = "multi_thread")]
async fn a_spare_comes_back_wiped_and_a_faulted_node_does_not_come_back() {
    let Some(backend) = docker_backend() else {
        return;
    };
    let (backend, spares) = backend.with_spares();
    let spares = spares.expect("the Docker backend has spares");
    let first = Node::start(&backend, "first", &[]).await.unwrap();
    let addr = first.addr();
    query(&first, &["SET", "k", "v"]).await.unwrap();
    query(
        &first,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"],
    )
    .await
    .unwrap();
    drop(first);
    // A spare is taken only once it has rested.
    tokio::time::sleep(Spares::REST * 3).await;
    let mut second = Node::start(&backend, "second", &[]).await.unwrap();
    assert_eq!(second.addr(), addr, "the spare was not used again");
    assert_eq!(spares.counts(), (1, 1), "(made, used again)");
    assert_eq!(query(&second, &["GET", "k"]).await.unwrap(), None);
    let mut conn = lockcore::connect(&second.url(), "test").await.unwrap();
    let policy: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("maxmemory-policy")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(
        policy[1], "noeviction",
        "the configuration was not set back"
    );
    drop(conn);

    second.kill().await.unwrap();
    drop(second);
    tokio::time::sleep(Spares::REST * 3).await;
    let third = Node::start(&backend, "third", &[]).await.unwrap();
    assert_ne!(third.addr(), addr, "a killed container was used again");
    assert_eq!(spares.counts(), (2, 1), "(made, used again)");
    drop(third);
    spares.remove_all();
}

/// A matrix's rigs: a Sentinel topology's nodes come back, with their
/// network, to a later run of the same kind, wiped: the old replica
/// replicates no more and holds no key, and the old Sentinel watches only
/// what the new run tells it. A run of another kind does not get them.
#[tokio::test(flavor = "multi_thread")]
async fn a_rig_comes_back_wiped_to_a_run_of_its_kind() {
    let Some(backend) = docker_backend() else {
        return;
    };
    let (backend, spares) = backend.with_spares();
    let spares = spares.expect("the Docker backend has spares");
    let rig = backend.for_rig("test");
    let master = Node::start(&rig, "master", &[]).await.unwrap();
    let replica = Node::start(&rig, "replica", &[]).await.unwrap();
    query(&master, &["SET", "k", "v"]).await.unwrap();
    let (ip, port) = (master.peer_addr().ip(), master.peer_addr().port());
    query(&replica, &["REPLICAOF", &ip.to_string(), &port.to_string()])
        .await
        .unwrap();
    let config = format!("sentinel monitor old {ip} {port} 1\n");
    let sentinel = Node::start_sentinel(&rig, "sentinel", &config)
        .await
        .unwrap();
    let kept = [master.addr(), replica.addr(), sentinel.addr()];
    drop(rig);
    drop(sentinel);
    drop(replica);
    drop(master);
    tokio::time::sleep(Spares::REST * 3).await;

    let other = backend.for_rig("other");
    let stranger = Node::start(&other, "stranger", &[]).await.unwrap();
    assert!(
        !kept.contains(&stranger.addr()),
        "another kind's rig was used"
    );
    drop(other);
    drop(stranger);

    let rig = backend.for_rig("test");
    let master = Node::start(&rig, "master", &[]).await.unwrap();
    let replica = Node::start(&rig, "replica", &[]).await.unwrap();
    for node in [&master, &replica] {
        assert!(
            kept[..2].contains(&node.addr()),
            "a server was not used again"
        );
        let info = query(node, &["INFO", "replication"])
            .await
            .unwrap()
            .unwrap();
        assert!(info.contains("role:master"), "{info}");
        assert_eq!(
            query(node, &["DBSIZE"]).await.unwrap().as_deref(),
            Some("0")
        );
    }
    let (ip, port) = (master.peer_addr().ip(), master.peer_addr().port());
    let config =
        format!("sentinel monitor new {ip} {port} 1\nsentinel down-after-milliseconds new 4321\n");
    let sentinel = Node::start_sentinel(&rig, "sentinel", &config)
        .await
        .unwrap();
    assert_eq!(sentinel.addr(), kept[2], "the Sentinel was not used again");
    let mut conn = lockcore::connect(&sentinel.url(), "test").await.unwrap();
    let masters: Vec<std::collections::HashMap<String, String>> = redis::cmd("SENTINEL")
        .arg("MASTERS")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(masters.len(), 1, "{masters:?}");
    assert_eq!(masters[0]["name"], "new");
    assert_eq!(masters[0]["ip"], ip.to_string());
    assert_eq!(masters[0]["down-after-milliseconds"], "4321");
    drop(conn);
    drop(rig);
    drop(sentinel);
    drop(replica);
    drop(master);
    spares.remove_all();
}
