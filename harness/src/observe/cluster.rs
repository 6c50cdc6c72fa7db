//! What the cluster said: a Redis Cluster publishes nothing like Sentinel's
//! events, so its view is read from `CLUSTER NODES` of one node that is
//! never faulted, asked every few milliseconds; each change of a node's
//! state becomes one line of the [`Timeline`], on the clients' clock:
//!
//! - `+pfail master1`: the watching node has had no answer from master1
//!   for `cluster-node-timeout` (its flags say `fail?`);
//! - `+fail master1`: a majority of masters agreed, through gossip, that
//!   master1 is down (`fail`): only now may its replica stand for election;
//! - `+promoted replica1`: replica1 won the election and serves master1's
//!   slots, under a new configuration epoch;
//! - `+demoted master1`: master1 came back and follows the node that took
//!   its slots;
//! - `-fail master1`: the flag is cleared.
//!
//! Asking costs the watched node a command every [`POLL`]; `MONITOR` hides
//! `CLUSTER` commands, so the timeline shows none of it.

use std::collections::HashMap;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::sleep;

use super::Timeline;
use crate::error::Result;

/// How often the watched node is asked: far below the times the cluster
/// takes to decide (hundreds of milliseconds).
const POLL: Duration = Duration::from_millis(20);

/// One node as `CLUSTER NODES` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterNode {
    /// Its 40-character id.
    pub id: String,
    /// `host:port` it announces to clients.
    pub addr: String,
    /// Whether it is a master (else a replica).
    pub master: bool,
    /// `fail?`: this node has had no answer from it in time.
    pub pfail: bool,
    /// `fail`: the masters agreed it is down.
    pub fail: bool,
    /// The id of the master it follows, for a replica.
    pub follows: Option<String>,
    /// Its configuration epoch.
    pub epoch: u64,
    /// The slots it serves, as listed (`5461-10922`).
    pub slots: Vec<String>,
}

/// Parses the reply of `CLUSTER NODES`.
pub fn parse_cluster_nodes(text: &str) -> Vec<ClusterNode> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() < 8 {
                return None;
            }
            let flags: Vec<&str> = fields[2].split(',').collect();
            let addr = fields[1].split('@').next().unwrap_or_default();
            Some(ClusterNode {
                id: fields[0].to_owned(),
                addr: addr.to_owned(),
                master: flags.contains(&"master"),
                pfail: flags.contains(&"fail?"),
                fail: flags.contains(&"fail"),
                follows: (fields[3] != "-").then(|| fields[3].to_owned()),
                epoch: fields[6].parse().unwrap_or_default(),
                slots: fields[8..]
                    .iter()
                    .filter(|s| !s.starts_with('['))
                    .map(|s| (*s).to_owned())
                    .collect(),
            })
        })
        .collect()
}

/// Asks the node at the other end of `conn` for `CLUSTER NODES`.
pub async fn cluster_nodes(conn: &mut lockcore::Connection) -> Result<Vec<ClusterNode>> {
    let text: String = redis::cmd("CLUSTER").arg("NODES").query_async(conn).await?;
    Ok(parse_cluster_nodes(&text))
}

/// Watches one node's view of the cluster until dropped.
#[derive(Debug)]
pub struct ClusterWatcher(JoinHandle<()>);

impl ClusterWatcher {
    /// Asks the node at `url`, labelled `watching` in the timeline, for its
    /// view every [`POLL`], and records each change; `labels` names the
    /// nodes by their ids.
    pub async fn start(
        url: &str,
        watching: &str,
        timeline: &Timeline,
        labels: HashMap<String, String>,
    ) -> Result<Self> {
        let mut conn = lockcore::connect(url, "harness").await?;
        let timeline = timeline.clone();
        let watching = watching.to_owned();
        Ok(Self(tokio::spawn(async move {
            let mut before: HashMap<String, ClusterNode> = HashMap::new();
            loop {
                let asked: redis::RedisResult<String> = redis::cmd("CLUSTER")
                    .arg("NODES")
                    .query_async(&mut conn)
                    .await;
                if let Ok(text) = asked {
                    let name = |id: &str| labels.get(id).cloned().unwrap_or_else(|| id.to_owned());
                    for node in parse_cluster_nodes(&text) {
                        if let Some(old) = before.get(&node.id) {
                            for line in changes(old, &node, &name) {
                                timeline.record(&watching, line);
                            }
                        }
                        before.insert(node.id.clone(), node);
                    }
                }
                sleep(POLL).await;
            }
        })))
    }
}

impl Drop for ClusterWatcher {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The lines that say how `old` became `new`.
fn changes(old: &ClusterNode, new: &ClusterNode, name: &dyn Fn(&str) -> String) -> Vec<String> {
    let who = name(&new.id);
    let mut lines = Vec::new();
    if new.pfail && !old.pfail {
        lines.push(format!(
            "+pfail {who}: no answer from it within cluster-node-timeout"
        ));
    }
    if new.fail && !old.fail {
        lines.push(format!(
            "+fail {who}: a majority of masters agree that it is down"
        ));
    }
    if !new.fail && !new.pfail && (old.fail || old.pfail) {
        lines.push(format!("-fail {who}: it answers again"));
    }
    if new.master && !old.master {
        lines.push(format!(
            "+promoted {who}: it won the election and serves slots {} (configuration epoch {})",
            new.slots.join(" "),
            new.epoch
        ));
    }
    if !new.master && old.master {
        let follows = new.follows.as_deref().map(name).unwrap_or_default();
        lines.push(format!(
            "+demoted {who}: its slots went to a newer epoch; it now replicates {follows}"
        ));
    }
    lines
}
