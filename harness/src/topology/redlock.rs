//! Redlock's independent masters, and the single node of every other stage
//! (a Redlock of one): Redis servers that know nothing of each other, and
//! how many of them hold the lock key. What is done to the nodes (proxies,
//! kills, restarts, clock jumps) is in [`crate::fault::node`].

use crate::error::{HarnessError, Result};
use crate::server::{Backend, Node, external};

/// Starts `count` lock nodes on `backend`, at once: `lock` when there is
/// one, `node1`… for Redlock's masters. A reader's own server is one
/// server, and cannot stand for several.
pub(crate) async fn start(backend: &Backend, count: usize) -> Result<Vec<Node>> {
    if count > 1 && backend.external().is_some() {
        return Err(HarnessError::NotApplicable(external::ONE_SERVER));
    }
    let labels: Vec<String> = if count == 1 {
        vec!["lock".to_owned()]
    } else {
        (1..=count).map(|i| format!("node{i}")).collect()
    };
    futures_util::future::try_join_all(labels.iter().map(|label| Node::start(backend, label, &[])))
        .await
}

/// On how many of `nodes` `key` exists (dead nodes count as not holding
/// it).
pub async fn nodes_holding(nodes: &[Node], key: &str) -> Result<usize> {
    let mut holding = 0;
    for node in nodes {
        let Ok(mut conn) = lockcore::connect(&node.url(), "harness").await else {
            continue;
        };
        let exists: bool = redis::cmd("EXISTS").arg(key).query_async(&mut conn).await?;
        holding += usize::from(exists);
    }
    Ok(holding)
}

/// Whether `key` still holds `value` on a majority of `nodes` (on the one
/// node, for single-node stages).
pub(crate) async fn majority_holds(nodes: &[Node], key: &str, value: &str) -> Result<bool> {
    let mut holding = 0;
    for node in nodes {
        if node_holds(&node.url(), key, value).await? {
            holding += 1;
        }
    }
    Ok(holding > nodes.len() / 2)
}

/// Whether `key` on the node at `url` holds `value`: as its string value
/// (stages 1–5, 7, 8) or as a field of its hash (stage 6).
async fn node_holds(url: &str, key: &str, value: &str) -> Result<bool> {
    let mut conn = lockcore::connect(url, "harness").await?;
    let kind: String = redis::cmd("TYPE").arg(key).query_async(&mut conn).await?;
    Ok(match kind.as_str() {
        "string" => {
            // A library may store raw bytes (rslock: 20 random ones); the
            // holder protocol and MONITOR show a byte that is not UTF-8 as
            // the character of that number.
            let current: Option<Vec<u8>> =
                redis::cmd("GET").arg(key).query_async(&mut conn).await?;
            current.is_some_and(|bytes| match std::str::from_utf8(&bytes) {
                Ok(text) => text == value,
                Err(_) => bytes.iter().map(|&b| char::from(b)).eq(value.chars()),
            })
        }
        "hash" => {
            redis::cmd("HEXISTS")
                .arg(key)
                .arg(value)
                .query_async(&mut conn)
                .await?
        }
        _ => false,
    })
}
