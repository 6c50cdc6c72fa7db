//! The parent's end of the pipe to one holder process: it starts the
//! command, sends request lines and waits, within a bound, for the answer.
//! It records nothing; [`super::HolderProcess`] and [`super::remote`] do.
//!
//! Every error it gives names the client, the command and the line it was
//! about, because the holder may be anyone's program: "which of my
//! answers did you not like?" must be answered by the message alone.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

use tokio::sync::mpsc;

use super::launcher::Launcher;
use super::protocol::HolderSpec;
use super::protocol::{ENV_SPEC, PREFIX};
use crate::error::{HarnessError, Result};
use crate::process;

/// One holder process and the pipe to it. Killed and reaped when dropped.
pub struct Wire {
    name: String,
    command: String,
    child: Child,
    stdin: ChildStdin,
    answers: mpsc::UnboundedReceiver<String>,
    answer_within: Duration,
}

impl Wire {
    /// Starts `launcher`'s command as the holder `spec` describes.
    pub fn spawn(launcher: &Launcher, spec: &HolderSpec) -> Result<Self> {
        let command_line = launcher.command_line();
        let fail = |what: String| {
            HarnessError::Holder(format!("{} (`{command_line}`): {what}", spec.name))
        };
        let json = serde_json::to_string(spec)
            .map_err(|e| fail(format!("cannot write the holder's spec: {e}")))?;
        let mut command = Command::new(launcher.program_path());
        command
            .args(launcher.args())
            .env(ENV_SPEC, json)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child =
            process::spawn(command).map_err(|e| fail(format!("cannot be started: {e}")))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            process::stop(&mut child);
            return Err(fail("no pipe to the process".into()));
        };
        let (tx, answers) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout)
                .lines()
                .map_while(std::io::Result::ok)
            {
                // libtest may print "test holder_process ... " before the answer.
                if let Some(start) = line.find(PREFIX)
                    && tx.send(line[start + PREFIX.len()..].to_owned()).is_err()
                {
                    break;
                }
            }
        });
        Ok(Self {
            name: spec.name.clone(),
            command: command_line,
            child,
            stdin,
            answers,
            answer_within: launcher.answer_within(),
        })
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// An error about this holder, naming it and its command.
    pub fn error(&self, what: impl std::fmt::Display) -> HarnessError {
        HarnessError::Holder(format!("{} (`{}`): {what}", self.name, self.command))
    }

    /// Sends `request` without waiting for its answer.
    pub fn send(&mut self, request: &str) -> Result<()> {
        let sent = writeln!(self.stdin, "{request}").and_then(|()| self.stdin.flush());
        sent.map_err(|e| {
            // A process that exited at once closed its stdin: its exit is
            // the news, not the broken pipe.
            let why = match self.child.try_wait() {
                Ok(Some(_)) => self.exited(request),
                _ => format!("cannot send `{request}`: {e}"),
            };
            self.error(why)
        })
    }

    /// Starts the holder and waits until it answers `ping`: a holder may
    /// take a second to load its library (a Python adapter's imports), and
    /// a story's clock must not run meanwhile. Returns the wire and how
    /// long the holder took to be ready.
    pub async fn start(launcher: &Launcher, spec: &HolderSpec) -> Result<(Self, Duration)> {
        let started = tokio::time::Instant::now();
        let mut wire = Self::spawn(launcher, spec)?;
        let answer = wire.ask("ping", Duration::ZERO).await?;
        wire.parse("ping", &answer, |answer| match answer {
            "pong" => Ok(()),
            other => Err(HarnessError::Holder(format!(
                "malformed answer `{other}` (expected `pong`)"
            ))),
        })?;
        Ok((wire, started.elapsed()))
    }

    /// Sends `request` and waits for its answer: at most the launcher's
    /// bound, plus `may_take` (what the request itself may wait, an
    /// acquire's `<ms>`). An `error` answer is an error naming the request.
    pub async fn ask(&mut self, request: &str, may_take: Duration) -> Result<String> {
        if let Err(e) = self.send(request) {
            // A holder may answer before it is asked (`n/a`, an error about
            // its spec) and exit: then its answer is the news, not the pipe
            // it closed. Its stdout is closed too, so the wait is short.
            return match self.answers.recv().await {
                Some(answer) => self.read_answer(request, answer),
                None => Err(e),
            };
        }
        let answer =
            match tokio::time::timeout(self.answer_within + may_take, self.answers.recv()).await {
                Ok(Some(answer)) => answer,
                Ok(None) => {
                    let why = self.exited(request);
                    return Err(self.error(why));
                }
                Err(_) => {
                    return Err(self.error(format!(
                        "no answer to `{request}` within {}ms",
                        (self.answer_within + may_take).as_millis()
                    )));
                }
            };
        self.read_answer(request, answer)
    }

    /// An answer as the protocol reads it: `error …` is an error naming
    /// the request, `n/a …` the row's reason to decline the story.
    fn read_answer(&self, request: &str, answer: String) -> Result<String> {
        if let Some(error) = answer.strip_prefix("error ") {
            return Err(self.error(format!("answered `{request}` with an error: {error}")));
        }
        if let Some(reason) = answer.strip_prefix("n/a ") {
            // A cell's reason lives as long as the matrix: a few words per
            // declined cell.
            // The program's file name: a library row's is this program.
            let program = self.command.split(' ').next().unwrap_or_default();
            let short =
                self.command
                    .replacen(program, program.rsplit('/').next().unwrap_or(program), 1);
            let reason = format!("`{short}` cannot take part: {reason}");
            return Err(HarnessError::NotApplicable(Box::leak(
                reason.into_boxed_str(),
            )));
        }
        Ok(answer)
    }

    /// Reads `answer` (to `request`) with `parse`; a malformed one is an
    /// error naming the request and the line.
    pub fn parse<T>(
        &self,
        request: &str,
        answer: &str,
        parse: impl FnOnce(&str) -> Result<T>,
    ) -> Result<T> {
        parse(answer).map_err(|e| {
            let why = match e {
                HarnessError::Holder(why) => why,
                other => other.to_string(),
            };
            self.error(format!("to `{request}`: {why}"))
        })
    }

    /// Why the answers stopped: the process's exit, if it has exited.
    fn exited(&mut self, request: &str) -> String {
        // Its stdout closed; its exit follows at once, but may not be
        // reaped yet: a few looks, 10 ms apart.
        for _ in 0..100 {
            if let Ok(Some(status)) = self.child.try_wait() {
                process::waited(&self.child);
                return format!("exited ({status}) while asked `{request}`, without an answer");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        format!("closed its stdout while asked `{request}`, without an answer")
    }

    /// `kill -9` of the process, reaped.
    pub fn kill(&mut self) -> Result<()> {
        process::send(self.pid(), process::Signal::Kill)?;
        let _ = self.child.wait();
        process::waited(&self.child);
        Ok(())
    }
}

impl Drop for Wire {
    fn drop(&mut self) {
        process::stop(&mut self.child);
    }
}
