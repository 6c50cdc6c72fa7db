//! `lockstages matrix`: every scenario against every stage, each cell on
//! its own Redis servers, compared with the expected matrix.

mod expected;
mod library_rows;
mod report;

use std::sync::Arc;
use std::time::{Duration, Instant};

use harness::check::Verdict;
use harness::observe::Timeline;
use harness::server::shared_zookeeper::SharedZooKeeper;
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
            (CellResult::Ran(got), Some(expected)) => expected.allows(got),
            (
                CellResult::NotApplicable(_),
                Some(Expected::NotApplicable | Expected::Unrecorded),
            ) => true,
            _ => false,
        }
    }
}

/// How many cells run at once. Each cell's timings have 3x margins; more
/// than this on two cores starts to eat into them.
pub const DEFAULT_JOBS: usize = 3;

/// How many cells run at once on the Docker backend. The engine's own work
/// (a container made, wiped, killed or removed) competes with the cells on
/// the same cores: at three, whole matrices here ran at a load average of
/// 14 to 19 and six of ten had cells that differed (a watchdog renewal
/// 364 ms late against a 300 ms lease, setups that ran out of time); at
/// two, every cell was as expected in every run.
pub const DEFAULT_DOCKER_JOBS: usize = 2;

/// The columns whose cells spend most of their time waiting on the
/// Sentinels' clocks (a master called down, a replica promoted, an old
/// master demoted) rather than working: they run in a pool of their own,
/// beside the other cells, a third more at once than `jobs` (four at the
/// default). Waiting costs no CPU, and their margins are hundreds of
/// milliseconds, not the tens the other stories' are; they are the most
/// cell time of any pool.
const SENTINEL_COLUMNS: &[&str] = &[
    "sentinel-failover",
    "split-brain",
    "split-brain-min-replicas",
    "sentinel-failover-wait",
    "sentinel-failover-wait-other-replica",
];

/// The consensus stores' own failures: a cell waits seconds for an
/// election and for a rival to be refused over whole session TTLs, and
/// does little else, so these too run in a pool of their own. Stage 10's
/// other cells join them (they wait on leases of two seconds and more, and
/// their etcd clusters start in a fraction of a second): the main pool
/// keeps stage 9's, and the two pools come out about even.
const ENSEMBLE_COLUMNS: &[&str] = &["leader-killed", "minority-partition"];
/// The Redis Cluster's columns: their cells wait the same way, on the
/// cluster's node timeout, its election and its first two seconds (a new
/// master serves only two seconds after it started), in a third pool, a
/// third more at once than `jobs` as the Sentinel pool (on processes the
/// two pools and the main one come out about even: 35-38 s each).
const CLUSTER_COLUMNS: &[&str] = &[
    "cluster-failover",
    "cluster-failover-wait",
    "cluster-partition",
];

/// Runs every pair of `stages` × `scenarios`, `jobs` at a time, with a
/// progress bar on stderr (hidden when `quiet`); the consensus stores'
/// rows first when `stores_first` (on processes), else as listed.
pub async fn run(
    stages: &[StageEntry],
    scenarios: &[&'static Scenario],
    env_for: impl Fn(&StageEntry) -> Result<ScenarioEnv, String>,
    jobs: usize,
    quiet: bool,
    stores_first: bool,
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
    let permits = Arc::new(Semaphore::new(jobs.max(1)));
    let sentinel_permits = Arc::new(Semaphore::new(waiting_pool_size(jobs)));
    let ensemble_permits = Arc::new(Semaphore::new(jobs.max(1)));
    let cluster_permits = Arc::new(Semaphore::new(waiting_pool_size(jobs)));
    let running = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    // Stage 9's cells whose story leaves the ensemble alone share one, a
    // chroot each (harness::server::shared_zookeeper); it stops when the
    // last cell is done.
    let shared_zookeeper = SharedZooKeeper::new();
    let mut tasks = JoinSet::new();
    // On processes, the consensus stores' rows are queued first: their
    // cells are the longest (seconds-long session and lease TTLs), and a
    // pool that takes them last ends with one of them running alone. Not
    // on Docker: there they come last, as listed, when the Sentinel and
    // Cluster pools (which have no cells for them) are done. Their Java
    // and etcd processes starting beside those pools' containers starved
    // the containers: a Cluster node gave no reply within half a second.
    let mut rows: Vec<(usize, &StageEntry)> = stages.iter().enumerate().collect();
    if stores_first {
        rows.sort_by_key(|(_, stage)| {
            !harness::scenario::ensemble::on_consensus_store(&stage.description)
        });
    }
    for (row, stage) in rows {
        for (column, scenario) in scenarios.iter().enumerate() {
            let stage = *stage;
            let scenario: &'static Scenario = scenario;
            let mut env = env_for(&stage);
            if let Ok(env) = env.as_mut()
                && !ENSEMBLE_COLUMNS.contains(&scenario.name)
            {
                env.shared_zookeeper = Some(shared_zookeeper.clone());
            }
            let permits = if SENTINEL_COLUMNS.contains(&scenario.name) {
                sentinel_permits.clone()
            } else if ENSEMBLE_COLUMNS.contains(&scenario.name)
                || stage.description.home.store == lockcore::Store::Etcd
            {
                ensemble_permits.clone()
            } else if CLUSTER_COLUMNS.contains(&scenario.name) {
                cluster_permits.clone()
            } else {
                permits.clone()
            };
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
                    expected(stage.description.name, scenario.name).or_else(|| {
                        // A command's row without an expected row.
                        crate::rows::is_command(&stage).then_some(Expected::Unrecorded)
                    })
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

/// How many Sentinel or Cluster cells run at once beside `jobs` others: a
/// third more (4 at the default 3; 2 at 2), since they mostly wait.
fn waiting_pool_size(jobs: usize) -> usize {
    (jobs + jobs / 3).max(1)
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
