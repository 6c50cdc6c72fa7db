//! The book's interview questions, rendered from [`QUESTIONS`] so the
//! chapter and the terminal walkthrough say the same thing. Written to
//! `book/src/generated/interview.md` by
//! `cargo run --release -- interview --markdown > book/src/generated/interview.md`;
//! a test fails when the file and the list differ.
//!
//! Each run's command carries, as a comment, the verdict the expected
//! matrix gives that cell; the book's command test runs it and compares.

use std::fmt::Write as _;

use super::{QUESTIONS, Question};

/// The whole list, one section per question.
pub fn chapter() -> String {
    let mut out = String::new();
    for (i, question) in QUESTIONS.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        section(&mut out, i + 1, question);
    }
    out
}

/// The question and the prediction in sight; the answer, the commands
/// and their verdicts folded under `<details>`, so the reader predicts
/// before reading on.
fn section(out: &mut String, number: usize, q: &Question) {
    let _ = writeln!(out, "## {number}. {}\n", q.ask);
    let choices: Vec<String> = q
        .choices()
        .iter()
        .map(|(key, run)| format!("**{key}** `{}`", run.label()))
        .collect();
    let _ = writeln!(
        out,
        "**Predict first.** {} Choose among {}.\n",
        q.predict,
        choices.join(", ")
    );
    out.push_str("<details>\n<summary>The answer, and the runs that show it</summary>\n\n");
    for paragraph in q.answer.split("\n\n") {
        let _ = writeln!(out, "{}\n", paragraph.trim());
    }
    if let Some(java) = q.java {
        let _ = writeln!(out, "**Java and Rust.** {java}\n");
    }
    let commands = commands(q);
    let width = commands.iter().map(|(c, _)| c.len()).max().unwrap_or(0);
    out.push_str("```sh\n");
    for (command, verdict) in &commands {
        match verdict {
            Some(verdict) => {
                let _ = writeln!(out, "{command:<width$}   # {verdict}");
            }
            None => {
                let _ = writeln!(out, "{command}");
            }
        }
    }
    out.push_str("```\n\n");
    let _ = writeln!(out, "**Look for.** {}\n", q.look_for);
    if !q.sources.is_empty() {
        let links: Vec<String> = q
            .sources
            .iter()
            .map(|(title, url)| format!("[{title}]({url})"))
            .collect();
        let _ = writeln!(out, "**Sources.** {}\n", links.join(" · "));
    }
    out.push_str("</details>\n\n");
    let (title, file) = q.read_next;
    let _ = writeln!(out, "**Read next:** [{title}]({file})");
}

/// Every command of a question, each run's with the verdict the expected
/// matrix gives it.
fn commands(q: &Question) -> Vec<(String, Option<String>)> {
    let runs = q
        .runs
        .iter()
        .map(|run| (run.command(), run.expected().map(|v| v.to_string())));
    let tests = q.tests.iter().map(|t| (t.command(), None));
    runs.chain(tests).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The book shows the list as it is: regenerate the file when a
    /// question, a command or an expected verdict changes.
    #[test]
    fn the_books_questions_are_the_cli_questions() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/book/src/generated/interview.md"
        );
        let book = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            book == chapter(),
            "book/src/generated/interview.md is out of date; regenerate it with\n  \
             cargo run --release -- interview --markdown > book/src/generated/interview.md"
        );
    }

    #[test]
    fn every_question_is_a_numbered_section_with_its_commands() {
        let chapter = chapter();
        for (i, q) in QUESTIONS.iter().enumerate() {
            assert!(chapter.contains(&format!("## {}. {}\n", i + 1, q.ask)));
            for run in q.runs {
                assert!(chapter.contains(&run.command()), "{}", run.command());
            }
        }
    }
}
