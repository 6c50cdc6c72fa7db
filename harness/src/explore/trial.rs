//! One trial: fresh servers, clients and a nemesis playing one schedule,
//! then the history, judged by the checkers.

use std::time::Duration;

use futures_util::future::{join_all, try_join_all};
use lockcore::StageEntry;
use tokio::time::Instant;

use super::generator::{self, Workload};
use super::nemesis::{Nemesis, stall_point};
use super::schedule::{Kind, Schedule, Shape, TRIAL_TTLS};
use super::slots::Slots;
use crate::check::{self, Violation};
use crate::error::Result;
use crate::history::{History, Phase};
use crate::scenario::{Run, ScenarioEnv};

/// Items for sale at the start of a trial: more than the clients can sell,
/// so sales never stop for lack of stock and every lost update shows.
pub const STOCK: i64 = 10_000;

/// Which trial to run.
#[derive(Debug, Clone)]
pub struct TrialSpec {
    /// The stage under test.
    pub stage: StageEntry,
    /// The run's seed.
    pub seed: u64,
    /// The trial's number within the run.
    pub trial: u64,
    /// How many clients.
    pub clients: usize,
    /// The fault kinds the nemesis draws from.
    pub kinds: Vec<Kind>,
    /// Only these faults of the schedule (a shrunk schedule); all if `None`.
    pub keep: Option<Vec<usize>>,
}

impl TrialSpec {
    /// What shapes its schedule.
    pub fn shape(&self, ttl: Duration) -> Shape {
        Shape {
            kinds: self.kinds.clone(),
            clients: self.clients,
            nodes: self.stage.description.nodes,
            ttl,
        }
    }

    /// Its schedule: the seed's, cut down to `keep`.
    pub fn schedule(&self, ttl: Duration) -> Schedule {
        let full = Schedule::generate(self.seed, self.trial, &self.shape(ttl));
        match &self.keep {
            Some(keep) => full.keeping(keep),
            None => full,
        }
    }
}

/// What a trial gave.
#[derive(Debug, Clone)]
pub struct TrialOutcome {
    /// The faults it played.
    pub schedule: Schedule,
    /// Everything observed (its timeline drawn from it).
    pub history: History,
    /// What the checkers found.
    pub violations: Vec<Violation>,
    /// Critical sections entered.
    pub sections: usize,
    /// Client operations invoked.
    pub operations: usize,
    /// How long the clients worked.
    pub worked: Duration,
    /// A critical section outlived the TTL with no fault aimed at its
    /// client: the machine stalled it ([`check::unexplained_overruns`]).
    pub disturbed: bool,
}

/// Runs one trial on fresh servers.
pub async fn run(env: &ScenarioEnv, spec: &TrialSpec) -> Result<TrialOutcome> {
    // A consensus store's TTL is its session or lease, longer than Redis's:
    // the schedule, the workload and the checkers all go by the one in use.
    let timing = env.timing.for_stage(&spec.stage.description);
    let schedule = spec.schedule(timing.ttl);
    let (mut run, link) = if schedule.has_failover() {
        let (run, link) = Run::start_replicated(spec.stage, env.clone(), STOCK).await?;
        (run, Some(link))
    } else {
        (Run::start(spec.stage, env.clone(), STOCK).await?, None)
    };
    let proxies = run.put_proxies().await?;
    let lock_nodes: Vec<String> = run.nodes.iter().map(|n| n.label().to_owned()).collect();
    let history = run.history().clone();
    run.narrate(format!(
        "explore seed {} trial {}: {} clients; faults:\n{}",
        spec.seed,
        spec.trial,
        spec.clients,
        schedule.render().trim_end()
    ));

    let slots = Slots::new(spec.clients);
    let factory = run.factory.clone();
    // Every client's holder is ready before the clock starts: the
    // schedule's moments count from the start, and a library's holder
    // takes a few hundred milliseconds to load (a Python adapter's imports).
    let holders = try_join_all(
        (0..spec.clients).map(|i| generator::spawn(&factory, &env.launcher, i, slots.get(i))),
    )
    .await?;
    let start = Instant::now();
    let workload = Workload {
        factory: &factory,
        launcher: &env.launcher,
        history: &history,
        slots: &slots,
        ttl: timing.ttl,
        business: timing.business,
        stall_point: stall_point(&spec.stage.description),
        until: start + timing.ttl * TRIAL_TTLS,
        seed: (spec.seed, spec.trial),
    };
    let clients = join_all(
        holders
            .into_iter()
            .enumerate()
            .map(|(i, holder)| workload.client(i, holder)),
    );
    let nemesis = async {
        Nemesis::new(
            &mut run,
            &proxies,
            link.as_ref(),
            &slots,
            &history,
            timing.ttl,
        )
        .play(&schedule, start)
        .await;
    };
    let (done, ()) = tokio::join!(clients, nemesis);
    let worked = start.elapsed();
    done.into_iter().collect::<Result<Vec<()>>>()?;

    run.record().await?;
    drop(proxies);
    drop(link);
    history.absorb_servers(&lock_nodes);
    let entries = history.entries();
    let violations = check::check(&history);
    let sections = check::sections(&entries).len();
    let disturbed = !check::unexplained_overruns(&entries).is_empty();
    let operations = entries
        .iter()
        .filter(|e| matches!(e.op(), Some((_, Phase::Invoke, _))))
        .count();
    Ok(TrialOutcome {
        schedule,
        history,
        violations,
        sections,
        operations,
        worked,
        disturbed,
    })
}
