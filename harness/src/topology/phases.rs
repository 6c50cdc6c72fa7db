//! The line of phase times a failover story ends with: how long the
//! servers took to be ready, then each step of the harness (marked as it
//! happens) and the first of each of the topology's own events after the
//! fault (found in the timeline when the line is written), each with the
//! time since the one before it.

use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use crate::observe::Timeline;

/// The moments a story is timed by.
pub(crate) struct Phases {
    /// What was set up, for the line: `servers and Sentinels`.
    what: &'static str,
    /// When the setup began.
    started: Instant,
    /// How long it took to be ready.
    setup: Duration,
    /// The topology's events the line shows (`+odown`, `+fail`, …).
    events: &'static [&'static str],
    /// The harness's steps: the fault, the heal, a demoted master in sync.
    marks: Mutex<Vec<(&'static str, SystemTime)>>,
}

impl Phases {
    /// The moments of a topology whose setup begins now.
    pub(crate) fn new(what: &'static str, events: &'static [&'static str]) -> Self {
        Self {
            what,
            started: Instant::now(),
            setup: Duration::ZERO,
            events,
            marks: Mutex::new(Vec::new()),
        }
    }

    /// Notes that the setup is done: the line's first phase ends now.
    pub(crate) fn ready(&mut self) {
        self.setup = self.started.elapsed();
    }

    /// Notes that the harness did `step` now.
    pub(crate) fn mark(&self, step: &'static str) {
        self.marks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((step, SystemTime::now()));
    }

    /// `phases: <what> up in 1.2s; fault; +odown after 0.6s; …`.
    /// The events are `timeline`'s.
    pub(crate) fn line(&self, timeline: &Timeline) -> String {
        let mut steps = self.marks.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let events = timeline.events();
        let first_mark = steps.first().map(|(_, at)| *at);
        for name in self.events {
            let seen = events.iter().find(|e| {
                e.text.split_whitespace().next() == Some(name)
                    && first_mark.is_some_and(|fault| e.at >= fault)
            });
            if let Some(event) = seen {
                steps.push((name, event.at));
            }
        }
        steps.sort_by_key(|(_, at)| *at);
        let mut line = format!(
            "phases: {} up in {:.1}s",
            self.what,
            self.setup.as_secs_f64()
        );
        let mut previous: Option<SystemTime> = None;
        for (step, at) in &steps {
            match previous {
                None => line.push_str(&format!("; {step}")),
                Some(before) => line.push_str(&format!(
                    "; {step} after {:.1}s",
                    at.duration_since(before).unwrap_or_default().as_secs_f64()
                )),
            }
            previous = Some(*at);
        }
        line
    }
}
