//! `LOCKSTAGES_REDIS_URL`: a reader's own server. The stories run there
//! under a key prefix of their own and leave nothing behind; node faults
//! are n/a; a bad URL, a server that is not there, one that needs a
//! password, a read-only replica and one that refuses `CONFIG` are each one
//! clear error.

use harness::holder::Launcher;
use harness::server::external::check;
use harness::server::{Backend, ExternalServer, RedisProcess};
use harness::{HarnessError, ScenarioEnv};

async fn query(url: &str, args: &[&str]) -> redis::Value {
    let mut conn = lockcore::connect(url, "test").await.unwrap();
    let mut cmd = redis::cmd(args[0]);
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    cmd.query_async(&mut conn).await.unwrap()
}

fn env_on(url: &str) -> ScenarioEnv {
    ScenarioEnv::new(
        Backend::External(ExternalServer::new(url).unwrap()),
        Launcher::this_test_binary(),
        Default::default(),
    )
}

async fn run(name: &str, env: ScenarioEnv) -> harness::Result<harness::Outcome> {
    let scenario = harness::scenario::find(name).unwrap();
    scenario.play(stage_entry(), env).await
}

/// Any single-node stage will do; the harness knows none, so use stage 0.
fn stage_entry() -> lockcore::StageEntry {
    harness::control::STAGE0
}

#[tokio::test(flavor = "multi_thread")]
async fn a_story_on_a_readers_server_touches_nothing_of_theirs_and_leaves_nothing() {
    let server = RedisProcess::start(&[]).await.unwrap();
    query(&server.url(), &["SET", "stock", "reader's own"]).await;
    let outcome = run("contention", env_on(&server.url())).await.unwrap();
    assert_eq!(outcome.fact("initial_stock"), 10);
    let keys = query(&server.url(), &["KEYS", "*"]).await;
    assert_eq!(
        keys,
        redis::Value::Array(vec![redis::Value::BulkString(b"stock".to_vec())]),
        "only the reader's key is left"
    );
    let theirs = query(&server.url(), &["GET", "stock"]).await;
    assert_eq!(theirs, redis::Value::BulkString(b"reader's own".to_vec()));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_story_that_faults_the_node_is_not_applicable() {
    let server = RedisProcess::start(&[]).await.unwrap();
    let error = run("failover", env_on(&server.url())).await.unwrap_err();
    assert!(matches!(error, HarnessError::NotApplicable(_)), "{error}");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_urls_and_unusable_servers_are_clear_errors() {
    let malformed = check("redis//nowhere").unwrap_err().to_string();
    assert!(
        malformed.contains("expected redis://host:port/db"),
        "{malformed}"
    );

    let gone = RedisProcess::start(&[]).await.unwrap();
    let url = gone.url();
    drop(gone);
    let unreachable = check(&url).unwrap_err().to_string();
    assert!(
        unreachable.contains("nothing answers there"),
        "{unreachable}"
    );

    let locked = RedisProcess::start(&[]).await.unwrap();
    query(&locked.url(), &["CONFIG", "SET", "requirepass", "s3cret"]).await;
    let needs = check(&locked.url()).unwrap_err().to_string();
    assert!(needs.contains("needs a password"), "{needs}");
    let with_password = locked.url().replace("redis://", "redis://:s3cret@");
    check(&with_password).unwrap();

    let no_config = RedisProcess::start(&["--rename-command", "CONFIG", ""])
        .await
        .unwrap();
    let refused = check(&no_config.url()).unwrap_err().to_string();
    assert!(refused.contains("refused CONFIG"), "{refused}");

    let master = RedisProcess::start(&[]).await.unwrap();
    let port = master.port().to_string();
    let replica = RedisProcess::start(&["--replicaof", "127.0.0.1", &port])
        .await
        .unwrap();
    let read_only = check(&replica.url()).unwrap_err().to_string();
    assert!(read_only.contains("read-only replica"), "{read_only}");
}
