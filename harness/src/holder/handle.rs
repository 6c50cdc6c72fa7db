//! The parent's handle on a holder process that a story kills, freezes or
//! stalls; each step is recorded in the run's history.

use std::time::Duration;

use lockcore::{Acquired, LockError, Point};

use super::launcher::Launcher;
use super::protocol::{self, HolderSpec};
use super::wire::Wire;
use crate::error::{HarnessError, Result};
use crate::guard::Released;
use crate::history::{Detail, History, Op, Phase};
use crate::process;
use crate::workload::{Fencing, Sale};

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
    /// Starts a holder as `spec` describes, recording into `history`;
    /// `fencing` is how the resource it sells to checks tokens.
    /// ([`ClientFactory::spawn_holder`](crate::client::ClientFactory::spawn_holder)
    /// makes one of a story's clients.)
    pub async fn spawn(
        launcher: &Launcher,
        spec: &HolderSpec,
        history: History,
        fencing: Fencing,
    ) -> Result<Self> {
        let (wire, took) = Wire::start(launcher, spec).await?;
        history.narrate(&spec.name, super::started_line(wire.pid(), took));
        Ok(Self {
            name: spec.name.clone(),
            wire,
            history,
            fencing,
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
        self.history.narrate(
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
        self.history.narrate(
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
        self.history.narrate(&self.name, sale.to_string());
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
                .narrate(&self.name, "its lost-lock signal fired");
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
            .narrate(&self.name, "FROZEN with SIGSTOP (a stop-the-world pause)");
        Ok(())
    }

    /// SIGCONT: the process runs again, unaware that time passed.
    pub fn thaw(&mut self) -> Result<()> {
        process::send(self.pid(), process::Signal::Continue)?;
        self.history.narrate(&self.name, "thawed with SIGCONT");
        Ok(())
    }
}
