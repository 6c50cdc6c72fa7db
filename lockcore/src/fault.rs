//! Fault points: where a test may pause or crash a client, on purpose.
//!
//! The articles' races ("the process dies between SETNX and EXPIRE", "the lock
//! expires between GET and DEL") are rare by nature. To show them every time,
//! a stage marks the dangerous places in its own code with
//! `self.faults.reached(Point::…).await?`. With no hook installed that line
//! does nothing. A test installs a [`Hook`] that decides, per point, whether
//! the client goes on, waits until the test lets it go (a pause), or crashes.
//!
//! Hooks belong to one lock instance, never to global state, so tests that
//! fault different clients run side by side.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;

use crate::LockError;

/// The named places where a fault can strike.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Point {
    /// Stages 1–2: `SETNX` succeeded; nothing else has been sent yet.
    AfterSetnx,
    /// Stage 2: `EXPIRE` was sent too; the lock is now safe from a crash.
    AfterExpire,
    /// Stages 3–8: the lock was taken in one command or script.
    AfterAcquire,
    /// Stage 4: `GET` said the lock is ours; `DEL` has not been sent yet.
    BetweenGetAndDel,
    /// Reached by the workload, not the lock: inside the critical section,
    /// after reading the stock and before writing it back.
    InCriticalSection,
    /// Reached by the workload, not the lock: the business is done and the
    /// release is about to be sent.
    BeforeRelease,
}

impl Point {
    /// Every point, for listings and parsing.
    pub const ALL: [Point; 6] = [
        Point::AfterSetnx,
        Point::AfterExpire,
        Point::AfterAcquire,
        Point::BetweenGetAndDel,
        Point::InCriticalSection,
        Point::BeforeRelease,
    ];

    /// The kebab-case name used in timelines and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Point::AfterSetnx => "after-setnx",
            Point::AfterExpire => "after-expire",
            Point::AfterAcquire => "after-acquire",
            Point::BetweenGetAndDel => "between-get-and-del",
            Point::InCriticalSection => "in-critical-section",
            Point::BeforeRelease => "before-release",
        }
    }
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a hook tells the client to do at a point. A pause is a hook that
/// takes its time before answering [`Reaction::GoOn`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reaction {
    /// Carry on as if nothing happened.
    GoOn,
    /// Die here: send nothing more, as a killed process would.
    Crash,
}

/// Decides what happens at each fault point. Implemented by the harness.
#[async_trait]
pub trait Hook: Send + Sync {
    /// Called when a client reaches `point`; may wait as long as it likes.
    async fn reached(&self, point: Point) -> Reaction;
}

/// A lock instance's fault points: its hook, if any, and whether it has
/// crashed. Clones share both.
#[derive(Clone, Default)]
pub struct FaultPoints {
    hook: Option<Arc<dyn Hook>>,
    crashed: Arc<AtomicBool>,
}

impl fmt::Debug for FaultPoints {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultPoints")
            .field("hooked", &self.hook.is_some())
            .field("crashed", &self.has_crashed())
            .finish()
    }
}

impl FaultPoints {
    /// No hook: every point is a no-op. What production code would use.
    pub fn none() -> Self {
        Self::default()
    }

    /// Fault points driven by `hook`.
    pub fn with_hook(hook: Arc<dyn Hook>) -> Self {
        Self {
            hook: Some(hook),
            crashed: Arc::default(),
        }
    }

    /// Marks `point` as reached. Returns [`LockError::Crashed`] when the hook
    /// says crash (or a crash happened earlier), so that `?` stops the caller
    /// before it sends another command.
    pub async fn reached(&self, point: Point) -> Result<(), LockError> {
        if self.has_crashed() {
            return Err(LockError::Crashed(point));
        }
        let Some(hook) = &self.hook else {
            return Ok(());
        };
        match hook.reached(point).await {
            Reaction::GoOn => Ok(()),
            Reaction::Crash => {
                self.crashed.store(true, Ordering::SeqCst);
                Err(LockError::Crashed(point))
            }
        }
    }

    /// Whether this client has crashed. Background tasks (a watchdog) check
    /// it so that they die with their client.
    pub fn has_crashed(&self) -> bool {
        self.crashed.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct CrashAt(Point);

    #[async_trait]
    impl Hook for CrashAt {
        async fn reached(&self, point: Point) -> Reaction {
            if point == self.0 {
                Reaction::Crash
            } else {
                Reaction::GoOn
            }
        }
    }

    #[tokio::test]
    async fn a_crash_is_permanent() {
        let faults = FaultPoints::with_hook(Arc::new(CrashAt(Point::AfterSetnx)));
        assert!(faults.reached(Point::AfterAcquire).await.is_ok());
        assert!(matches!(
            faults.reached(Point::AfterSetnx).await,
            Err(LockError::Crashed(Point::AfterSetnx))
        ));
        // A dead client stays dead, whatever point it would reach next.
        assert!(faults.reached(Point::AfterAcquire).await.is_err());
        assert!(faults.clone().has_crashed());
    }

    #[tokio::test]
    async fn no_hook_is_a_no_op() {
        for point in Point::ALL {
            assert!(FaultPoints::none().reached(point).await.is_ok());
        }
    }
}
