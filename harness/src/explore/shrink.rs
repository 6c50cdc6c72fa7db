//! Shrinking: the smallest schedule that still shows a violation.
//!
//! Faults are dropped one at a time, in schedule order; a fault whose
//! removal still lets the same check fail stays out. What is left is a
//! schedule where every fault mattered in at least one run. Timing varies
//! between runs, so "still fails" is one rerun's word: a shrunk schedule
//! is a strong hint, not a proof, and its replay line lets anyone try again.

use super::trial::{self, TrialOutcome, TrialSpec};
use crate::check::Finding;
use crate::error::Result;
use crate::scenario::ScenarioEnv;

/// The faults kept, and the last run that still failed with them (`None`
/// when no fault could be dropped).
pub async fn shrink(
    env: &ScenarioEnv,
    spec: &TrialSpec,
    finding: Finding,
    mut tried: impl FnMut(&[usize], bool),
) -> Result<(Vec<usize>, Option<TrialOutcome>)> {
    let mut keep = spec.schedule(env.timing.ttl).numbers();
    let mut last = None;
    for fault in keep.clone() {
        let candidate: Vec<usize> = keep.iter().copied().filter(|f| *f != fault).collect();
        let attempt = TrialSpec {
            keep: Some(candidate.clone()),
            ..spec.clone()
        };
        let outcome = trial::run(env, &attempt).await?;
        let still = outcome.violations.iter().any(|v| v.finding == finding);
        tried(&candidate, still);
        if still {
            keep = candidate;
            last = Some(outcome);
        }
    }
    Ok((keep, last))
}
