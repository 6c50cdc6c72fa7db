//! The watchdog keeps the lock for as long as its holder works, however
//! long that is: here ten times the watchdog timeout. The next client waits
//! its turn instead of walking into the critical section.

use std::time::Duration;

use harness::check::Verdict;
use harness::holder::Launcher;
use harness::scenario::{Run, ScenarioEnv, Timing};
use harness::{HarnessError, workload::Sale};

const WATCHDOG: Duration = Duration::from_millis(300);
const BUSINESS: Duration = Duration::from_millis(3000);

#[tokio::test(flavor = "multi_thread")]
async fn a_business_ten_times_the_watchdog_timeout_keeps_the_lock() {
    let mut env =
        ScenarioEnv::from_env(Launcher::this_test_binary()).unwrap_or_else(|e| panic!("{e}"));
    // The harness gives stage 6 a watchdog timeout equal to the TTL.
    env.timing = Timing {
        ttl: WATCHDOG,
        business: BUSINESS,
    };
    let run = Run::start(stage6::STAGE, env, 2).await.unwrap();
    let slow = run.client("client-A").await.unwrap();
    let next = run.client("client-B").await.unwrap();

    let held = slow
        .acquire(WATCHDOG)
        .await
        .unwrap()
        .expect("the lock is free");
    let lost = held
        .lost
        .clone()
        .expect("a lock kept by the watchdog carries a lost signal");
    let (slow_sale, next_sale) = tokio::join!(
        async {
            let sale = slow.buy_one(&held, BUSINESS).await?;
            slow.release(&held).await?.answered()?;
            Ok::<Sale, HarnessError>(sale)
        },
        async {
            let Some(held) = next.acquire(BUSINESS * 3).await? else {
                return Err(HarnessError::StoryNotTold(
                    "client-B never got the lock".into(),
                ));
            };
            let sale = next.buy_one(&held, Duration::ZERO).await?;
            next.release(&held).await?.answered()?;
            Ok(sale)
        },
    );
    assert_eq!(slow_sale.unwrap(), Sale::Sold(2));
    assert_eq!(
        next_sale.unwrap(),
        Sale::Sold(1),
        "client-B must see client-A's write"
    );
    assert!(!lost.is_lost(), "the lock was never lost");

    let outcome = run.finish().await.unwrap();
    println!("{}", outcome.timeline.render());
    assert_eq!(outcome.verdict, Verdict::ok());
    assert_eq!(outcome.fact("orders"), 2);
    assert_eq!(outcome.fact("stock_left"), 0);
    // Every renewal is one PEXPIRE run by client-A's watchdog script; the
    // acquire script runs one more. About 30 are due in 3 s.
    let pexpires = outcome
        .timeline
        .events()
        .iter()
        .filter(|e| e.actor == "client-A" && e.text.trim_start() == "lua> pexpire lock:stock 300")
        .count();
    assert!(
        pexpires > 10,
        "only {pexpires} PEXPIREs from client-A in {BUSINESS:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_slow_business_scenario_keeps_client_b_out_until_client_a_is_done() {
    let outcome = harness::scenario::run_in_test("slow-business", stage6::STAGE).await;
    assert_eq!(
        outcome.fact("b_acquired"),
        0,
        "the watchdog must keep client-B out for three TTLs"
    );
    assert_eq!(outcome.verdict, Verdict::ok());
    assert_eq!(outcome.fact("orders"), 1);
}
