//! Duplicate request: the retry a gateway makes after a timeout. The same
//! purchase, `request-1`, reaches two instances of the service one after
//! the other, and each does everything right by the lock.
//!
//! 1. client-A (the first instance) takes the lock, reads the stock and is
//!    slow inside its critical section: slower than the gateway's timeout.
//! 2. The gateway gives up waiting and sends `request-1` again, to client-B
//!    (the second instance). B tries the lock once: while A holds it, every
//!    lock says no, so the retry waits. (Stage 0 has no lock: B walks in
//!    and charges while A is still inside.)
//! 3. A finishes: it charges `request-1` and releases, its reply too late
//!    for the gateway that already gave up on it.
//! 4. B gets the lock and charges `request-1` again.
//!
//! Nothing here defeats a lock: no pause, no expiry, no failover. The
//! story runs with a 3 s TTL (at least ten of the usual), so no lock
//! expires while A is slow and every stage serialises the two instances
//! perfectly; that is the point. A lock decides *who goes first*, never
//! *whether this work was done before*: the same request is charged twice
//! on every stage, stage 6's watchdog (it keeps A's lock, B waits, then
//! charges) and stage 8's fencing token (B's token is the newer one, its
//! write is legitimate) included. A gateway timeout is seconds and a lock's
//! TTL tens of seconds, so this, and not a lock that expired under the
//! first instance (slow-business's story, where the lock itself fails), is
//! how a retry usually meets the lock.
//!
//! Both purchases carry the request id either way, and their orders record
//! it (`client-B request-1`), so the judge can count the charges: DUPLICATE
//! when one id is on two orders. With `--request-ids` the resource charges
//! an id once ([`RequestIds::Checked`](crate::workload::RequestIds)): B's
//! purchase changes nothing and is recorded as a refused duplicate. The
//! matrix runs without, so its cells show what a lock alone does.
//!
//! Facts, each 1 or 0: `retry_waited` (B's first try found the lock held),
//! `first_charged` and `retry_charged` (A's and B's purchase was charged).

use std::time::Duration;

use lockcore::{Description, Point, StageEntry};

use super::stop::stop_at;
use super::{Recorded, Run, ScenarioEnv};
use crate::error::Result;
use crate::workload::Sale;

/// Plenty: a double charge must not be an oversell, so that what the judge
/// finds is the duplicate alone.
const STOCK: i64 = 10;
/// The purchase the gateway sends twice.
pub const REQUEST: &str = "request-1";
/// The lock's TTL here: nobody is meant to lose the lock in this story, so
/// ten times the usual, as in `contention`.
const STORY_TTL: Duration = Duration::from_secs(3);

pub(super) fn not_applicable(stage: &Description) -> Option<&'static str> {
    crate::holder::remote::needs_in_process_client(stage)
}

pub(super) async fn run(stage: StageEntry, mut env: ScenarioEnv) -> Result<Recorded> {
    env.timing.ttl = env.timing.ttl.max(STORY_TTL);
    let mut run = Run::start(stage, env, STOCK).await?;
    let timing = run.env.timing;
    let a = run.client("client-A").await?;
    let b = run.client("client-B").await?;

    // 1. A takes the lock, reads, and is slow inside.
    let held_a = a.acquire_free(timing.patience()).await?;
    let a_slow = stop_at(
        &a,
        Point::InCriticalSection,
        a.buy_request(&held_a, timing.business, REQUEST),
    )
    .await?;

    // 2. The gateway's timeout: the same request goes to B.
    run.narrate(format!(
        "the gateway times out waiting for client-A and sends {REQUEST} again, to client-B"
    ));
    let retry = match b.try_acquire().await? {
        Some(held) => {
            // No lock to wait for: B charges while A is still inside.
            run.facts.insert("retry_waited", 0);
            let sale = b.buy_request(&held, timing.business, REQUEST).await?;
            b.release(&held).await?.answered()?;
            Some(sale)
        }
        None => {
            run.facts.insert("retry_waited", 1);
            run.narrate("client-B waits for the lock client-A holds");
            None
        }
    };

    // 3. A finishes its charge and releases; a waiting B gets the lock.
    a_slow.gate.open();
    let (a_sale, b_held) = tokio::join!(
        async {
            let sale = a_slow.work.await?;
            a.release(&held_a).await?.answered()?;
            Ok::<_, crate::error::HarnessError>(sale)
        },
        async {
            match retry {
                Some(_) => Ok(None),
                None => b.acquire(timing.patience()).await,
            }
        }
    );
    let a_sale = a_sale?;
    run.facts
        .insert("first_charged", i64::from(matches!(a_sale, Sale::Sold(_))));

    // 4. B, in at last, charges the same request again.
    let b_sale = match (retry, b_held?) {
        (Some(sale), _) => Some(sale),
        (None, Some(held)) => {
            let sale = b.buy_request(&held, timing.business, REQUEST).await?;
            b.release(&held).await?.answered()?;
            Some(sale)
        }
        (None, None) => {
            run.narrate("client-B never got the lock: the retry was not charged");
            None
        }
    };
    run.facts.insert(
        "retry_charged",
        i64::from(matches!(b_sale, Some(Sale::Sold(_)))),
    );
    run.record().await
}
