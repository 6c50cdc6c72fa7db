//! Waking one waiter by name. A client subscribes once, on its first wait,
//! to its own channel; a release publishes the name of the request whose
//! turn it is, and only that request's sleep ends. A request is named at
//! most once per hand-over, and no name is used twice: a message naming a
//! request that is over finds no bell, and wakes nobody.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use lockcore::{ClientSetup, Connection, Heard, LockError};
use tokio::sync::Notify;

// ANCHOR: fair_wakes
/// One client's ear: its channel, its subscriber connection, and a bell
/// per waiting request.
pub(super) struct Wakes {
    channel: String,
    subscriber: tokio::sync::Mutex<Option<Connection>>,
    bells: Arc<Bells>,
}

#[derive(Default)]
struct Bells {
    /// The requests of this client now waiting, each with its own bell.
    waiting: Mutex<HashMap<String, Arc<Ring>>>,
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
                // `notify_one` keeps a permit when the request is between
                // two looks: its next sleep ends at once.
                if let Some(ring) = self.waiting().get(&payload) {
                    ring.named.store(true, Ordering::SeqCst);
                    ring.bell.notify_one();
                }
            }
            Heard::Message { .. } => {}
            Heard::Disconnected => {
                // A hand-over may have gone unheard: everyone tries again,
                // and the next wait subscribes on a new connection.
                self.listening.store(false, Ordering::SeqCst);
                for ring in self.waiting().values() {
                    ring.bell.notify_one();
                }
            }
        }
    }

    fn waiting(&self) -> MutexGuard<'_, HashMap<String, Arc<Ring>>> {
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

    /// Hangs a bell for `request` until the returned guard is dropped.
    pub(super) fn register(&self, request: &str) -> Bell<'_> {
        let ring = Arc::new(Ring::default());
        self.bells
            .waiting()
            .insert(request.to_owned(), Arc::clone(&ring));
        Bell {
            bells: &self.bells,
            request: request.to_owned(),
            ring,
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

/// What a release's message does to one waiting request.
#[derive(Default)]
struct Ring {
    bell: Notify,
    /// Set once a message has named the request (a lost connection rings
    /// the bell without naming anyone).
    named: AtomicBool,
}

/// A waiting request's bell; taken down when the wait ends.
pub(super) struct Bell<'a> {
    bells: &'a Bells,
    request: String,
    ring: Arc<Ring>,
}

impl Bell<'_> {
    /// Rings when this request is named (or the subscription was lost).
    pub(super) async fn rung(&self) {
        self.ring.bell.notified().await;
    }

    /// Whether a release's message has named this request.
    pub(super) fn named(&self) -> bool {
        self.ring.named.load(Ordering::SeqCst)
    }
}

impl Drop for Bell<'_> {
    fn drop(&mut self) {
        let mut waiting = self.bells.waiting();
        if waiting
            .get(&self.request)
            .is_some_and(|ring| Arc::ptr_eq(ring, &self.ring))
        {
            waiting.remove(&self.request);
        }
    }
}
