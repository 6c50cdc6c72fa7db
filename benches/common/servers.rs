//! The Redis servers a bench runs against: `redis-server` processes (or
//! containers) started through the harness, one per node, gone when dropped.

use harness::server::{Backend, Node};

/// Independent nodes, `node0`, `node1`, …
pub struct Servers {
    /// The nodes, in order.
    pub nodes: Vec<Node>,
    /// Where they run.
    pub backend: Backend,
}

impl Servers {
    /// Starts `count` nodes on the backend the environment chooses.
    pub async fn start(count: usize) -> Result<Self, harness::HarnessError> {
        let backend = Backend::from_env()?;
        let mut nodes = Vec::new();
        for i in 0..count {
            nodes.push(Node::start(&backend, &format!("node{i}"), &[]).await?);
        }
        Ok(Self { nodes, backend })
    }

    /// The URLs of the first `count` nodes.
    pub fn urls(&self, count: usize) -> Vec<String> {
        self.nodes.iter().take(count).map(Node::url).collect()
    }
}
