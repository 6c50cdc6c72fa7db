//! Redlock survives the loss of any minority of its masters, and refuses
//! cleanly when a majority is gone.

use harness::holder::Launcher;
use harness::observe::Verdict;
use harness::scenario::{Run, ScenarioEnv};

async fn start(stock: i64) -> Run {
    let env = ScenarioEnv::from_env(Launcher::this_test_binary()).unwrap_or_else(|e| panic!("{e}"));
    Run::start(stage7::STAGE, env, stock)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn with_two_of_five_masters_killed_three_clients_take_turns_and_sell_exactly_the_stock() {
    let mut run = start(5).await;
    run.kill_node(3).await.unwrap();
    run.kill_node(4).await.unwrap();
    let (a, b, c) = (
        run.client("client-A").await.unwrap(),
        run.client("client-B").await.unwrap(),
        run.client("client-C").await.unwrap(),
    );
    let wait = run.env.timing.patience() * 10;
    let business = run.env.timing.business;
    let (sold_a, sold_b, sold_c) = tokio::join!(
        a.shop_until_sold_out(wait, business),
        b.shop_until_sold_out(wait, business),
        c.shop_until_sold_out(wait, business),
    );
    let sold = sold_a.unwrap() + sold_b.unwrap() + sold_c.unwrap();
    let outcome = run.finish().await.unwrap();
    println!("{}", outcome.timeline.render());
    assert_eq!(outcome.verdict, Verdict::ok());
    assert_eq!(
        (sold, outcome.fact("orders"), outcome.fact("stock_left")),
        (5, 5, 0)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn with_three_of_five_masters_killed_the_lock_is_refused_and_nothing_is_left_behind() {
    let mut run = start(1).await;
    for node in 0..3 {
        run.kill_node(node).await.unwrap();
    }
    let client = run.client("client-A").await.unwrap();
    let answer = client
        .try_acquire()
        .await
        .expect("a refusal is an answer, not an error");
    assert!(answer.is_none(), "two masters of five granted a lock");
    // The two live masters did write the key; the failed attempt deleted it.
    assert_eq!(run.nodes_holding_lock().await.unwrap(), 0);
    // Waiting does not help, and does not hang either.
    assert!(client.acquire(run.env.timing.ttl).await.unwrap().is_none());
    let outcome = run.finish().await.unwrap();
    println!("{}", outcome.timeline.render());
    assert_eq!(outcome.fact("orders"), 0);
}
