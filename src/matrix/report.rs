//! The matrix as a terminal table, Markdown and JSON.

use std::fmt::Write as _;

use harness::observe::Finding;
use serde_json::json;

use super::{Cell, CellResult, Expected};

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

    /// The table for a terminal, with a legend.
    pub fn table(&self) -> String {
        let columns = self.columns();
        let rows = self.rows();
        let widths: Vec<usize> = columns
            .iter()
            .enumerate()
            .map(|(i, name)| {
                rows.iter()
                    .map(|(_, cells)| short(cells[i]).len())
                    .chain([name.len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        let _ = write!(out, "{:<7}", "");
        for (name, width) in columns.iter().zip(&widths) {
            let _ = write!(out, " | {name:<width$}");
        }
        out.push('\n');
        for (stage, cells) in &rows {
            let _ = write!(out, "{stage:<7}");
            for (cell, width) in cells.iter().zip(&widths) {
                let _ = write!(out, " | {:<width$}", short(cell));
            }
            out.push('\n');
        }
        out.push_str(&legend());
        out
    }

    /// The table as Markdown, with a legend and the n/a reasons.
    pub fn markdown(&self) -> String {
        let columns = self.columns();
        let mut out = String::from("| stage | ");
        out.push_str(&columns.join(" | "));
        out.push_str(" |\n|---|");
        out.push_str(&"---|".repeat(columns.len()));
        out.push('\n');
        for (stage, cells) in self.rows() {
            let _ = write!(out, "| {stage} |");
            for cell in cells {
                let _ = write!(out, " {} |", short(cell));
            }
            out.push('\n');
        }
        out.push_str("\nLegend:\n\n");
        for line in legend().lines().skip(1) {
            let _ = writeln!(out, "- {}", line.trim());
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

fn legend() -> String {
    let mut out = String::from("\nLegend:\n");
    for (label, meaning) in legend_entries() {
        let _ = writeln!(out, "  {label:<15} {meaning}");
    }
    out
}
