//! Killed holder: a real holder process takes the lock, starts its business,
//! and is killed with `kill -9`. It sends no DEL, ever. Does anyone get the
//! lock again?

use lockcore::StageEntry;

use super::{Recorded, Run, ScenarioEnv};
use crate::error::Result;

/// Every stage can be told this story.
pub(super) use super::always as not_applicable;

pub(super) async fn run(stage: StageEntry, env: ScenarioEnv) -> Result<Recorded> {
    let mut run = Run::start(stage, env, 1).await?;
    let mut holder = run.holder_holding_the_lock("client-A").await?;
    holder.read_stock().await?;
    holder.kill()?;
    let pttl = run.lock_pttl().await?;
    run.narrate(format!(
        "PTTL of the lock key after the holder died: {pttl}"
    ));
    run.facts.insert("pttl_after_death", pttl);

    let survivor = run.client("client-B").await?;
    run.survivor_buys(&survivor).await?;
    run.record().await
}
