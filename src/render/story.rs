//! One run as a page: what was run, the verdict, the sequence diagram and
//! the timeline it was drawn from.

use std::fmt::Write as _;

use harness::Scenario;
use harness::check::{Finding, Verdict, verdict_words};
use harness::observe::{Timeline, sequence_diagram};
use lockcore::Description;

use super::html::{self, Mermaid};

/// What became of a run.
#[derive(Debug, Clone, Copy)]
pub enum Told<'a> {
    /// It ran: its verdict and what it recorded.
    Ran(&'a Verdict, &'a Timeline),
    /// The scenario declines the stage, for this reason.
    NotApplicable(&'a str),
    /// The scenario could not run.
    Failed(&'a str),
}

/// The page of `stage` × `scenario`; `back` links to the page it came from.
pub fn page(
    stage: &Description,
    scenario: &Scenario,
    told: Told<'_>,
    back: Option<&str>,
    mermaid: Mermaid,
) -> String {
    let mut body = String::new();
    if let Some(back) = back {
        let _ = writeln!(
            body,
            "<p><a href=\"{}\">← the matrix</a></p>",
            html::escape(back)
        );
    }
    let _ = writeln!(
        body,
        "<h1>{} × {}</h1>\n<p>{}<br>{}: {}</p>",
        stage.name,
        scenario.name,
        html::escape(scenario.title),
        stage.name,
        html::escape(stage.title)
    );
    match told {
        Told::Ran(verdict, timeline) => {
            let _ = writeln!(
                body,
                "<p class=\"verdict\">verdict: {verdict}</p>\n{}",
                findings(verdict)
            );
            body.push_str("<h2>Sequence diagram</h2>\n");
            let diagram = sequence_diagram(timeline, &verdict_words());
            body.push_str(&html::diagram(&diagram));
            body.push_str("<h2>Timeline</h2>\n");
            body.push_str(&html::timeline(&timeline.render()));
        }
        Told::NotApplicable(reason) => {
            let _ = writeln!(
                body,
                "<p class=\"verdict\">n/a: {}</p>",
                html::escape(reason)
            );
        }
        Told::Failed(error) => {
            let _ = writeln!(
                body,
                "<p class=\"verdict\">ERROR: the scenario could not run</p>\n<pre>{}</pre>",
                html::escape(error)
            );
        }
    }
    html::page(
        &format!("{} × {}", stage.name, scenario.name),
        &body,
        mermaid,
    )
}

/// What each finding of `verdict` means, as a list.
fn findings(verdict: &Verdict) -> String {
    if verdict.is_ok() {
        return "<p>No observer fired.</p>\n".to_owned();
    }
    let mut out = String::from("<ul>\n");
    for finding in Finding::ALL.into_iter().filter(|f| verdict.has(*f)) {
        let _ = writeln!(
            out,
            "<li><b>{}</b>: {}</li>",
            finding.label(),
            html::escape(finding.meaning())
        );
    }
    out.push_str("</ul>\n");
    out
}
