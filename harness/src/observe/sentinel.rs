//! What the Sentinels said: their pub/sub events (`+sdown`, `+odown`,
//! `+switch-master`…), fed into the [`Timeline`] on the same clock as the
//! clients and the servers.
//!
//! Every Sentinel publishes its own view on its own channels (`+sdown` is
//! the channel, `master lockmaster 127.0.0.1 7001` the message), so the
//! timeline shows each of them reaching its conclusion, and their
//! agreement.

use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::Timeline;
use crate::error::{HarnessError, Result};

/// The events that tell the failover story; the rest (hello messages,
/// discovered peers) is plumbing.
const SHOWN: &[&str] = &[
    "+sdown",
    "-sdown",
    "+odown",
    "-odown",
    "+try-failover",
    "+vote-for-leader",
    "+elected-leader",
    "+selected-slave",
    "+promoted-slave",
    "+switch-master",
    "+failover-end",
    "+convert-to-slave",
];

/// The master's address after the last `+switch-master`, `host:port`;
/// shared by the watchers of one group of Sentinels.
pub type Switches = watch::Sender<Option<String>>;

/// Watches one Sentinel's events until dropped.
#[derive(Debug)]
pub struct SentinelWatcher(JoinHandle<()>);

impl SentinelWatcher {
    /// Subscribes to every event of the Sentinel at `url`, labelled
    /// `sentinel` in the timeline; a `+switch-master` also goes to
    /// `switches`.
    pub async fn start(
        url: &str,
        sentinel: &str,
        timeline: &Timeline,
        switches: Switches,
    ) -> Result<Self> {
        let client = redis::Client::open(url)?;
        let mut pubsub = client.get_async_pubsub().await?;
        pubsub.psubscribe("*").await?;
        let timeline = timeline.clone();
        let sentinel = sentinel.to_owned();
        Ok(Self(tokio::spawn(async move {
            let mut messages = pubsub.into_on_message();
            while let Some(message) = messages.next().await {
                let channel = message.get_channel_name().to_owned();
                if !SHOWN.contains(&channel.as_str()) {
                    continue;
                }
                let text: String = message.get_payload().unwrap_or_default();
                if channel == "+switch-master" {
                    // `<name> <old-ip> <old-port> <new-ip> <new-port>`
                    let words: Vec<&str> = text.split_whitespace().collect();
                    if let [_, _, _, ip, port] = words[..] {
                        switches.send_replace(Some(format!("{ip}:{port}")));
                    }
                }
                timeline.record(&sentinel, format!("{channel} {text}"));
            }
        })))
    }
}

impl Drop for SentinelWatcher {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Waits until a Sentinel of the group announces a new master, and
/// returns its `host:port`.
pub async fn wait_for_switch(
    switches: &mut watch::Receiver<Option<String>>,
    within: Duration,
) -> Result<String> {
    let seen = tokio::time::timeout(within, switches.wait_for(Option::is_some))
        .await
        .map_err(|_| {
            HarnessError::Topology(format!(
                "the Sentinels announced no new master within {within:?}"
            ))
        })?
        .map_err(|_| HarnessError::Topology("the Sentinels' watchers are gone".into()))?;
    Ok(seen.clone().unwrap_or_default())
}
