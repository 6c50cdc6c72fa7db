//! A lock holder in a process of its own, so that it can be killed with
//! `kill -9` or frozen with SIGSTOP for real: its sockets, its timers and
//! its watchdog die or freeze with it, as they would in production.
//!
//! The parent hands the child its whole configuration as one JSON value
//! ([`HolderSpec`], in an environment variable), then drives it line by
//! line over stdin; the child answers on stdout with lines starting
//! `@holder `. A malformed configuration, request or answer is an error,
//! never a zero. The child is either a stage's test binary run again
//! ([`holder_entry!`](crate::holder_entry)) or the CLI's hidden `holder`
//! subcommand.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::str::FromStr;
use std::time::Duration;

use lockcore::{Acquired, LockConfig, LockError, Point, Release, StageEntry};
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc;

use crate::client::{Client, ClientFactory};
use crate::error::{HarnessError, Result};
use crate::guard::Released;
use crate::history::{Detail, History, Op, Phase};
use crate::observe::Timeline;
use crate::process::{self, Signal};
use crate::workload::{Fencing, RequestIds, Sale};

const PREFIX: &str = "@holder ";
const ANSWER_WITHIN: Duration = Duration::from_secs(20);
/// The environment variable that carries a [`HolderSpec`] as JSON.
const ENV_SPEC: &str = "LOCKSTAGES_HOLDER";

/// Everything a holder process needs, as it crosses the process boundary:
/// the parent's [`ClientFactory`] without its history, every field of the
/// [`LockConfig`] included (stage 7's drift factor too).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HolderSpec {
    /// The stage the holder runs (`stage6-fair`): a test binary may serve
    /// more than one ([`holder_entry!`](crate::holder_entry)).
    #[serde(default)]
    pub stage: String,
    /// `client-A`…
    pub name: String,
    /// Where the lock lives.
    pub lock_urls: Vec<String>,
    /// Where the stock lives.
    pub db_url: String,
    /// [`LockConfig::key`].
    pub key: String,
    /// [`LockConfig::ttl`].
    pub ttl: Duration,
    /// [`LockConfig::retry_interval`].
    pub retry_interval: Duration,
    /// [`LockConfig::watchdog_timeout`].
    pub watchdog_timeout: Duration,
    /// [`LockConfig::drift_factor`].
    pub drift_factor: f64,
    /// [`Fencing::label`].
    pub fencing: String,
    /// Whether the resource checks request ids ([`RequestIds::Checked`]).
    #[serde(default)]
    pub request_ids: bool,
}

impl HolderSpec {
    /// What a holder called `name` of `factory`'s clients needs.
    pub fn new(factory: &ClientFactory, name: &str) -> Self {
        let config = &factory.config;
        Self {
            stage: factory.stage.description.name.to_owned(),
            name: name.to_owned(),
            lock_urls: factory.lock_urls.clone(),
            db_url: factory.db_url.clone(),
            key: config.key.clone(),
            ttl: config.ttl,
            retry_interval: config.retry_interval,
            watchdog_timeout: config.watchdog_timeout,
            drift_factor: config.drift_factor,
            fencing: factory.fencing.label().to_owned(),
            request_ids: factory.request_ids == RequestIds::Checked,
        }
    }

    /// The configuration the child's lock runs with.
    pub fn config(&self) -> LockConfig {
        LockConfig {
            key: self.key.clone(),
            ttl: self.ttl,
            retry_interval: self.retry_interval,
            watchdog_timeout: self.watchdog_timeout,
            drift_factor: self.drift_factor,
        }
    }

    /// Reads a spec from its JSON text; malformed text is an error.
    pub fn from_json(text: &str) -> Result<Self> {
        serde_json::from_str(text)
            .map_err(|e| HarnessError::Holder(format!("malformed {ENV_SPEC}: {e}")))
    }
}

/// A number in a request or an answer; anything else is an error naming
/// the whole line.
fn number<T: FromStr>(word: &str, line: &str) -> Result<T> {
    word.parse()
        .map_err(|_| HarnessError::Holder(format!("`{word}` is not a number in `{line}`")))
}

