//! What the chapters show against what they name: every run the lists give
//! a chapter is shown there (by its timeline or its diagram), a chapter
//! includes only runs the lists give it, and a run its prose names is one
//! it shows. Without this a chapter could keep quoting a run nobody can
//! see, or show one nobody records any more.

use std::fmt;
use std::path::Path;

use super::stories::BOOK_STORIES;
use super::{GENERATED, Shown};
use crate::commands::scenario_named;

/// A run a chapter's prose names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Named {
    /// `-- run <stage> <scenario>`, or a real run of a scenario's test.
    Run(String, String),
    /// A real run of `cargo test -p <stage> <file>::` whose file tells
    /// one of [`BOOK_STORIES`].
    Test(String, String),
}

impl fmt::Display for Named {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Named::Run(stage, scenario) => write!(f, "run {stage} {scenario}"),
            Named::Test(stage, file) => write!(f, "cargo test -p {stage} {file}::"),
        }
    }
}

/// Each chapter of `book` against everything `shown` lists.
pub fn chapter_problems(book: &Path, shown: &[Shown]) -> Vec<String> {
    let mut problems = Vec::new();
    let Ok(entries) = std::fs::read_dir(book) else {
        return vec![format!("{} cannot be read", book.display())];
    };
    let mut chapters: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    chapters.sort();
    for path in chapters {
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        // Its timeline or its diagram shows a run.
        let shows = |s: &Shown| {
            ["timeline", "diagram"].iter().any(|kind| {
                text.contains(&format!(
                    "{{{{#include {GENERATED}/{}.{kind}.md}}}}",
                    s.base
                ))
            })
        };
        for s in shown.iter().filter(|s| s.chapter == name) {
            if !shows(s) {
                problems.push(format!(
                    "{name} shows neither {GENERATED}/{0}.timeline.md nor {0}.diagram.md",
                    s.base
                ));
            }
        }
        for include in text.split(&format!("{{{{#include {GENERATED}/")).skip(1) {
            let file = include.split("}}").next().unwrap_or_default();
            let listed = shown.iter().any(|s| {
                s.chapter == name
                    && [".timeline.md", ".diagram.md"]
                        .iter()
                        .any(|ext| file == format!("{}{ext}", s.base))
            });
            let a_run = file.ends_with(".timeline.md") || file.ends_with(".diagram.md");
            if a_run && !listed {
                problems.push(format!(
                    "{name} includes {GENERATED}/{file}, which neither BOOK_RUNS nor BOOK_STORIES gives it"
                ));
            }
        }
        for named in named_runs(&text) {
            if !shown.iter().any(|s| s.named == named && shows(s)) {
                problems.push(format!(
                    "{name} names `{named}` but shows neither its timeline nor its diagram"
                ));
            }
        }
    }
    problems
}

/// The runs a chapter's prose names: `-- run <stage> <scenario>`, and in a
/// paragraph that says "real run", `cargo test -p <stage> <file>::`
/// whose file is a scenario's (`get_del_race`: `get-del-race`) or tells a
/// story the book shows. Code blocks, which tell readers what to type, are
/// left out.
pub fn named_runs(text: &str) -> Vec<Named> {
    let mut runs = Vec::new();
    let mut in_code = false;
    let mut prose = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if !in_code {
            prose.push_str(line);
            prose.push('\n');
        }
    }
    // The first words of `text`, without the Markdown around them.
    let split_words = |text: &str, n: usize, colon_splits: bool| -> Vec<String> {
        text.split(|c: char| {
            c.is_whitespace() || c == '`' || c == ')' || (colon_splits && c == ':')
        })
        .filter(|w| !w.is_empty())
        .take(n)
        .map(str::to_owned)
        .collect()
    };
    let words = |text: &str, n: usize| split_words(text, n, true);
    for paragraph in prose.split("\n\n") {
        let paragraph = paragraph.replace('\n', " ");
        for named in paragraph.split("-- run ").skip(1) {
            if let [stage, scenario] = &words(named, 2)[..] {
                runs.push(Named::Run(stage.clone(), scenario.clone()));
            }
        }
        if !paragraph.contains("real run") {
            continue;
        }
        for test in paragraph.split("cargo test -p ").skip(1) {
            let [stage, filter] = &split_words(test, 2, false)[..] else {
                continue;
            };
            // `get_del_race::`: the tests of one file.
            let Some(file) = filter.strip_suffix("::") else {
                continue;
            };
            let file = file.to_owned();
            if scenario_named(&file.replace('_', "-")).is_ok() {
                runs.push(Named::Run(stage.clone(), file.replace('_', "-")));
            } else if BOOK_STORIES
                .iter()
                .any(|s| s.stage == stage && s.test == file)
            {
                runs.push(Named::Test(stage.clone(), file.clone()));
            }
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(stage: &str, scenario: &str) -> Named {
        Named::Run(stage.to_owned(), scenario.to_owned())
    }

    #[test]
    fn a_real_run_of_a_scenarios_or_a_storys_test_names_that_run() {
        let text = "A real run of\n`cargo test -p stage4 get_del_race:: -- --nocapture`:\n\n\
                    See `cargo test -p stage4 slow_business::`.\n\n\
                    A real run of `cargo test -p stage6 pubsub_wait::`:\n\n\
                    A real run of `cargo test -p stage6 reentrant_counts::`:\n";
        assert_eq!(
            named_runs(text),
            vec![
                run("stage4", "get-del-race"),
                Named::Test("stage6".to_owned(), "pubsub_wait".to_owned()),
            ],
            "only a real run, and only of a scenario or a story"
        );
    }

    #[test]
    fn prose_names_runs_and_code_blocks_do_not() {
        let text = "A real run (`cargo run --release -- run stage1 killed-holder`):\n\
                    ```sh\ncargo run --release -- run stage4 get-del-race\n```\n";
        assert_eq!(named_runs(text), vec![run("stage1", "killed-holder")]);
    }
}
