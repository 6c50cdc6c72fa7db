//! The ensemble's own failure: its leader is killed while client-A holds
//! the lock. The survivors elect a new leader; client-A's session moves to
//! a surviving member and lives on, its node with it. Client-B, asking for
//! three session timeouts after the election, is not let in: one holder,
//! where Redis's failover handed the lock out twice. Then client-A
//! releases and client-B holds, with a token from the new leader's epoch.

use crate::common;

use common::{SESSION, World, patience};
use harness::check::Finding;
use harness::server::ensemble::Ensemble;
use harness::workload::Fencing;
use lockcore::Release;

/// The leader's epoch: the high 32 bits of a zxid.
fn epoch(token: u64) -> u64 {
    token >> 32
}

#[tokio::test(flavor = "multi_thread")]
async fn killing_the_leader_keeps_one_holder() {
    // Alone: the election must end well within client-A's session.
    let mut world = World::start_alone(1, Fencing::default()).await;
    let holder = world.client("client-A").await;
    let held = holder.acquire(patience()).await.unwrap().unwrap();
    let read = holder.read_stock(&held).await.unwrap();

    let leader = world.ensemble.leader(patience()).await.unwrap();
    let label = world.ensemble.label(leader);
    world.ensemble.kill(leader);
    world.narrate(format!("{label}, the leader, KILLED with kill -9"));
    let new_leader = world.ensemble.leader(patience() * 5).await.unwrap();
    world.narrate(format!(
        "{} elected leader by the two survivors",
        world.ensemble.label(new_leader)
    ));

    let rival = world.client("client-B").await;
    world.narrate(format!(
        "client-B asks for up to {}ms",
        patience().as_millis()
    ));
    assert!(
        rival.acquire(patience()).await.unwrap().is_none(),
        "client-A's node survived the election: nobody else may hold"
    );

    holder.sell(read, &held).await.unwrap();
    assert_eq!(
        holder.release(&held).await.unwrap().answered().unwrap(),
        Release::Deleted,
        "client-A's session and node should have outlived the leader"
    );
    let next = rival.acquire(patience()).await.unwrap().unwrap();
    let (a, b) = (held.fencing_token.unwrap(), next.fencing_token.unwrap());
    assert!(
        epoch(b) > epoch(a),
        "the new leader's zxids carry a higher epoch: A {a:#x}, B {b:#x}"
    );
    rival.buy_one(&next, SESSION / 20).await.unwrap();
    rival.release(&next).await.unwrap().answered().unwrap();

    let outcome = world.finish().await;
    outcome.assert_not_fired(&[Finding::Overlap, Finding::Oversold]);
    assert_eq!(outcome.fact("orders"), 1);
}
