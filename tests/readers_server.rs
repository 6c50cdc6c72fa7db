//! `LOCKSTAGES_REDIS_URL`: the stories on a reader's own server are judged
//! from that server's own record, as on the harness's servers, while the
//! reader's other clients go on using it: their traffic stays out of the
//! timeline and the verdict, their keys and their configuration are as
//! they were when the run ends.

use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use harness::server::RedisProcess;

/// A name the reader's own application gives its connection: it must never
/// appear in a run's timeline.
const READERS_APP: &str = "readers-app";

fn run_on(url: &str, stage: &str, scenario: &str) -> String {
    let output: Output = Command::new(env!("CARGO_BIN_EXE_lockstages"))
        .args(["run", stage, scenario])
        .env("LOCKSTAGES_REDIS_URL", url)
        .output()
        .expect("the CLI runs");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    text
}

fn verdict(text: &str) -> &str {
    text.lines()
        .rev()
        .find_map(|l| l.strip_prefix("verdict: "))
        .unwrap_or_default()
}

async fn query<T: redis::FromRedisValue>(url: &str, args: &[&str]) -> T {
    let mut conn = lockcore::connect(url, "test").await.unwrap();
    let mut cmd = redis::cmd(args[0]);
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    cmd.query_async(&mut conn).await.unwrap()
}

/// The reader's application: writes and deletes keys of its own, one of
/// them named like the lock, until told to stop.
fn readers_app(url: String, stop: Arc<AtomicBool>) -> tokio::task::JoinHandle<u64> {
    tokio::spawn(async move {
        let mut conn = lockcore::connect(&url, READERS_APP).await.unwrap();
        let mut rounds = 0;
        while !stop.load(Ordering::Relaxed) {
            let _: () = redis::pipe()
                .set("lock:stock", "the reader's")
                .del("lock:stock")
                .set("stock", "the reader's stock")
                .query_async(&mut conn)
                .await
                .unwrap();
            rounds += 1;
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        rounds
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn verdicts_come_from_the_readers_server_and_its_own_traffic_is_left_out() {
    let server = RedisProcess::start(&[]).await.unwrap();
    let url = server.url();
    let _: () = query(&url, &["CONFIG", "SET", "notify-keyspace-events", "Ex"]).await;
    let stop = Arc::new(AtomicBool::new(false));
    let app = readers_app(url.clone(), stop.clone());

    // Each run on its own thread: the CLI blocks, the reader's app goes on.
    let (stage4, stage5, stage1) = tokio::task::spawn_blocking({
        let url = url.clone();
        move || {
            (
                run_on(&url, "stage4", "get-del-race"),
                run_on(&url, "stage5", "get-del-race"),
                run_on(&url, "stage1", "killed-holder"),
            )
        }
    })
    .await
    .unwrap();
    stop.store(true, Ordering::Relaxed);
    let rounds = app.await.unwrap();
    assert!(rounds > 0, "the reader's app ran alongside");

    // FOREIGN-DELETE is read from the server's record: the DEL that removed
    // client-B's value. The reader's own DEL of its `lock:stock` is not the run's.
    assert_eq!(verdict(&stage4), "FOREIGN-DELETE", "{stage4}");
    assert!(
        stage4.contains(
            "FOREIGN-DELETE: on redis, client-A's DEL removed lock:stock while it held client-B's value"
        ),
        "{stage4}"
    );
    assert_eq!(verdict(&stage5), "ok", "{stage5}");
    // DEADLOCK is measured: the key existed for the whole patience window.
    assert_eq!(verdict(&stage1), "DEADLOCK", "{stage1}");
    for text in [&stage4, &stage5, &stage1] {
        assert!(!text.contains(READERS_APP), "{text}");
        assert!(!text.contains("the reader's"), "{text}");
        assert!(
            text.contains("[redis] SET lock:stock") || text.contains("[redis] SETNX lock:stock"),
            "the timeline shows what the server saw, without the run's prefix:\n{text}"
        );
    }

    let flags: Vec<String> = query(&url, &["CONFIG", "GET", "notify-keyspace-events"]).await;
    let mut flags: Vec<char> = flags[1].chars().collect();
    flags.sort_unstable();
    assert_eq!(flags, ['E', 'x'], "the reader's flags are put back");
    let keys: Vec<String> = query(&url, &["KEYS", "*"]).await;
    assert_eq!(keys, ["stock"], "only the reader's own key is left");
    let stock: String = query(&url, &["GET", "stock"]).await;
    assert_eq!(stock, "the reader's stock");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_password_and_a_database_reach_every_connection_a_proxy_included() {
    let server = RedisProcess::start(&[]).await.unwrap();
    let _: () = query(&server.url(), &["CONFIG", "SET", "requirepass", "s3cret"]).await;
    let url = server.url().replace("redis://", "redis://:s3cret@") + "/2";
    // network-delay puts a proxy between the client and the server.
    let text = tokio::task::spawn_blocking(move || run_on(&url, "stage8", "network-delay"))
        .await
        .unwrap();
    assert_eq!(verdict(&text), "ok", "{text}");
    assert!(
        text.contains("[redis]   lua> SET lock:stock"),
        "the proxied connection's commands are seen:\n{text}"
    );
}