fn millis(word: &str, line: &str) -> Result<Duration> {
    number(word, line).map(Duration::from_millis)
}

/// Declares the `holder_process` entry point at the root of a stage's test
/// binary, so the kill tests can start that binary again as a holder
/// process of one of `stages` (the one the spec names). It is `#[ignore]`d:
/// it is a process body, not a test.
#[macro_export]
macro_rules! holder_entry {
    ($($stage:expr),+ $(,)?) => {
        #[test]
        #[ignore = "the body of the holder child process that the kill tests start; not a test"]
        fn holder_process() {
            $crate::holder::serve_from_env(&[$($stage),+]);
        }
    };
}

/// How to start a holder process.
#[derive(Debug, Clone)]
pub struct Launcher {
    program: PathBuf,
    args: Vec<String>,
}

impl Launcher {
    /// The current test binary, running its `holder_process` entry point
    /// (declared with [`holder_entry!`](crate::holder_entry)).
    pub fn this_test_binary() -> Self {
        Self {
            program: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("/proc/self/exe")),
            args: [
                "holder_process",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ]
            .map(str::to_owned)
            .to_vec(),
        }
    }

    /// Any program and arguments (the CLI: `lockstages holder --stage stage6`).
    pub fn program(program: PathBuf, args: Vec<String>) -> Self {
        Self { program, args }
    }
}

/// The parent's handle on a holder process. Killed when dropped.
pub struct HolderProcess {
    name: String,
    child: Child,
    stdin: ChildStdin,
    answers: mpsc::UnboundedReceiver<String>,
    /// The parent keeps the run's history from the child's answers.
    history: History,
    fencing: Fencing,
    held: Option<Acquired>,
}

