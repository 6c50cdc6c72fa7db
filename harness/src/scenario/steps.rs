//! Steps that more than one story takes, each written once, so that no
//! story borrows from another: how clients are named; a business slower
//! than the lock; where the failover and cluster stories apply; the end of
//! every failover story, and client-A's `WAIT` for its replicas; the steps
//! of a partition story; and the steps of the stories in which a node that
//! granted the lock forgets it (on one node, or on Redlock's masters).

use std::time::Duration;

use lockcore::{Acquired, Description, LockError, Point};
use tokio::time::Instant;

use super::Run;
use super::stop::{Stopped, stop_at};
use crate::client::Client;
use crate::error::{HarnessError, Result};
use crate::fault::node::{LockNodes, Proxies};
use crate::topology::redlock;
use crate::workload::Sale;

/// `client-A`, `client-B`, …
pub fn client_name(i: usize) -> String {
    format!(
        "client-{}",
        char::from(b'A' + u8::try_from(i % 26).unwrap_or(0))
    )
}

/// client-A, holding `held`, reads the stock and stops inside its
/// critical section before it writes: a business slower than the lock's
/// TTL, for as long as the story keeps the gate shut.
pub(super) async fn slow_inside<'a>(
    run: &Run,
    a: &'a Client,
    held: &'a Acquired,
) -> Result<Stopped<'a, Sale>> {
    let timing = run.env.timing;
    let stopped = stop_at(
        a,
        Point::InCriticalSection,
        a.buy_one(held, timing.business),
    )
    .await?;
    run.narrate(format!(
        "{}'s business is slow: it stays inside while client-B waits up to {}ms",
        a.name(),
        timing.patience().as_millis()
    ));
    Ok(stopped)
}

/// Why a Redis stage has no story on a master and its replicas, if it has
/// none.
pub(super) fn not_on_replicas(stage: &Description) -> Option<&'static str> {
    if stage.stage == 0 {
        Some("no lock to lose")
    } else if stage.nodes > 1 {
        Some("Redlock uses independent masters, no replicas")
    } else {
        None
    }
}

/// Why a Redis stage has no story on one cluster, if it has none.
pub(super) fn not_on_a_cluster(stage: &Description) -> Option<&'static str> {
    if stage.stage == 0 {
        Some("no lock to lose")
    } else if stage.nodes > 1 {
        Some(
            "Redlock needs independent masters: five lock keys on one cluster's masters share its failure detection and its failovers, so they are one system, not five",
        )
    } else {
        None
    }
}

/// Whether `nodes[promoted]`, now the master, had client-A's lock key: the
/// fact `lock_on_new_master`, and a line saying it of `subject`.
pub(super) async fn note_lock_on_new_master(
    run: &mut Run,
    promoted: usize,
    subject: &str,
) -> Result<()> {
    let lock_survived = run.lock_key_exists(promoted).await?;
    run.facts
        .insert("lock_on_new_master", i64::from(lock_survived));
    let has = if lock_survived {
        "has"
    } else {
        "does NOT have"
    };
    run.narrate(format!("{subject} {has} the lock key"));
    Ok(())
}

/// client-A after its master died: it still believes it holds the lock,
/// and has read the stock.
pub(super) struct Stale<'a> {
    pub a: &'a Client,
    pub held_a: &'a Acquired,
    pub read_a: i64,
}

/// The end of every failover story: client-B asks the new master (granted
/// by `granted_by`) for the lock and buys, then client-A, who never
/// learned its lock is gone, finishes its purchase on the stock it read
/// and releases towards the dead master.
pub(super) async fn a_stale_b_on_new_master(
    run: &mut Run,
    stale: Stale<'_>,
    b: &Client,
    granted_by: &str,
) -> Result<()> {
    let timing = run.env.timing;
    // 5. B finds the new master.
    let held_b = b.acquire(timing.patience()).await?;
    run.facts.insert("b_acquired", i64::from(held_b.is_some()));
    if let Some(held_b) = &held_b {
        run.narrate(format!(
            "TWO HOLDERS: client-A (granted by the dead master) and client-B (by {granted_by})"
        ));
        b.buy_one(held_b, timing.business).await?;
    }

    // 6. A never learned that its lock is gone.
    run.narrate("client-A, still believing it holds the lock, finishes its purchase");
    stale.a.sell(stale.read_a, stale.held_a).await?;
    if let Err(e) = stale.a.release(stale.held_a).await {
        run.narrate(format!(
            "client-A's release cannot reach the dead master: {e}"
        ));
    }
    if let Some(held_b) = held_b {
        // A refusal is already in the timeline.
        let _ = b.release(&held_b).await?;
    }
    Ok(())
}

/// The end of a failover story in which client-A gave its lock back:
/// client-B, a new client, takes the lock from the new master, buys, and
/// gives the lock back.
pub(super) async fn b_buys_alone(run: &mut Run) -> Result<()> {
    let timing = run.env.timing;
    let b = run.client("client-B").await?;
    let held_b = b.acquire(timing.patience()).await?;
    run.facts.insert("b_acquired", i64::from(held_b.is_some()));
    if let Some(held_b) = held_b {
        b.buy_one(&held_b, timing.business).await?;
        let _ = b.release(&held_b).await?;
    }
    Ok(())
}

