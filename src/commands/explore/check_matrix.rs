//! `explore --check-matrix`: the explorer held against the expected matrix.
//!
//! Each fault kind tells, at random, the story of one matrix column
//! ([`Kind::column`]); trials with no fault at all tell `contention`. For
//! every stage and kind the explorer runs trials restricted to that kind
//! and compares what its checkers found with the cell:
//!
//! - the cell says `ok` and the explorer broke the stage: a disagreement
//!   (exit 1), printed with its replay line;
//! - the cell predicts a failure the explorer never found in its budget:
//!   "not yet found", with the trial count: a budget says little;
//! - findings the cell does not list, where it lists others: printed as
//!   notes.
//!
//! Every trial has several clients, so what contention alone does to a
//! stage (stage 0 oversells) is in every trial; a fault kind is only
//! blamed for findings beyond the stage's `contention` cell. Refusals
//! (Redlock's REFUSED) are a lock doing its job, not a violation, and are
//! not compared. A trial stops a cell early once every predicted finding
//! has been seen. At the end, the share of the predicted findings that
//! were found says how far a "not yet found" can be trusted.

use std::collections::BTreeSet;
use std::time::Duration;

use harness::ScenarioEnv;
use harness::check::{Finding, Verdict};
use harness::explore::{Kind, Plan, StageReport};
use lockcore::StageEntry;

use super::{Args, args_line, explore_with_bar, print};
use crate::Failure;
use crate::matrix::{Expected, expected};
use crate::render::terminal::{Paint, colour_wanted, paint};

/// The column trials without faults are compared with.
const CONTENTION: &str = "contention";

/// What one cell came to.
enum Cell {
    NotApplicable,
    Agrees { trials: u64, extra: Vec<Finding> },
    NotYetFound { trials: u64, missing: Vec<Finding> },
    Disagrees { trials: u64, found: Vec<Finding> },
}

impl Cell {
    /// The cell in the table: short, so that nine stages fit 120 columns.
    fn mark(&self) -> String {
        match self {
            Cell::NotApplicable => "-".to_owned(),
            Cell::Agrees { trials, extra } if extra.is_empty() => format!("ok {trials}"),
            Cell::Agrees { trials, .. } => format!("ok+ {trials}"),
            Cell::NotYetFound { trials, .. } => format!("yet? {trials}"),
            Cell::Disagrees { trials, .. } => format!("NO! {trials}"),
        }
    }

    /// Its colour on a terminal.
    fn look(&self) -> Paint {
        match self {
            Cell::NotApplicable => Paint::Quiet,
            Cell::Agrees { .. } => Paint::Good,
            Cell::NotYetFound { .. } => Paint::Refused,
            Cell::Disagrees { .. } => Paint::Alarm,
        }
    }
}

/// The kinds `--check-matrix` runs, as matrix columns: `None` is the
/// no-fault trial (contention).
fn columns(kinds: &[Kind]) -> Vec<(Option<Kind>, &'static str)> {
    let mut columns = vec![(None, CONTENTION)];
    for kind in kinds {
        if let Some(column) = kind.column() {
            columns.push((Some(*kind), column));
        }
    }
    columns
}

/// The safety and liveness findings a cell predicts.
fn predicted(cell: &Expected) -> Option<BTreeSet<Finding>> {
    match cell {
        Expected::NotApplicable | Expected::Unrecorded | Expected::Race(_) => None,
        Expected::Verdict(verdict) => Some(judged(verdict)),
    }
}

fn judged(verdict: &Verdict) -> BTreeSet<Finding> {
    verdict
        .findings()
        .filter(|f| *f != Finding::Refused)
        .collect()
}

/// Runs the check and prints its table.
pub(super) async fn run(
    stages: &[StageEntry],
    seed: u64,
    args: &Args,
    env_for: impl Fn(&StageEntry) -> Result<ScenarioEnv, Failure>,
) -> Result<(), Failure> {
    let kinds = super::chosen_kinds(&args.kinds)?;
    let columns = columns(&kinds);
    let mut rows = Vec::new();
    let mut disagreements = 0;
    let mut share = Share::default();
    for stage in stages {
        let name = stage.description.name;
        let env = env_for(stage)?;
        let baseline = expected(name, CONTENTION)
            .and_then(|cell| predicted(&cell))
            .unwrap_or_default();
        let mut cells = Vec::new();
        for (kind, column) in &columns {
            let applies = kind.is_none_or(|k| k.applies_to(&stage.description));
            let want = expected(name, column).and_then(|cell| predicted(&cell));
            let (Some(want), true) = (want, applies) else {
                cells.push(Cell::NotApplicable);
                continue;
            };
            let plan = Plan {
                stage: *stage,
                seed,
                clients: args.clients,
                kinds: kind.iter().copied().collect(),
                budget: Duration::from_secs(args.seconds),
                history_file: Some(args.out.join(format!(
                    "check-{name}-{}-seed{seed}.jsonl",
                    kind.map_or("none", |k| k.name())
                ))),
            };
            let report = explore_with_bar(&env, &plan, args.json, |report| {
                !want.is_empty() && want.iter().all(|w| seen(report).contains(w))
            })
            .await?;
            let cell = judge(&want, &baseline, kind.is_some(), &report);
            share.add(&want, &cell);
            let line = args_line(args, stage, &plan.kinds);
            // Findings left out of the judgement because only disturbed
            // trials made them, where they would have counted.
            let only_disturbed: Vec<&str> = report
                .found
                .keys()
                .filter(|c| !report.found_undisturbed.contains(c))
                .filter(|c| !want.contains(&**c))
                .filter(|c| kind.is_none() || !baseline.contains(&**c))
                .map(|c| c.property())
                .collect();
            if !only_disturbed.is_empty() {
                println!(
                    "{name} x {column} ({}): {} found only in the {} trial(s) where the machine \
                     stalled a client past the TTL with no fault aimed at it; not held against \
                     the cell",
                    kind_name(*kind),
                    only_disturbed.join(" "),
                    report.disturbed
                );
            }
            match &cell {
                Cell::Disagrees { found, trials } => {
                    disagreements += 1;
                    println!(
                        "\nDISAGREEMENT {name} x {column} ({}): the matrix says ok, the explorer \
                         found {} in {trials} trials",
                        kind_name(*kind),
                        labels(found)
                    );
                    for first in report.found.values() {
                        if found.contains(&first.violation.finding) {
                            print::found(first, &line);
                        }
                    }
                }
                Cell::NotYetFound { trials, missing } => println!(
                    "{name} x {column} ({}): {} predicted, not yet found in {trials} trials",
                    kind_name(*kind),
                    labels(missing)
                ),
                Cell::Agrees { extra, .. } if !extra.is_empty() => println!(
                    "{name} x {column} ({}): also found {}, which the cell does not list",
                    kind_name(*kind),
                    labels(extra)
                ),
                _ => {}
            }
            cells.push(cell);
        }
        rows.push((name, cells));
    }
    print_table(&columns, &rows, seed);
    share.print();
    if disagreements > 0 {
        return Err(Failure::failed(format!(
            "{disagreements} cell(s) where the explorer broke a stage the matrix says is ok"
        )));
    }
    Ok(())
}

