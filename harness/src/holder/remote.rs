//! A client whose lock and business live in a holder process: the client
//! of a row that is a command (`--holder-cmd`, a library's adapter), not a
//! stage of this workspace. [`RemoteLock`] is a [`DistributedLock`] whose
//! every call is a request over the protocol ([`super::protocol`]), so the
//! stories drive it as they drive a stage, and a [`Client`](crate::Client)
//! made of it reads and sells through the holder too.
//!
//! The fault points stay on this side of the pipe (see the protocol's
//! "Fault points"): `after-acquire` is reached here once the holder's
//! `acquired` answer came, `in-critical-section` and `before-release` by
//! the client as for a stage. A pause there is this side not sending the
//! next request; a crash is `kill -9` of the holder, which sends nothing
//! more, ever, as a crashed process would.

use std::time::Duration;

use async_trait::async_trait;
use lockcore::{Acquired, Description, DistributedLock, FaultPoints, LockError, Point, Release};
use tokio::sync::Mutex;

use super::launcher::Launcher;
use super::protocol;
use super::protocol::HolderSpec;
use super::wire::Wire;
use crate::error::{HarnessError, Result};
use crate::process::{self, Signal};
use crate::workload::Sale;

/// A lock held by a holder process, driven over the protocol.
pub struct RemoteLock {
    description: Description,
    pid: u32,
    wire: Mutex<Wire>,
    faults: FaultPoints,
}

impl RemoteLock {
    /// Starts `launcher`'s command as the holder `spec` describes, for a
    /// row described as `description`, its fault points planned by `faults`.
    /// Returns it once the holder is ready, with how long that took.
    pub async fn spawn(
        launcher: &Launcher,
        spec: &HolderSpec,
        description: Description,
        faults: FaultPoints,
    ) -> Result<(Self, Duration)> {
        let (wire, took) = Wire::start(launcher, spec).await?;
        let lock = Self {
            description,
            pid: wire.pid(),
            wire: Mutex::new(wire),
            faults,
        };
        Ok((lock, took))
    }

    /// The holder's process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// `kill -9` of the holder (a crash at a fault point): it sends nothing
    /// more. Reaped when this lock is dropped.
    pub fn kill(&self) {
        let _ = process::send(self.pid, Signal::Kill);
    }

    async fn ask<T>(
        &self,
        request: &str,
        may_take: Duration,
        parse: impl FnOnce(&str) -> Result<T>,
    ) -> Result<T> {
        let mut wire = self.wire.lock().await;
        let answer = wire.ask(request, may_take).await?;
        if let Some(failed) = protocol::failed(&answer) {
            return Err(HarnessError::Lock(failed));
        }
        wire.parse(request, &answer, parse)
    }

    /// Reads the stock in the holder.
    pub async fn read(&self) -> Result<i64> {
        self.ask("read", Duration::ZERO, protocol::stock).await
    }

    /// Sells in the holder, from the stock `read`.
    pub async fn sell(&self, read: i64) -> Result<Sale> {
        self.ask(&format!("sell {read}"), Duration::ZERO, protocol::sale)
            .await
    }
}

/// A holder's misbehaviour, as the lock contract carries errors.
fn holder_error(e: HarnessError) -> LockError {
    match e {
        HarnessError::Holder(why) => LockError::Holder(why),
        HarnessError::NotApplicable(reason) => LockError::NotApplicable(reason),
        HarnessError::Lock(e) => e,
        other => LockError::Holder(other.to_string()),
    }
}

#[async_trait]
impl DistributedLock for RemoteLock {
    fn describe(&self) -> Description {
        self.description
    }

    async fn try_acquire(&self) -> Result<Option<Acquired>, LockError> {
        self.acquire(Duration::ZERO).await
    }

    async fn acquire(&self, wait: Duration) -> Result<Option<Acquired>, LockError> {
        if self.faults.has_crashed() {
            return Err(LockError::Crashed(Point::AfterAcquire));
        }
        let request = format!("acquire {}", wait.as_millis());
        let held = self
            .ask(&request, wait, protocol::acquired)
            .await
            .map_err(holder_error)?;
        if held.is_some()
            && let Err(e) = self.faults.reached(Point::AfterAcquire).await
        {
            if matches!(e, LockError::Crashed(_)) {
                self.kill();
            }
            return Err(e);
        }
        Ok(held)
    }

    async fn release(&self, _held: &Acquired) -> Result<Release, LockError> {
        match self
            .ask("release", Duration::ZERO, protocol::released)
            .await
            .map_err(holder_error)?
        {
            Ok(released) => Ok(released),
            Err(()) => Err(LockError::NotOwner),
        }
    }
}

/// Why a story's step cannot be taken by a holder process: the protocol
/// has no request for it.
pub const NOT_OVER_THE_PROTOCOL: &str = "a holder process sells with a request id of its own and \
     commits at once: the protocol has no retry of a request id and no open transaction";

/// The story's answer for a row that is a command, when the story needs
/// what the protocol cannot ask of a holder ([`NOT_OVER_THE_PROTOCOL`]).
pub fn needs_in_process_client(stage: &Description) -> Option<&'static str> {
    (stage.stage == COMMAND_ROW).then_some(NOT_OVER_THE_PROTOCOL)
}

/// The stage number of a row that is a command: not one of the course's
/// stages (no story treats it as stage 0, the row without a lock).
pub const COMMAND_ROW: u8 = 100;

/// The description of a row that is a command called `name`: one Redis
/// lock node that keeps the key as given (a library's row says otherwise
/// where it differs), not reentrant as far as anyone knows, and the one
/// fault point of its own a library we only call has (`after-acquire`,
/// reached on this side; `in-critical-section` and `before-release` are
/// the workload's).
pub const fn row_description(name: &'static str, title: &'static str) -> Description {
    Description {
        stage: COMMAND_ROW,
        name,
        title,
        acquire_commands: "the library's own",
        release_commands: "the library's own",
        reentrant: false,
        nodes: 1,
        fault_points: &[Point::AfterAcquire],
        home: lockcore::Home::REDIS,
    }
}

/// A [`lockcore::StageEntry`] for a row that is a command. Its `connect`
/// is never called: a [`ClientFactory`](crate::ClientFactory) with a
/// holder command makes [`RemoteLock`]s instead; called anyway, it says so.
pub fn row_entry(description: Description) -> lockcore::StageEntry {
    lockcore::StageEntry {
        description,
        connect: |_| {
            Box::pin(async {
                Err(LockError::Config(
                    "a row that is a command has no client in this process".into(),
                ))
            })
        },
    }
}
