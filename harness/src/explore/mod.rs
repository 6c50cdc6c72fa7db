//! The explorer: random fault schedules against many clients, a history of
//! everything observed, and checkers that judge the history alone (the
//! run's one record, [`crate::history`], and its one judge,
//! [`crate::check`], shared with the scripted stories).
//!
//! A scripted scenario shows one interleaving. The explorer, in the manner
//! of Jepsen, runs many: trial after trial, each on fresh servers, several
//! clients buy in a loop while a nemesis strikes at random moments drawn
//! from a seed. It keeps Jepsen's rooms apart, so that each can be read
//! and trusted alone:
//!
//! - [`generator`]: what the clients do (real holder processes, driven);
//! - [`schedule`]: what faults happen and when, as a seeded [`Schedule`]
//!   (pure: drawn before anything runs);
//! - [`nemesis`]: how a schedule is played against real processes,
//!   proxies and nodes, aimed at the holders' critical sections;
//! - the history records what was observed, as invocations and
//!   completions, with the servers' own record; the checkers judge it, from
//!   the history alone;
//! - [`trial`]: one trial, start to verdict; [`shrink`]: the smallest
//!   schedule that still shows a violation; [`first`]: how fast each
//!   violation was first found.
//!
//! [`explore`] runs trials for a time budget and gathers a [`StageReport`]:
//! trials, operations, faults by kind, the first violation of each check
//! (with its seed, trial, schedule, history slice and timeline), and the
//! throughput of critical sections.

pub mod first;
pub mod generator;
pub mod nemesis;
mod rng;
pub mod schedule;
pub mod shrink;
mod slots;
pub mod trial;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use lockcore::StageEntry;
use tokio::time::Instant;

pub use crate::check::{Finding, Violation};
pub use first::First;
pub use schedule::{Fault, Kind, Schedule};
pub use trial::{TrialOutcome, TrialSpec};

use crate::error::{HarnessError, Result};
use crate::observe::Timeline;
use crate::scenario::ScenarioEnv;

/// What to explore.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The stage under test.
    pub stage: StageEntry,
    /// The seed; trial `n` of seed `s` always has the same schedule.
    pub seed: u64,
    /// Clients per trial.
    pub clients: usize,
    /// The fault kinds the nemesis draws from (none: no faults at all).
    pub kinds: Vec<Kind>,
    /// How long to keep starting trials (at least one always runs).
    pub budget: Duration,
    /// Where the history goes, as JSON lines (one file per plan).
    pub history_file: Option<PathBuf>,
}

impl Plan {
    /// The spec of trial `trial`.
    pub fn trial(&self, trial: u64) -> TrialSpec {
        TrialSpec {
            stage: self.stage,
            seed: self.seed,
            trial,
            clients: self.clients,
            kinds: self.kinds.clone(),
            keep: None,
        }
    }
}

/// The first violation of one check, and how often it was seen.
#[derive(Debug, Clone)]
pub struct Found {
    /// The trial that showed it first.
    pub spec: TrialSpec,
    /// What the checker said.
    pub violation: Violation,
    /// The trial's faults.
    pub schedule: Schedule,
    /// The smallest slice of the history that shows it, one entry a line.
    pub slice: String,
    /// The timeline around it, for the clients involved.
    pub timeline: String,
    /// In how many trials this check failed.
    pub trials: u64,
    /// How fast it was found (set when exploring; trial 0 otherwise).
    pub first: First,
}

impl Found {
    /// Reads the violation out of a finished trial.
    pub fn from_trial(spec: &TrialSpec, outcome: &TrialOutcome, violation: &Violation) -> Self {
        let entries = outcome.history.entries();
        let slice = violation.slice(&entries);
        let text: String = slice.iter().map(|e| format!("{}\n", e.render())).collect();
        let mut actors = violation.processes.clone();
        actors.extend(["harness".to_owned(), "redis".to_owned()]);
        // The final read's moment in the timeline holds only the harness's
        // own reckoning; the timeline is wanted where clients acted.
        let acted: Vec<&crate::history::Entry> = slice
            .iter()
            .copied()
            .filter(|e| !matches!(e.what, crate::history::What::Final { .. }))
            .collect();
        let told = Timeline::of(&outcome.history);
        let timeline: Vec<String> = windows(&acted)
            .into_iter()
            .map(|(from, to)| told.render_part(from, to, |event| actors.contains(&event.actor)))
            .collect();
        let timeline = timeline.join("          …\n");
        Self {
            spec: spec.clone(),
            violation: violation.clone(),
            schedule: outcome.schedule.clone(),
            slice: text,
            timeline: cap_lines(&timeline, 60),
            trials: 1,
            first: First {
                trial: spec.trial,
                operations: first::operations_until(&entries, violation),
                after: Duration::ZERO,
            },
        }
    }
}

