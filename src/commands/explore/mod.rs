//! `lockstages explore`: random fault schedules, a recorded history, and
//! checkers, for each stage (see `harness::explore`).
//!
//! - `explore [--stage N]... [--seconds S] [--seed K] [--clients C]`: trials
//!   for S seconds per stage, a summary table, and for each check that
//!   failed its first violation: seed, trial, schedule, history slice,
//!   timeline, the replay line, and the schedule shrunk to what matters;
//! - `explore --stage N --replay SEED:TRIAL [--keep 0,2]`: that trial again;
//! - `explore --check-matrix`: trials restricted to each fault kind, held
//!   against the expected matrix;
//! - `--until-found CHECK`: stop a stage as soon as that check failed (to
//!   measure how fast a known failure is found).

mod check_matrix;
mod print;

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use harness::ScenarioEnv;
use harness::check::Finding;
use harness::explore::{self, Kind, Plan, StageReport, TrialSpec};
use harness::workload::Fencing;
use indicatif::{ProgressBar, ProgressStyle};
use lockcore::StageEntry;

use crate::rows::{self, Row};
use crate::{Failure, stages};

/// The most clients a trial may have: they are named client-A to client-Z.
const MOST_CLIENTS: usize = 26;

/// Which violation's schedule is shrunk when several checks failed: the
/// damage first (orders, data), then the lock's own properties.
const SHRINK_FIRST: [Finding; 5] = [
    Finding::Oversold,
    Finding::StaleWrite,
    Finding::ForeignDelete,
    Finding::Overlap,
    Finding::Deadlock,
];

/// `explore`'s options.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only these stages (repeatable): `stage3` or `3`. Every stage if none.
    #[arg(long = "stage")]
    stages: Vec<String>,
    /// Seconds of trials per stage (per stage and fault kind with
    /// `--check-matrix`); at least one trial always runs.
    #[arg(long, default_value_t = 30)]
    seconds: u64,
    /// The seed of the fault schedules; a random one (printed) if not given.
    #[arg(long)]
    seed: Option<u64>,
    /// Clients per trial.
    #[arg(long, default_value_t = 4)]
    clients: usize,
    /// Only these fault kinds (repeatable).
    #[arg(long = "kind")]
    kinds: Vec<String>,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Run trial SEED:TRIAL again (with one `--stage`).
    #[arg(long, value_name = "SEED:TRIAL")]
    replay: Option<String>,
    /// With `--replay`: only these faults of the schedule (a shrunk one).
    #[arg(long, value_delimiter = ',', value_name = "N,N")]
    keep: Option<Vec<usize>>,
    /// Hold the explorer against the expected matrix, fault kind by kind.
    #[arg(long)]
    check_matrix: bool,
    /// Do not shrink the first violation's schedule.
    #[arg(long)]
    no_shrink: bool,
    /// How the resource checks the fencing tokens of stages 8 to 10:
    /// `reads-and-writes` (the fixed resource, the matrix's), `write-only`
    /// or `none` (the lessons).
    #[arg(long, default_value = "reads-and-writes")]
    fencing: String,
    /// Where the histories go (JSON lines).
    #[arg(long, default_value = "target/explore")]
    out: PathBuf,
    /// Stop a stage as soon as one of these checks failed (repeatable):
    /// mutual-exclusion, oversold, foreign-delete, stale-write, liveness.
    #[arg(long = "until-found", value_name = "CHECK")]
    until_found: Vec<String>,
    /// Rows besides the stages.
    #[command(flatten)]
    rows: crate::cli::RowOptions,
}

