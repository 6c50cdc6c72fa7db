//! The matrix as a terminal table, Markdown and JSON.

use std::fmt::Write as _;
use std::time::Duration;

use harness::check::Finding;
use serde_json::json;

use super::{Cell, CellResult, Expected};
use crate::render::terminal::{Paint, paint};

/// A finished matrix, ready to print.
#[derive(Debug)]
pub struct Report<'a> {
    cells: &'a [Cell],
}

impl<'a> Report<'a> {
    /// Wraps the cells (row-major: stage, then scenario).
    pub fn new(cells: &'a [Cell]) -> Self {
        Self { cells }
    }

    /// The cells that differ from the expected matrix.
    pub fn mismatches(&self) -> Vec<&'a Cell> {
        self.cells.iter().filter(|c| !c.matches()).collect()
    }

    fn rows(&self) -> Vec<(&'static str, Vec<&'a Cell>)> {
        let mut rows: Vec<(&'static str, Vec<&'a Cell>)> = Vec::new();
        for cell in self.cells {
            let name = cell.stage.description.name;
            match rows.last_mut() {
                Some((row, cells)) if *row == name => cells.push(cell),
                _ => rows.push((name, vec![cell])),
            }
        }
        rows
    }

    fn columns(&self) -> Vec<&'static str> {
        self.rows()
            .first()
            .map(|(_, cells)| cells.iter().map(|c| c.scenario.name).collect())
            .unwrap_or_default()
    }

    /// The table for a terminal, laid out as `matrix.md` is (a row per
    /// scenario, a column per stage) with short marks, so that it fits 120
    /// columns; the legend says what each mark means. With `colour`, each
    /// mark is coloured by what it shows.
    pub fn table(&self, colour: bool) -> String {
        let rows = self.rows();
        let scenarios = self.columns();
        let name_width = scenarios.iter().map(|s| s.len()).max().unwrap_or(0);
        let widths_of = |short: bool, compact: bool| -> Vec<usize> {
            rows.iter()
                .map(|(stage, cells)| {
                    cells
                        .iter()
                        .map(|c| shown(c, compact).len())
                        .chain(header_lines(stage, short).iter().map(String::len))
                        .max()
                        .unwrap_or(0)
                })
                .collect()
        };
        let width_with = |widths: &[usize], gap: usize| {
            name_width + widths.iter().map(|w| w + gap).sum::<usize>()
        };
        // Stages by their names; by their numbers under a `stage` corner
        // when the names would push the table past 120 columns.
        let short = width_with(&widths_of(false, false), 2) > 120;
        // Two spaces between columns, one when a wide mark would push the
        // table past 120 columns; and if that is not enough, the marks of a
        // cell with several findings run together (`OSOLFD`: the codes are
        // two letters each).
        let mut widths = widths_of(short, false);
        let wide = width_with(&widths, 2) > 120;
        let compact = width_with(&widths, 1) > 120;
        if compact {
            widths = widths_of(short, true);
        }
        let gap = if wide { " " } else { "  " };
        let corner = if short { "stage" } else { "" };
        let headers: Vec<Vec<String>> = rows
            .iter()
            .map(|(stage, _)| header_lines(stage, short))
            .collect();
        let header_height = headers.iter().map(Vec::len).max().unwrap_or(1);
        let mut out = String::new();
        // Headers stand on the row above the first scenario: a wrapped
        // one starts higher up.
        for line in 0..header_height {
            let last = line + 1 == header_height;
            let _ = write!(out, "{:<name_width$}", if last { corner } else { "" });
            for (lines, width) in headers.iter().zip(&widths) {
                let text = (line + lines.len())
                    .checked_sub(header_height)
                    .map_or("", |i| lines[i].as_str());
                let _ = write!(out, "{gap}{text:<width$}");
            }
            out.truncate(out.trim_end().len());
            out.push('\n');
        }
        for (i, scenario) in scenarios.iter().enumerate() {
            let _ = write!(out, "{scenario:<name_width$}");
            for ((_, cells), width) in rows.iter().zip(&widths) {
                let (text, look) = cells.get(i).map_or((String::new(), Paint::Quiet), |c| {
                    (shown(c, compact), look(c))
                });
                // Padded first: escape codes take no room on screen.
                let padded = format!("{text:<width$}");
                let _ = write!(out, "{gap}{}", paint(&padded, look, colour));
            }
            out.push('\n');
        }
        out.push_str(&legend());
        out
    }

    /// How long each scenario's cells ran, added up, longest first: where
    /// a matrix run's time goes.
    pub fn scenario_times(&self) -> String {
        let mut times: Vec<(&str, Duration, Duration, usize)> = Vec::new();
        for cell in self.cells {
            let name = cell.scenario.name;
            match times.iter_mut().find(|(n, ..)| *n == name) {
                Some((_, total, longest, count)) => {
                    *total += cell.took;
                    *longest = (*longest).max(cell.took);
                    *count += 1;
                }
                None => times.push((name, cell.took, cell.took, 1)),
            }
        }
        times.sort_by_key(|t| std::cmp::Reverse(t.1));
        let width = times.iter().map(|(n, ..)| n.len()).max().unwrap_or(0);
        let mut out = String::from("\nTime per scenario (its cells' run times added up):\n");
        for (name, total, longest, count) in times {
            let _ = writeln!(
                out,
                "  {name:<width$}  {:>6.1}s  ({count} cells, longest {:.1}s)",
                total.as_secs_f64(),
                longest.as_secs_f64()
            );
        }
        out
    }

    /// The table as Markdown, with a legend and the n/a reasons.
    pub fn markdown(&self) -> String {
        // A row per scenario and a column per stage: there are far more
        // scenarios than stages, and a page is taller than it is wide.
        let rows = self.rows();
        let stages: Vec<&str> = rows.iter().map(|(stage, _)| *stage).collect();
        let mut out = String::from("| scenario | ");
        out.push_str(&stages.join(" | "));
        out.push_str(" |\n|---|");
        out.push_str(&"---|".repeat(stages.len()));
        out.push('\n');
        for (i, scenario) in self.columns().iter().enumerate() {
            let _ = write!(out, "| {scenario} |");
            for (_, cells) in &rows {
                let _ = write!(
                    out,
                    " {} |",
                    cells.get(i).map(|c| short(c)).unwrap_or_default()
                );
            }
            out.push('\n');
        }
        out.push_str("\nLegend:\n\n");
        for (label, meaning) in legend_entries() {
            let _ = writeln!(out, "- {label:<15} {meaning}");
        }
        let reasons: Vec<String> = self
            .cells
            .iter()
            .filter_map(|c| match &c.result {
                CellResult::NotApplicable(reason) => Some(format!(
                    "- {} × {}: {reason}",
                    c.stage.description.name, c.scenario.name
                )),
                _ => None,
            })
            .collect();
        if !reasons.is_empty() {
            out.push_str("\nWhy n/a:\n\n");
            out.push_str(&reasons.join("\n"));
            out.push('\n');
        }
        out
    }

    /// Every cell with its result, expectation and timing.
    pub fn json(&self) -> serde_json::Value {
        let cells: Vec<serde_json::Value> = self
            .cells
            .iter()
            .map(|c| {
                json!({
                    "stage": c.stage.description.name,
                    "scenario": c.scenario.name,
                    "result": short(c),
                    "reason": match &c.result {
                        CellResult::NotApplicable(reason) => Some(reason.to_string()),
                        CellResult::Failed(error) => Some(error.clone()),
                        CellResult::Ran(_) => None,
                    },
                    "expected": c.expected.as_ref().map(expected_label),
                    "matches": c.matches(),
                    "millis": u64::try_from(c.took.as_millis()).unwrap_or(u64::MAX),
                })
            })
            .collect();
        json!({ "cells": cells, "all_match": self.mismatches().is_empty() })
    }

    /// One line per cell that differs, for the exit message.
    pub fn mismatch_lines(&self) -> String {
        self.mismatches()
            .iter()
            .map(|c| {
                format!(
                    "  {} x {}: got {}, expected {}",
                    c.stage.description.name,
                    c.scenario.name,
                    match &c.result {
                        CellResult::Failed(e) => format!("an error ({e})"),
                        _ => short(c),
                    },
                    c.expected
                        .as_ref()
                        .map_or("nothing (not in the table)".to_owned(), expected_label)
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A cell as the table prints it: its verdict, `n/a` or `ERROR`.
pub fn short(cell: &Cell) -> String {
    match &cell.result {
        CellResult::Ran(verdict) => verdict.to_string(),
        CellResult::NotApplicable(_) => "n/a".to_owned(),
        CellResult::Failed(_) => "ERROR".to_owned(),
    }
}

/// An expectation as the table would print it.
pub fn expected_label(expected: &Expected) -> String {
    match expected {
        Expected::Verdict(verdict) => verdict.to_string(),
        Expected::NotApplicable => "n/a".to_owned(),
        Expected::Unrecorded => "anything (no expected row)".to_owned(),
        Expected::Race(any) => any
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" or "),
    }
}

/// Every word a cell can show, with what it means.
pub fn legend_entries() -> Vec<(&'static str, &'static str)> {
    let mut entries = vec![("ok", "no observer fired")];
    entries.extend(Finding::ALL.iter().map(|f| (f.label(), f.meaning())));
    entries.push((
        "n/a",
        "the story does not apply to this stage (reasons in matrix.md)",
    ));
    entries.push(("ERROR", "the scenario could not run (see matrix.json)"));
    entries
}

/// A cell's mark, its findings run together when `compact`.
fn shown(cell: &Cell, compact: bool) -> String {
    let text = mark(cell);
    if compact { text.replace('+', "") } else { text }
}

/// A cell as the terminal table prints it: `ok`, each finding's short mark
/// (joined by `+`), `n/a` or `ERR`; a `!` after it when it differs from the
/// expected matrix.
pub fn mark(cell: &Cell) -> String {
    let text = match &cell.result {
        CellResult::Ran(verdict) if verdict.is_ok() => "ok".to_owned(),
        CellResult::Ran(verdict) => verdict
            .findings()
            .map(finding_mark)
            .collect::<Vec<_>>()
            .join("+"),
        CellResult::NotApplicable(_) => "n/a".to_owned(),
        CellResult::Failed(_) => "ERR".to_owned(),
    };
    if cell.matches() {
        text
    } else {
        format!("{text}!")
    }
}

/// The short mark of a finding, for the terminal table.
fn finding_mark(finding: Finding) -> &'static str {
    match finding {
        Finding::Oversold => "OS",
        Finding::Overlap => "OL",
        Finding::ForeignDelete => "FD",
        Finding::Deadlock => "DL",
        Finding::SelfBlocked => "SB",
        Finding::Refused => "RF",
        Finding::Duplicate => "DP",
        Finding::OutOfOrder => "OO",
        Finding::StaleWrite => "SW",
    }
}

/// The colour of a cell's mark.
fn look(cell: &Cell) -> Paint {
    match &cell.result {
        _ if !cell.matches() => Paint::Alarm,
        CellResult::Ran(verdict) if verdict.is_ok() => Paint::Good,
        CellResult::Ran(verdict) if verdict.findings().all(|f| f == Finding::Refused) => {
            Paint::Refused
        }
        CellResult::Ran(_) => Paint::Bad,
        CellResult::NotApplicable(_) => Paint::Quiet,
        CellResult::Failed(_) => Paint::Alarm,
    }
}

/// The terminal table's legend: each mark, the word `matrix.md` uses for
/// it, and what it means.
fn legend() -> String {
    let mut out = String::from("\nLegend:\n");
    let mut entries: Vec<(&str, &str, &str)> = vec![("ok", "ok", "no observer fired")];
    entries.extend(
        Finding::ALL
            .iter()
            .map(|f| (finding_mark(*f), f.label(), f.meaning())),
    );
    entries.push((
        "n/a",
        "n/a",
        "the story does not apply to this stage (reasons in matrix.md)",
    ));
    entries.push((
        "ERR",
        "ERROR",
        "the scenario could not run (see matrix.json)",
    ));
    entries.push((
        "!",
        "",
        "after a mark: the cell differs from the expected matrix",
    ));
    for (mark, label, meaning) in entries {
        let _ = writeln!(out, "  {mark:<4} {label:<15} {meaning}");
    }
    out
}

/// The widest mark a cell shows.
const WIDEST_MARK: usize = "OS+OL+FD".len();

/// A stage's column header: its name, or the part after `stage` when the
/// table is `short` of room (`stage10` as `10`, under a `stage` corner) or
/// for a variant whose name is wider than any mark (`stage6-fair`).
fn header(stage: &str, short: bool) -> &str {
    if short || stage.len() > WIDEST_MARK {
        stage.trim_start_matches("stage")
    } else {
        stage
    }
}

/// A column's header in lines: [`header`], and when the table is `short`
/// of room, a library's long name wrapped after its hyphens, each line no
/// wider than the widest mark or the name's longest word
/// (`python-`, `redis-`, `lock-`, `renewal`).
fn header_lines(stage: &str, short: bool) -> Vec<String> {
    let name = header(stage, short);
    if !short || name.len() <= WIDEST_MARK {
        return vec![name.to_owned()];
    }
    let words: Vec<&str> = name.split_inclusive('-').collect();
    let room = words
        .iter()
        .map(|w| w.len())
        .max()
        .unwrap_or(0)
        .max(WIDEST_MARK);
    let mut lines: Vec<String> = Vec::new();
    for word in words {
        match lines.last_mut() {
            Some(line) if line.len() + word.len() <= room => line.push_str(word),
            _ => lines.push(word.to_owned()),
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use harness::check::{Finding, Verdict};

    use super::*;
    use crate::matrix::expected;
    use crate::stages::STAGES;

    /// Every stage against every scenario, each cell as the expected matrix
    /// says, except `stage` × `scenario`, which got `odd` instead.
    fn cells_with(odd: Option<(&str, &str, Verdict)>) -> Vec<Cell> {
        let mut cells = Vec::new();
        for stage in STAGES {
            for scenario in harness::SCENARIOS {
                let want = expected(stage.description.name, scenario.name);
                let result = match (&odd, &want) {
                    (Some((s, c, got)), _)
                        if *s == stage.description.name && *c == scenario.name =>
                    {
                        CellResult::Ran(got.clone())
                    }
                    (_, Some(Expected::Verdict(verdict))) => CellResult::Ran(verdict.clone()),
                    _ => CellResult::NotApplicable("a reason"),
                };
                cells.push(Cell {
                    stage: *stage,
                    scenario,
                    result,
                    expected: want,
                    took: Duration::from_millis(1500),
                    timeline: None,
                });
            }
        }
        cells
    }

    #[test]
    fn the_terminal_table_fits_120_columns_with_a_row_per_scenario() {
        // The widest verdict the expected matrix holds (three findings).
        let widest = Verdict::of(&[Finding::Oversold, Finding::Overlap, Finding::ForeignDelete]);
        for cells in [
            cells_with(None),
            cells_with(Some(("stage5", "split-brain", widest))),
        ] {
            let table = Report::new(&cells).table(false);
            for line in table.lines() {
                assert!(line.chars().count() <= 120, "{} wide: {line}", line.len());
            }
            // Every stage, by its name or by its number under `stage`.
            let header = table.lines().next().unwrap_or_default();
            let named = header.contains("stage0") && header.contains("stage8");
            let numbered = header.starts_with("stage") && header.contains(" 0 ");
            assert!(named || numbered, "{table}");
            for stage in crate::stages::STAGES {
                let name = stage.description.name;
                assert!(
                    header.contains(name.trim_start_matches("stage")),
                    "no column for {name}: {table}"
                );
            }
            for scenario in harness::SCENARIOS {
                assert!(
                    table
                        .lines()
                        .any(|l| l.starts_with(&format!("{} ", scenario.name))),
                    "no row for {}:\n{table}",
                    scenario.name
                );
            }
            assert!(!table.contains('\x1b'), "no colour asked, none given");
        }
    }

    #[test]
    fn the_library_rows_table_fits_120_columns_its_long_names_wrapped() {
        // Every library row with the widest verdict in every cell.
        let widest = Verdict::of(&[Finding::Oversold, Finding::Overlap, Finding::ForeignDelete]);
        let mut cells = Vec::new();
        for library in crate::libraries::LIBRARIES {
            for scenario in harness::SCENARIOS {
                cells.push(Cell {
                    stage: library.row().entry,
                    scenario,
                    result: CellResult::Ran(widest.clone()),
                    expected: Some(Expected::Verdict(widest.clone())),
                    took: Duration::from_millis(1500),
                    timeline: None,
                });
            }
        }
        let table = Report::new(&cells).table(false);
        for line in table.lines() {
            assert!(line.chars().count() <= 120, "{} wide: {line}", line.len());
        }
        // `python-redis-lock-renewal`, in lines: the last one stands right
        // above the first scenario.
        let header: Vec<&str> = table
            .lines()
            .take_while(|l| !l.starts_with("contention"))
            .collect();
        assert!(header.iter().any(|l| l.contains("renewal")), "{table}");
        assert!(
            header.last().is_some_and(|l| l.contains("redis-py")),
            "{table}"
        );
    }

    #[test]
    fn a_cell_that_differs_is_marked_and_the_legend_says_what_marks_mean() {
        let cells = cells_with(Some((
            "stage4",
            "contention",
            Verdict::of(&[Finding::Overlap]),
        )));
        let table = Report::new(&cells).table(false);
        let row = table
            .lines()
            .find(|l| l.starts_with("contention "))
            .unwrap_or_default();
        assert!(row.contains("OL!"), "{row}");
        for mark in ["OS ", "OL ", "FD ", "RF ", "n/a ", "ERR ", "! "] {
            assert!(
                table.lines().any(|l| l.trim_start().starts_with(mark)),
                "the legend explains `{mark}`:\n{table}"
            );
        }
        let coloured = Report::new(&cells).table(true);
        assert!(coloured.contains("\x1b[1;33mOL!"), "{coloured}");
    }

    #[test]
    fn scenario_times_add_up_each_column_longest_first() {
        let cells = cells_with(None);
        let times = Report::new(&cells).scenario_times();
        let line = times
            .lines()
            .find(|l| l.trim_start().starts_with("contention "))
            .unwrap_or_default();
        let stages = STAGES.len();
        let total = format!("{:.1}s", 1.5 * stages as f64);
        assert!(
            line.contains(&total) && line.contains(&format!("{stages} cells")),
            "{times}"
        );
    }
}
