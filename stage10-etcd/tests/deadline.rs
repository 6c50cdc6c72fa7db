//! A wait with no end the clock can count (`Duration::MAX`, a "forever"
//! some callers pass) is refused with a clear error, not a panic on
//! `Instant` arithmetic.

use std::time::Duration;

use crate::common;

use common::{etcd_lock, patience, start};
use harness::workload::Fencing;
use lockcore::{LockError, Release};

#[tokio::test(flavor = "multi_thread")]
async fn a_wait_beyond_the_clock_is_refused_not_a_panic() {
    let run = start(0, Fencing::default()).await;
    let a = etcd_lock(&run, "client-A").await;
    let refused = a.lock(Duration::MAX).await;
    assert!(matches!(refused, Err(LockError::Config(_))), "{refused:?}");
    let held = a.lock(patience()).await.unwrap().expect("a free lock");
    assert_eq!(a.unlock(&held).await.unwrap(), Release::Deleted);
}