/// Runs `explore`.
pub async fn run(args: Args) -> Result<(), Failure> {
    let rows = chosen_rows(&args)?;
    let stages: Vec<StageEntry> = rows.iter().map(|r| r.entry).collect();
    let kinds = chosen_kinds(&args.kinds)?;
    if args.clients == 0 || args.clients > MOST_CLIENTS {
        return Err(Failure::bad_input(format!(
            "--clients must be between 1 and {MOST_CLIENTS}"
        )));
    }
    if args.seconds == 0 {
        return Err(Failure::bad_input("--seconds must be at least 1"));
    }
    if args.keep.is_some() && args.replay.is_none() {
        return Err(Failure::bad_input("--keep goes with --replay SEED:TRIAL"));
    }
    let fencing = Fencing::from_label(&args.fencing).ok_or_else(|| {
        let all: Vec<&str> = Fencing::ALL.iter().map(|f| f.label()).collect();
        Failure::bad_input(format!(
            "unknown --fencing `{}`; the choices are {}",
            args.fencing,
            all.join(", ")
        ))
    })?;
    // Fail early, with the installation hint, when no Redis can be had.
    let backend = harness::server::Backend::from_env()?;
    let env_for = |stage: &StageEntry| -> Result<ScenarioEnv, Failure> {
        let row = rows
            .iter()
            .find(|r| r.name() == stage.description.name)
            .ok_or_else(|| Failure::failed(format!("no row {}", stage.description.name)))?;
        row.env(backend.clone(), fencing)
    };
    if let Some(replay) = &args.replay {
        let [stage] = stages[..] else {
            return Err(Failure::bad_input("--replay needs exactly one --stage"));
        };
        let (seed, trial) = parse_replay(replay)?;
        let spec = TrialSpec {
            stage,
            seed,
            trial,
            clients: args.clients,
            kinds: applicable(&kinds, &stage),
            keep: args.keep.clone(),
        };
        return replay_trial(&env_for(&stage)?, &spec, &args).await;
    }
    let until = chosen_checks(&args.until_found)?;
    let seed = args.seed.unwrap_or_else(random_seed);
    if args.check_matrix {
        return check_matrix::run(&stages, seed, &args, env_for).await;
    }
    let mut reports = Vec::new();
    for stage in &stages {
        let kinds = applicable(&kinds, stage);
        if kinds.is_empty() && !args.kinds.is_empty() {
            eprintln!(
                "{}: none of the fault kinds asked for applies; skipped",
                stage.description.name
            );
            continue;
        }
        let plan = Plan {
            stage: *stage,
            seed,
            clients: args.clients,
            kinds: kinds.clone(),
            budget: Duration::from_secs(args.seconds),
            history_file: Some(
                args.out
                    .join(format!("{}-seed{seed}.jsonl", stage.description.name)),
            ),
        };
        let env = env_for(stage)?;
        let enough = |report: &StageReport| until.iter().any(|c| report.found.contains_key(c));
        let report = explore_with_bar(&env, &plan, args.json, enough).await?;
        if !args.json {
            print::stage_findings(&plan, &report, &args_line(&args, stage, &kinds));
            if !args.no_shrink
                && let Some(found) = SHRINK_FIRST.iter().find_map(|c| report.found.get(c))
            {
                print::shrinking(&env, found, &args_line(&args, stage, &kinds)).await?;
            }
        }
        reports.push((plan, report));
    }
    if args.json {
        println!("{}", print::json(&reports, &|s, k| args_line(&args, s, k)));
    } else {
        print::summary(&reports);
        print::first_found(&reports);
    }
    Ok(())
}

/// Explores `plan` with a progress bar on stderr (hidden when `quiet`).
pub(super) async fn explore_with_bar(
    env: &ScenarioEnv,
    plan: &Plan,
    quiet: bool,
    enough: impl FnMut(&StageReport) -> bool,
) -> Result<StageReport, Failure> {
    let bar = if quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(plan.budget.as_secs())
    };
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {elapsed:>4}/{len}s  {wide_msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let name = plan.stage.description.name;
    let kinds: Vec<&str> = plan.kinds.iter().map(|k| k.name()).collect();
    let kinds = if kinds.is_empty() {
        "no faults".to_owned()
    } else {
        kinds.join(",")
    };
    bar.set_message(format!("{name} [{kinds}]: starting"));
    let started = std::time::Instant::now();
    let report = explore::explore(env, plan, enough, |report, _| {
        bar.set_position(started.elapsed().as_secs().min(plan.budget.as_secs()));
        let found: Vec<&str> = report.found.keys().map(|c| c.property()).collect();
        bar.set_message(format!(
            "{name} [{kinds}]: {} trials, {} ops; {}",
            report.trials,
            report.operations,
            if found.is_empty() {
                "no violation yet".to_owned()
            } else {
                found.join(" ")
            }
        ));
    })
    .await?;
    bar.finish_and_clear();
    Ok(report)
}

