//! What a judged run comes to: its verdict beside what it recorded.

use std::collections::BTreeMap;

use super::{Finding, Verdict, judge};
use crate::history::Recorded;
use crate::observe::Timeline;

/// The word that opens the line a judged timeline ends with.
const VERDICT: &str = "verdict";

/// The words that open the judge's lines on a timeline (`verdict: …`, and
/// each finding's, `OVERSOLD: …`): what a sequence diagram is given to draw
/// them as verdicts, since what was seen knows no verdict.
pub fn verdict_words() -> Vec<&'static str> {
    std::iter::once(VERDICT)
        .chain(Finding::ALL.map(Finding::label))
        .collect()
}

/// What a run saw.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The observers that fired.
    pub verdict: Verdict,
    /// Numbers the scenario measured: `orders`, `initial_stock`,
    /// `pttl_after_death`…
    pub facts: BTreeMap<&'static str, i64>,
    /// Everything that happened, in words.
    pub timeline: Timeline,
}

impl Outcome {
    /// Judges what a run recorded; the timeline ends with what the judge
    /// saw and the verdict.
    pub fn judged(recorded: Recorded) -> Self {
        let Recorded { history, facts } = recorded;
        let (verdict, said) = judge(&history);
        let timeline = Timeline::of(&history);
        for line in said {
            timeline.record("harness", line);
        }
        timeline.record("harness", format!("{VERDICT}: {verdict}"));
        Self {
            verdict,
            facts,
            timeline,
        }
    }

    /// Panics, naming the verdict, unless every one of `findings` fired.
    pub fn assert_fired(&self, findings: &[Finding]) {
        let missing: Vec<&str> = findings
            .iter()
            .filter(|f| !self.verdict.has(**f))
            .map(|f| f.label())
            .collect();
        assert!(
            missing.is_empty(),
            "expected {} to fire; the verdict is {}",
            missing.join(" "),
            self.verdict
        );
    }

    /// Panics, naming the verdict, if any of `findings` fired.
    pub fn assert_not_fired(&self, findings: &[Finding]) {
        let fired: Vec<&str> = findings
            .iter()
            .filter(|f| self.verdict.has(**f))
            .map(|f| f.label())
            .collect();
        assert!(
            fired.is_empty(),
            "expected {} not to fire; the verdict is {}",
            fired.join(" "),
            self.verdict
        );
    }

    /// A measured number; panics with the facts listed when it is missing,
    /// which is a bug in the scenario, not in the lock.
    pub fn fact(&self, name: &str) -> i64 {
        *self
            .facts
            .get(name)
            .unwrap_or_else(|| panic!("the scenario measured no `{name}`; it has {:?}", self.facts))
    }
}
