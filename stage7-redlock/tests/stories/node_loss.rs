//! The stories of `tests/node_loss.rs`: Redlock over five masters with two
//! of them killed (a minority: the lock works), and with three killed (a
//! majority: the lock is refused, cleanly).
//!
//! One pair of stories, two readers: the tests assert on what these
//! functions return, and `lockstages book-assets` includes this same file
//! (by `#[path]`) to record the runs the book shows as
//! `stage7-node-loss-minority` and `stage7-node-loss-majority`. It lives
//! beside the tests, not in the stage's `src/`, because it drives the lock
//! with the harness, and a stage's `src/` depends on nothing of the harness.

use harness::Result;
use harness::fault::node::LockNodes;
use harness::scenario::{Outcome, Run, ScenarioEnv};
use harness::topology::redlock;

/// What the minority run did.
pub struct MinorityLost {
    /// What the observers saw.
    pub outcome: Outcome,
    /// Items the three clients say they sold, together.
    pub sold: u32,
}

/// Masters 4 and 5 of five are killed; three clients shop for five items,
/// taking turns on the lock, until the stock is gone.
pub async fn minority_lost(env: ScenarioEnv) -> Result<MinorityLost> {
    let mut run = Run::start(stage7::STAGE, env, 5).await?;
    run.kill_node(3).await?;
    run.kill_node(4).await?;
    let (a, b, c) = (
        run.client("client-A").await?,
        run.client("client-B").await?,
        run.client("client-C").await?,
    );
    let wait = run.env.timing.patience() * 10;
    let business = run.env.timing.business;
    let (sold_a, sold_b, sold_c) = tokio::join!(
        a.shop_until_sold_out(wait, business),
        b.shop_until_sold_out(wait, business),
        c.shop_until_sold_out(wait, business),
    );
    let sold = sold_a? + sold_b? + sold_c?;
    Ok(MinorityLost {
        outcome: run.finish().await?,
        sold,
    })
}

/// What the majority run did.
pub struct MajorityLost {
    /// What the observers saw.
    pub outcome: Outcome,
    /// Whether one try got the lock from the two live masters.
    pub granted: bool,
    /// Masters holding the lock key after that try.
    pub keys_left: usize,
    /// Whether waiting a whole TTL got the lock.
    pub granted_after_waiting: bool,
}

/// Masters 1 to 3 of five are killed; client-A tries once, then waits a
/// TTL for the lock.
pub async fn majority_lost(env: ScenarioEnv) -> Result<MajorityLost> {
    let mut run = Run::start(stage7::STAGE, env, 1).await?;
    for node in 0..3 {
        run.kill_node(node).await?;
    }
    let client = run.client("client-A").await?;
    // A refusal is an answer, not an error.
    let granted = client.try_acquire().await?.is_some();
    // The two live masters did write the key; a failed attempt deletes it.
    let keys_left = redlock::nodes_holding(&run.nodes, run.lock_key()).await?;
    // Waiting does not help, and does not hang either.
    let granted_after_waiting = client.acquire(run.env.timing.ttl).await?.is_some();
    Ok(MajorityLost {
        outcome: run.finish().await?,
        granted,
        keys_left,
        granted_after_waiting,
    })
}
