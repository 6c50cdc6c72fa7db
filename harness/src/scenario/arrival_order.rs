//! Arrival order: is the lock served in the order its waiters asked?
//!
//! 1. client-A takes the lock.
//! 2. Four waiters line up, one at a time: client-B asks, and only once the
//!    lock's server has seen it ask does client-C ask, and so on to
//!    client-E. The harness writes each one's place in the history as the
//!    server saw it (`in line`).
//! 3. The lock changes hands, as on a busy service: whoever gets it buys
//!    one item and gives it back, and the moment it has, asks for it again
//!    (twice at most, and only while a waiter of the line has not been
//!    served yet).
//!
//! A lock that queues its waiters (stage 6's fair variant) hands the lock
//! to the head of its queue, and a client that asks again joins the tail:
//! B, C, D, E are served in that order. A lock that lets its waiters race
//! gives it to whoever asks first after a release: a polling waiter that
//! happens to be asleep loses to the client that has just released and
//! asks again at once, and stage 6's one unlock message wakes every waiter
//! to race each other and that same client. One hand-over in order proves
//! nothing, so there are four to get right and a rival at each.
//!
//! The verdict is the record's: a grant while a client ahead in line
//! still waits is OUT-OF-ORDER ([`crate::check::order`]). How often the
//! order broke is a fact: `passed_over`, the grants that broke it.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Duration;

use futures_util::future::try_join_all;
use lockcore::{Acquired, Description, StageEntry};
use tokio::sync::watch;

use super::{Recorded, Run, ScenarioEnv};
use crate::check::order::passed_over;
use crate::client::Client;
use crate::error::{HarnessError, Result};

/// The line, in the order they ask.
const WAITERS: [&str; 4] = ["client-B", "client-C", "client-D", "client-E"];
/// How many times a client asks again after giving the lock back.
const ASKS_AGAIN: usize = 2;
/// Every grant buys one item: enough for every client's every grant.
const STOCK: i64 = ((WAITERS.len() + 1) * (ASKS_AGAIN + 1)) as i64;
/// A waiter's patience: the whole story, with room to spare, so that no
/// one gives up while the line is served.
const WAIT: Duration = Duration::from_secs(10);
/// The least watchdog timeout of the story's clients. The fair lock counts
/// a waiter as gone once it has not looked at the queue for a sixth of it
/// (its waiter timeout), and hands its place on: with the usual 300 ms that
/// is 50 ms, and on a loaded machine (load 11, a CPU burner and two builds
/// beside the matrix) two live waiters were passed over as dead. At 3 s a
/// waiter must stall for half a second to be dropped; this story is about
/// the order of live waiters (`dead-waiter` is about the dead ones).
const ORDERLY_WATCHDOG: Duration = Duration::from_secs(3);

pub(super) fn not_applicable(stage: &Description) -> Option<&'static str> {
    if super::ensemble::on_consensus_store(stage) {
        // Their queues are in order by construction (the lowest sequence
        // number, the oldest create revision), but the line the story
        // needs is the order the servers saw the requests in, and nothing
        // records a ZooKeeper or etcd request as MONITOR records Redis's.
        return super::ensemble::redis_only(
            stage,
            "ZooKeeper: its queue is ordered by sequence number, but no record of the order its requests arrived in is kept here yet",
        );
    }
    (stage.stage == 0).then_some("no lock to wait for")
}

pub(super) async fn run(stage: StageEntry, env: ScenarioEnv) -> Result<Recorded> {
    let mut run = Run::start(stage, env, STOCK).await?;
    let business = run.env.timing.business;
    let orderly = |config: &mut lockcore::LockConfig| {
        config.watchdog_timeout = config.watchdog_timeout.max(ORDERLY_WATCHDOG);
    };
    let holder = run.client_configured("client-A", orderly).await?;
    let mut waiters = Vec::new();
    for name in WAITERS {
        waiters.push(run.client_configured(name, orderly).await?);
    }
    let held = holder.acquire_free(run.env.timing.patience()).await?;

    // The waiters not served yet: while there is one, a client that gives
    // the lock back asks again.
    let unserved = Mutex::new(WAITERS.iter().map(|w| (*w).to_owned()).collect());
    // How many waiters may ask; client-A gives the lock back at the end.
    let (may_ask, asking) = watch::channel(0usize);

    let line_up = async {
        for (place, name) in WAITERS.iter().enumerate() {
            may_ask.send_replace(place + 1);
            run.wait_until_asked(name, WAIT).await?;
            run.history().in_line(name);
        }
        run.narrate("every waiter is in line: client-A gives the lock back");
        may_ask.send_replace(WAITERS.len() + 1);
        Ok::<_, HarnessError>(())
    };
    let mut clients = vec![serve(
        &holder,
        Some(held),
        WAITERS.len() + 1,
        &asking,
        &unserved,
        business,
    )];
    for (place, waiter) in waiters.iter().enumerate() {
        clients.push(serve(waiter, None, place + 1, &asking, &unserved, business));
    }
    let (lined_up, served) = tokio::join!(line_up, try_join_all(clients));
    lined_up?;
    served?;

    let broken = passed_over(&run.history().entries()).len();
    run.facts
        .insert("passed_over", i64::try_from(broken).unwrap_or(i64::MAX));
    run.record().await
}

/// One client's part: waits for its turn to ask (`turn`, a number the
/// story raises), takes the lock (or starts with `held`), buys one item,
/// gives the lock back, and asks again at once while a waiter of the line
/// is unserved, [`ASKS_AGAIN`] times at most.
async fn serve(
    client: &Client,
    mut held: Option<Acquired>,
    turn: usize,
    asking: &watch::Receiver<usize>,
    unserved: &Mutex<BTreeSet<String>>,
    business: Duration,
) -> Result<()> {
    let mut asking = asking.clone();
    let _ = asking.wait_for(|allowed| *allowed >= turn).await;
    let mut asks_left = ASKS_AGAIN;
    loop {
        let lock = match held.take() {
            Some(lock) => lock,
            None => match client.acquire(WAIT).await? {
                Some(lock) => lock,
                None => return Ok(()),
            },
        };
        unserved
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(client.name());
        client.buy_one(&lock, business).await?;
        client.release(&lock).await?.answered()?;
        let line_waits = !unserved
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty();
        if asks_left == 0 || !line_waits {
            return Ok(());
        }
        asks_left -= 1;
    }
}
