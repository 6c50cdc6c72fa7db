//! The timeline: a run's record told in words. The history's lines (each
//! node's `MONITOR` and expiries, the harness's words: acquired, paused,
//! killed, failover), in wall-clock order, each printed relative to the
//! start, folded where a client repeats itself:
//!
//! ```text
//! T+305ms  client-B  [lock] SET lock:stock 9a2e… NX PX 300 -> OK
//! ```

use std::fmt::Write as _;
use std::time::{Duration, SystemTime};

use crate::history::{Event, History};

mod fold;

use fold::{fold, fold_for_reading};

/// An event, a run of the same event back to back, or a client's attempt
/// made again and again ([`fold`](self::fold) says which).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repeated {
    /// The first of the run; for repeated attempts, a line that says so.
    pub event: Event,
    /// How many times it happened (1: once).
    pub count: usize,
    /// When the last of the run happened.
    pub last: SystemTime,
    /// For repeated attempts, one attempt's lines (what a diagram's `loop`
    /// draws); empty otherwise.
    pub again: Vec<Event>,
}

/// A history's lines told in words. Clones share them.
#[derive(Debug, Clone, Default)]
pub struct Timeline(History);

impl Timeline {
    /// A timeline of a history of its own, starting now (a test's, or lines
    /// kept apart from any run).
    pub fn new() -> Self {
        Self::default()
    }

    /// The timeline of `history`.
    pub fn of(history: &History) -> Self {
        Self(history.clone())
    }

    /// The record it tells: watchers write the servers' lines and keys there.
    pub fn history(&self) -> &History {
        &self.0
    }

    /// Records something `actor` did or saw, now, as a line of the history.
    pub fn record(&self, actor: &str, text: impl Into<String>) {
        self.0.narrate(actor, text);
    }

    /// Every event so far, in time order, commands with their replies.
    pub fn events(&self) -> Vec<Event> {
        self.0.lines()
    }

    /// How many events match `counted` after the first event that matches
    /// `after` (none if nothing matches `after`): "renewals after the
    /// unlock", read from the timeline rather than from a clock.
    pub fn count_after(
        &self,
        after: impl Fn(&Event) -> bool,
        counted: impl Fn(&Event) -> bool,
    ) -> usize {
        let events = self.events();
        events
            .iter()
            .position(after)
            .map_or(0, |i| events[i + 1..].iter().filter(|e| counted(e)).count())
    }

    /// Time since the start.
    pub fn offset(&self, at: SystemTime) -> Duration {
        self.0.offset(at)
    }

    /// The events with each run of the same event (a client retrying
    /// `SETNX`) and each client's repeated attempts folded into one, with
    /// its count and its last time: what the printed timeline and the
    /// sequence diagram show.
    pub fn folded(&self) -> Vec<Repeated> {
        fold(self.events())
    }

    /// The printed timeline, one event per line. A run of the same event,
    /// or of a client's same attempt, prints once, with its count and its
    /// last time.
    pub fn render(&self) -> String {
        self.render_part(Duration::ZERO, Duration::MAX, |_| true)
    }

    /// The printed timeline, only the events from `from` to `to` after the
    /// start that `keep` keeps (the part of a long run that shows one thing).
    pub fn render_part(
        &self,
        from: Duration,
        to: Duration,
        keep: impl Fn(&Event) -> bool,
    ) -> String {
        let events = self
            .events()
            .into_iter()
            .filter(|e| (from..=to).contains(&self.offset(e.at)) && keep(e));
        self.print(fold_for_reading(events))
    }

    /// The printed timeline with nothing folded: every line the run
    /// recorded (`run … --every-line`).
    pub fn render_every_line(&self) -> String {
        self.print(self.events().into_iter().map(|event| Repeated {
            last: event.at,
            count: 1,
            again: Vec::new(),
            event,
        }))
    }

    /// Whether the printed timeline folds anything: then it says how to
    /// see every line.
    pub fn folds_anything(&self) -> bool {
        fold_for_reading(self.events()).len() < self.events().len()
    }

    fn print(&self, runs: impl IntoIterator<Item = Repeated>) -> String {
        let mut out = String::new();
        for run in runs {
            let event = &run.event;
            let node = event
                .node
                .as_deref()
                .map(|n| format!("[{n}] "))
                .unwrap_or_default();
            let _ = write!(
                out,
                "T+{:<6} {:<9} {node}{}",
                format!("{}ms", self.offset(event.at).as_millis()),
                event.actor,
                event.text
            );
            if run.count > 1 || !run.again.is_empty() {
                let last = self.offset(run.last).as_millis();
                let _ = write!(out, "   (x{} until T+{last}ms)", run.count);
            }
            out.push('\n');
        }
        out
    }

    /// The events as text, one per line: microseconds since the start,
    /// actor, node (`-` for none) and text, separated by tabs. Replies are
    /// already paired, so [`Timeline::from_recorded`] gives back a timeline
    /// that renders exactly as this one: the book keeps its runs this way,
    /// so a change of format can be applied to them without running again.
    pub fn recorded(&self) -> String {
        self.events()
            .iter()
            .map(|e| {
                format!(
                    "{}\t{}\t{}\t{}\n",
                    self.offset(e.at).as_micros(),
                    e.actor,
                    e.node.as_deref().unwrap_or("-"),
                    e.text.replace(['\t', '\n'], " ")
                )
            })
            .collect()
    }

    /// A timeline read back from [`Timeline::recorded`]'s text; the error
    /// names the first line that is not in that format.
    pub fn from_recorded(text: &str) -> Result<Self, String> {
        let timeline = Self(History::starting(SystemTime::UNIX_EPOCH));
        for (number, line) in text.lines().enumerate() {
            let mut fields = line.splitn(4, '\t');
            let (Some(micros), Some(actor), Some(node), Some(text)) =
                (fields.next(), fields.next(), fields.next(), fields.next())
            else {
                return Err(format!(
                    "line {}: expected 4 tab-separated fields",
                    number + 1
                ));
            };
            let micros: u64 = micros
                .parse()
                .map_err(|_| format!("line {}: `{micros}` is not a time", number + 1))?;
            let at = SystemTime::UNIX_EPOCH + Duration::from_micros(micros);
            let node = (node != "-").then_some(node);
            timeline.0.record_at(at, actor, node, text);
        }
        Ok(timeline)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_timeline_reads_back_and_renders_the_same() {
        let timeline = Timeline::new();
        timeline.record("harness", "stage4: TTL 300ms");
        for _ in 0..3 {
            timeline.history().record_at(
                SystemTime::now(),
                "client-B",
                Some("lock"),
                "SET lock:stock b NX PX 300 -> nil",
            );
        }
        timeline.record("client-B", "acquired the lock (value b)");
        let back = Timeline::from_recorded(&timeline.recorded()).expect("its own format");
        assert_eq!(back.render(), timeline.render());
        assert!(back.render().contains("(x3 until"), "{}", back.render());
    }

    #[test]
    fn a_line_in_another_format_is_named() {
        let error = Timeline::from_recorded("12\tharness\t-\tok\nT+5ms harness ok\n")
            .expect_err("not the recorded format");
        assert!(error.starts_with("line 2:"), "{error}");
    }
}
