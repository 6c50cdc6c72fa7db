//! Crash before expire: the holder dies in-process right after its first
//! lock command succeeds. For stages 1–2 that is after `SETNX` and before
//! any `EXPIRE`; from stage 3 on the expiry came in the same command.

use lockcore::{Description, LockError, Point, StageEntry};

use super::{Recorded, Run, ScenarioEnv};
use crate::error::{HarnessError, Result};

pub(super) fn not_applicable(stage: &Description) -> Option<&'static str> {
    (stage.stage == 0).then_some("no lock command to crash after")
}

pub(super) async fn run(stage: StageEntry, env: ScenarioEnv) -> Result<Recorded> {
    let mut run = Run::start(stage, env, 1).await?;
    let doomed = run.client("client-A").await?;
    // Whichever the stage reaches first: stages 1–2 stop at AfterSetnx.
    doomed.faults().crash_at(Point::AfterSetnx);
    doomed.faults().crash_at(Point::AfterAcquire);
    // Asked with the run's patience, not once: a Redlock attempt on a
    // loaded machine may miss its quorum, and the crash comes only with a
    // successful one.
    match doomed.acquire(run.env.timing.patience()).await {
        Err(HarnessError::Lock(LockError::Crashed(_))) => {}
        other => {
            return Err(HarnessError::StoryNotTold(format!(
                "{} never reached a fault point after taking the lock ({other:?})",
                run.stage.description.name
            )));
        }
    }
    drop(doomed); // a dead process's connections close
    let pttl = run.lock_pttl().await?;
    run.narrate(format!("PTTL of the lock key after the crash: {pttl}"));
    run.facts.insert("pttl_after_death", pttl);

    let survivor = run.client("client-B").await?;
    run.survivor_buys(&survivor).await?;
    run.record().await
}
