//! A lock holder in a process of its own, so that it can be killed with
//! `kill -9` or frozen with SIGSTOP for real: its sockets, its timers and
//! its watchdog die or freeze with it, as they would in production.
//!
//! The parent drives the child line by line over stdin; the child answers
//! on stdout with lines starting `@holder `. The child is either a stage's
//! test binary run again ([`holder_entry!`](crate::holder_entry)) or the
//! CLI's hidden `holder` subcommand.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

use lockcore::{Acquired, LockConfig, LockError, Point, Release, StageEntry};
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc;

use crate::client::ClientFactory;
use crate::error::{HarnessError, Result};
use crate::observe::{Ledger, Timeline};
use crate::process::{self, Signal};
use crate::workload::{Fencing, Sale};

const PREFIX: &str = "@holder ";
const ANSWER_WITHIN: Duration = Duration::from_secs(20);
const ENV_NAME: &str = "LOCKSTAGES_HOLDER_NAME";
const ENV_LOCK_URLS: &str = "LOCKSTAGES_HOLDER_LOCK_URLS";
const ENV_DB_URL: &str = "LOCKSTAGES_HOLDER_DB_URL";
const ENV_KEY: &str = "LOCKSTAGES_HOLDER_KEY";
const ENV_TTL_MS: &str = "LOCKSTAGES_HOLDER_TTL_MS";
const ENV_WATCHDOG_MS: &str = "LOCKSTAGES_HOLDER_WATCHDOG_MS";
const ENV_RETRY_MS: &str = "LOCKSTAGES_HOLDER_RETRY_MS";
const ENV_FENCING: &str = "LOCKSTAGES_HOLDER_FENCING";