impl HolderProcess {
    /// Starts a holder called `name` for the clients `factory` makes.
    pub fn spawn(launcher: &Launcher, factory: &ClientFactory, name: &str) -> Result<Self> {
        let spec = serde_json::to_string(&HolderSpec::new(factory, name))
            .map_err(|e| HarnessError::Holder(format!("cannot write the holder's spec: {e}")))?;
        let mut command = Command::new(&launcher.program);
        command
            .args(&launcher.args)
            .env(ENV_SPEC, spec)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = process::spawn(command)?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| HarnessError::Holder("no stdin".into()))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| HarnessError::Holder("no stdout".into()))?;
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
        factory
            .history
            .timeline()
            .record(name, format!("holder process started (pid {})", child.id()));
        Ok(Self {
            name: name.to_owned(),
            child,
            stdin,
            answers,
            history: factory.history.clone(),
            fencing: factory.fencing,
            held: None,
        })
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The lock the child last took (value, fencing token), if any.
    pub fn held(&self) -> Option<&Acquired> {
        self.held.as_ref()
    }

    /// The child will stop for `stall` the next time it reaches `point` (a
    /// release stalled between its `GET` and its `DEL`, say), then go on.
    pub async fn stall(&mut self, point: Point, stall: Duration) -> Result<()> {
        self.ask(&format!("stall {point} {}", stall.as_millis()))
            .await?;
        self.history.timeline().record(
            &self.name,
            format!("will stall {}ms at {point}", stall.as_millis()),
        );
        Ok(())
    }

    async fn ask(&mut self, request: &str) -> Result<String> {
        writeln!(self.stdin, "{request}")
            .and_then(|()| self.stdin.flush())
            .map_err(|e| {
                HarnessError::Holder(format!("{}: cannot send `{request}`: {e}", self.name))
            })?;
        let answer = tokio::time::timeout(ANSWER_WITHIN, self.answers.recv())
            .await
            .map_err(|_| HarnessError::Holder(format!("{} did not answer `{request}`", self.name)))?
            .ok_or_else(|| {
                HarnessError::Holder(format!("{} exited while asked `{request}`", self.name))
            })?;
        match answer.strip_prefix("error ") {
            Some(error) => Err(HarnessError::Holder(format!("{}: {error}", self.name))),
            None => Ok(answer),
        }
    }

    /// Takes the lock in the child, waiting at most `wait`. `true` if taken.
    pub async fn acquire(&mut self, wait: Duration) -> Result<bool> {
        self.history
            .invoke(&self.name, Op::Acquire, Detail::default());
        let answer = self.ask(&format!("acquire {}", wait.as_millis())).await?;
        if answer == "not-acquired" {
            // Not narrated: a waiter's "no" is the story's to tell.
            let no = Detail::default();
            self.history
                .complete(&self.name, Op::Acquire, Phase::Fail, no);
            return Ok(false);
        }
        // `acquired <value> <token>`; a value may hold spaces (stage 0's
        // is "(no lock)"), the token never does.
        let Some((value, token)) = answer
            .strip_prefix("acquired ")
            .and_then(|rest| rest.rsplit_once(' '))
        else {
            return Err(HarnessError::Holder(format!("malformed answer `{answer}`")));
        };
        let mut held = Acquired::with_value(value.to_owned());
        if token != "-" {
            held.fencing_token = Some(number(token, &answer)?);
        }
        self.history.acquired(&self.name, &held);
        self.held = Some(held);
        Ok(true)
    }

    /// Sends the child asking for the lock for up to `wait`, and does not
    /// wait for the answer: a waiter to kill or freeze while it waits. Ask
    /// this holder nothing more (its answer would come first).
    pub fn start_waiting(&mut self, wait: Duration) -> Result<()> {
        self.history
            .invoke(&self.name, Op::Acquire, Detail::default());
        writeln!(self.stdin, "acquire {}", wait.as_millis())
            .and_then(|()| self.stdin.flush())
            .map_err(|e| HarnessError::Holder(format!("{}: cannot ask: {e}", self.name)))?;
        self.history.timeline().record(
            &self.name,
            format!("asks for the lock, waiting up to {}ms", wait.as_millis()),
        );
        Ok(())
    }

    /// Reads the stock in the child: the business has begun.
    pub async fn read_stock(&mut self) -> Result<i64> {
        // A fenced read shows the resource the token: it is then "seen".
        let shown = match self.fencing {
            Fencing::ReadsAndWrites => self.token(),
            Fencing::WriteOnly | Fencing::Unchecked => None,
        };
        let invoke = Detail {
            token: shown,
            ..Detail::default()
        };
        self.history.invoke(&self.name, Op::Read, invoke);
        let answer = self.ask("read").await?;
        let Some(stock) = answer.strip_prefix("stock ") else {
            return Err(HarnessError::Holder(format!(
                "unexpected answer `{answer}`"
            )));
        };
        let stock = number(stock, &answer)?;
        let read = Detail {
            number: Some(stock),
            ..Detail::default()
        };
        self.history.complete(&self.name, Op::Read, Phase::Ok, read);
        Ok(stock)
    }

    fn token(&self) -> Option<u64> {
        self.held.as_ref().and_then(|held| held.fencing_token)
    }

    /// Finishes the business in the child: writes `read - 1` and an order.
    pub async fn sell(&mut self, read: i64) -> Result<Sale> {
        let token = self.token();
        let invoke = Detail {
            token,
            number: Some(read),
            ..Detail::default()
        };
        self.history.invoke(&self.name, Op::Sell, invoke);
        let answer = self.ask(&format!("sell {read}")).await?;
        let sale = match answer.split_whitespace().collect::<Vec<_>>()[..] {
            ["sold", from] => Sale::Sold(number(from, &answer)?),
            ["rejected", token] => Sale::Rejected {
                token: number(token, &answer)?,
            },
            ["sold-out"] => Sale::SoldOut,
            ["duplicate"] => Sale::Duplicate,
            _ => {
                return Err(HarnessError::Holder(format!(
                    "unexpected answer `{answer}`"
                )));
            }
        };
        let (phase, word, from) = match sale {
            Sale::Sold(from) => (Phase::Ok, "sold", Some(from)),
            Sale::SoldOut => (Phase::Ok, "sold-out", None),
            Sale::Rejected { .. } => (Phase::Fail, "rejected", None),
            Sale::Duplicate => (Phase::Fail, "duplicate", None),
        };
        let done = Detail {
            token,
            ..Detail::word(word, from)
        };
        self.history.complete(&self.name, Op::Sell, phase, done);
        self.history.timeline().record(&self.name, sale.to_string());
        Ok(sale)
    }

    /// Releases in the child. A refusal (not the owner) is a result,
    /// [`Released::NotOwner`], as for a client in this process.
    pub async fn release(&mut self) -> Result<Released> {
        self.history.release_sent(&self.name);
        let answer = self.ask("release").await?;
        let released = match answer.split_whitespace().collect::<Vec<_>>()[..] {
            ["released", "deleted"] => Release::Deleted,
            ["released", "nothing"] => Release::NothingDeleted,
            ["released", "still-held", n] => Release::StillHeld(number(n, &answer)?),
            ["released", "unconfirmed", deleted, not_ours, unreachable] => Release::Unconfirmed {
                deleted: number(deleted, &answer)?,
                not_ours: number(not_ours, &answer)?,
                unreachable: number(unreachable, &answer)?,
            },
            ["not-owner"] => {
                self.history
                    .release_failed(&self.name, &LockError::NotOwner);
                return Ok(Released::NotOwner);
            }
            _ => {
                return Err(HarnessError::Holder(format!(
                    "unexpected answer `{answer}`"
                )));
            }
        };
        self.history.released(&self.name, released);
        Ok(Released::Answered(released))
    }

    /// Waits up to `within` for the child's lock-lost signal. `true` if it fired.
    pub async fn wait_lost(&mut self, within: Duration) -> Result<bool> {
        let answer = self
            .ask(&format!("wait-lost {}", within.as_millis()))
            .await?;
        let lost = answer == "lost yes";
        if lost {
            self.history
                .timeline()
                .record(&self.name, "its lost-lock signal fired");
        }
        Ok(lost)
    }

    /// `kill -9`.
    pub fn kill(&mut self) -> Result<()> {
        process::send(self.pid(), Signal::Kill)?;
        let _ = self.child.wait();
        process::waited(&self.child);
        self.history.died(&self.name, "KILLED with kill -9");
        Ok(())
    }

    /// SIGSTOP: the whole process freezes, as in a stop-the-world GC pause.
    pub fn freeze(&mut self) -> Result<()> {
        process::send(self.pid(), Signal::Stop)?;
        self.history
            .timeline()
            .record(&self.name, "FROZEN with SIGSTOP (a stop-the-world pause)");
        Ok(())
    }

    /// SIGCONT: the process runs again, unaware that time passed.
    pub fn thaw(&mut self) -> Result<()> {
        process::send(self.pid(), Signal::Continue)?;
        self.history
            .timeline()
            .record(&self.name, "thawed with SIGCONT");
        Ok(())
    }
}

