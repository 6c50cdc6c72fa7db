//! `lockstages run <stage> <scenario>`: one story, narrated.

use std::path::Path;

use harness::Scenario;
use harness::check::{Finding, verdict_words};
use harness::holder::Launcher;
use harness::observe::sequence_diagram;
use harness::server::Backend;
use harness::workload::{Fencing, ReleaseOrder, RequestIds};
use lockcore::StageEntry;

use crate::Failure;
use crate::render::html::Mermaid;
use crate::render::story::{self, Told};
use crate::rows::Row;

/// How the CLI starts holder processes: itself, with the hidden `holder`
/// subcommand.
pub fn launcher(stage: &StageEntry) -> Result<Launcher, Failure> {
    let exe = std::env::current_exe()
        .map_err(|e| Failure::failed(format!("cannot find this program: {e}")))?;
    Ok(Launcher::program(
        exe,
        vec![
            "holder".into(),
            "--stage".into(),
            stage.description.name.into(),
        ],
    ))
}

/// What `run` prints and writes besides its verdict.
#[derive(Debug, Clone, Copy, Default)]
pub struct Output<'a> {
    /// The Mermaid diagram on stdout instead of the timeline.
    pub diagram: bool,
    /// Every line of the timeline, nothing folded.
    pub every_line: bool,
    /// A page to write.
    pub html: Option<&'a Path>,
    /// How stage 8's resource checks fencing tokens.
    pub fencing: Fencing,
    /// Whether the resource charges a request id once (`--request-ids`).
    pub request_ids: RequestIds,
    /// When `release-before-commit`'s purchase releases the lock.
    pub release_order: ReleaseOrder,
}

/// Runs `scenario` against `stage` and prints the timeline (or diagram)
/// and the verdict.
pub async fn run(row: &Row, scenario: &Scenario, output: Output<'_>) -> Result<(), Failure> {
    let stage = row.entry;
    let d = stage.description;
    // The page's folder is checked before the story runs, not after.
    if let Some(page) = output.html {
        super::check_writable(page.parent().unwrap_or(Path::new(".")), "--html")?;
    }
    // With --diagram stdout is the diagram alone, so it can be piped.
    let say = |line: String| {
        if output.diagram {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    };
    say(format!(
        "{} x {}: {}",
        d.name, scenario.name, scenario.title
    ));
    say(format!("{}: {}\n", d.name, d.title));
    if let Some(reason) = (scenario.not_applicable)(&d) {
        write_page(output.html, || {
            story::page(
                &d,
                scenario,
                Told::NotApplicable(reason),
                None,
                Mermaid::Inline,
            )
        })?;
        say(format!("verdict: n/a ({reason})"));
        return Ok(());
    }
    let env = row
        .env(Backend::from_env()?, output.fencing)?
        .with_request_ids(output.request_ids)
        .with_release_order(output.release_order);
    let recorder = env.recorder.clone();
    let outcome = match scenario.play(stage, env).await {
        Ok(outcome) => outcome,
        Err(e) => {
            // How far the story got before it stopped (a story these
            // servers cannot tell did not start).
            let declined = matches!(e, harness::HarnessError::NotApplicable(_));
            if let Some(timeline) = recorder.timeline().filter(|_| !declined) {
                eprint!("{}", timeline.render_every_line());
                eprintln!("(the story stopped here)");
            }
            return Err(e.into());
        }
    };
    if output.diagram {
        print!("{}", sequence_diagram(&outcome.timeline, &verdict_words()));
    } else if output.every_line {
        print!("{}", outcome.timeline.render_every_line());
    } else {
        print!("{}", outcome.timeline.render());
    }
    write_page(output.html, || {
        let told = Told::Ran(&outcome.verdict, &outcome.timeline);
        story::page(&d, scenario, told, None, Mermaid::Inline)
    })?;
    say(format!("\nverdict: {}", outcome.verdict));
    for finding in Finding::ALL.into_iter().filter(|f| outcome.verdict.has(*f)) {
        say(format!("  {:<15} {}", finding.label(), finding.meaning()));
    }
    Ok(())
}

fn write_page(path: Option<&Path>, page: impl FnOnce() -> String) -> Result<(), Failure> {
    let Some(path) = path else {
        return Ok(());
    };
    super::write_file(path, &page())?;
    eprintln!("written to {}", path.display());
    Ok(())
}
