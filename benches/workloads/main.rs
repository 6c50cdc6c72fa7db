//! Fixed workloads, the same for every lock, so the stages can be set side
//! by side with an existing crate (`rslock`) on the same servers, in the
//! same process, in the same run.
//!
//! - `ping`: PINGs on one connection, the limit for one command;
//! - `w1`: one client, acquire `bench:w1` (10 s TTL) and release, again and
//!   again;
//! - `w2`: 8 clients, each with its own connections, on one lock; each
//!   acquires, GETs a counter, SETs it + 1, releases; the counter must end
//!   equal to the number of sections. Run at the bench's fast retry (1 ms)
//!   and at the articles' 100 ms (stage 6 and its fair variant wait on
//!   pub/sub and ignore it);
//! - `w3`: Redlock on 5 nodes, uncontended, against `PING to 5 nodes at
//!   once` measured in the same run;
//! - a long `w1` showing that the client's memory stays flat.
//!
//! Run: `cargo bench --bench workloads -- --placement split` (`--quick` for
//! small sizes, `--write-book` to regenerate the book's table). It prints
//! the report and writes `target/bench/workloads.{md,json}`. Timings are
//! reported, never asserted; the run fails only when a w2 counter lost an
//! update (a broken lock) or a lock errs.

mod args;
mod measure;
mod placement;
mod report;
mod rslock_peer;
mod runs;

#[path = "../common/servers.rs"]
mod servers;

// The CLI's list of stages, so the bench cannot drift from it.
#[allow(dead_code)] // the bench uses only `STAGES`
#[path = "../../src/stages.rs"]
mod stages;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use args::{Args, Placement};
use lockcore::{ClientSetup, Connection, DistributedLock, LockConfig, LockError, StageEntry};
use measure::{Latencies, peak_kib, reset_peak};
use report::{ContentionFigures, Report, Row};
use rslock_peer::RslockPeer;
use runs::Contender;
use servers::Servers;

/// The workloads' sizes.
struct Sizes {
    ping: usize,
    warmup: usize,
    w1: usize,
    w2_sections: usize,
    w2_limit: Duration,
    w3: usize,
    long_w1: usize,
}

const FULL: Sizes = Sizes {
    ping: 20_000,
    warmup: 200,
    w1: 20_000,
    w2_sections: 4_000,
    w2_limit: Duration::from_secs(60),
    w3: 5_000,
    long_w1: 100_000,
};

const QUICK: Sizes = Sizes {
    ping: 1_000,
    warmup: 20,
    w1: 500,
    w2_sections: 100,
    w2_limit: Duration::from_secs(10),
    w3: 200,
    long_w1: 2_000,
};

const TTL: Duration = Duration::from_secs(10);
const CONTENDERS: usize = 8;
/// The bench's fast retry, and the articles' (w2).
const RETRIES: [Duration; 2] = [Duration::from_millis(1), Duration::from_millis(100)];
/// rslock is also given a middle setting: w2 compares with its best.
const RSLOCK_RETRIES: [Duration; 3] = [
    Duration::from_millis(1),
    Duration::from_millis(10),
    Duration::from_millis(100),
];
/// The lock w1's long run watches: stage 6, the stage with background
/// tasks (watchdogs) and per-client state (holds).
const LONG_W1_STAGE: &str = "stage6";

fn main() {
    let args = Args::from_env();
    let known: Vec<&str> = one_node_subjects()
        .iter()
        .map(|s| s.name())
        .chain([stage7::STAGE.description.name])
        .collect();
    args.check_locks(&known);
    let setup_note = match pin_clients(args.placement) {
        Ok(note) => note,
        Err(e) => fail(&e),
    };
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if args.placement.cpus().is_some() {
        runtime.worker_threads(1); // the clients have one CPU
    }
    let runtime = runtime.enable_all().build().unwrap_or_else(|e| fail(&e));
    let report = runtime
        .block_on(run(&args, setup_note))
        .unwrap_or_else(|e| fail(&e));
    let markdown = report.markdown();
    println!("{markdown}");
    if let Err(e) = write(&report, &markdown, args.write_book) {
        fail(&e);
    }
    if !report.counters_ok() {
        fail(&"a w2 counter lost updates: two clients were in the critical section at once");
    }
}

fn fail(e: &dyn std::fmt::Display) -> ! {
    eprintln!("workloads: {e}");
    std::process::exit(1);
}

fn pin_clients(placement: Placement) -> Result<String, String> {
    let Some((_, clients)) = placement.cpus() else {
        return Ok("unpinned".to_owned());
    };
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    if cpus < 2 && placement == Placement::Split {
        return Err(format!(
            "--placement split needs 2 CPUs; this process may use {cpus}"
        ));
    }
    placement::pin_self(clients)?;
    Ok(format!(
        "bench process pinned to CPU {clients}, tokio with 1 worker thread"
    ))
}