impl Drop for HolderProcess {
    fn drop(&mut self) {
        process::stop(&mut self.child);
    }
}

/// The child's side: serves requests from stdin with a client of the
/// stage the spec names, one of `stages` (the first when it names none).
/// Does nothing when not started as a holder.
pub fn serve_from_env(stages: &[StageEntry]) {
    let Ok(spec) = std::env::var(ENV_SPEC) else {
        eprintln!("holder_process: not started as a holder process; nothing to do");
        return;
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return answer(&format!("error cannot start a runtime: {e}")),
    };
    let served = HolderSpec::from_json(&spec).and_then(|spec| {
        let stage = pick_stage(stages, &spec.stage)?;
        runtime.block_on(serve(stage, spec))
    });
    if let Err(e) = served {
        answer(&format!("error {e}"));
    }
}

/// The stage of `stages` called `name`; the first when `name` is empty.
fn pick_stage(stages: &[StageEntry], name: &str) -> Result<StageEntry> {
    stages
        .iter()
        .find(|s| name.is_empty() || s.description.name == name)
        .copied()
        .ok_or_else(|| {
            let served: Vec<&str> = stages.iter().map(|s| s.description.name).collect();
            HarnessError::Holder(format!(
                "asked to hold a lock of {name}; this program serves {}",
                served.join(", ")
            ))
        })
}

