//! How `explore` reports: violations with their replay lines, shrinking,
//! the per-stage table, JSON.

use harness::ScenarioEnv;
use harness::check::Finding;
use harness::explore::{Found, Kind, Plan, StageReport, shrink};
use lockcore::StageEntry;
use serde_json::{Value, json};

use super::join;
use crate::Failure;

/// The command that replays a trial.
fn replay_line(args_line: &str, found: &Found, keep: Option<&[usize]>) -> String {
    let mut line = format!(
        "cargo run --release -- explore {args_line} --replay {}:{}",
        found.spec.seed, found.spec.trial
    );
    if let Some(keep) = keep {
        line.push_str(&format!(" --keep {}", join(keep)));
    }
    line
}

/// One violation: what, where, the schedule, the slice, the timeline.
pub(super) fn found(found: &Found, args_line: &str) {
    let v = &found.violation;
    println!(
        "\n=== {}: {} (seed {} trial {})",
        found.spec.stage.description.name,
        v.finding.property(),
        found.spec.seed,
        found.spec.trial
    );
    println!("{}", v.text);
    println!("faults:\n{}", found.schedule.render());
    println!("history (the entries that show it):\n{}", found.slice);
    println!("timeline (the clients involved):\n{}", found.timeline);
    println!(
        "replay: {}",
        replay_line(args_line, found, found.spec.keep.as_deref())
    );
}

/// Every check that failed in one stage's exploration.
pub(super) fn stage_findings(plan: &Plan, report: &StageReport, args_line: &str) {
    let name = plan.stage.description.name;
    if report.found.is_empty() {
        println!(
            "\n{name}: no violation in {} trials ({} critical sections)",
            report.trials, report.sections
        );
    }
    for first in report.found.values() {
        found(first, args_line);
        println!(
            "({} failed in {} of {} trials)",
            first.violation.finding.property(),
            first.trials,
            report.trials
        );
    }
}

/// Shrinks `found`'s schedule and prints the minimal one with its replay.
pub(super) async fn shrinking(
    env: &ScenarioEnv,
    found: &Found,
    args_line: &str,
) -> Result<(), Failure> {
    let check = found.violation.finding;
    println!(
        "\nshrinking the schedule of seed {} trial {} while {} still fails:",
        found.spec.seed,
        found.spec.trial,
        check.property()
    );
    let (keep, last) = shrink::shrink(env, &found.spec, check, |kept, still| {
        println!(
            "  with faults [{}]: {}",
            join(kept),
            if still {
                "still fails, the dropped fault goes"
            } else {
                "passes, the dropped fault stays"
            }
        );
    })
    .await?;
    let minimal = found.schedule.keeping(&keep);
    println!("minimal schedule:\n{}", minimal.render());
    if keep.is_empty() {
        println!("(no fault needed: the clients alone break this stage)");
    }
    if let Some(outcome) = last
        && let Some(violation) = outcome.violations.iter().find(|v| v.finding == check)
    {
        let spec = harness::explore::TrialSpec {
            keep: Some(keep.clone()),
            ..found.spec.clone()
        };
        let shrunk = Found::from_trial(&spec, &outcome, violation);
        println!("{}\nhistory:\n{}", violation.text, shrunk.slice);
        println!("timeline:\n{}", shrunk.timeline);
    }
    println!("replay: {}", replay_line(args_line, found, Some(&keep)));
    Ok(())
}

/// Faults by kind, `freeze 5, kill 2`.
fn faults(report: &StageReport) -> String {
    let parts: Vec<String> = report
        .faults
        .iter()
        .map(|(kind, n)| format!("{kind} {n}"))
        .collect();
    if parts.is_empty() {
        "none".to_owned()
    } else {
        parts.join(", ")
    }
}

/// The first violation of each property, in the order reports print them.
fn in_print_order(report: &StageReport) -> impl Iterator<Item = (Finding, &Found)> {
    Finding::EXPLORED
        .into_iter()
        .filter_map(|f| report.found.get(&f).map(|found| (f, found)))
}