/// How long one `WAIT` waits for an acknowledgement: far longer than a
/// replica in sync needs (`WAIT` asks the replicas at once; they answer
/// within a millisecond or so). The server answers a `WAIT` that timed out
/// at its next tick (ten a second), so its connection allows for that
/// too ([`lockcore::connect_blocking`]).
const WAIT_TIMEOUT: Duration = Duration::from_millis(200);
/// How many times A's library sends `WAIT` before it takes no for an
/// answer: a second in all. On a loaded machine the acknowledgement of a
/// replica behind a relay can take longer than one `WAIT`; it still
/// arrives, and the next `WAIT` counts it at once.
const WAIT_TRIES: u32 = 5;

/// What client-A's lock library does after the lock write when it
/// confirms: a marker written on a connection of its own, then `WAIT 1`
/// for it, again while no replica has acknowledged, [`WAIT_TRIES`] times at
/// most. Returns how many replicas acknowledged. `marker` is the key
/// written (on a cluster, one in the lock key's slot, so on its master).
pub(super) async fn wait_for_replicas(
    run: &Run,
    url: &str,
    client: &str,
    marker: &str,
) -> Result<i64> {
    let replies = Some(run.history().reply_log());
    let mut conn = lockcore::connect_blocking(url, client, replies, WAIT_TIMEOUT * 3).await?;
    redis::cmd("INCR")
        .arg(marker)
        .query_async::<i64>(&mut conn)
        .await?;
    let mut acknowledged = 0;
    for _ in 0..WAIT_TRIES {
        acknowledged = redis::cmd("WAIT")
            .arg(1)
            .arg(WAIT_TIMEOUT.as_millis() as u64)
            .query_async(&mut conn)
            .await?;
        if acknowledged > 0 {
            break;
        }
    }
    Ok(acknowledged)
}

/// How long client-A asks the cut-off master: ten times what its answer
/// takes on a loaded machine.
const ASK_THE_CUT_OFF_MASTER_FOR: Duration = Duration::from_secs(5);

/// Step 3 of a partition story: A asks the cut-off master (`master`, for
/// the timeline) and, if granted, reads the stock. A refusal is part of the
/// story (the master counts too few replicas), not an error.
pub(super) async fn a_asks_the_cut_off_master(
    run: &mut Run,
    a: &Client,
    master: &str,
) -> Result<(Option<Acquired>, Option<i64>)> {
    // The master answers at once, yes or no; a library that takes a no as
    // "busy" and asks again (rslock) would ask until its patience ends, a
    // minute and a half with the stories' 30 s lease.
    let wait = run.env.timing.patience().min(ASK_THE_CUT_OFF_MASTER_FOR);
    let held_a = match a.acquire(wait).await {
        Ok(held) => held,
        Err(HarnessError::Lock(e)) => {
            run.narrate(format!("client-A's lock was REFUSED by {master}: {e}"));
            None
        }
        Err(other) => return Err(other),
    };
    run.facts.insert("a_acquired", i64::from(held_a.is_some()));
    let read_a = match &held_a {
        Some(held) => Some(a.read_stock(held).await?),
        None => None,
    };
    Ok((held_a, read_a))
}

/// Steps 5 and 6 of a partition story: B asks the side the majority
/// promoted and buys; A, unaware of the partition, finishes the purchase it
/// started from its read; then B gives its lock back. `two_holders` is said
/// when both got in.
pub(super) async fn b_buys_while_a_finishes(
    run: &mut Run,
    (a, held_a, read_a): (&Client, &Option<Acquired>, Option<i64>),
    b: &Client,
    two_holders: &str,
) -> Result<()> {
    let timing = run.env.timing;
    let held_b = b.acquire(timing.patience()).await?;
    run.facts.insert("b_acquired", i64::from(held_b.is_some()));
    if let Some(held_b) = &held_b {
        if held_a.is_some() {
            run.narrate(two_holders);
        }
        b.buy_one(held_b, timing.business).await?;
    }
    if let (Some(held_a), Some(read_a)) = (held_a, read_a) {
        run.narrate("client-A, still believing it holds the lock, finishes its purchase");
        a.sell(read_a, held_a).await?;
    }
    if let Some(held_b) = held_b {
        // A refusal is already in the timeline.
        let _ = b.release(&held_b).await?;
    }
    Ok(())
}

/// The last step of a partition story, after the heal: A's release, which
/// may find its lock gone.
pub(super) async fn a_releases_late(run: &Run, a: &Client, held_a: &Option<Acquired>) {
    if let Some(held_a) = held_a
        && let Err(e) = a.release(held_a).await
    {
        run.narrate(format!("client-A's release fails: {e}"));
    }
}

/// The shortest TTL a Redlock holder gets in the stories where a master
/// restarts or its clock jumps (the matrix's 300 ms elsewhere). Those
/// stories race the holder's validity: the fault, then a new client
/// connecting to five masters and asking them, must all fit in it with
/// room to spare. On a loaded machine (a matrix tried with 14 cells at
/// once on two cores) a restart and a connection took most of 300 ms, the
/// contender got only its last fifth of a TTL and missed it, and 3 of 10
/// whole matrices came out `ok` on stage 7's restart or clock-jump cell;
/// with a second, none of the next 10 did.
const NODE_FAULT_TTL: Duration = Duration::from_secs(1);

