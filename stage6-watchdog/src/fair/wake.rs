//! Waking one waiter by name. A client subscribes once, on its first wait,
//! to its own channel; a release publishes the name of the owner whose turn
//! it is, and only that owner's sleep ends.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use lockcore::{ClientSetup, Connection, Heard, LockError};
use tokio::sync::Notify;

// ANCHOR: fair_wakes
/// One client's ear: its channel, its subscriber connection, and a bell
/// per waiting owner.
pub(super) struct Wakes {
    channel: String,
    subscriber: tokio::sync::Mutex<Option<Connection>>,
    bells: Arc<Bells>,
}

#[derive(Default)]
struct Bells {
    /// The owners of this client now waiting, each with its own bell.
    waiting: Mutex<HashMap<String, Arc<Notify>>>,
    /// Whether the subscription is up; false until the first wait, and
    /// again after the connection was lost.
    listening: AtomicBool,
}

impl Bells {
    /// Called by the subscriber connection's reader; must not block.
    fn heard(&self, channel: &str, heard: Heard) {
        match heard {
            Heard::Message {
                channel: from,
                payload,
            } if from == channel => {
                // `notify_one` keeps a permit when the owner is between two
                // tries: its next sleep ends at once.
                if let Some(bell) = self.waiting().get(&payload) {
                    bell.notify_one();
                }
            }
            Heard::Message { .. } => {}
            Heard::Disconnected => {
                // A hand-over may have gone unheard: everyone tries again,
                // and the next wait subscribes on a new connection.
                self.listening.store(false, Ordering::SeqCst);
                for bell in self.waiting().values() {
                    bell.notify_one();
                }
            }
        }
    }

    fn waiting(&self) -> MutexGuard<'_, HashMap<String, Arc<Notify>>> {
        self.waiting
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Wakes {
    pub(super) fn new(channel: String) -> Self {
        Self {
            channel,
            subscriber: tokio::sync::Mutex::default(),
            bells: Arc::default(),
        }
    }

    /// Hangs a bell for `owner` until the returned guard is dropped.
    pub(super) fn register(&self, owner: &str) -> Bell<'_> {
        let bell = Arc::new(Notify::new());
        self.bells
            .waiting()
            .insert(owner.to_owned(), Arc::clone(&bell));
        Bell {
            bells: &self.bells,
            owner: owner.to_owned(),
            bell,
        }
    }

    pub(super) fn is_listening(&self) -> bool {
        self.bells.listening.load(Ordering::SeqCst)
    }

    /// Subscribes to the client's channel, on a new subscriber connection
    /// unless one is already listening.
    pub(super) async fn listen(&self, setup: &ClientSetup, url: &str) -> Result<(), LockError> {
        let mut subscriber = self.subscriber.lock().await;
        if subscriber.is_some() && self.is_listening() {
            return Ok(());
        }
        let bells = Arc::clone(&self.bells);
        let channel = self.channel.clone();
        let mut conn = setup
            .subscriber(url, move |heard| bells.heard(&channel, heard))
            .await?;
        conn.subscribe(&self.channel).await?;
        self.bells.listening.store(true, Ordering::SeqCst);
        *subscriber = Some(conn);
        Ok(())
    }
}
// ANCHOR_END: fair_wakes

/// A waiting owner's bell; taken down when the wait ends.
pub(super) struct Bell<'a> {
    bells: &'a Bells,
    owner: String,
    bell: Arc<Notify>,
}

impl Bell<'_> {
    /// Rings when this owner is named (or the subscription was lost).
    pub(super) async fn rung(&self) {
        self.bell.notified().await;
    }
}

impl Drop for Bell<'_> {
    fn drop(&mut self) {
        let mut waiting = self.bells.waiting();
        if waiting
            .get(&self.owner)
            .is_some_and(|bell| Arc::ptr_eq(bell, &self.bell))
        {
            waiting.remove(&self.owner);
        }
    }
}
