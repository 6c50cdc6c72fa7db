//! Fixed workloads, the same for every lock, so the stages can be set side
//! by side with an existing crate (`rslock`) on the same servers, in the
//! same process, in the same run.
//!
//! - `ping`: PINGs on one connection, the limit for one command; beside
//!   it each consensus store's own cheapest round trip and one quorum write
//!   ([`consensus`]), when stages 9 and 10 are measured;
//! - `w1`: one client, acquire `bench:w1` (10 s TTL) and release, again and
//!   again; stages 9 (ZooKeeper) and 10 (etcd) on three-member ensembles the
//!   bench starts, fewer pairs (each costs milliseconds);
//! - `w2`: 8 clients, each with its own connections, on one lock; each
//!   acquires, GETs a counter, SETs it + 1, releases; the counter must end
//!   equal to the number of sections. Run at the bench's fast retry (1 ms)
//!   and at the articles' 100 ms (stage 6 and its fair variant wait on
//!   pub/sub and ignore it; stages 9 and 10 watch their predecessor and run
//!   once). The counter is on Redis for every lock, stages 9 and 10
//!   included, so the no-lost-update check is the same for all;
//! - `w3`: Redlock on 5 nodes, uncontended, against `PING to 5 nodes at
//!   once` measured in the same run;
//! - a long `w1` showing that the client's memory stays flat.
//!
//! Run: `cargo bench --bench workloads -- --placement split` (`--quick` for
//! small sizes, `--write-book` to regenerate the book's table,
//! `--write-book-stores` its table of the consensus stores beside Redis,
//! `--write-book-fair` stage 6's tables of the fair lock). It prints the
//! report and writes `target/bench/workloads.{md,json}` and `stores.md`.
//! Every page is written for both editions of the book, English
//! (`book/src`) and Chinese (`book/zh/src`), from the same figures, which
//! are saved beside it (`book/src/generated/<page>.json`);
//! `--from FILE --write-book…` writes the pages again from a saved file
//! without measuring (`saved`). Timings are reported, never asserted; the
//! run fails only when a w2 counter lost an update (a broken lock) or a
//! lock errs.

mod args;
mod consensus;
mod measure;
mod placement;
mod report;
mod rslock_peer;
mod runs;
mod saved;
mod setup;

#[path = "../common/servers.rs"]
mod servers;

// The CLI's list of stages, so the bench cannot drift from it.
#[allow(dead_code)] // the bench uses only `STAGES`
#[path = "../../src/stages.rs"]
mod stages;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use args::{Args, Placement};
use consensus::{ETCD_FLOOR, ETCD_WRITE, Stores, ZK_FLOOR, ZK_WRITE};
use lockcore::{ClientSetup, Connection, DistributedLock, LockConfig, LockError, StageEntry};
use measure::{Latencies, peak_kib, reset_peak};
use report::{ContentionFigures, ETCD, Lang, PING_X5, REDIS, Report, Row, Waiting, ZOOKEEPER};
use rslock_peer::RslockPeer;
use runs::Contender;
use saved::Command;
use servers::Servers;
use setup::{Setup, SizesNote};

/// The workloads' sizes.
struct Sizes {
    ping: usize,
    warmup: usize,
    w1: usize,
    w2_sections: usize,
    w2_limit: Duration,
    w3: usize,
    long_w1: usize,
    /// Each consensus store's floor and write (`consensus`).
    floor: usize,
    /// w1's pairs for stages 9 and 10 (milliseconds each).
    consensus_w1: usize,
}

const FULL: Sizes = Sizes {
    ping: 20_000,
    warmup: 200,
    w1: 20_000,
    w2_sections: 4_000,
    w2_limit: Duration::from_secs(60),
    w3: 5_000,
    long_w1: 100_000,
    floor: 2_000,
    consensus_w1: 2_000,
};