/// The TTL for a story in which a node that granted `stage`'s lock
/// forgets it while the holder still trusts it: at least
/// [`NODE_FAULT_TTL`] on Redlock, `ttl` on one node (where the contender
/// needs no more than the one node that forgot).
pub(super) fn node_fault_ttl(stage: &Description, ttl: Duration) -> Duration {
    if stage.nodes > 1 {
        ttl.max(NODE_FAULT_TTL)
    } else {
        ttl
    }
}

/// Lets `client` take the lock. On Redlock, the nodes past a bare majority
/// are cut off from it first, so it holds exactly N/2+1 of them
/// (`node1`…`node3` of five); on one node it simply takes the lock. Returns
/// the lock, and until when it is sure to be valid (its validity on
/// Redlock, its TTL elsewhere, counted from the start of its acquire).
///
/// The partition lasts for the rest of the run. A Redlock client stops
/// counting at a majority, but its votes to the nodes it did not hear
/// from are still in line behind its earlier rounds' (each waits for
/// the one before it, then for its own timeout): a heal, however late,
/// could let one of them through and give `client` a fourth and fifth
/// node (seen in a whole matrix on a busy machine: "holds the lock on
/// exactly 5 of 5 nodes", and client-B kept out).
pub(super) async fn hold_bare_majority(
    run: &mut Run,
    proxies: &Proxies,
    client: &Client,
) -> Result<(Acquired, Instant)> {
    let count = run.factory.lock_urls.len();
    let quorum = count / 2 + 1;
    if count > 1 {
        proxies.cut_off(client.name(), quorum..count);
    }
    let asked = Instant::now();
    let held = client.acquire(run.env.timing.patience()).await?;
    let held = held.ok_or_else(|| {
        HarnessError::StoryNotTold(format!("{} could not take a free lock", client.name()))
    })?;
    let valid_until = asked + held.validity.unwrap_or(run.env.timing.ttl);
    let holding = redlock::nodes_holding(&run.nodes, run.lock_key()).await?;
    run.facts
        .insert("holder_nodes", i64::try_from(holding).unwrap_or(-1));
    if count > 1 {
        run.narrate(format!(
            "{} holds the lock on exactly {holding} of {count} nodes",
            client.name()
        ));
    }
    Ok((held, valid_until))
}

/// How long a contender tries while the holder's lock is still good (sure
/// to be valid until `valid_until`): from now until a fifth of the TTL
/// before the holder's lock could expire on its own, so that what the
/// contender gets it gets from the fault, not from an expiry, and an
/// attempt begun at the very end must itself take a fifth of a TTL to
/// reach the holder's natural expiry. Never less than a fifth of the TTL:
/// when the fault itself took most of the lock's time (a restart on a
/// loaded machine), the contender still gets that long, and the timeline
/// says how much of the holder's time was left.
fn contender_window(run: &Run, valid_until: Instant) -> Duration {
    let margin = run.env.timing.ttl / 5;
    valid_until
        .saturating_duration_since(Instant::now())
        .saturating_sub(margin)
        .max(margin)
}

/// Right after a fault, client `name` tries for the
/// [contender window](contender_window) of a lock valid until
/// `valid_until`; if it gets the lock it buys one item and gives the lock
/// back. `true` if it got in, which means the fault handed the lock to a
/// second holder.
pub(super) async fn contend_while_held(
    run: &mut Run,
    name: &str,
    valid_until: Instant,
) -> Result<bool> {
    let contender = run.client(name).await?;
    let window = contender_window(run, valid_until);
    run.narrate(format!(
        "{name} tries for {}ms; client-A's lock is good for {}ms more",
        window.as_millis(),
        valid_until
            .saturating_duration_since(Instant::now())
            .as_millis()
    ));
    let taken = contender.acquire(window).await?;
    run.facts
        .insert("contender_acquired", i64::from(taken.is_some()));
    let Some(theirs) = taken else {
        run.narrate(format!(
            "{name} could not take the lock: client-A's still stands"
        ));
        return Ok(false);
    };
    run.narrate(format!(
        "TWO HOLDERS: client-A still believes it holds the lock, and {name} got it too"
    ));
    contender.buy_one(&theirs, run.env.timing.business).await?;
    contender.release(&theirs).await?.answered()?;
    Ok(true)
}

/// `client` gives back `held` after a fault that may have broken its
/// connection (the node it talked to was restarted): a failed release is
/// told in the timeline, not raised.
pub(super) async fn release_after_fault(run: &Run, client: &Client, held: &Acquired) -> Result<()> {
    match client.release(held).await {
        Ok(_) => Ok(()),
        Err(HarnessError::Lock(LockError::Redis(e))) => {
            run.narrate(format!("{}'s release failed: {e}", client.name()));
            Ok(())
        }
        Err(other) => Err(other),
    }
}
