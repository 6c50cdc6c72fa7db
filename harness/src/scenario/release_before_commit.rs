//! Release before commit: the lock is given back inside the transaction
//! that writes the sale, before that transaction commits. A bug of
//! application code, not of any lock: a service method takes the lock,
//! writes, and unlocks in its `finally`, while the transaction around it
//! (Spring's `@Transactional` on the caller, in the seeds' world) commits
//! only when the outer method returns. One item is for sale.
//!
//! 1. client-A takes the lock, reads the stock (1) and writes its sale in a
//!    transaction: `MULTI`, then the new stock and the order, queued.
//! 2. client-A releases the lock; its transaction is still open.
//! 3. client-B takes the lock at once and reads the stock: still 1, for
//!    client-A's writes are not committed. It buys the item (its own write
//!    commits at once) and releases.
//! 4. client-A's transaction commits (`EXEC`): a second order for the one
//!    item.
//!
//! With `--release-after-commit` ([`ReleaseOrder::AfterCommit`]) client-A
//! commits first and releases after, as the fix has it: B reads 0 and
//! sells nothing. A resource that checks fencing tokens (stage 8 on) also
//! stops the late commit: B's read showed a newer token, so the
//! transaction's fenced write is refused when it finally runs.
//!
//! The story decides the order by waiting for each step to answer, so it
//! is the same on every run. The observers judge as usual: orders against
//! the stock, and the lock's holds from the lock node's record.

use lockcore::{Description, StageEntry};

use super::{Recorded, Run, ScenarioEnv};
use crate::error::Result;
use crate::workload::ReleaseOrder;

pub(super) fn not_applicable(stage: &Description) -> Option<&'static str> {
    (stage.stage == 0)
        .then_some("no lock to release early")
        .or_else(|| crate::holder::remote::needs_in_process_client(stage))
}

pub(super) async fn run(stage: StageEntry, env: ScenarioEnv) -> Result<Recorded> {
    let release_order = env.release_order;
    let mut run = Run::start(stage, env, 1).await?;
    let timing = run.env.timing;
    let a = run.client("client-A").await?;
    let b = run.client("client-B").await?;

    // 1. A's purchase, in a transaction.
    let held_a = a.acquire_free(timing.patience()).await?;
    let read = a.read_stock(&held_a).await?;
    let transaction = a.open_sale(read, &held_a).await?;

    // ANCHOR: release_order
    // 2. and 4.: where the release stands against the commit.
    let sale_a = match release_order {
        ReleaseOrder::BeforeCommit => {
            a.release(&held_a).await?.answered()?;
            run.narrate("client-A released the lock; its transaction is still open");
            // 3. B's whole purchase fits between A's release and A's commit.
            let held_b = b.acquire_free(timing.patience()).await?;
            b.buy_one(&held_b, timing.business).await?;
            b.release(&held_b).await?.answered()?;
            a.commit(transaction).await?
        }
        ReleaseOrder::AfterCommit => {
            let sale = a.commit(transaction).await?;
            a.release(&held_a).await?.answered()?;
            let held_b = b.acquire_free(timing.patience()).await?;
            b.buy_one(&held_b, timing.business).await?;
            b.release(&held_b).await?.answered()?;
            sale
        }
    };
    // ANCHOR_END: release_order
    run.facts.insert(
        "a_committed_a_sale",
        i64::from(matches!(sale_a, crate::workload::Sale::Sold(_))),
    );
    run.record().await
}
