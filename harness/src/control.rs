//! Stage 0, the control: the same workload with no lock at all. Whatever it
//! breaks, a lock has to fix.

use std::time::Duration;

use async_trait::async_trait;
use lockcore::{
    Acquired, ClientSetup, ConnectFuture, Description, DistributedLock, LockError, Release,
    StageEntry,
};

/// What stage 0 is.
pub const DESCRIPTION: Description = Description {
    stage: 0,
    name: "stage0",
    title: "no lock at all (the control)",
    acquire_commands: "(nothing)",
    release_commands: "(nothing)",
    reentrant: false,
    nodes: 1,
    fault_points: &[],
    home: lockcore::Home::REDIS,
};

/// Says yes to everyone, at once, always.
pub struct NoLock;

#[async_trait]
impl DistributedLock for NoLock {
    fn describe(&self) -> Description {
        DESCRIPTION
    }

    async fn try_acquire(&self) -> Result<Option<Acquired>, LockError> {
        Ok(Some(Acquired::with_value("(no lock)")))
    }

    async fn acquire(&self, _wait: Duration) -> Result<Option<Acquired>, LockError> {
        self.try_acquire().await
    }

    async fn release(&self, _held: &Acquired) -> Result<Release, LockError> {
        Ok(Release::NothingDeleted)
    }
}

/// Stage 0 as the harness and the CLI see it.
pub const STAGE0: StageEntry = StageEntry {
    description: DESCRIPTION,
    connect,
};

fn connect(_setup: ClientSetup) -> ConnectFuture {
    Box::pin(async { Ok(Box::new(NoLock) as Box<dyn DistributedLock>) })
}
