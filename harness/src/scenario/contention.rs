//! Contention: eight clients buy ten items at once, each purchase thinking
//! for a while between reading and writing the stock. Without a lock they
//! all read the same stock and oversell; with one they take turns.
//!
//! The polling stages retry at the articles' interval, 100 ms (the other
//! scenarios poll faster to keep runs short), so the timeline shows the
//! spin the articles describe: a refused `SETNX`, a pause, another try.

use std::time::Duration;

use futures_util::future::try_join_all;
use lockcore::StageEntry;

use super::steps::client_name;
use super::{Recorded, Run, ScenarioEnv};
use crate::error::Result;

/// Clients racing for the lock.
pub const CLIENTS: usize = 8;
/// Items for sale.
pub const STOCK: i64 = 10;
/// How long one client waits for its turn before giving up. Generous: the
/// whole shop sells out in well under a second.
const TURN_WAIT: Duration = Duration::from_secs(20);
/// The articles' retry interval: a waiter sleeps this long between tries.
const ARTICLES_RETRY: Duration = Duration::from_millis(100);
/// The lock's TTL here. Nobody dies or stalls in this story, so no lock
/// should ever expire: a TTL ten times the usual keeps a holder whose
/// process a busy machine leaves unscheduled for a few hundred milliseconds
/// (its watchdog's renewal late) from losing its lock to the next client.
const CONTENTION_TTL: Duration = Duration::from_secs(3);

/// Every stage can be told this story.
pub(super) use super::always as not_applicable;

pub(super) async fn run(stage: StageEntry, mut env: ScenarioEnv) -> Result<Recorded> {
    env.timing.ttl = env.timing.ttl.max(CONTENTION_TTL);
    let mut run = Run::start(stage, env, STOCK).await?;
    run.factory.config.retry_interval = ARTICLES_RETRY;
    let mut clients = Vec::with_capacity(CLIENTS);
    for i in 0..CLIENTS {
        clients.push(run.client(&client_name(i)).await?);
    }
    run.narrate(format!("{CLIENTS} clients start shopping at once"));
    let business = run.env.timing.business;
    let sold = try_join_all(
        clients
            .iter()
            .map(|c| c.shop_until_sold_out(TURN_WAIT, business)),
    )
    .await?;
    run.facts
        .insert("sales_reported", sold.iter().map(|&n| i64::from(n)).sum());
    run.record().await
}
