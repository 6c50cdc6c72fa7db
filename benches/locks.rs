//! Every stage side by side, against the physical limit: a PING round trip
//! to the same kind of server, measured in the same run.
//!
//! - `uncontended`: one client takes and gives back the lock, again and
//!   again. A stage that sends one command each way costs about two PINGs;
//!   Redlock asks five masters, but at once, so it should cost about two
//!   PINGs too, not ten (`ping x5 sequential` shows what asking one after
//!   another would cost).
//! - `contended-8`: eight clients each take and give back the lock once,
//!   all at the same time. Stages 1–5, 7 and 8 retry on a timer; stage 6
//!   waits for the unlock message, so its handoffs follow the release
//!   instead of the next tick.
//!
//! Run: `cargo bench --bench locks`. Timings are printed as ratios to the
//! PING round trip at the end; nothing here is asserted.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use futures_util::future::join_all;
use lockcore::{ClientSetup, DistributedLock, LockConfig, StageEntry};

// The CLI's list of stages, so the bench cannot drift from it.
#[allow(dead_code)] // the bench uses only `STAGES`
#[path = "../src/stages.rs"]
mod stages;

/// Stages 1 to 8: stage 0 takes no lock, so there is nothing to measure.
fn locking_stages() -> impl Iterator<Item = StageEntry> {
    stages::STAGES
        .iter()
        .copied()
        .filter(|s| s.description.stage > 0)
}
const CONTENDERS: usize = 8;

#[path = "common/servers.rs"]
mod servers;
use servers::Servers;

async fn client(stage: StageEntry, servers: &Servers, name: String) -> Box<dyn DistributedLock> {
    let config = LockConfig {
        retry_interval: Duration::from_millis(1),
        ..LockConfig::default()
    };
    let setup = ClientSetup::new(servers.urls(stage.description.nodes), &name, config);
    (stage.connect)(setup).await.expect("the client connects")
}

async fn take_and_give_back(lock: &dyn DistributedLock) {
    let held = lock
        .acquire(Duration::from_secs(10))
        .await
        .expect("no error")
        .expect("the lock is taken");
    lock.release(&held).await.expect("no error");
}

fn benches(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let servers = runtime
        .block_on(Servers::start(5))
        .unwrap_or_else(|e| panic!("{e}"));
    eprintln!("servers: {}", servers.backend.label());

    let mut group = c.benchmark_group("uncontended");
    let ping = runtime
        .block_on(lockcore::connect(&servers.nodes[0].url(), "bench-ping"))
        .expect("connects");
    let pings: Vec<_> = servers
        .nodes
        .iter()
        .map(|n| {
            runtime
                .block_on(lockcore::connect(&n.url(), "bench-ping"))
                .expect("connects")
        })
        .collect();
    group.bench_function("ping", |b| {
        b.to_async(&runtime).iter(|| {
            let mut conn = ping.clone();
            async move {
                redis::cmd("PING")
                    .query_async::<()>(&mut conn)
                    .await
                    .expect("PONG")
            }
        });
    });
    group.bench_function("ping x5 sequential", |b| {
        b.to_async(&runtime).iter(|| {
            let conns = pings.clone();
            async move {
                for mut conn in conns {
                    redis::cmd("PING")
                        .query_async::<()>(&mut conn)
                        .await
                        .expect("PONG");
                }
            }
        });
    });
    group.bench_function("ping x5 at once", |b| {
        b.to_async(&runtime).iter(|| {
            let conns = pings.clone();
            async move {
                join_all(conns.into_iter().map(|mut conn| async move {
                    redis::cmd("PING")
                        .query_async::<()>(&mut conn)
                        .await
                        .expect("PONG")
                }))
                .await;
            }
        });
    });
    for stage in locking_stages() {
        let lock = runtime.block_on(client(stage, &servers, "bench".to_owned()));
        group.bench_function(stage.description.name, |b| {
            b.to_async(&runtime)
                .iter(|| take_and_give_back(lock.as_ref()));
        });
    }
    group.finish();

    let mut group = c.benchmark_group("contended-8");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(3));
    for stage in locking_stages() {
        let locks: Vec<Box<dyn DistributedLock>> = runtime.block_on(join_all(
            (0..CONTENDERS).map(|i| client(stage, &servers, format!("bench-{i}"))),
        ));
        group.bench_function(stage.description.name, |b| {
            b.to_async(&runtime).iter_custom(|rounds| {
                let locks = &locks;
                async move {
                    let started = Instant::now();
                    for _ in 0..rounds {
                        join_all(locks.iter().map(|lock| take_and_give_back(lock.as_ref()))).await;
                    }
                    // Per handoff, so it compares with one uncontended take-and-give-back.
                    started.elapsed() / u32::try_from(CONTENDERS).unwrap_or(1)
                }
            });
        });
    }
    group.finish();
}

criterion_group!(locks, benches);

/// Criterion's mean estimate for one benchmark, in nanoseconds.
fn mean_ns(group: &str, name: &str) -> Option<f64> {
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| PathBuf::from("target"), PathBuf::from);
    let path = target
        .join("criterion")
        .join(group)
        .join(name)
        .join("new")
        .join("estimates.json");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    json["mean"]["point_estimate"].as_f64()
}

fn print_ratios() {
    let Some(ping) = mean_ns("uncontended", "ping") else {
        return;
    };
    println!(
        "\nRatios to one PING round trip ({:.1} µs), measured in this run:",
        ping / 1000.0
    );
    println!("{:<22} {:>12} {:>14}", "", "uncontended", "contended-8");
    let names = ["ping x5 sequential", "ping x5 at once"]
        .into_iter()
        .chain(locking_stages().map(|s| s.description.name));
    for name in names {
        let ratio =
            |group| mean_ns(group, name).map_or("-".to_owned(), |ns| format!("{:.1}x", ns / ping));
        println!(
            "{name:<22} {:>12} {:>14}",
            ratio("uncontended"),
            ratio("contended-8")
        );
    }
}

fn main() {
    locks();
    Criterion::default().configure_from_args().final_summary();
    print_ratios();
}
