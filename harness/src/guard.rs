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
//!
//! What a release came to ([`Released`]) is defined here: a guard's release
//! and a client's both answer with it, and the client stands on the guard.

use std::sync::Arc;

use lockcore::{Acquired, DistributedLock, LockError, Release};

use crate::error::{HarnessError, Result};
use crate::history::History;

/// What a release came to, as the client (or its guard) saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Released {
    /// The lock answered: what the server deleted (or left held).
    Answered(Release),
    /// The lock refused: this client is not the owner any more.
    NotOwner,
}

impl Released {
    /// The answer; a refusal as an error, for stories in which the client
    /// is sure to still own its lock.
    pub fn answered(self) -> Result<Release> {
        match self {
            Self::Answered(release) => Ok(release),
            Self::NotOwner => Err(HarnessError::Lock(LockError::NotOwner)),
        }
    }
}

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
