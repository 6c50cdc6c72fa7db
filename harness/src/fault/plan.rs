//! The harness's [`Hook`]: per client, what happens at each fault point.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use lockcore::{Hook, Point, Reaction};
use tokio::sync::watch;

use crate::observe::Timeline;

/// A pause at a fault point: the test learns when the client arrived, and
/// decides when it may go on.
#[derive(Debug, Clone)]
pub struct Gate {
    arrived: Arc<watch::Sender<bool>>,
    opened: Arc<watch::Sender<bool>>,
}

impl Default for Gate {
    fn default() -> Self {
        Self {
            arrived: Arc::new(watch::channel(false).0),
            opened: Arc::new(watch::channel(false).0),
        }
    }
}

impl Gate {
    /// Waits until the client is paused at the gate.
    pub async fn arrived(&self) {
        let mut arrived = self.arrived.subscribe();
        let _ = arrived.wait_for(|yes| *yes).await;
    }

    /// Lets the client go on.
    pub fn open(&self) {
        self.opened.send_replace(true);
    }

    async fn pass(&self) {
        self.arrived.send_replace(true);
        let mut opened = self.opened.subscribe();
        let _ = opened.wait_for(|yes| *yes).await;
    }
}

/// What to do at a point.
#[derive(Debug, Clone)]
enum Action {
    Crash,
    Pause(Gate),
}

/// One client's plan of faults. Each planned fault strikes once.
#[derive(Debug)]
pub struct FaultPlan {
    client: String,
    timeline: Timeline,
    actions: Mutex<HashMap<Point, Action>>,
}

impl FaultPlan {
    /// No faults planned yet.
    pub fn new(client: &str, timeline: Timeline) -> Arc<Self> {
        Arc::new(Self {
            client: client.to_owned(),
            timeline,
            actions: Mutex::default(),
        })
    }

    /// The client dies the next time it reaches `point`.
    pub fn crash_at(&self, point: Point) {
        self.actions().insert(point, Action::Crash);
    }

    /// The client stops the next time it reaches `point`, until the returned
    /// gate is opened.
    pub fn pause_at(&self, point: Point) -> Gate {
        let gate = Gate::default();
        self.actions().insert(point, Action::Pause(gate.clone()));
        gate
    }

    fn actions(&self) -> std::sync::MutexGuard<'_, HashMap<Point, Action>> {
        self.actions
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[async_trait]
impl Hook for FaultPlan {
    async fn reached(&self, point: Point) -> Reaction {
        let action = self.actions().remove(&point);
        match action {
            None => Reaction::GoOn,
            Some(Action::Crash) => {
                self.timeline.record(
                    &self.client,
                    format!("CRASHES at {point} (sends nothing more)"),
                );
                Reaction::Crash
            }
            Some(Action::Pause(gate)) => {
                self.timeline
                    .record(&self.client, format!("paused at {point}"));
                gate.pass().await;
                self.timeline
                    .record(&self.client, format!("resumes after {point}"));
                Reaction::GoOn
            }
        }
    }
}