/// The stretches of time around each entry of `slice` (from a little
/// before to just after), merged where they touch.
fn windows(slice: &[&crate::history::Entry]) -> Vec<(Duration, Duration)> {
    const BEFORE: Duration = Duration::from_millis(40);
    const AFTER: Duration = Duration::from_millis(10);
    let mut windows: Vec<(Duration, Duration)> = Vec::new();
    for entry in slice {
        let (from, to) = (entry.at.saturating_sub(BEFORE), entry.at + AFTER);
        match windows.last_mut() {
            Some(last) if from <= last.1 => last.1 = last.1.max(to),
            _ => windows.push((from, to)),
        }
    }
    windows
}

/// At most `most` lines: the first and the last halves, and how many were
/// left out between them.
fn cap_lines(text: &str, most: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= most {
        return text.to_owned();
    }
    let half = most / 2;
    let mut out: String = lines[..half].iter().map(|l| format!("{l}\n")).collect();
    out.push_str(&format!(
        "          … {} lines left out …\n",
        lines.len() - 2 * half
    ));
    for line in &lines[lines.len() - half..] {
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// What exploring one stage gave.
#[derive(Debug, Clone, Default)]
pub struct StageReport {
    /// Trials run.
    pub trials: u64,
    /// Trials that could not run (a server would not start…).
    pub failed_trials: u64,
    /// The last reason a trial could not run.
    pub last_error: Option<String>,
    /// Client operations invoked.
    pub operations: usize,
    /// Critical sections entered.
    pub sections: usize,
    /// Time the clients spent working, over all trials.
    pub worked: Duration,
    /// Faults played, by kind.
    pub faults: BTreeMap<Kind, usize>,
    /// The first violation of each check.
    pub found: BTreeMap<Finding, Found>,
    /// Trials where the machine stalled a client past the TTL with no
    /// fault aimed at it.
    pub disturbed: u64,
    /// The checks that failed in trials the machine did not disturb.
    pub found_undisturbed: std::collections::BTreeSet<Finding>,
    /// Time since exploring began, at the end of the last trial added.
    pub elapsed: Duration,
}

impl StageReport {
    /// Critical sections per second of work.
    pub fn throughput(&self) -> f64 {
        let secs = self.worked.as_secs_f64();
        if secs > 0.0 {
            self.sections as f64 / secs
        } else {
            0.0
        }
    }

    /// Adds a finished trial, which ended `elapsed` after exploring began.
    pub fn add(&mut self, spec: &TrialSpec, outcome: &TrialOutcome, elapsed: Duration) {
        let operations_before = self.operations;
        self.elapsed = elapsed;
        self.trials += 1;
        self.operations += outcome.operations;
        self.sections += outcome.sections;
        self.worked += outcome.worked;
        for (_, fault) in &outcome.schedule.0 {
            *self.faults.entry(fault.kind).or_default() += 1;
        }
        self.disturbed += u64::from(outcome.disturbed);
        if !outcome.disturbed {
            self.found_undisturbed
                .extend(outcome.violations.iter().map(|v| v.finding));
        }
        for violation in &outcome.violations {
            self.found
                .entry(violation.finding)
                .and_modify(|found| found.trials += 1)
                .or_insert_with(|| {
                    let mut found = Found::from_trial(spec, outcome, violation);
                    found.first.operations += operations_before;
                    found.first.after = elapsed;
                    found
                });
        }
    }
}

/// How many trials in a row may fail to run before exploring gives up.
const FAILED_TRIALS_IN_A_ROW: u32 = 3;

/// Runs trials of `plan` until its budget is spent or `enough` says so,
/// calling `progress` after each. The history of every trial is appended
/// to the plan's history file.
pub async fn explore(
    env: &ScenarioEnv,
    plan: &Plan,
    mut enough: impl FnMut(&StageReport) -> bool,
    mut progress: impl FnMut(&StageReport, &TrialOutcome),
) -> Result<StageReport> {
    let mut file = match &plan.history_file {
        Some(path) => {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            Some(std::fs::File::create(path)?)
        }
        None => None,
    };
    let started = Instant::now();
    let mut report = StageReport::default();
    let mut failed_in_a_row = 0;
    for number in 0.. {
        if number > 0 && (started.elapsed() >= plan.budget || enough(&report)) {
            break;
        }
        let spec = plan.trial(number);
        match trial::run(env, &spec).await {
            Ok(outcome) => {
                failed_in_a_row = 0;
                if let Some(file) = file.as_mut() {
                    let label = format!("{}:{number}", plan.seed);
                    file.write_all(outcome.history.json_lines(&label).as_bytes())?;
                }
                report.add(&spec, &outcome, started.elapsed());
                progress(&report, &outcome);
            }
            Err(e) => {
                report.failed_trials += 1;
                report.last_error = Some(e.to_string());
                failed_in_a_row += 1;
                if failed_in_a_row >= FAILED_TRIALS_IN_A_ROW {
                    return Err(HarnessError::TrialsFailed {
                        tried: FAILED_TRIALS_IN_A_ROW,
                        last: Box::new(e),
                    });
                }
            }
        }
    }
    Ok(report)
}
