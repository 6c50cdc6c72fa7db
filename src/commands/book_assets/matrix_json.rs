//! `book/src/generated/matrix.json`, the record of the matrix's last run
//! (`matrix --out book/src/generated`), as the generated lists read it:
//! its columns (stages) and rows (scenarios) in order, each cell's verdict
//! and, for a cell that does not apply, the scenario's reason. Everything
//! the book lists about stages and stories in bulk is written from it, so
//! a row or a column added to the matrix appears in every list at the next
//! `book-assets`, and `book-assets --check` fails until it does.

use std::collections::HashMap;
use std::path::Path;

use harness::check::{Finding, Verdict};

/// One cell: its verdict, or `None` where the story does not apply (with
/// the reason the scenario gives).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    /// `None` for `n/a`.
    pub verdict: Option<Verdict>,
    /// Why the story does not apply, for an `n/a` cell.
    pub reason: Option<String>,
}

/// The matrix as the book records it.
#[derive(Debug, Clone)]
pub struct Matrix {
    /// The columns, in order: `stage0` … `stage10`.
    pub stages: Vec<String>,
    /// The rows, in order: `contention` … .
    pub scenarios: Vec<String>,
    cells: HashMap<(String, String), Cell>,
}

/// A verdict from its labels (`OVERSOLD OVERLAP`, `ok`).
fn parse(result: &str) -> Result<Verdict, String> {
    if result == "ok" {
        return Ok(Verdict::ok());
    }
    let mut findings = Vec::new();
    for label in result.split_whitespace() {
        let finding = Finding::ALL
            .into_iter()
            .find(|f| f.label() == label)
            .ok_or_else(|| format!("`{label}` is no verdict label"))?;
        findings.push(finding);
    }
    Ok(Verdict::of(&findings))
}

impl Matrix {
    /// Reads `generated/matrix.json` of the book at `book` (`book/src`).
    pub fn read(book: &Path) -> Result<Matrix, String> {
        let path = book.join("generated").join("matrix.json");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("{} cannot be read: {e}", path.display()))?;
        Matrix::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The matrix from the text of a `matrix.json`.
    pub fn parse(text: &str) -> Result<Matrix, String> {
        let json: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        if json["all_match"] != serde_json::Value::Bool(true) {
            return Err(
                "its run has cells that differ from the expected matrix: run \
                 `cargo run --release -- matrix --out book/src/generated` until it matches"
                    .to_owned(),
            );
        }
        let mut matrix = Matrix {
            stages: Vec::new(),
            scenarios: Vec::new(),
            cells: HashMap::new(),
        };
        let cells = json["cells"].as_array().ok_or("no cells")?;
        for cell in cells {
            let field = |name: &str| cell[name].as_str().map(str::to_owned);
            let (Some(stage), Some(scenario), Some(result)) =
                (field("stage"), field("scenario"), field("result"))
            else {
                return Err(format!("a cell without stage, scenario or result: {cell}"));
            };
            if !matrix.stages.contains(&stage) {
                matrix.stages.push(stage.clone());
            }
            if !matrix.scenarios.contains(&scenario) {
                matrix.scenarios.push(scenario.clone());
            }
            let verdict = match result.as_str() {
                "n/a" => None,
                other => Some(parse(other).map_err(|e| format!("{stage} × {scenario}: {e}"))?),
            };
            matrix.cells.insert(
                (stage, scenario),
                Cell {
                    verdict,
                    reason: field("reason"),
                },
            );
        }
        Ok(matrix)
    }

    /// The book's own matrix, for unit tests.
    #[cfg(test)]
    pub fn of_the_book() -> Matrix {
        let book = Path::new(env!("CARGO_MANIFEST_DIR")).join("book/src");
        Matrix::read(&book).expect("the book's matrix.json")
    }

    /// `stage` × `scenario`, when the matrix has that cell.
    pub fn cell(&self, stage: &str, scenario: &str) -> Option<&Cell> {
        self.cells.get(&(stage.to_owned(), scenario.to_owned()))
    }

    /// `stage` × `scenario`'s verdict, when the story runs there.
    pub fn verdict(&self, stage: &str, scenario: &str) -> Option<&Verdict> {
        self.cell(stage, scenario)?.verdict.as_ref()
    }
}

/// The labels of a verdict, as the matrix prints them (`ok` for none).
pub fn labels(verdict: &Verdict) -> String {
    if verdict.is_ok() {
        return "ok".to_owned();
    }
    let labels: Vec<&str> = verdict.findings().map(Finding::label).collect();
    labels.join(" ")
}

/// A verdict that is a failure: a finding other than a refusal.
pub fn broken(verdict: &Verdict) -> bool {
    verdict.findings().any(|f| f != Finding::Refused)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_books_matrix_reads() {
        let matrix = Matrix::of_the_book();
        assert_eq!(matrix.stages.first().map(String::as_str), Some("stage0"));
        assert!(matrix.stages.iter().any(|s| s == "stage6-fair"));
        let pause = matrix.verdict("stage9", "gc-pause").expect("a verdict");
        assert_eq!(labels(pause), "OVERLAP");
        let failover = matrix.cell("stage9", "failover").expect("a cell");
        assert!(failover.verdict.is_none() && failover.reason.is_some());
    }

    #[test]
    fn a_matrix_whose_run_did_not_match_is_refused() {
        let text = r#"{"all_match": false, "cells": []}"#;
        assert!(Matrix::parse(text).is_err());
    }
}
