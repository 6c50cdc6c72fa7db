//! `lockstages matrix`: every scenario against every stage, each cell on
//! its own Redis servers, compared with the expected matrix.

mod expected;
mod report;

use std::sync::Arc;
use std::time::{Duration, Instant};

use harness::check::Verdict;
use harness::observe::Timeline;
use harness::{Scenario, ScenarioEnv};
use indicatif::{ProgressBar, ProgressStyle};
use lockcore::StageEntry;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

pub use expected::{Expected, expected};
pub use report::{Report, expected_label, legend_entries, short};

/// What one cell gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CellResult {
    /// The scenario ran; these observers fired.
    Ran(Verdict),
    /// The scenario declined this stage, for this reason.
    NotApplicable(&'static str),
    /// The scenario could not run (its error).
    Failed(String),
}

/// One stage × scenario.
#[derive(Debug, Clone)]
pub struct Cell {
    /// The stage (row).
    pub stage: StageEntry,
    /// The scenario (column).
    pub scenario: &'static Scenario,
    /// What the run gave.
    pub result: CellResult,
    /// What it should have given, if the table has the cell.
    pub expected: Option<Expected>,
    /// How long it took.
    pub took: Duration,
    /// What the run recorded: all of it when it ran (for its page), up to
    /// the error when it failed.
    pub timeline: Option<Timeline>,
}

impl Cell {
    /// Whether the run gave what the expected matrix says.
    pub fn matches(&self) -> bool {
        match (&self.result, &self.expected) {
            (CellResult::Ran(got), Some(Expected::Verdict(want))) => got == want,
            (CellResult::NotApplicable(_), Some(Expected::NotApplicable)) => true,
            _ => false,
        }
    }
}

/// How many cells run at once. Each cell's timings have 3x margins; more
/// than this on two cores starts to eat into them.
pub const DEFAULT_JOBS: usize = 3;

/// The columns whose cells spend most of their time waiting on the
/// Sentinels' clocks (a master called down, a replica promoted, an old
/// master demoted) rather than working: they run in a pool of their own,
/// beside the other cells. Waiting costs no CPU, and their margins are
/// hundreds of milliseconds, not the tens the other stories' are.
const SENTINEL_COLUMNS: &[&str] = &[
    "sentinel-failover",
    "split-brain",
    "split-brain-min-replicas",
    "sentinel-failover-wait",
    "sentinel-failover-wait-other-replica",
];

/// The consensus stores' own failures: a cell waits seconds for an
/// election and for a rival to be refused over whole session TTLs. They
/// are the longest cells of the matrix, so they are queued first in their
/// pool (see [`Pool::Ensemble`]).
const ENSEMBLE_COLUMNS: &[&str] = &["leader-killed", "minority-partition"];
/// The Redis Cluster's columns: their cells wait the same way, on the
/// cluster's node timeout, its election and its first two seconds (a new
/// master serves only two seconds after it started), in a pool of their
/// own.
const CLUSTER_COLUMNS: &[&str] = &[
    "cluster-failover",
    "cluster-failover-wait",
    "cluster-partition",
];

/// Where a cell waits for its turn. Each pool has permits of its own, so
/// the cells that mostly wait do not hold up those that mostly work: the
/// Redis cells and the Cluster cells run `jobs` at a time, the Sentinel
/// cells and the consensus stores' one more each. On this project's two
/// cores, with the default 3 jobs, the whole matrix took 45-49 s with 3 of
/// each and the consensus stores' general cells in the Redis pool, and
/// takes 37-45 s so (median 39.3 s over 8 runs). A fourth Cluster cell
/// made it slower (38-46 s): a Cluster cell runs six servers and twelve
/// relays, and polls them, so it is not as idle as the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pool {
    /// Cells on a few Redis servers that start in milliseconds and work
    /// with margins of tens of milliseconds.
    Redis,
    /// The Sentinel columns.
    Sentinel,
    /// The Redis Cluster columns.
    Cluster,
    /// Every cell of a stage on ZooKeeper or etcd: each starts a
    /// three-member ensemble (three JVMs for ZooKeeper), which is most of
    /// the CPU such a cell uses, then waits on sessions and elections (a
    /// `leader-killed` cell waits three 6 s TTLs). One pool for all of
    /// them bounds how many ensembles start at once.
    Ensemble,
}

impl Pool {
    /// Every pool, in the order of their declaration (`pool as usize`).
    const ALL: [Pool; 4] = [Pool::Redis, Pool::Sentinel, Pool::Cluster, Pool::Ensemble];

    fn of(stage: &StageEntry, scenario: &Scenario) -> Self {
        if harness::scenario::ensemble::on_consensus_store(&stage.description) {
            Pool::Ensemble
        } else if SENTINEL_COLUMNS.contains(&scenario.name) {
            Pool::Sentinel
        } else if CLUSTER_COLUMNS.contains(&scenario.name) {
            Pool::Cluster
        } else {
            Pool::Redis
        }
    }