fn answer(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{PREFIX}{text}");
    let _ = out.flush();
}

async fn serve(stage: StageEntry, spec: HolderSpec) -> Result<()> {
    let factory = ClientFactory {
        stage,
        lock_urls: spec.lock_urls.clone(),
        db_url: spec.db_url.clone(),
        config: spec.config(),
        // The child's own history is thrown away: the parent keeps the
        // run's history from the answers it gets.
        history: History::new(Timeline::new()),
        fencing: Fencing::from_label(&spec.fencing).ok_or_else(|| {
            HarnessError::Holder(format!("`{}` is not a fencing mode", spec.fencing))
        })?,
        request_ids: if spec.request_ids {
            RequestIds::Checked
        } else {
            RequestIds::Ignored
        },
    };
    let name = spec.name.as_str();
    let client = factory.client(name).await?;
    let mut held: Option<Acquired> = None;
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    while let Some(line) = lines.next_line().await? {
        let reply = match handle(&client, &mut held, &line).await {
            Ok(reply) => reply,
            Err(e) => format!("error {e}"),
        };
        answer(&reply);
    }
    Ok(())
}

/// Answers one request line; a malformed one is an error.
async fn handle(client: &Client, held: &mut Option<Acquired>, line: &str) -> Result<String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    Ok(match (words.as_slice(), &*held) {
        (["acquire", ms], _) => match client.acquire(millis(ms, line)?).await? {
            Some(acquired) => {
                let token = acquired
                    .fencing_token
                    .map_or("-".to_owned(), |t| t.to_string());
                let reply = format!("acquired {} {token}", acquired.value);
                *held = Some(acquired);
                reply
            }
            None => "not-acquired".to_owned(),
        },
        (["read"], Some(acquired)) => format!("stock {}", client.read_stock(acquired).await?),
        (["sell", read], Some(acquired)) => {
            match client.sell(number(read, line)?, acquired).await? {
                Sale::Sold(from) => format!("sold {from}"),
                Sale::SoldOut => "sold-out".to_owned(),
                Sale::Rejected { token } => format!("rejected {token}"),
                Sale::Duplicate => "duplicate".to_owned(),
            }
        }
        (["release"], Some(acquired)) => match client.release(acquired).await? {
            Released::Answered(Release::Deleted) => "released deleted".to_owned(),
            Released::Answered(Release::NothingDeleted) => "released nothing".to_owned(),
            Released::Answered(Release::StillHeld(n)) => format!("released still-held {n}"),
            Released::Answered(Release::Unconfirmed {
                deleted,
                not_ours,
                unreachable,
            }) => format!("released unconfirmed {deleted} {not_ours} {unreachable}"),
            Released::NotOwner => "not-owner".to_owned(),
        },
        (["wait-lost", ms], Some(acquired)) => {
            let within = millis(ms, line)?;
            let lost = match acquired.lost.clone() {
                Some(mut signal) => tokio::time::timeout(within, signal.lost()).await.is_ok(),
                None => false,
            };
            format!("lost {}", if lost { "yes" } else { "no" })
        }
        (["stall", point, ms], _) => {
            let point = Point::ALL
                .into_iter()
                .find(|p| p.name() == *point)
                .ok_or_else(|| HarnessError::Holder(format!("unknown fault point `{point}`")))?;
            let stall = millis(ms, line)?;
            let gate = client.faults().pause_at(point);
            tokio::spawn(async move {
                tokio::time::sleep(stall).await;
                gate.open();
            });
            "stalling".to_owned()
        }
        (_, None) => {
            return Err(HarnessError::Holder(format!(
                "`{line}` needs the lock to be held first"
            )));
        }
        _ => return Err(HarnessError::Holder(format!("unknown request `{line}`"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_malformed_spec_or_number_is_an_error_not_a_zero() {
        assert!(HolderSpec::from_json(r#"{"name": "client-A"}"#).is_err());
        assert!(number::<u64>("12x", "acquire 12x").is_err());
        assert_eq!(number::<u64>("12", "acquire 12").ok(), Some(12));
    }
}
