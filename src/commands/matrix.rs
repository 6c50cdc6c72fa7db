//! `lockstages matrix`.

use std::path::Path;

use harness::{Scenario, ScenarioEnv};
use lockcore::StageEntry;

use super::{scenario_named, stage_named, write_file};
use crate::cli::RowOptions;
use crate::matrix::{self, Report};
use crate::render::{
    self,
    html::{MERMAID_FILE, MERMAID_JS},
    terminal::colour_wanted,
};
use crate::rows::{self, Row};
use crate::{Failure, libraries, stages};

/// The rows `--stage`, `--library` and `--holder-cmd` ask for, in that
/// order (`--library all` is every library); none when no option names a
/// row, and then the caller runs every stage.
pub fn chosen_rows(stage_filter: &[String], options: &RowOptions) -> Result<Vec<Row>, Failure> {
    let mut rows: Vec<Row> = stage_filter
        .iter()
        .map(|s| stage_named(s).map(Row::stage))
        .collect::<Result<_, _>>()?;
    for name in &options.libraries {
        if name == "all" {
            rows.extend(libraries::LIBRARIES.iter().map(|l| l.row()));
            continue;
        }
        let library = libraries::find(name).ok_or_else(|| {
            Failure::bad_input(format!(
                "unknown library `{name}`; the libraries are {} (or `all`)",
                libraries::names()
            ))
        })?;
        rows.push(library.row());
    }
    if let (Some(command), Some(name)) = (&options.holder_cmd, &options.name) {
        rows.push(Row::holder_command(name, command)?);
    }
    Ok(rows)
}

/// Runs the matrix of `rows` (every stage when empty), prints it, writes
/// it under `out`.
pub async fn run(
    rows: &[Row],
    scenario_filter: &[String],
    json: bool,
    out: &Path,
    jobs: Option<usize>,
    html: Option<&Path>,
) -> Result<(), Failure> {
    if jobs == Some(0) {
        return Err(Failure::bad_input(format!(
            "--jobs 0 would run no cell; give how many cells run at once, 1 or more \
             (the default is {} on processes, {} on Docker)",
            matrix::DEFAULT_JOBS,
            matrix::DEFAULT_DOCKER_JOBS
        )));
    }
    let rows: Vec<Row> = if rows.is_empty() {
        stages::STAGES.iter().copied().map(Row::stage).collect()
    } else {
        rows.to_vec()
    };
    let stages: Vec<StageEntry> = rows.iter().map(|r| r.entry).collect();
    let scenarios: Vec<&'static Scenario> = if scenario_filter.is_empty() {
        harness::SCENARIOS.iter().collect()
    } else {
        scenario_filter
            .iter()
            .map(|s| scenario_named(s))
            .collect::<Result<_, _>>()?
    };
    // Fail before the work, not after it: the folders the results go to.
    super::check_writable(out, "--out")?;
    if let Some(dir) = html {
        super::check_writable(dir, "--html")?;
    }
    // Fail early, with the installation hint, when no Redis can be had.
    let backend = harness::server::Backend::from_env()?;
    let on_processes = matches!(backend, harness::server::Backend::Process);
    let jobs = jobs.unwrap_or(if on_processes {
        matrix::DEFAULT_JOBS
    } else {
        matrix::DEFAULT_DOCKER_JOBS
    });
    // On Docker, the nodes of a cell that its story left alone are
    // wiped and used again by later cells (harness::server::Spares).
    let (backend, spares) = backend.with_spares();
    let env_for = |stage: &StageEntry| -> Result<ScenarioEnv, String> {
        let row = rows
            .iter()
            .find(|r| r.name() == stage.description.name)
            .ok_or_else(|| format!("no row {}", stage.description.name))?;
        row.env(backend.clone(), harness::workload::Fencing::default())
            .map_err(|f| format!("{f:?}"))
    };
    let started = std::time::Instant::now();
    let cells = matrix::run(&stages, &scenarios, env_for, jobs, json, on_processes).await;
    // The command returns once its containers are gone.
    let spare_counts = spares.map(|spares| {
        spares.remove_all();
        spares.counts()
    });
    let report = Report::new(&cells);
    // The stages' table, and the commands' rows in a table of their own,
    // so that each fits 120 columns.
    let (command_cells, stage_cells): (Vec<_>, Vec<_>) = cells
        .iter()
        .cloned()
        .partition(|cell| rows::is_command(&cell.stage));

    let json_text = serde_json::to_string_pretty(&report.json()).unwrap_or_default();
    for (name, text) in [
        ("matrix.md", report.markdown()),
        ("matrix.json", json_text.clone()),
    ] {
        write_file(&out.join(name), &text)?;
    }
    // The timeline of every cell that is not what the expected matrix says,
    // beside the results (and none from an earlier run): a failed cell's up
    // to its error, a differing verdict's whole, so a cell that flips once
    // in ten runs can be read afterwards instead of run again until it does.
    let _ = std::fs::remove_dir_all(out.join("errors"));
    let mut failed_timelines = Vec::new();
    for cell in cells.iter().filter(|cell| !cell.matches()) {
        let Some(timeline) = &cell.timeline else {
            continue;
        };
        let ending = match (&cell.result, &cell.expected) {
            (matrix::CellResult::Failed(error), _) => format!("error: {error}"),
            (matrix::CellResult::Ran(verdict), Some(expected)) => format!(
                "verdict: {verdict}; expected: {}",
                matrix::expected_label(expected)
            ),
            _ => continue,
        };
        let path = out.join("errors").join(format!(
            "{}-{}.txt",
            cell.stage.description.name, cell.scenario.name
        ));
        write_file(
            &path,
            &format!("{}\n{ending}\n", timeline.render_every_line()),
        )?;
        failed_timelines.push(path);
    }
    if let Some(dir) = html {
        write_file(&dir.join(MERMAID_FILE), MERMAID_JS)?;
        for (name, page) in render::matrix::pages(&cells) {
            write_file(&dir.join(name), &page)?;
        }
    }
    if json {
        println!("{json_text}");
    } else {
        if !stage_cells.is_empty() {
            print!("{}", Report::new(&stage_cells).table(colour_wanted()));
        }
        if !command_cells.is_empty() {
            println!(
                "\nRows that are commands (holder processes; a cell without an expected verdict is shown, not compared):"
            );
            print!("{}", Report::new(&command_cells).table(colour_wanted()));
        }
        print!("{}", report.scenario_times());
        println!(
            "\n{} cells in {:.1}s; written to {}/matrix.md and matrix.json",
            cells.len(),
            started.elapsed().as_secs_f64(),
            out.display()
        );
        if let Some((made, reused)) = spare_counts {
            println!(
                "containers kept between cells (plain servers and rigs): {made} made, used again {reused} time(s), wiped between cells"
            );
        }
        if let Some(dir) = html {
            println!("pages: {}", dir.join("index.html").display());
        }
    }
    for path in &failed_timelines {
        eprintln!("the timeline of a cell not as expected: {}", path.display());
    }
    if report.mismatches().is_empty() {
        Ok(())
    } else {
        Err(Failure::failed(format!(
            "{} cell(s) differ from the expected matrix:\n{}",
            report.mismatches().len(),
            report.mismatch_lines()
        )))
    }
}