/// Violations by check with their first seed:trial.
fn violations(report: &StageReport) -> String {
    let parts: Vec<String> = in_print_order(report)
        .map(|(check, f)| {
            format!(
                "{} {} (first {}:{})",
                check.property(),
                f.trials,
                f.spec.seed,
                f.spec.trial
            )
        })
        .collect();
    if parts.is_empty() {
        "none".to_owned()
    } else {
        parts.join(", ")
    }
}

/// The per-stage table.
pub(super) fn summary(reports: &[(Plan, StageReport)]) {
    println!(
        "\n{:<7} {:>6} {:>6} {:>7}  {:<44} violations (trials, first seed:trial)",
        "stage", "trials", "ops", "CS/s", "faults injected"
    );
    for (plan, report) in reports {
        println!(
            "{:<7} {:>6} {:>6} {:>7.1}  {:<44} {}",
            plan.stage.description.name,
            report.trials,
            report.operations,
            report.throughput(),
            faults(report),
            violations(report)
        );
        if report.failed_trials > 0 {
            println!(
                "        {} trial(s) could not run; the last: {}",
                report.failed_trials,
                report.last_error.as_deref().unwrap_or("?")
            );
        }
    }
    if let Some((plan, _)) = reports.first() {
        println!(
            "\nseed {}; histories in {}",
            plan.seed,
            plan.history_file
                .as_ref()
                .and_then(|p| p.parent())
                .map_or("-".to_owned(), |p| p.display().to_string())
        );
    }
}

/// How fast each violation was found: its first trial, the operations
/// invoked until then, and the seconds spent, as a Markdown table (the
/// book's explorer chapter shows one from a real run).
pub(super) fn first_found(reports: &[(Plan, StageReport)]) {
    if reports.iter().all(|(_, r)| r.found.is_empty()) {
        return;
    }
    let seed = reports.first().map_or(0, |(plan, _)| plan.seed);
    println!(
        "
time to first violation (seed {seed}):
"
    );
    println!("| stage | violation | first trial | operations until then | seconds | trials run |");
    println!("|---|---|---:|---:|---:|---:|");
    for (plan, report) in reports {
        for (check, found) in in_print_order(report) {
            println!(
                "| {} | {} | {} | {} | {:.1} | {} |",
                plan.stage.description.name,
                check.property(),
                found.first.trial,
                found.first.operations,
                found.first.after.as_secs_f64(),
                report.trials
            );
        }
    }
}

/// The summary as JSON.
pub(super) fn json(
    reports: &[(Plan, StageReport)],
    line: &dyn Fn(&StageEntry, &[Kind]) -> String,
) -> String {
    let stages: Vec<Value> = reports
        .iter()
        .map(|(plan, report)| {
            let violations: serde_json::Map<String, Value> = report
                .found
                .iter()
                .map(|(check, f)| {
                    (
                        check.property().to_owned(),
                        json!({
                            "trials": f.trials,
                            "first": format!("{}:{}", f.spec.seed, f.spec.trial),
                            "first_trial": f.first.trial,
                            "first_operations": f.first.operations,
                            "first_seconds": f.first.after.as_secs_f64(),
                            "text": f.violation.text,
                            "replay": replay_line(&line(&plan.stage, &plan.kinds), f, None),
                        }),
                    )
                })
                .collect();
            let faults: serde_json::Map<String, Value> = report
                .faults
                .iter()
                .map(|(kind, n)| (kind.name().to_owned(), json!(n)))
                .collect();
            json!({
                "stage": plan.stage.description.name,
                "seed": plan.seed,
                "trials": report.trials,
                "failed_trials": report.failed_trials,
                "operations": report.operations,
                "critical_sections": report.sections,
                "critical_sections_per_second": report.throughput(),
                "faults": faults,
                "violations": violations,
                "history": plan.history_file,
            })
        })
        .collect();
    serde_json::to_string_pretty(&json!({ "stages": stages })).unwrap_or_default()
}
