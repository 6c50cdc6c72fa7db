//! A grant and its token stand or fall together. A Lua script is not a
//! transaction: a command that fails stops the script without undoing the
//! ones before it. So the acquire script draws the token first and writes
//! the lock after; when the counter cannot be incremented (it holds
//! something that is not an integer), the client gets an error and the lock
//! key is never written. The server, not the client, is asked what is there.

use harness::server::{Backend, Node};
use lockcore::{ClientSetup, LockConfig, LockError};
use stage8::{FencedLock, counter_key};
use std::time::Duration;

const KEY: &str = "lock:stock";

async fn inspect<T: redis::FromRedisValue>(node: &Node, command: &mut redis::Cmd) -> T {
    let mut conn = lockcore::connect(&node.url(), "inspector").await.unwrap();
    command.query_async(&mut conn).await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_counter_that_is_not_a_number_grants_nothing() {
    let backend = Backend::from_env().unwrap_or_else(|e| panic!("{e}"));
    let node = Node::start(&backend, "lock", &[]).await.unwrap();
    let lock = FencedLock::connect(ClientSetup::new(
        vec![node.url()],
        "client-A",
        LockConfig::with_ttl(Duration::from_secs(30)),
    ))
    .await
    .unwrap();
    // Someone (a typo, another program) wrote a word where the counter is.
    let () = inspect(
        &node,
        redis::cmd("SET").arg(counter_key(KEY)).arg("not-a-number"),
    )
    .await;

    let refused = lock.try_lock().await;
    assert!(
        matches!(&refused, Err(LockError::Redis(e)) if e.to_string().contains("not an integer")),
        "the INCR's error reaches the client: {refused:?}"
    );
    let exists: i64 = inspect(&node, redis::cmd("EXISTS").arg(KEY)).await;
    assert_eq!(exists, 0, "a lock was granted without a token");

    // Once the counter is a number again, grants and tokens come together.
    let () = inspect(&node, redis::cmd("SET").arg(counter_key(KEY)).arg(41)).await;
    let fenced = lock.try_lock().await.unwrap().expect("the lock is free");
    assert_eq!(fenced.token, 42);
    let value: Option<String> = inspect(&node, redis::cmd("GET").arg(KEY)).await;
    assert_eq!(value.as_deref(), Some(fenced.value.as_str()));
    let pttl: i64 = inspect(&node, redis::cmd("PTTL").arg(KEY)).await;
    assert!(pttl > 0, "the lock carries its TTL ({pttl})");
    // And a refusal draws no token.
    assert_eq!(lock.try_lock().await.unwrap(), None);
    let counter: i64 = inspect(&node, redis::cmd("GET").arg(counter_key(KEY))).await;
    assert_eq!(counter, 42);
}
