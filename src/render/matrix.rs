//! The matrix as pages: `index.html`, a table whose cells are coloured by
//! verdict and open their own run's page.
//!
//! The table is transposed (a row per scenario, a column per stage): nine
//! stage columns fit a 1280 px screen with room to spare, where a column per
//! scenario would not, and new scenarios only add rows.

use std::fmt::Write as _;

use harness::check::Finding;

use super::html::{self, Mermaid};
use super::story::{self, Told};
use crate::matrix::{Cell, CellResult, expected_label, legend_entries, short};

/// Every page of the matrix: `(file name, HTML)`, `index.html` first, then
/// one per cell. The pages load Mermaid from [`html::MERMAID_FILE`] beside
/// them.
pub fn pages(cells: &[Cell]) -> Vec<(String, String)> {
    let mut pages = vec![("index.html".to_owned(), index(cells))];
    for cell in cells {
        let told = match (&cell.result, &cell.timeline) {
            (CellResult::Ran(verdict), Some(timeline)) => Told::Ran(verdict, timeline),
            (CellResult::Ran(_), None) => Told::Failed("the run recorded no timeline"),
            (CellResult::NotApplicable(reason), _) => Told::NotApplicable(reason),
            (CellResult::Failed(error), _) => Told::Failed(error),
        };
        let page = story::page(
            &cell.stage.description,
            cell.scenario,
            told,
            Some("index.html"),
            Mermaid::Beside,
        );
        pages.push((file_name(cell), page));
    }
    pages
}

/// The page of one cell.
pub fn file_name(cell: &Cell) -> String {
    format!(
        "{}-{}.html",
        cell.stage.description.name, cell.scenario.name
    )
}

fn index(cells: &[Cell]) -> String {
    let mut stages: Vec<&str> = Vec::new();
    let mut scenarios: Vec<&str> = Vec::new();
    for cell in cells {
        let (stage, scenario) = (cell.stage.description.name, cell.scenario.name);
        if !stages.contains(&stage) {
            stages.push(stage);
        }
        if !scenarios.contains(&scenario) {
            scenarios.push(scenario);
        }
    }
    let mut body = String::from(
        "<h1>The matrix</h1>\n<p>Every stage against every fault, each cell a real run \
         on its own Redis servers. Open a cell for its sequence diagram and timeline. \
         An orange frame marks a cell that differs from the expected matrix.</p>\n",
    );
    body.push_str("<table class=\"matrix\">\n<tr><th class=\"scenario\">scenario</th>");
    for stage in &stages {
        let _ = write!(body, "<th>{stage}</th>");
    }
    body.push_str("</tr>\n");
    for scenario in &scenarios {
        let _ = write!(body, "<tr><th class=\"scenario\">{scenario}</th>");
        for stage in &stages {
            let cell = cells
                .iter()
                .find(|c| c.stage.description.name == *stage && c.scenario.name == *scenario);
            match cell {
                Some(cell) => body.push_str(&td(cell)),
                None => body.push_str("<td></td>"),
            }
        }
        body.push_str("</tr>\n");
    }
    body.push_str("</table>\n<h2>Legend</h2>\n<dl>\n");
    for (label, meaning) in legend_entries() {
        // This page lists the reasons itself, below.
        let meaning = meaning.replace("reasons in matrix.md", "reasons below");
        let _ = writeln!(
            body,
            "<dt><b>{label}</b></dt><dd>{}</dd>",
            html::escape(&meaning)
        );
    }
    body.push_str("</dl>\n");
    let reasons: Vec<String> = cells
        .iter()
        .filter_map(|c| match &c.result {
            CellResult::NotApplicable(reason) => Some(format!(
                "<li>{} × {}: {}</li>",
                c.stage.description.name,
                c.scenario.name,
                html::escape(reason)
            )),
            _ => None,
        })
        .collect();
    if !reasons.is_empty() {
        let _ = writeln!(
            body,
            "<h2>Why n/a</h2>\n<ul>\n{}\n</ul>",
            reasons.join("\n")
        );
    }
    html::page("lockstages: the matrix", &body, Mermaid::Beside)
}

/// A cell: coloured by what it shows, framed when it is not what was
/// expected, a link to its page.
fn td(cell: &Cell) -> String {
    let class = match &cell.result {
        CellResult::Ran(verdict) if verdict.is_ok() => "ok",
        CellResult::Ran(verdict) if verdict.findings().all(|f| f == Finding::Refused) => "refused",
        CellResult::Ran(_) => "failure",
        CellResult::NotApplicable(_) => "na",
        CellResult::Failed(_) => "error",
    };
    let (frame, title) = if cell.matches() {
        ("", String::new())
    } else {
        let expected = cell
            .expected
            .as_ref()
            .map_or("nothing (not in the table)".to_owned(), expected_label);
        (
            " mismatch",
            format!(" title=\"expected: {}\"", html::escape(&expected)),
        )
    };
    format!(
        "<td class=\"{class}{frame}\"{title}><a href=\"{}\">{}</a></td>",
        file_name(cell),
        html::escape(&short(cell))
    )
}