async fn run(args: &Args, client_note: String) -> Result<Report, String> {
    let sizes = if args.quick { &QUICK } else { &FULL };
    let servers = Servers::start(5).await.map_err(|e| e.to_string())?;
    let pings = connect_all(&servers).await.map_err(|e| e.to_string())?;
    let server_note = match args.placement.cpus() {
        None => "unpinned".to_owned(),
        Some((cpu, _)) => {
            for conn in &pings {
                placement::pin_server(&servers.backend, conn, cpu).await?;
            }
            format!("{} redis-server processes pinned to CPU {cpu}", pings.len())
        }
    };
    let mut report = Report {
        setup: vec![
            ("placement".into(), args.placement.to_string()),
            ("clients".into(), client_note),
            ("servers".into(), server_note),
            ("backend".into(), servers.backend.label()),
            ("load average at start".into(), load_average()),
            (
                "sizes".into(),
                format!(
                    "ping {}, w1 {} pairs (+{} warm-up), w2 {} sections or {} s, w3 {} pairs, long w1 {} pairs{}",
                    sizes.ping,
                    sizes.w1,
                    sizes.warmup,
                    sizes.w2_sections,
                    sizes.w2_limit.as_secs(),
                    sizes.w3,
                    sizes.long_w1,
                    if args.quick { " (quick mode)" } else { "" }
                ),
            ),
        ],
        ..Report::default()
    };
    measure_all(args, &servers, &pings, sizes, &mut report)
        .await
        .map_err(|e| e.to_string())?;
    report
        .setup
        .push(("load average at end".into(), load_average()));
    Ok(report)
}

async fn measure_all(
    args: &Args,
    servers: &Servers,
    pings: &[Connection],
    sizes: &Sizes,
    report: &mut Report,
) -> Result<(), LockError> {
    // ping: the limit for one command
    runs::ping(&pings[0], sizes.warmup).await?;
    reset_peak();
    let latencies = runs::ping(&pings[0], sizes.ping).await?;
    report
        .rows
        .push(timed("ping", "PING", latencies, peak_kib()));

    if args.runs("w1") {
        w1(args, servers, sizes, report).await?;
    }
    if args.runs("w2") {
        w2(args, servers, sizes, report).await?;
    }
    if args.runs("w3") {
        w3(args, servers, pings, sizes, report).await?;
    }
    if args.runs("long") {
        long_w1(servers, sizes, report).await?;
    }
    Ok(())
}

/// w1: every single-node stage and rslock, taking turns.
async fn w1(
    args: &Args,
    servers: &Servers,
    sizes: &Sizes,
    report: &mut Report,
) -> Result<(), LockError> {
    turns(
        "w1",
        args,
        one_node_subjects(),
        servers.urls(1),
        sizes.warmup,
        sizes.w1,
        report,
    )
    .await
}

/// w2: each lock at each waiting setting; rslock at one more.
async fn w2(
    args: &Args,
    servers: &Servers,
    sizes: &Sizes,
    report: &mut Report,
) -> Result<(), LockError> {
    for subject in one_node_subjects()
        .into_iter()
        .filter(|s| args.measures(s.name()))
    {
        let retries: &[Duration] = match subject {
            Subject::Stage(_) => &RETRIES,
            Subject::Rslock => &RSLOCK_RETRIES,
        };
        for &retry in retries {
            let mut contenders = Vec::new();
            for i in 0..CONTENDERS {
                let name = format!("bench-w2-{i}");
                contenders.push(Contender {
                    lock: Arc::from(
                        subject
                            .client(servers.urls(1), &name, config("bench:w2", retry))
                            .await?,
                    ),
                    counter: lockcore::connect(&servers.nodes[0].url(), &name).await?,
                });
            }
            reset_peak();
            let contention = runs::contend(
                contenders,
                "bench:w2:counter",
                sizes.w2_sections,
                sizes.w2_limit,
            )
            .await?;
            let waiting = match subject.name() {
                "stage6" => format!("unlock message (retry {} ms unused)", retry.as_millis()),
                "stage6-fair" => format!(
                    "the queue's head is woken (retry {} ms unused)",
                    retry.as_millis()
                ),
                _ => format!("retry {} ms", retry.as_millis()),
            };
            report.rows.push(Row {
                workload: "w2",
                lock: subject.name().to_owned(),
                setting: waiting,
                rate: contention.per_second(),
                p50_us: None,
                p99_us: None,
                peak_kib: peak_kib(),
                errors: contention.errors,
                contention: Some(ContentionFigures::from(&contention)),
            });
        }
    }
    Ok(())
}

