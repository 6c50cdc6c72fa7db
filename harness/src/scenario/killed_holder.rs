//! Killed holder: a real holder process takes the lock, starts its business,
//! and is killed with `kill -9`. It sends no DEL, ever. Does anyone get the
//! lock again?

use lockcore::StageEntry;

use super::{Outcome, Run, ScenarioEnv};
use crate::error::{HarnessError, Result};
use crate::holder::HolderProcess;

pub(super) async fn run(stage: StageEntry, env: ScenarioEnv) -> Result<Outcome> {
    let mut run = Run::start(stage, env, 1).await?;
    let timing = run.env.timing;
    let mut holder = HolderProcess::spawn(&run.env.launcher, &run.factory, "client-A")?;
    if !holder.acquire(timing.patience()).await? {
        return Err(HarnessError::Holder(
            "client-A could not take a free lock".into(),
        ));
    }
    holder.read_stock().await?;
    holder.kill()?;
    let pttl = run.lock_pttl().await?;
    run.narrate(format!(
        "PTTL of the lock key after the holder died: {pttl}"
    ));
    run.facts.insert("pttl_after_death", pttl);

    let survivor = run.client("client-B").await?;
    if let Some(held) = run.probe_for_deadlock(&survivor).await? {
        survivor.buy_one(&held, timing.business).await?;
        survivor.release(&held).await??;
    }
    run.finish().await
}
