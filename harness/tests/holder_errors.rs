//! A holder that speaks the protocol wrongly gets a clear error naming its
//! command and the line, and is gone (stopped and reaped) once its handle
//! is: a malformed answer, an answer that never comes within the bound, a
//! process that exits at once. The holders are one-line shell scripts.

use std::time::{Duration, Instant};

use harness::holder::remote::{RemoteLock, row_description};
use harness::holder::wire::Wire;
use harness::holder::{HolderSpec, Launcher, protocol};
use lockcore::{DistributedLock, FaultPoints, LockError};

fn spec() -> HolderSpec {
    HolderSpec {
        stage: "broken".into(),
        name: "client-A".into(),
        lock_urls: vec!["redis://127.0.0.1:1".into()],
        db_url: "redis://127.0.0.1:1".into(),
        key: "lock:stock".into(),
        ttl: Duration::from_millis(300),
        retry_interval: Duration::from_millis(10),
        watchdog_timeout: Duration::from_millis(300),
        drift_factor: 0.01,
        fencing: "none".into(),
        request_ids: false,
    }
}

/// `sh -c script`, whose answers must come within 300 ms.
fn holder(script: &str) -> Launcher {
    Launcher::program("sh".into(), vec!["-c".into(), script.into()])
        .with_answer_within(Duration::from_millis(300))
}

/// Whether process `pid` is still in the process table (a zombie too).
fn in_process_table(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Asks `acquire 100` of the holder `script` and returns the error, after
/// checking that dropping the wire took the process away.
async fn error_of(script: &str) -> String {
    let mut wire = Wire::spawn(&holder(script), &spec()).expect("sh starts");
    let pid = wire.pid();
    let asked = wire.ask("acquire 100", Duration::from_millis(100)).await;
    let answer = asked.and_then(|answer| wire.parse("acquire 100", &answer, protocol::acquired));
    drop(wire);
    assert!(!in_process_table(pid), "holder {pid} outlived its handle");
    match answer {
        Ok(answer) => panic!("`{script}` was taken at its word: {answer:?}"),
        Err(e) => e.to_string(),
    }
}

#[tokio::test]
async fn a_malformed_answer_is_an_error_naming_the_command_and_the_line() {
    let error = error_of("read line; echo '@holder acquired'; cat >/dev/null").await;
    assert!(error.contains("client-A"), "{error}");
    assert!(
        error.contains("`sh -c read line;"),
        "no command in: {error}"
    );
    assert!(error.contains("`acquire 100`"), "no request in: {error}");
    assert!(
        error.contains("malformed answer `acquired`"),
        "no answer in: {error}"
    );
}

#[tokio::test]
async fn an_answer_that_never_comes_is_an_error_within_the_bound() {
    let started = Instant::now();
    let error = error_of("cat >/dev/null").await;
    // The bound is 300 ms plus the 100 ms the request may wait; three
    // times that is the margin for a loaded machine.
    assert!(started.elapsed() < Duration::from_millis(1200), "{error}");
    assert!(
        error.contains("no answer to `acquire 100` within 400ms"),
        "{error}"
    );
    assert!(
        error.contains("`sh -c cat >/dev/null`"),
        "no command in: {error}"
    );
}

#[tokio::test]
async fn a_process_that_exits_at_once_is_an_error_saying_so() {
    let error = error_of("exit 3").await;
    assert!(error.contains("exit status: 3"), "{error}");
    assert!(error.contains("`acquire 100`"), "no request in: {error}");
    assert!(error.contains("`sh -c exit 3`"), "no command in: {error}");
}

#[tokio::test]
async fn an_error_answer_is_passed_on_with_the_request() {
    let error = error_of("read line; echo '@holder error my lock is broken'; cat").await;
    assert!(
        error.contains("answered `acquire 100` with an error: my lock is broken"),
        "{error}"
    );
}

#[tokio::test]
async fn a_lock_whose_server_failed_is_a_redis_error_not_a_broken_holder() {
    let script = "read line; echo '@holder pong'; \
                  read line; echo '@holder failed NOREPLICAS Not enough good replicas'; cat";
    let description = row_description("failing", "a lock whose server refuses");
    let (lock, _) = RemoteLock::spawn(&holder(script), &spec(), description, FaultPoints::none())
        .await
        .expect("sh starts and answers ping");
    match lock.acquire(Duration::from_millis(100)).await {
        Err(LockError::Redis(e)) => assert!(e.to_string().contains("NOREPLICAS"), "{e}"),
        other => panic!("expected the server's error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_holder_is_asked_ping_first_and_a_wrong_answer_names_it() {
    let started = Wire::start(&holder("read line; echo '@holder hello'; cat"), &spec()).await;
    let error = started.err().expect("`hello` is not `pong`").to_string();
    assert!(error.contains("`ping`"), "no request in: {error}");
    assert!(error.contains("malformed answer `hello`"), "{error}");
}
