//! How a holder process is started: a program and its arguments (a
//! stage's test binary, the CLI's `holder` subcommand, or a reader's
//! `--holder-cmd`, split as a shell would split it), and how long its
//! answers may take.

use std::path::PathBuf;
use std::time::Duration;

use super::protocol::ANSWER_WITHIN;
use crate::error::{HarnessError, Result};

/// How to start a holder process.
#[derive(Debug, Clone)]
pub struct Launcher {
    program: PathBuf,
    args: Vec<String>,
    answer_within: Duration,
}

impl Launcher {
    /// The current test binary, running its `holder_process` entry point
    /// (declared with [`holder_entry!`](crate::holder_entry)).
    pub fn this_test_binary() -> Self {
        Self::program(
            std::env::current_exe().unwrap_or_else(|_| PathBuf::from("/proc/self/exe")),
            [
                "holder_process",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ]
            .map(str::to_owned)
            .to_vec(),
        )
    }

    /// Any program and arguments (the CLI: `lockstages holder --stage
    /// stage6`; a library's adapter).
    pub fn program(program: PathBuf, args: Vec<String>) -> Self {
        Self {
            program,
            args,
            answer_within: ANSWER_WITHIN,
        }
    }

    /// A command line as a shell would split it (words, `'…'` and `"…"`
    /// quotes, `\` escapes; no variables, globs or pipes): the
    /// `--holder-cmd` of a reader's own lock.
    pub fn parse(command_line: &str) -> Result<Self> {
        let words = split_words(command_line)?;
        let Some((program, args)) = words.split_first() else {
            return Err(HarnessError::Holder(
                "the holder command is empty; give the program that speaks the protocol".into(),
            ));
        };
        Ok(Self::program(PathBuf::from(program), args.to_vec()))
    }

    /// The same command, whose every answer must come within `bound`
    /// (beyond what the request itself may wait).
    #[must_use]
    pub fn with_answer_within(self, bound: Duration) -> Self {
        Self {
            answer_within: bound,
            ..self
        }
    }

    /// The program.
    pub fn program_path(&self) -> &std::path::Path {
        &self.program
    }

    pub(crate) fn args(&self) -> &[String] {
        &self.args
    }

    pub(crate) fn answer_within(&self) -> Duration {
        self.answer_within
    }

    /// The command as one line, for messages.
    pub fn command_line(&self) -> String {
        std::iter::once(self.program.display().to_string())
            .chain(self.args.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Splits `line` into words as a POSIX shell would, quotes and escapes
/// only. An unclosed quote is an error naming the line.
fn split_words(line: &str) -> Result<Vec<String>> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    let unclosed = |what: &str| {
        HarnessError::Holder(format!(
            "the holder command `{line}` has an unclosed {what}"
        ))
    };
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => words.extend(word.take()),
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.push(c),
                        None => return Err(unclosed("' quote")),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => w.push(chars.next().ok_or_else(|| unclosed("\" quote"))?),
                        Some(c) => w.push(c),
                        None => return Err(unclosed("\" quote")),
                    }
                }
            }
            '\\' => word
                .get_or_insert_with(String::new)
                .push(chars.next().ok_or_else(|| unclosed("\\ escape"))?),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_line_splits_as_a_shell_would() {
        let launcher = Launcher::parse(r#"python3 'my adapter.py' --flag "a \"b\"" c\ d"#);
        let launcher = launcher.expect("a valid command line");
        assert_eq!(launcher.program_path(), std::path::Path::new("python3"));
        assert_eq!(
            launcher.args(),
            ["my adapter.py", "--flag", "a \"b\"", "c d"]
        );
        assert!(Launcher::parse("  ").is_err());
        let unclosed = Launcher::parse("python3 'adapter.py")
            .err()
            .map(|e| e.to_string());
        assert!(unclosed.is_some_and(|e| e.contains("unclosed ' quote")));
    }
}