/// w3: Redlock on five nodes, stage 7 and rslock taking turns, right after
/// their limit: a PING to the five nodes at once.
async fn w3(
    args: &Args,
    servers: &Servers,
    pings: &[Connection],
    sizes: &Sizes,
    report: &mut Report,
) -> Result<(), LockError> {
    reset_peak();
    let latencies = runs::ping_all(pings, sizes.w3).await?;
    report
        .rows
        .push(timed("w3", "PING x5 at once", latencies, peak_kib()));
    let subjects = vec![Subject::Stage(stage7::STAGE), Subject::Rslock];
    turns(
        "w3",
        args,
        subjects,
        servers.urls(5),
        sizes.warmup,
        sizes.w3,
        report,
    )
    .await
}

/// The locks of `subjects` that the command line asks for, on `urls`,
/// taking turns (`runs::pairs`): one row each for `workload`.
async fn turns(
    workload: &'static str,
    args: &Args,
    subjects: Vec<Subject>,
    urls: Vec<String>,
    warmup: usize,
    rounds: usize,
    report: &mut Report,
) -> Result<(), LockError> {
    let subjects: Vec<Subject> = subjects
        .into_iter()
        .filter(|s| args.measures(s.name()))
        .collect();
    let key = format!("bench:{workload}");
    let name = format!("bench-{workload}");
    let mut locks = Vec::new();
    for subject in &subjects {
        let config = config(&key, RETRIES[0]);
        locks.push(subject.client(urls.clone(), &name, config).await?);
    }
    let measured = runs::pairs(&locks, warmup, rounds).await?;
    for (subject, paired) in subjects.iter().zip(measured) {
        let mut row = timed(workload, subject.name(), paired.latencies, paired.peak_kib);
        row.errors = paired.errors;
        report.rows.push(row);
    }
    Ok(())
}

/// The long w1: does the client's memory stay flat?
async fn long_w1(servers: &Servers, sizes: &Sizes, report: &mut Report) -> Result<(), LockError> {
    let lock = Subject::Stage(stage6::STAGE)
        .client(
            servers.urls(1),
            "bench-long",
            config("bench:w1", RETRIES[0]),
        )
        .await?;
    let samples = runs::resident_while_pairing(lock.as_ref(), sizes.long_w1).await;
    report.long_w1 = Some((LONG_W1_STAGE.to_owned(), samples));
    Ok(())
}

fn timed(workload: &'static str, lock: &str, mut latencies: Latencies, peak_kib: u64) -> Row {
    Row {
        workload,
        lock: lock.to_owned(),
        setting: String::new(),
        rate: latencies.per_second(),
        p50_us: Some(latencies.quantile_us(0.5)),
        p99_us: Some(latencies.quantile_us(0.99)),
        peak_kib,
        errors: 0,
        contention: None,
    }
}

fn config(key: &str, retry: Duration) -> LockConfig {
    LockConfig {
        key: key.to_owned(),
        ttl: TTL,
        watchdog_timeout: TTL,
        retry_interval: retry,
        ..LockConfig::default()
    }
}

/// What is measured: a stage of the course, or rslock.
#[derive(Clone, Copy)]
enum Subject {
    Stage(StageEntry),
    Rslock,
}

impl Subject {
    fn name(self) -> &'static str {
        match self {
            Self::Stage(stage) => stage.description.name,
            Self::Rslock => rslock_peer::DESCRIPTION.name,
        }
    }

    /// One client of the lock on `urls`, named `name` where it can be.
    async fn client(
        self,
        urls: Vec<String>,
        name: &str,
        config: LockConfig,
    ) -> Result<Box<dyn DistributedLock>, LockError> {
        match self {
            Self::Stage(stage) => (stage.connect)(ClientSetup::new(urls, name, config)).await,
            Self::Rslock => Ok(Box::new(RslockPeer::new(
                urls,
                &config.key,
                config.ttl,
                config.retry_interval,
            ))),
        }
    }
}

/// Every stage that runs on one node, then rslock.
fn one_node_subjects() -> Vec<Subject> {
    stages::STAGES
        .iter()
        .filter(|s| s.description.stage > 0 && s.description.nodes == 1)
        .map(|&s| Subject::Stage(s))
        .chain([Subject::Rslock])
        .collect()
}

async fn connect_all(servers: &Servers) -> Result<Vec<Connection>, LockError> {
    let mut conns = Vec::new();
    for node in &servers.nodes {
        conns.push(lockcore::connect(&node.url(), "bench-ping").await?);
    }
    Ok(conns)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_owned())
}

fn write(report: &Report, markdown: &str, book: bool) -> Result<(), String> {
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| PathBuf::from("target"), PathBuf::from);
    let dir = target.join("bench");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let json = serde_json::to_string_pretty(&report.json()).map_err(|e| e.to_string())?;
    for (file, text) in [
        ("workloads.json", json.as_str()),
        ("workloads.md", markdown),
    ] {
        let path = dir.join(file);
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if book {
        let path =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("book/src/generated/workloads.md");
        let text = format!(
            "<!-- generated by `cargo bench --bench workloads -- --placement split --write-book`; do not edit -->\n\n{markdown}"
        );
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}