async fn replay_trial(env: &ScenarioEnv, spec: &TrialSpec, args: &Args) -> Result<(), Failure> {
    let name = spec.stage.description.name;
    println!(
        "replaying {name} seed {} trial {}{}",
        spec.seed,
        spec.trial,
        spec.keep
            .as_ref()
            .map_or(String::new(), |k| format!(", keeping faults {}", join(k)))
    );
    let outcome = explore::trial::run(env, spec).await?;
    println!("faults:\n{}", outcome.schedule.render());
    if outcome.violations.is_empty() {
        println!(
            "no violation this time ({} critical sections): the schedule is the same, the \
             timing is not",
            outcome.sections
        );
    }
    let line = args_line(args, &spec.stage, &spec.kinds);
    for violation in &outcome.violations {
        let found = explore::Found::from_trial(spec, &outcome, violation);
        print::found(&found, &line);
    }
    Ok(())
}

/// The command-line options that shape a schedule, for replay lines.
fn args_line(args: &Args, stage: &StageEntry, kinds: &[Kind]) -> String {
    let name = stage.description.name;
    let mut line = if !rows::is_command(stage) {
        format!("--stage {name}")
    } else if crate::libraries::find(name).is_some() {
        format!("--library {name}")
    } else {
        let command = args.rows.holder_cmd.as_deref().unwrap_or_default();
        format!("--holder-cmd '{command}' --name {name}")
    };
    if !args.kinds.is_empty() || args.check_matrix {
        for kind in kinds {
            line.push_str(&format!(" --kind {kind}"));
        }
    }
    if args.fencing != Fencing::default().label() && matches!(stage.description.stage, 8..=10) {
        line.push_str(&format!(" --fencing {}", args.fencing));
    }
    if args.clients != 4 {
        line.push_str(&format!(" --clients {}", args.clients));
    }
    line
}

/// The rows `--stage`, `--library` and `--holder-cmd` ask for; every stage
/// when none does.
fn chosen_rows(args: &Args) -> Result<Vec<Row>, Failure> {
    let mut rows = super::matrix::chosen_rows(&args.stages, &args.rows)?;
    if rows.is_empty() {
        rows = stages::STAGES.iter().copied().map(Row::stage).collect();
    }
    Ok(rows)
}

fn chosen_checks(names: &[String]) -> Result<Vec<Finding>, Failure> {
    names
        .iter()
        .map(|name| {
            Finding::with_property(name).ok_or_else(|| {
                let all: Vec<&str> = Finding::EXPLORED.iter().map(|c| c.property()).collect();
                Failure::bad_input(format!(
                    "unknown check `{name}`; the checks are {}",
                    all.join(", ")
                ))
            })
        })
        .collect()
}

fn chosen_kinds(names: &[String]) -> Result<Vec<Kind>, Failure> {
    if names.is_empty() {
        return Ok(Kind::ALL.to_vec());
    }
    names
        .iter()
        .map(|name| {
            Kind::named(name).ok_or_else(|| {
                let all: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
                Failure::bad_input(format!(
                    "unknown fault kind `{name}`; the kinds are {}",
                    all.join(", ")
                ))
            })
        })
        .collect()
}

/// The kinds among `kinds` that make sense for `stage`.
fn applicable(kinds: &[Kind], stage: &StageEntry) -> Vec<Kind> {
    kinds
        .iter()
        .copied()
        .filter(|k| k.applies_to(&stage.description))
        .collect()
}

fn parse_replay(text: &str) -> Result<(u64, u64), Failure> {
    text.split_once(':')
        .and_then(|(seed, trial)| Some((seed.trim().parse().ok()?, trial.trim().parse().ok()?)))
        .ok_or_else(|| {
            Failure::bad_input(format!(
                "--replay wants SEED:TRIAL (two numbers, like 1:4), not `{text}`"
            ))
        })
}

fn random_seed() -> u64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    u64::from(nanos % 1_000_000)
}

fn join(numbers: &[usize]) -> String {
    numbers
        .iter()
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join(",")
}
