//! Bad settings and a missing server are clear errors, not panics.

use std::time::Duration;

use lockcore::{ClientSetup, LockConfig, LockError};
use stage1::SetnxLock;

fn setup(url: &str, ttl: Duration) -> ClientSetup {
    ClientSetup::new(vec![url.to_owned()], "client-A", LockConfig::with_ttl(ttl))
}

#[tokio::test]
async fn a_zero_ttl_is_refused_before_anything_is_sent() {
    let error = SetnxLock::connect(setup("redis://127.0.0.1:1", Duration::ZERO))
        .await
        .err();
    assert!(
        matches!(&error, Some(LockError::Config(message)) if message.contains("TTL")),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_malformed_url_is_a_redis_error_naming_the_problem() {
    let error = SetnxLock::connect(setup("http://not-redis", Duration::from_secs(1)))
        .await
        .err();
    assert!(matches!(error, Some(LockError::Redis(_))), "{error:?}");
}

#[tokio::test]
async fn a_server_that_is_down_is_an_error_not_a_hang() {
    // Port 1 on loopback: nothing listens there, the connection is refused.
    let error = SetnxLock::connect(setup("redis://127.0.0.1:1", Duration::from_secs(1)))
        .await
        .err();
    let message = error.as_ref().map(ToString::to_string).unwrap_or_default();
    assert!(matches!(error, Some(LockError::Redis(_))), "{message}");
    assert!(message.starts_with("redis:"), "{message}");
}

#[tokio::test]
async fn no_url_at_all_is_a_configuration_error() {
    let setup = ClientSetup::new(
        vec![],
        "client-A",
        LockConfig::with_ttl(Duration::from_secs(1)),
    );
    let error = SetnxLock::connect(setup).await.err();
    assert!(matches!(error, Some(LockError::Config(_))), "{error:?}");
}