/// How many of the findings the cells predict were found.
#[derive(Default)]
struct Share {
    predicted: usize,
    found: usize,
}

impl Share {
    fn add(&mut self, want: &BTreeSet<Finding>, cell: &Cell) {
        self.predicted += want.len();
        match cell {
            Cell::NotYetFound { missing, .. } => {
                self.found += want.len() - missing.len();
            }
            _ => self.found += want.len(),
        }
    }

    fn print(&self) {
        if self.predicted == 0 {
            return;
        }
        println!(
            "predicted findings found: {} of {} ({:.0}%)",
            self.found,
            self.predicted,
            100.0 * self.found as f64 / self.predicted as f64
        );
    }
}

fn seen(report: &StageReport) -> BTreeSet<Finding> {
    report.found.keys().copied().collect()
}

fn judge(
    want: &BTreeSet<Finding>,
    baseline: &BTreeSet<Finding>,
    faulted: bool,
    report: &StageReport,
) -> Cell {
    let trials = report.trials;
    let found = seen(report);
    // A fault kind is blamed only for what it did in trials the machine
    // did not disturb, and only for what contention alone does not do.
    let undisturbed: BTreeSet<Finding> = report.found_undisturbed.iter().copied().collect();
    let blamed: BTreeSet<Finding> = if faulted {
        undisturbed.difference(baseline).copied().collect()
    } else {
        undisturbed
    };
    if want.is_empty() {
        return if blamed.is_empty() {
            Cell::Agrees {
                trials,
                extra: Vec::new(),
            }
        } else {
            Cell::Disagrees {
                trials,
                found: blamed.into_iter().collect(),
            }
        };
    }
    let missing: Vec<Finding> = want.difference(&found).copied().collect();
    if !missing.is_empty() {
        return Cell::NotYetFound { trials, missing };
    }
    Cell::Agrees {
        trials,
        extra: blamed.difference(want).copied().collect(),
    }
}

fn kind_name(kind: Option<Kind>) -> &'static str {
    kind.map_or("no faults", |k| k.name())
}

fn labels(seen: &[Finding]) -> String {
    seen.iter().map(|s| s.label()).collect::<Vec<_>>().join(" ")
}

/// The table: a row per fault kind and a column per stage (as `matrix.md`
/// is laid out: there are more kinds than stages), short marks explained
/// below it, coloured on a terminal.
fn print_table(columns: &[(Option<Kind>, &str)], rows: &[(&str, Vec<Cell>)], seed: u64) {
    let colour = colour_wanted();
    let kind_names: Vec<&str> = columns
        .iter()
        .map(|(kind, _)| kind.map_or("none", |k| k.name()))
        .collect();
    let name_width = kind_names.iter().map(|n| n.len()).max().unwrap_or(0);
    let widths: Vec<usize> = rows
        .iter()
        .map(|(stage, cells)| {
            cells
                .iter()
                .map(|c| c.mark().len())
                .chain([stage.len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    print!("\n{:<name_width$}", "");
    for ((stage, _), width) in rows.iter().zip(&widths) {
        print!("  {stage:<width$}");
    }
    println!();
    for (i, kind) in kind_names.iter().enumerate() {
        print!("{kind:<name_width$}");
        for ((_, cells), width) in rows.iter().zip(&widths) {
            let (text, look) = cells
                .get(i)
                .map_or((String::new(), Paint::Quiet), |c| (c.mark(), c.look()));
            let padded = format!("{text:<width$}");
            print!("  {}", paint(&padded, look, colour));
        }
        println!();
    }
    println!("\nrows are fault kinds; each tells a matrix scenario's story at random:");
    for (name, (_, column)) in kind_names.iter().zip(columns) {
        println!("  {name:<name_width$} -> {column}");
    }
    println!(
        "A number is the trials run. ok: what the cell predicts was found (ok+: and more, see \
         the notes); yet?: a predicted finding was not found in that many trials; NO!: the \
         explorer broke a stage where the cell says ok (DISAGREE above); -: not applicable. \
         Seed {seed}."
    );
}
