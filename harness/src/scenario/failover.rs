//! failover: not built yet.

use lockcore::{Description, StageEntry};

use super::{Outcome, ScenarioEnv};
use crate::error::{HarnessError, Result};

pub(super) fn not_applicable(_stage: &Description) -> Option<&'static str> {
    None
}

pub(super) async fn run(_stage: StageEntry, _env: ScenarioEnv) -> Result<Outcome> {
    Err(HarnessError::Unsupported("the failover scenario is not built yet".into()))
}