const QUICK: Sizes = Sizes {
    ping: 1_000,
    warmup: 20,
    w1: 500,
    w2_sections: 100,
    w2_limit: Duration::from_secs(10),
    w3: 200,
    long_w1: 2_000,
    floor: 100,
    consensus_w1: 50,
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
    if let Some(file) = &args.from {
        if let Err(e) = render_saved(file, &args) {
            fail(&e);
        }
        return;
    }
    let known: Vec<&str> = one_node_subjects()
        .iter()
        .chain(&consensus_subjects())
        .map(|s| s.name())
        .chain([stage7::STAGE.description.name])
        .collect();
    args.check_locks(&known);
    if let Err(e) = pin_clients(args.placement) {
        fail(&e);
    }
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if args.placement.cpus().is_some() {
        runtime.worker_threads(1); // the clients have one CPU
    }
    let runtime = runtime.enable_all().build().unwrap_or_else(|e| fail(&e));
    let report = runtime.block_on(run(&args)).unwrap_or_else(|e| fail(&e));
    let markdown = report.markdown(Lang::En);
    println!("{markdown}");
    let command = Command {
        env: data_dirs(),
        options: command_line(&args),
    };
    if let Err(e) = write(&report, &markdown, &command, &args) {
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

fn pin_clients(placement: Placement) -> Result<(), String> {
    let Some((_, clients)) = placement.cpus() else {
        return Ok(());
    };
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    if cpus < 2 && placement == Placement::Split {
        return Err(format!(
            "--placement split needs 2 CPUs; this process may use {cpus}"
        ));
    }
    placement::pin_self(clients)
}

/// The servers of one run: the Redis nodes and, when stages 9 and 10 are
/// measured, their ensembles.
struct Fleet {
    redis: Servers,
    stores: Stores,
}

impl Fleet {
    /// The URLs `subject`'s clients are given: one Redis node, or every
    /// member of its ensemble.
    fn urls(&self, subject: Subject) -> Vec<String> {
        match subject.store() {
            REDIS => self.redis.urls(1),
            store => self.stores.urls(store),
        }
    }
}

async fn run(args: &Args) -> Result<Report, String> {
    let sizes = if args.quick { &QUICK } else { &FULL };
    let redis = Servers::start(5).await.map_err(|e| e.to_string())?;
    let pings = connect_all(&redis).await.map_err(|e| e.to_string())?;
    // The ensembles only when a workload that measures them runs.
    let consensus = args.runs("w1") || args.runs("w2");
    let stores = Stores::start(
        consensus && args.measures(stage9::DESCRIPTION.name),
        consensus && args.measures(stage10::DESCRIPTION.name),
    )
    .await?;
    let members = stores.pids();
    if let Some((cpu, _)) = args.placement.cpus() {
        for conn in &pings {
            placement::pin_server(&redis.backend, conn, cpu).await?;
        }
        for &pid in &members {
            placement::pin(pid, cpu)?;
        }
    }
    let setup = Setup {
        placement: args.placement,
        redis_servers: pings.len(),
        ensemble_members: members.len(),
        backend: redis.backend.label(),
        stores: stores.notes().await,
        load_at_start: load_average(),
        sizes: SizesNote {
            ping: sizes.ping,
            w1: sizes.w1,
            warmup: sizes.warmup,
            consensus_w1: sizes.consensus_w1,
            floor: sizes.floor,
            w2_sections: sizes.w2_sections,
            w2_limit_s: sizes.w2_limit.as_secs(),
            w3: sizes.w3,
            long_w1: sizes.long_w1,
            quick: args.quick,
        },
        load_at_end: None,
    };
    let mut report = Report {
        setup: Some(setup),
        ..Report::default()
    };
    let fleet = Fleet { redis, stores };
    measure_all(args, &fleet, &pings, sizes, &mut report)
        .await
        .map_err(|e| e.to_string())?;
    if let Some(setup) = &mut report.setup {
        setup.load_at_end = Some(load_average());
    }
    Ok(report)
}

async fn measure_all(
    args: &Args,
    fleet: &Fleet,
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
        .push(timed("ping", "PING", REDIS, latencies, peak_kib()));
    floors(fleet, sizes, report).await?;

    if args.runs("w1") {
        w1(args, fleet, sizes, report).await?;
    }
    if args.runs("w2") {
        w2(args, fleet, sizes, report).await?;
    }
    if args.runs("w3") {
        w3(args, &fleet.redis, pings, sizes, report).await?;
    }
    if args.runs("long") {
        long_w1(&fleet.redis, sizes, report).await?;
    }
    Ok(())
}

/// Each running ensemble's floor (its cheapest round trip) and one quorum
/// write, after a warm-up: the units stages 9 and 10 are counted in.
async fn floors(fleet: &Fleet, sizes: &Sizes, report: &mut Report) -> Result<(), LockError> {
    if fleet.stores.zk.is_some() {
        let urls = fleet.stores.urls(ZOOKEEPER);
        consensus::zookeeper(&urls, sizes.warmup).await?;
        reset_peak();
        let [reads, writes] = consensus::zookeeper(&urls, sizes.floor).await?;
        let peak = peak_kib();
        report
            .rows
            .push(timed("ping", ZK_FLOOR, ZOOKEEPER, reads, peak));
        report
            .rows
            .push(timed("ping", ZK_WRITE, ZOOKEEPER, writes, peak));
    }
    if fleet.stores.etcd.is_some() {
        let urls = fleet.stores.urls(ETCD);
        consensus::etcd(&urls, sizes.warmup).await?;
        reset_peak();
        let [reads, writes] = consensus::etcd(&urls, sizes.floor).await?;
        let peak = peak_kib();
        report
            .rows
            .push(timed("ping", ETCD_FLOOR, ETCD, reads, peak));
        report
            .rows
            .push(timed("ping", ETCD_WRITE, ETCD, writes, peak));
    }
    Ok(())
}

/// w1: every single-node stage, rslock, and stages 9 and 10 on their
/// ensembles, taking turns.
async fn w1(
    args: &Args,
    fleet: &Fleet,
    sizes: &Sizes,
    report: &mut Report,
) -> Result<(), LockError> {
    let subjects = one_node_subjects()
        .into_iter()
        .map(|s| (s, sizes.w1))
        .chain(
            consensus_subjects()
                .into_iter()
                .map(|s| (s, sizes.consensus_w1)),
        );
    let chosen: Vec<(Subject, Vec<String>, usize)> = subjects
        .filter(|(s, _)| args.measures(s.name()))
        .map(|(s, count)| (s, fleet.urls(s), count))
        .collect();
    turns("w1", chosen, sizes.warmup, report).await
}

/// w2: each lock at each waiting setting (rslock at one more; stages 9 and
/// 10, which wait on a watch, once).
async fn w2(
    args: &Args,
    fleet: &Fleet,
    sizes: &Sizes,
    report: &mut Report,
) -> Result<(), LockError> {
    let subjects = one_node_subjects()
        .into_iter()
        .chain(consensus_subjects())
        .filter(|s| args.measures(s.name()));
    for subject in subjects {
        let retries: &[Duration] = match subject {
            Subject::Stage(_) if subject.store() != REDIS => &RETRIES[..1],
            Subject::Stage(_) => &RETRIES,
            Subject::Rslock => &RSLOCK_RETRIES,
        };
        // Whose CPU is the server's: the ensemble's members, or Redis.
        let members = fleet.stores.members(subject.store());
        for &retry in retries {
            let mut contenders = Vec::new();
            for i in 0..CONTENDERS {
                let name = format!("bench-w2-{i}");
                contenders.push(Contender {
                    lock: Arc::from(
                        subject
                            .client(fleet.urls(subject), &name, config("bench:w2", retry))
                            .await?,
                    ),
                    counter: lockcore::connect(&fleet.redis.nodes[0].url(), &name).await?,
                });
            }
            reset_peak();
            let contention = runs::contend(
                contenders,
                "bench:w2:counter",
                sizes.w2_sections,
                sizes.w2_limit,
                members.as_deref(),
            )
            .await?;
            let ms = retry.as_millis() as u64;
            let waiting = match subject.name() {
                "stage6" => Waiting::UnlockMessage(ms),
                "stage6-fair" => Waiting::QueueHead(ms),
                "stage9" | "stage10" => Waiting::Watch,
                _ => Waiting::Retry(ms),
            };
            report.rows.push(Row {
                workload: "w2",
                lock: subject.name().to_owned(),
                store: subject.store(),
                waiting: Some(waiting),
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
        .push(timed("w3", PING_X5, REDIS, latencies, peak_kib()));
    let subjects = [Subject::Stage(stage7::STAGE), Subject::Rslock]
        .into_iter()
        .filter(|s| args.measures(s.name()))
        .map(|s| (s, servers.urls(5), sizes.w3))
        .collect();
    turns("w3", subjects, sizes.warmup, report).await
}

/// The `subjects` on their URLs, each for its count of pairs, taking turns
/// (`runs::pairs`): one row each for `workload`.
async fn turns(
    workload: &'static str,
    subjects: Vec<(Subject, Vec<String>, usize)>,
    warmup: usize,
    report: &mut Report,
) -> Result<(), LockError> {
    let key = format!("bench:{workload}");
    let name = format!("bench-{workload}");
    let mut locks = Vec::new();
    for (subject, urls, count) in &subjects {
        let config = config(&key, RETRIES[0]);
        locks.push((subject.client(urls.clone(), &name, config).await?, *count));
    }
    let measured = runs::pairs(&locks, warmup).await?;
    for ((subject, _, _), paired) in subjects.iter().zip(measured) {
        let mut row = timed(
            workload,
            subject.name(),
            subject.store(),
            paired.latencies,
            paired.peak_kib,
        );
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

fn timed(
    workload: &'static str,
    lock: &str,
    store: &'static str,
    mut latencies: Latencies,
    peak_kib: u64,
) -> Row {
    Row {
        workload,
        lock: lock.to_owned(),
        store,
        waiting: None,
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

    /// The store that keeps the lock: `Redis`, `ZooKeeper` or `etcd`.
    fn store(self) -> &'static str {
        match self {
            Self::Stage(stage) if stage.description.name == stage9::DESCRIPTION.name => ZOOKEEPER,
            Self::Stage(stage) if stage.description.name == stage10::DESCRIPTION.name => ETCD,
            _ => REDIS,
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

/// Stages 9 and 10: a lock kept by a consensus store's three members.
fn consensus_subjects() -> Vec<Subject> {
    vec![
        Subject::Stage(stage9::STAGE),
        Subject::Stage(stage10::STAGE),
    ]
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

fn write(report: &Report, markdown: &str, command: &Command, args: &Args) -> Result<(), String> {
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| PathBuf::from("target"), PathBuf::from);
    let dir = target.join("bench");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let figures = saved::to_json(report, command);
    let json = pretty(&figures)?;
    let stores = report.stores_markdown(Lang::En);
    for (file, text) in [
        ("workloads.json", json.as_str()),
        ("workloads.md", markdown),
        ("stores.md", stores.as_str()),
    ] {
        let path = dir.join(file);
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    write_book(report, command, args, &json, None)
}

/// `--from FILE`: the pages asked for, from the figures saved in `file`,
/// measuring nothing.
fn render_saved(file: &Path, args: &Args) -> Result<(), String> {
    let saved = saved::read(file)?;
    let asked = book_pages(args);
    if asked.is_empty() {
        if let Some(pages) = &saved.pages {
            return Err(format!(
                "{}: it keeps the figures of {} only; name it",
                file.display(),
                pages.join(", ")
            ));
        }
        println!("{}", saved.report.markdown(Lang::En));
        return Ok(());
    }
    if let Some(pages) = &saved.pages
        && let Some(page) = asked.iter().find(|p| !pages.iter().any(|q| q == p.flag))
    {
        return Err(format!(
            "{}: it keeps the figures of {} only, not those {} writes",
            file.display(),
            pages.join(", "),
            page.flag
        ));
    }
    write_book(&saved.report, &saved.command, args, &saved.text, Some(file))
}

/// A page of the book the bench writes, in both editions.
struct Page {
    /// The flag that asks for it.
    flag: &'static str,
    /// Its files' name in `book/src/generated/` (`.md`, `.zh.md`, `.json`).
    name: &'static str,
    /// Whether it is written into a marked region of each chapter that
    /// has one (`chapter`), rather than into files the chapters include.
    region_of: Option<&'static str>,
}

const PAGES: [Page; 3] = [
    Page {
        flag: "--write-book",
        name: "workloads",
        region_of: None,
    },
    Page {
        flag: "--write-book-stores",
        name: "stores-latency",
        region_of: None,
    },
    Page {
        flag: "--write-book-fair",
        name: "workloads-fair",
        region_of: Some("stage6.md"),
    },
];

fn book_pages(args: &Args) -> Vec<&'static Page> {
    let asked = [
        args.write_book,
        args.write_book_stores,
        args.write_book_fair,
    ];
    PAGES
        .iter()
        .zip(asked)
        .filter(|(_, a)| *a)
        .map(|(p, _)| p)
        .collect()
}

/// Writes the pages `args` asks for, each in English and in Chinese, and
/// keeps `figures` (the JSON they are rendered from) beside each; `from`:
/// the file they were read from, left as it is.
fn write_book(
    report: &Report,
    command: &Command,
    args: &Args,
    figures: &str,
    from: Option<&Path>,
) -> Result<(), String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let generated = root.join("book/src/generated");
    for page in book_pages(args) {
        let text = |lang| match page.name {
            "workloads" => report.markdown(lang),
            "stores-latency" => report.stores_markdown(lang),
            _ => report.fair_markdown(lang),
        };
        let (en, zh) = (text(Lang::En), text(Lang::Zh));
        if en.is_empty() {
            return Err(match page.name {
                "stores-latency" => {
                    format!(
                        "{}: this run measured neither stage9 nor stage10",
                        page.flag
                    )
                }
                _ => format!(
                    "{}: this run measured none of stage6, stage6-fair and rslock on w2",
                    page.flag
                ),
            });
        }
        let header = command.header(page.flag);
        match page.region_of {
            None => {
                for (file, text) in [
                    (format!("{}.md", page.name), en),
                    (format!("{}.zh.md", page.name), zh),
                ] {
                    write_file(&generated.join(file), &format!("{header}\n\n{text}"))?;
                }
            }
            Some(chapter) => {
                let chapters = [
                    (root.join("book/src").join(chapter), en),
                    (root.join("book/zh/src").join(chapter), zh),
                ];
                let mut written = 0;
                for (path, text) in chapters {
                    written += usize::from(fill_region(&path, page.flag, &header, &text)?);
                }
                if written == 0 {
                    return Err(format!(
                        "{}: neither edition's {chapter} marks a region for it",
                        page.flag
                    ));
                }
            }
        }
        let json = generated.join(format!("{}.json", page.name));
        let same = from.is_some_and(|from| from.canonicalize().ok() == json.canonicalize().ok());
        if !same {
            write_file(&json, figures)?;
        }
    }
    Ok(())
}

/// The end of a region `flag` writes in a chapter; it begins with the
/// pages' header line, whatever command it names.
fn region_end(flag: &str) -> String {
    format!("<!-- end of the tables `{flag}` writes -->")
}

/// Replaces the region of `path` that `flag` writes (from the line that
/// begins `<!-- generated by` and names `flag` to [`region_end`]) with
/// `header` and `text`. `Ok(false)`: the chapter marks no such region.
fn fill_region(path: &Path, flag: &str, header: &str, text: &str) -> Result<bool, String> {
    let page = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let end = region_end(flag);
    let named = format!("{flag}`; do not edit -->");
    let start = page
        .match_indices("<!-- generated by `")
        .map(|(i, _)| i)
        .find(|&i| {
            page[i..]
                .lines()
                .next()
                .is_some_and(|l| l.ends_with(&named))
        });
    let Some(start) = start else {
        return Ok(false);
    };
    let Some(stop) = page[start..].find(&end).map(|i| start + i + end.len()) else {
        return Err(format!(
            "{}: the region of {flag} has no end ({end})",
            path.display()
        ));
    };
    let filled = format!(
        "{}{header}\n\n{text}\n{end}{}",
        &page[..start],
        &page[stop..]
    );
    if filled != page {
        write_file(path, &filled)?;
    }
    Ok(true)
}

fn write_file(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

fn pretty(value: &serde_json::Value) -> Result<String, String> {
    serde_json::to_string_pretty(value)
        .map(|json| json + "\n")
        .map_err(|e| e.to_string())
}

/// The ensembles' data directories, when the environment chose them
/// (`LOCKSTAGES_ZOOKEEPER_DATA_DIR=/dev/shm `): every write is fsynced
/// there, so they shape the figures too.
fn data_dirs() -> String {
    [
        harness::server::ZOOKEEPER_DATA_DIR_VAR,
        harness::server::ETCD_DATA_DIR_VAR,
    ]
    .iter()
    .filter_map(|var| Some(format!("{var}={} ", std::env::var(var).ok()?)))
    .collect()
}

/// The options that shape the figures, as a reader would type them.
fn command_line(args: &Args) -> String {
    let mut line = String::new();
    if args.placement != Placement::None {
        let _ = write!(line, "--placement {} ", args.placement.word());
    }
    if args.quick {
        line.push_str("--quick ");
    }
    if !args.only.is_empty() {
        let _ = write!(line, "--only {} ", args.only.join(","));
    }
    if !args.locks.is_empty() {
        let _ = write!(line, "--lock {} ", args.locks.join(","));
    }
    line
}
