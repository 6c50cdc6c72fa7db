//! The seeds' "unlock in finally", in Rust terms: a guard that gives the
//! lock back on every way out of the critical section.
//!
//! Business code that ends with `release(...)` skips it when anything above
//! returns early (`?` on an error) or panics; the `business-error` scenario
//! shows what that costs each stage. A guard moves the release into `Drop`,
//! which runs on every path: the normal end, an early return, and the
//! unwinding of a panic.
//!
//! `Drop` cannot wait for Redis, so a guard dropped without
//! [`LockGuard::release`] sends its release from a task of its own. The
//! normal path calls `release().await`, which waits for the answer.

use std::sync::Arc;

use lockcore::{Acquired, DistributedLock, LockError};

use crate::client::Released;
use crate::error::Result;
use crate::history::History;

// ANCHOR: guard
/// A held lock that is released when the guard goes out of scope.
pub struct LockGuard {
    lock: Arc<dyn DistributedLock>,
    held: Option<Acquired>,
    client: String,
    history: History,
}

impl LockGuard {
    pub(crate) fn new(
        lock: Arc<dyn DistributedLock>,
        held: Acquired,
        client: &str,
        history: History,
    ) -> Self {
        Self {
            lock,
            held: Some(held),
            client: client.to_owned(),
            history,
        }
    }

    /// What the lock granted (value, fencing token…).
    pub fn held(&self) -> &Acquired {
        self.held
            .as_ref()
            .expect("a guard holds its lock until it is released")
    }

    /// The normal way out: releases and waits for the answer. A refusal
    /// (not the owner) is a result, [`Released::NotOwner`], as for a client.
    pub async fn release(mut self) -> Result<Released> {
        let held = self.held.take().expect("released once");
        release(self.lock.clone(), held, &self.client, &self.history).await
    }
}

impl Drop for LockGuard {
    /// Every other way out (an early return, a panic): the release is sent
    /// from a task, since `drop` cannot wait.
    fn drop(&mut self) {
        let Some(held) = self.held.take() else {
            return;
        };
        let (lock, client, history) =
            (self.lock.clone(), self.client.clone(), self.history.clone());
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { release(lock, held, &client, &history).await.ok() });
        }
    }
}
// ANCHOR_END: guard

async fn release(
    lock: Arc<dyn DistributedLock>,
    held: Acquired,
    client: &str,
    history: &History,
) -> Result<Released> {
    history.release_sent(client);
    match lock.release(&held).await {
        Ok(release) => {
            history.released(client, release);
            Ok(Released::Answered(release))
        }
        Err(e) => {
            history.release_failed(client, &e);
            match e {
                LockError::NotOwner => Ok(Released::NotOwner),
                other => Err(other.into()),
            }
        }
    }
}
