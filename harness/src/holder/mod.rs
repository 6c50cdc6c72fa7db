//! A lock holder in a process of its own, so that it can be killed with
//! `kill -9` or frozen with SIGSTOP for real: its sockets, its timers and
//! its watchdog die or freeze with it, as they would in production.
//!
//! The parent hands the child its whole configuration as one JSON value
//! ([`HolderSpec`], in an environment variable), then drives it line by
//! line over stdin; the child answers on stdout with lines starting
//! `@holder `. [`protocol`] is the protocol written down once. A malformed
//! configuration, request or answer is an error, never a zero.
//!
//! The child is a stage's test binary run again
//! ([`holder_entry!`](crate::holder_entry)), the CLI's hidden `holder`
//! subcommand ([`child`]), or any program that speaks the protocol: a
//! library's adapter, run as a row of the matrix ([`remote`]).
//!
//! - [`wire`]: the pipe to one process, with errors that name the command
//!   and the line;
//! - [`HolderProcess`]: a holder a story kills, freezes or stalls, its
//!   steps recorded in the run's history;
//! - [`remote`]: the lock and the business of a client whose every step
//!   is a request to a holder process (a `--holder-cmd` row).

pub mod child;
mod launcher;
pub mod protocol;
pub mod remote;
pub mod wire;

use std::time::Duration;

use lockcore::{Acquired, LockConfig, LockError, Point};

pub use child::serve_from_env;
pub use launcher::Launcher;
use wire::Wire;

use crate::client::ClientFactory;
use crate::error::{HarnessError, Result};
use crate::guard::Released;
use crate::history::{Detail, History, Op, Phase};
use crate::process;
use crate::workload::{Fencing, RequestIds, Sale};

/// How long a holder may take to answer a request, beyond what the request
/// itself may wait. A Python adapter starts in under a second here; a
/// holder that answers nothing in this long is not going to.
pub const ANSWER_WITHIN: Duration = Duration::from_secs(20);

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
        Self::at(factory, name, factory.lock_urls.clone())
    }

    /// Like [`HolderSpec::new`], with the lock at `lock_urls`.
    pub fn at(factory: &ClientFactory, name: &str, lock_urls: Vec<String>) -> Self {
        let config = &factory.config;
        Self {
            stage: factory.stage.description.name.to_owned(),
            name: name.to_owned(),
            lock_urls,
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
            .map_err(|e| HarnessError::Holder(format!("malformed {}: {e}", protocol::ENV_SPEC)))
    }
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

/// The parent's handle on a holder process a story kills, freezes or
/// stalls: each step is recorded in the run's history. Killed when dropped.
pub struct HolderProcess {
    name: String,
    wire: Wire,
    /// The parent keeps the run's history from the child's answers.
    history: History,
    fencing: Fencing,
    held: Option<Acquired>,
}

impl HolderProcess {
    /// Starts a holder called `name` for the clients `factory` makes.
    pub fn spawn(launcher: &Launcher, factory: &ClientFactory, name: &str) -> Result<Self> {
        let wire = Wire::spawn(launcher, &HolderSpec::new(factory, name))?;
        factory
            .history
            .timeline()
            .record(name, format!("holder process started (pid {})", wire.pid()));
        Ok(Self {
            name: name.to_owned(),
            wire,
            history: factory.history.clone(),
            fencing: factory.fencing,
            held: None,
        })
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.wire.pid()
    }

    /// The lock the child last took (value, fencing token), if any.
    pub fn held(&self) -> Option<&Acquired> {
        self.held.as_ref()
    }

    /// The child will stop for `stall` the next time it reaches `point` (a
    /// release stalled between its `GET` and its `DEL`, say), then go on.
    pub async fn stall(&mut self, point: Point, stall: Duration) -> Result<()> {
        let request = format!("stall {point} {}", stall.as_millis());
        self.wire.ask(&request, Duration::ZERO).await?;
        self.history.timeline().record(
            &self.name,
            format!("will stall {}ms at {point}", stall.as_millis()),
        );
        Ok(())
    }

    /// Asks `request` and reads its answer with `parse`.
    async fn ask<T>(
        &mut self,
        request: &str,
        may_take: Duration,
        parse: impl FnOnce(&str) -> Result<T>,
    ) -> Result<T> {
        let answer = self.wire.ask(request, may_take).await?;
        if let Some(failed) = protocol::failed(&answer) {
            return Err(HarnessError::Lock(failed));
        }
        self.wire.parse(request, &answer, parse)
    }

    /// Takes the lock in the child, waiting at most `wait`. `true` if taken.
    pub async fn acquire(&mut self, wait: Duration) -> Result<bool> {
        self.history
            .invoke(&self.name, Op::Acquire, Detail::default());
        let request = format!("acquire {}", wait.as_millis());
        match self.ask(&request, wait, protocol::acquired).await? {
            Some(held) => {
                self.history.acquired(&self.name, &held);
                self.held = Some(held);
                Ok(true)
            }
            None => {
                // Not narrated: a waiter's "no" is the story's to tell.
                let no = Detail::default();
                self.history
                    .complete(&self.name, Op::Acquire, Phase::Fail, no);
                Ok(false)
            }
        }
    }

    /// Sends the child asking for the lock for up to `wait`, and does not
    /// wait for the answer: a waiter to kill or freeze while it waits. Ask
    /// this holder nothing more (its answer would come first).
    pub fn start_waiting(&mut self, wait: Duration) -> Result<()> {
        self.history
            .invoke(&self.name, Op::Acquire, Detail::default());
        self.wire.send(&format!("acquire {}", wait.as_millis()))?;
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
        let stock = self.ask("read", Duration::ZERO, protocol::stock).await?;
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
        let request = format!("sell {read}");
        let sale = self.ask(&request, Duration::ZERO, protocol::sale).await?;
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
        match self
            .ask("release", Duration::ZERO, protocol::released)
            .await?
        {
            Ok(released) => {
                self.history.released(&self.name, released);
                Ok(Released::Answered(released))
            }
            Err(()) => {
                self.history
                    .release_failed(&self.name, &LockError::NotOwner);
                Ok(Released::NotOwner)
            }
        }
    }

    /// Waits up to `within` for the child's lock-lost signal. `true` if it fired.
    pub async fn wait_lost(&mut self, within: Duration) -> Result<bool> {
        let request = format!("wait-lost {}", within.as_millis());
        let lost = self.ask(&request, within, protocol::lost).await?;
        if lost {
            self.history
                .timeline()
                .record(&self.name, "its lost-lock signal fired");
        }
        Ok(lost)
    }

    /// `kill -9`.
    pub fn kill(&mut self) -> Result<()> {
        self.wire.kill()?;
        self.history.died(&self.name, "KILLED with kill -9");
        Ok(())
    }

    /// SIGSTOP: the whole process freezes, as in a stop-the-world GC pause.
    pub fn freeze(&mut self) -> Result<()> {
        process::send(self.pid(), process::Signal::Stop)?;
        self.history
            .timeline()
            .record(&self.name, "FROZEN with SIGSTOP (a stop-the-world pause)");
        Ok(())
    }

    /// SIGCONT: the process runs again, unaware that time passed.
    pub fn thaw(&mut self) -> Result<()> {
        process::send(self.pid(), process::Signal::Continue)?;
        self.history
            .timeline()
            .record(&self.name, "thawed with SIGCONT");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_malformed_spec_is_an_error() {
        assert!(HolderSpec::from_json(r#"{"name": "client-A"}"#).is_err());
    }
}
