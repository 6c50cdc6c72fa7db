//! One module per subcommand.

mod book_assets;
pub mod explore;
pub mod holder;
mod interview;
mod list;
pub mod matrix;
mod run;

use harness::Scenario;
use harness::workload::{Fencing, ReleaseOrder, RequestIds};
use lockcore::StageEntry;

use crate::cli::Command;
use crate::{Failure, stages};

/// Runs a subcommand that needs the async runtime.
pub async fn dispatch(command: Command) -> Result<(), Failure> {
    match command {
        Command::List => {
            list::print();
            Ok(())
        }
        Command::Run {
            stage,
            scenario,
            diagram,
            every_line,
            html,
            fencing,
            request_ids,
            release_after_commit,
            holder_cmd,
        } => {
            let output = run::Output {
                diagram,
                every_line,
                html: html.as_deref(),
                fencing: fencing_named(&fencing)?,
                request_ids: request_ids_if(request_ids),
                release_order: release_order_if(release_after_commit),
            };
            let row = match holder_cmd {
                Some(command) => crate::rows::Row::holder_command(&stage, &command)?,
                None => row_named(&stage)?,
            };
            run::run(&row, scenario_named(&scenario)?, output).await
        }
        Command::Matrix {
            stages,
            scenarios,
            json,
            out,
            jobs,
            html,
            rows,
        } => {
            let rows = matrix::chosen_rows(&stages, &rows)?;
            matrix::run(&rows, &scenarios, json, &out, jobs, html.as_deref()).await
        }
        Command::BookAssets {
            check,
            render_only,
            only,
            book,
        } => {
            if render_only {
                book_assets::render_again(&book)
            } else {
                book_assets::run_all(&book, check, &only).await
            }
        }
        Command::Interview {
            number,
            no_input,
            markdown,
        } => {
            interview::run(interview::Options {
                number,
                no_input,
                markdown,
            })
            .await
        }
        Command::Explore(args) => explore::run(args).await,
        Command::Holder { .. } => unreachable!("the holder runs without the CLI's runtime"),
    }
}

/// The resource's request-id mode for the `--request-ids` flag.
pub fn request_ids_if(checked: bool) -> RequestIds {
    if checked {
        RequestIds::Checked
    } else {
        RequestIds::Ignored
    }
}

/// When a transaction's purchase releases the lock, for the
/// `--release-after-commit` flag.
pub fn release_order_if(after_commit: bool) -> ReleaseOrder {
    if after_commit {
        ReleaseOrder::AfterCommit
    } else {
        ReleaseOrder::BeforeCommit
    }
}

/// The fencing mode called `label`, or a clear error naming the choices.
pub fn fencing_named(label: &str) -> Result<Fencing, Failure> {
    Fencing::from_label(label).ok_or_else(|| {
        let labels: Vec<&str> = Fencing::ALL.iter().map(|f| f.label()).collect();
        Failure::bad_input(format!(
            "unknown fencing mode `{label}`; the modes are {}",
            labels.join(", ")
        ))
    })
}

/// The stage called `name`, or a clear error naming the choices.
pub fn stage_named(name: &str) -> Result<StageEntry, Failure> {
    stages::find(name).ok_or_else(|| {
        Failure::bad_input(format!(
            "unknown stage `{name}`; the stages are {}",
            stages::names()
        ))
    })
}

/// The stage or library called `name`, or a clear error naming the choices.
pub fn row_named(name: &str) -> Result<crate::rows::Row, Failure> {
    crate::rows::find(name).ok_or_else(|| {
        Failure::bad_input(format!(
            "unknown stage `{name}`; the stages are {}, and the library rows {}",
            stages::names(),
            crate::libraries::names()
        ))
    })
}

pub use run::launcher as stage_launcher;

/// The scenario called `name`, or a clear error naming the choices.
pub fn scenario_named(name: &str) -> Result<&'static Scenario, Failure> {
    harness::scenario::find(name).ok_or_else(|| {
        let names: Vec<&str> = harness::SCENARIOS.iter().map(|s| s.name).collect();
        Failure::bad_input(format!(
            "unknown scenario `{name}`; the scenarios are {}",
            names.join(", ")
        ))
    })
}

/// Writes `text` to `path`, creating its folder, or a clear error.
pub fn write_file(path: &std::path::Path, text: &str) -> Result<(), Failure> {
    if let Some(folder) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(folder)
            .map_err(|e| Failure::failed(format!("cannot create {}: {e}", folder.display())))?;
    }
    std::fs::write(path, text)
        .map_err(|e| Failure::failed(format!("cannot write {}: {e}", path.display())))
}

/// Fails at once, before any work, when files cannot be written in
/// `folder` (created if missing): a run of minutes should not end in a
/// refusal that could have been seen at the start. `what` names the option
/// the folder came from.
pub fn check_writable(folder: &std::path::Path, what: &str) -> Result<(), Failure> {
    let folder = if folder.as_os_str().is_empty() {
        std::path::Path::new(".")
    } else {
        folder
    };
    let refused = |e: std::io::Error| {
        Failure::bad_input(format!("{what}: cannot write in {}: {e}", folder.display()))
    };
    std::fs::create_dir_all(folder).map_err(refused)?;
    let probe = folder.join(format!(".lockstages-probe-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(refused)?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}