    fn permits(self, jobs: usize) -> usize {
        match self {
            Pool::Redis | Pool::Cluster => jobs,
            Pool::Sentinel | Pool::Ensemble => jobs + 1,
        }
    }
}

/// Runs every pair of `stages` × `scenarios`, `jobs` at a time, with a
/// progress bar on stderr (hidden when `quiet`).
pub async fn run(
    stages: &[StageEntry],
    scenarios: &[&'static Scenario],
    env_for: impl Fn(&StageEntry) -> Result<ScenarioEnv, String>,
    jobs: usize,
    quiet: bool,
) -> Vec<Cell> {
    let total = stages.len() * scenarios.len();
    let progress = if quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(total as u64)
    };
    progress.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} cells  {elapsed}  {wide_msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let pools = Pool::ALL.map(|pool| Arc::new(Semaphore::new(pool.permits(jobs.max(1)))));
    let running = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let mut tasks = JoinSet::new();
    // A pool serves its cells in the order they ask; the longest ones ask
    // first, so that none of them starts last and keeps the run waiting.
    let mut order: Vec<(usize, usize)> = (0..stages.len())
        .flat_map(|row| (0..scenarios.len()).map(move |column| (row, column)))
        .collect();
    order.sort_by_key(|&(_, column)| !ENSEMBLE_COLUMNS.contains(&scenarios[column].name));
    for (row, column) in order {
        let stage = stages[row];
        let scenario: &'static Scenario = scenarios[column];
        let env = env_for(&stage);
        let permits = pools[Pool::of(&stage, scenario) as usize].clone();
        let progress = progress.clone();
        let running = running.clone();
        tasks.spawn(async move {
            let label = format!("{} x {}", stage.description.name, scenario.name);
            let _permit = permits.acquire_owned().await;
            set_running(&running, &progress, Some(&label), None);
            let started = Instant::now();
            let (result, timeline) = run_cell(stage, scenario, env).await;
            // A story this backend cannot tell (a node fault on a
            // reader's own server) has nothing to compare: it expects
            // the n/a it got, and the reason says why.
            let declined = matches!(result, CellResult::NotApplicable(_))
                && (scenario.not_applicable)(&stage.description).is_none();
            set_running(&running, &progress, None, Some(&label));
            progress.inc(1);
            let expected = if declined {
                Some(Expected::NotApplicable)
            } else {
                expected(stage.description.name, scenario.name)
            };
            (
                (row, column),
                Cell {
                    stage,
                    scenario,
                    result,
                    expected,
                    took: started.elapsed(),
                    timeline,
                },
            )
        });
    }
    let mut cells: Vec<((usize, usize), Cell)> = Vec::with_capacity(total);
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(cell) => cells.push(cell),
            Err(e) => progress.println(format!("a cell's task died: {e}")),
        }
    }
    progress.finish_and_clear();
    cells.sort_by_key(|(position, _)| *position);
    cells.into_iter().map(|(_, cell)| cell).collect()
}

fn set_running(
    running: &std::sync::Mutex<Vec<String>>,
    progress: &ProgressBar,
    started: Option<&str>,
    finished: Option<&str>,
) {
    let mut running = running.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(label) = started {
        running.push(label.to_owned());
    }
    if let Some(label) = finished {
        running.retain(|l| l != label);
    }
    progress.set_message(running.join(", "));
}

async fn run_cell(
    stage: StageEntry,
    scenario: &'static Scenario,
    env: Result<ScenarioEnv, String>,
) -> (CellResult, Option<Timeline>) {
    if let Some(reason) = (scenario.not_applicable)(&stage.description) {
        return (CellResult::NotApplicable(reason), None);
    }
    let env = match env {
        // A recorder of the cell's own: its timeline is kept if it fails.
        Ok(env) => ScenarioEnv {
            recorder: harness::FlightRecorder::new(),
            ..env
        },
        Err(e) => return (CellResult::Failed(e), None),
    };
    let recorder = env.recorder.clone();
    match scenario.play(stage, env).await {
        Ok(outcome) => (CellResult::Ran(outcome.verdict), Some(outcome.timeline)),
        // Not these servers' story (LOCKSTAGES_REDIS_URL and a node fault).
        Err(harness::HarnessError::NotApplicable(reason)) => {
            (CellResult::NotApplicable(reason), None)
        }
        // How far the story got: the error alone rarely says which wait
        // or which server gave out.
        Err(e) => (CellResult::Failed(e.to_string()), recorder.timeline()),
    }
}

#[cfg(test)]
mod tests {
    use super::{CLUSTER_COLUMNS, ENSEMBLE_COLUMNS, SENTINEL_COLUMNS};

    #[test]
    fn every_waiting_column_is_a_scenario() {
        let waiting = SENTINEL_COLUMNS
            .iter()
            .chain(ENSEMBLE_COLUMNS)
            .chain(CLUSTER_COLUMNS);
        for name in waiting {
            assert!(
                harness::SCENARIOS.iter().any(|s| s.name == *name),
                "no scenario `{name}`"
            );
        }
    }
}