/// Declares the `holder_process` entry point in a stage's test file, so the
/// kill tests can start that test binary again as a holder process. It is
/// `#[ignore]`d: it is a process body, not a test.
#[macro_export]
macro_rules! holder_entry {
    ($stage:expr) => {
        #[test]
        #[ignore = "the body of the holder child process that the kill tests start; not a test"]
        fn holder_process() {
            $crate::holder::serve_from_env($stage);
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
    ledger: Ledger,
    held: Option<Acquired>,
}

impl HolderProcess {
    /// Starts a holder called `name` for the clients `factory` makes.
    pub fn spawn(launcher: &Launcher, factory: &ClientFactory, name: &str) -> Result<Self> {
        let mut command = Command::new(&launcher.program);
        command
            .args(&launcher.args)
            .env(ENV_NAME, name)
            .env(ENV_LOCK_URLS, factory.lock_urls.join(","))
            .env(ENV_DB_URL, &factory.db_url)
            .env(ENV_KEY, &factory.config.key)
            .env(ENV_TTL_MS, factory.config.ttl.as_millis().to_string())
            .env(
                ENV_WATCHDOG_MS,
                factory.config.watchdog_timeout.as_millis().to_string(),
            )
            .env(
                ENV_RETRY_MS,
                factory.config.retry_interval.as_millis().to_string(),
            )
            .env(ENV_FENCING, factory.fencing.label())
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
            .ledger
            .timeline()
            .record(name, format!("holder process started (pid {})", child.id()));
        Ok(Self {
            name: name.to_owned(),
            child,
            stdin,
            answers,
            ledger: factory.ledger.clone(),
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
        self.ledger.timeline().record(
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
        let answer = self.ask(&format!("acquire {}", wait.as_millis())).await?;
        let mut words = answer.split_whitespace();
        if words.next() != Some("acquired") {
            return Ok(false);
        }
        let value = words.next().unwrap_or_default().to_owned();
        let mut held = Acquired::with_value(value);
        held.fencing_token = words.next().and_then(|t| t.parse().ok());
        self.ledger.acquired(&self.name, &held);
        self.held = Some(held);
        Ok(true)
    }

    /// Reads the stock in the child: the business has begun.
    pub async fn read_stock(&mut self) -> Result<i64> {
        let answer = self.ask("read").await?;
        answer
            .strip_prefix("stock ")
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| HarnessError::Holder(format!("unexpected answer `{answer}`")))
    }

    /// Finishes the business in the child: writes `read - 1` and an order.
    pub async fn sell(&mut self, read: i64) -> Result<Sale> {
        let answer = self.ask(&format!("sell {read}")).await?;
        let sale = match answer.split_whitespace().collect::<Vec<_>>()[..] {
            ["sold", from] => Sale::Sold(from.parse().unwrap_or(read)),
            ["rejected", token] => Sale::Rejected {
                token: token.parse().unwrap_or(0),
            },
            _ => Sale::SoldOut,
        };
        self.ledger.timeline().record(&self.name, sale.to_string());
        Ok(sale)
    }

    /// Releases in the child.
    pub async fn release(&mut self) -> Result<Result<Release, LockError>> {
        self.ledger.release_sent(&self.name);
        let answer = self.ask("release").await?;
        let outcome = match answer.split_whitespace().collect::<Vec<_>>()[..] {
            ["released", "deleted"] => Ok(Release::Deleted),
            ["released", "nothing"] => Ok(Release::NothingDeleted),
            ["released", "still-held", n] => Ok(Release::StillHeld(n.parse().unwrap_or(0))),
            ["released", "unconfirmed", deleted, not_ours, unreachable] => {
                Ok(Release::Unconfirmed {
                    deleted: deleted.parse().unwrap_or(0),
                    not_ours: not_ours.parse().unwrap_or(0),
                    unreachable: unreachable.parse().unwrap_or(0),
                })
            }
            ["not-owner"] => Err(LockError::NotOwner),
            _ => {
                return Err(HarnessError::Holder(format!(
                    "unexpected answer `{answer}`"
                )));
            }
        };
        match &outcome {
            Ok(release) => self.ledger.released(&self.name, *release),
            Err(_) => self
                .ledger
                .timeline()
                .record(&self.name, "release REFUSED: not the owner"),
        }
        Ok(outcome)
    }

    /// Waits up to `within` for the child's lock-lost signal. `true` if it fired.
    pub async fn wait_lost(&mut self, within: Duration) -> Result<bool> {
        let answer = self
            .ask(&format!("wait-lost {}", within.as_millis()))
            .await?;
        let lost = answer == "lost yes";
        if lost {
            self.ledger
                .timeline()
                .record(&self.name, "its lost-lock signal fired");
        }
        Ok(lost)
    }

    /// `kill -9`.
    pub fn kill(&mut self) -> Result<()> {
        process::send(self.pid(), Signal::Kill)?;
        let _ = self.child.wait();
        self.ledger.died(&self.name, "KILLED with kill -9");
        Ok(())
    }

    /// SIGSTOP: the whole process freezes, as in a stop-the-world GC pause.
    pub fn freeze(&mut self) -> Result<()> {
        process::send(self.pid(), Signal::Stop)?;
        self.ledger
            .timeline()
            .record(&self.name, "FROZEN with SIGSTOP (a stop-the-world pause)");
        Ok(())
    }

    /// SIGCONT: the process runs again, unaware that time passed.
    pub fn thaw(&mut self) -> Result<()> {
        process::send(self.pid(), Signal::Continue)?;
        self.ledger
            .timeline()
            .record(&self.name, "thawed with SIGCONT");
        Ok(())
    }
}

impl Drop for HolderProcess {
    fn drop(&mut self) {
        let _ = process::send(self.pid(), Signal::Kill);
        let _ = self.child.wait();
    }
}

/// The child's side: serves requests from stdin with a client of `stage`.
/// Does nothing when not started as a holder.
pub fn serve_from_env(stage: StageEntry) {
    let Ok(name) = std::env::var(ENV_NAME) else {
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
    if let Err(e) = runtime.block_on(serve(stage, &name)) {
        answer(&format!("error {e}"));
    }
}

fn answer(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{PREFIX}{text}");
    let _ = out.flush();
}

fn env_ms(key: &str) -> Result<Duration> {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .map(Duration::from_millis)
        .ok_or_else(|| HarnessError::Holder(format!("{key} is missing or not a number")))
}

async fn serve(stage: StageEntry, name: &str) -> Result<()> {
    let var = |key: &str| {
        std::env::var(key).map_err(|_| HarnessError::Holder(format!("{key} is missing")))
    };
    let factory = ClientFactory {
        stage,
        lock_urls: var(ENV_LOCK_URLS)?.split(',').map(str::to_owned).collect(),
        db_url: var(ENV_DB_URL)?,
        config: LockConfig {
            key: var(ENV_KEY)?,
            ttl: env_ms(ENV_TTL_MS)?,
            watchdog_timeout: env_ms(ENV_WATCHDOG_MS)?,
            retry_interval: env_ms(ENV_RETRY_MS)?,
            ..LockConfig::default()
        },
        // The child's own ledger is thrown away: the parent keeps the
        // scenario's ledger from the answers it gets.
        ledger: Ledger::new(Timeline::new()),
        fencing: Fencing::from_label(&var(ENV_FENCING)?)
            .ok_or_else(|| HarnessError::Holder(format!("{ENV_FENCING} is not a fencing mode")))?,
    };
    let client = factory.client(name).await?;
    let mut held: Option<Acquired> = None;
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    while let Some(line) = lines.next_line().await? {
        let words: Vec<&str> = line.split_whitespace().collect();
        let reply = match (words.as_slice(), &held) {
            (["acquire", ms], _) => match client
                .acquire(Duration::from_millis(ms.parse().unwrap_or(0)))
                .await
            {
                Ok(Some(acquired)) => {
                    let token = acquired
                        .fencing_token
                        .map_or("-".to_owned(), |t| t.to_string());
                    let reply = format!("acquired {} {token}", acquired.value);
                    held = Some(acquired);
                    reply
                }
                Ok(None) => "not-acquired".to_owned(),
                Err(e) => format!("error {e}"),
            },
            (["read"], Some(acquired)) => match client.read_stock(acquired).await {
                Ok(stock) => format!("stock {stock}"),
                Err(e) => format!("error {e}"),
            },
            (["sell", read], Some(acquired)) => {
                match client.sell(read.parse().unwrap_or(0), acquired).await {
                    Ok(Sale::Sold(from)) => format!("sold {from}"),
                    Ok(Sale::SoldOut) => "sold-out".to_owned(),
                    Ok(Sale::Rejected { token }) => format!("rejected {token}"),
                    Err(e) => format!("error {e}"),
                }
            }
            (["release"], Some(acquired)) => match client.release(acquired).await {
                Ok(Ok(Release::Deleted)) => "released deleted".to_owned(),
                Ok(Ok(Release::NothingDeleted)) => "released nothing".to_owned(),
                Ok(Ok(Release::StillHeld(n))) => format!("released still-held {n}"),
                Ok(Ok(Release::Unconfirmed {
                    deleted,
                    not_ours,
                    unreachable,
                })) => format!("released unconfirmed {deleted} {not_ours} {unreachable}"),
                Ok(Err(_)) => "not-owner".to_owned(),
                Err(e) => format!("error {e}"),
            },
            (["wait-lost", ms], Some(acquired)) => {
                let within = Duration::from_millis(ms.parse().unwrap_or(0));
                let lost = match acquired.lost.clone() {
                    Some(mut signal) => tokio::time::timeout(within, signal.lost()).await.is_ok(),
                    None => false,
                };
                format!("lost {}", if lost { "yes" } else { "no" })
            }
            (["stall", point, ms], _) => {
                match Point::ALL.into_iter().find(|p| p.name() == *point) {
                    Some(point) => {
                        let gate = client.faults().pause_at(point);
                        let stall = Duration::from_millis(ms.parse().unwrap_or(0));
                        tokio::spawn(async move {
                            tokio::time::sleep(stall).await;
                            gate.open();
                        });
                        "stalling".to_owned()
                    }
                    None => format!("error unknown fault point `{point}`"),
                }
            }
            (_, None) => format!("error `{line}` needs the lock to be held first"),
            _ => format!("error unknown request `{line}`"),
        };
        answer(&reply);
    }
    Ok(())
}
