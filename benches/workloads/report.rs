//! The run's figures as one markdown report (printed, written to
//! `target/bench/workloads.md` and, on request, to the book) and as JSON
//! (`target/bench/workloads.json`). Ratios compare figures of this run only.

use std::fmt::Write;

use serde_json::{Value, json};

use crate::consensus::{ETCD_FLOOR, ZK_FLOOR};
use crate::runs::Contention;

/// The stores a lock may live in, as rows name them.
pub const REDIS: &str = "Redis";
/// See [`REDIS`].
pub const ZOOKEEPER: &str = "ZooKeeper";
/// See [`REDIS`].
pub const ETCD: &str = "etcd";

/// Each store's floor, its cheapest round trip: the row a lock of that
/// store is counted against.
fn floor_of(store: &str) -> &'static str {
    match store {
        ZOOKEEPER => ZK_FLOOR,
        ETCD => ETCD_FLOOR,
        _ => "PING",
    }
}

/// One lock (or PING) on one workload.
#[derive(Debug)]
pub struct Row {
    /// `ping`, `w1`, `w2`, `w3`.
    pub workload: &'static str,
    /// `PING`, `PING x5 at once`, `stage3`, `rslock`…
    pub lock: String,
    /// Where the lock (or the request) lives: [`REDIS`], [`ZOOKEEPER`],
    /// [`ETCD`].
    pub store: &'static str,
    /// How it waited (w2): `retry 1 ms`…; empty elsewhere.
    pub setting: String,
    /// Operations per second: PINGs, pairs or critical sections.
    pub rate: f64,
    /// Median and 99th percentile of one operation, in µs (not for w2).
    pub p50_us: Option<f64>,
    /// See `p50_us`.
    pub p99_us: Option<f64>,
    /// The client side's peak resident memory during the workload, KiB.
    pub peak_kib: u64,
    /// Operations that failed (a reply later than redis-rs's 500 ms).
    pub errors: usize,
    /// w2's figures.
    pub contention: Option<ContentionFigures>,
}

/// What w2 adds to a row.
#[derive(Debug)]
pub struct ContentionFigures {
    /// Sections run.
    pub sections: usize,
    /// Share of handoffs to another client.
    pub owner_changes: f64,
    /// Fewest and most sections of one client.
    pub per_client: (usize, usize),
    /// Acquires that gave up.
    pub timeouts: usize,
    /// The counter at the end.
    pub counter: i64,
    /// Redis commands per section (lock, counter and all); `None` for a
    /// lock on an ensemble.
    pub commands_per_section: Option<f64>,
    /// Server and client CPU per section, µs.
    pub cpu_us_per_section: (f64, f64),
}

impl From<&Contention> for ContentionFigures {
    fn from(c: &Contention) -> Self {
        Self {
            sections: c.sections,
            owner_changes: c.owner_changes(),
            per_client: (
                c.per_client.iter().copied().min().unwrap_or(0),
                c.per_client.iter().copied().max().unwrap_or(0),
            ),
            timeouts: c.timeouts,
            counter: c.counter,
            commands_per_section: c
                .server_commands
                .map(|n| n as f64 / c.sections.max(1) as f64),
            cpu_us_per_section: (
                c.server_cpu.as_secs_f64() * 1e6 / c.sections.max(1) as f64,
                c.client_cpu.as_secs_f64() * 1e6 / c.sections.max(1) as f64,
            ),
        }
    }
}

impl ContentionFigures {
    /// No update was lost: the counter counts every section.
    pub fn counter_ok(&self) -> bool {
        usize::try_from(self.counter) == Ok(self.sections)
    }
}

/// Everything one run measured.
#[derive(Debug, Default)]
pub struct Report {
    /// Where servers and clients ran, the load, the sizes.
    pub setup: Vec<(String, String)>,
    /// Every measured row, in the order run.
    pub rows: Vec<Row>,
    /// The long w1: (pairs so far, resident KiB).
    pub long_w1: Option<(String, Vec<(usize, u64)>)>,
}

impl Report {
    fn rows(&self, workload: &str) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(move |r| r.workload == workload)
    }

    fn rate(&self, workload: &str, lock: &str) -> Option<f64> {
        self.rows(workload)
            .filter(|r| r.lock == lock)
            .map(|r| r.rate)
            .reduce(f64::max)
    }

    /// The rate of `lock` at one `setting` (`retry 1 ms`).
    fn rate_at(&self, workload: &str, lock: &str, setting: &str) -> Option<f64> {
        self.rows(workload)
            .find(|r| r.lock == lock && r.setting == setting)
            .map(|r| r.rate)
    }

    /// Whether every w2 run counted every section.
    pub fn counters_ok(&self) -> bool {
        self.rows
            .iter()
            .filter_map(|r| r.contention.as_ref())
            .all(ContentionFigures::counter_ok)
    }

    /// The report in markdown.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        for (name, value) in &self.setup {
            let _ = writeln!(out, "- {name}: {value}");
        }
        self.pairs_table(&mut out, "ping", "w1", "PING", "PINGs per pair");
        self.own_floor_note(&mut out);
        self.contention_table(&mut out);
        self.pairs_table(&mut out, "w3", "w3", "PING x5 at once", "x5 PINGs per pair");
        self.targets(&mut out);
        if let Some((lock, samples)) = &self.long_w1 {
            let _ = writeln!(
                out,
                "\n**Long w1** ({lock}): the client's resident memory (MiB) after every tenth of the pairs\n"
            );
            let _ = writeln!(
                out,
                "| pairs | {} |",
                column(samples, |(n, _)| n.to_string())
            );
            let _ = writeln!(out, "|---|{}", "---|".repeat(samples.len()));
            let _ = writeln!(out, "| MiB | {} |", column(samples, |(_, kib)| mib(*kib)));
        }
        out
    }

    /// The consensus stores beside Redis, one compact table (the book's
    /// "Beyond Redis" chapter): each store's floor and quorum write, w1 of
    /// the stages compared, and their best w2 with its counter check.
    /// Empty when the run measured neither stage 9 nor stage 10.
    pub fn stores_markdown(&self) -> String {
        const REDIS_LOCKS: [&str; 4] = ["stage3", "stage5", "stage6", "rslock"];
        let mut out = String::new();
        let Some(ping) = self.rate("ping", "PING") else {
            return out;
        };
        if self.rows.iter().all(|r| r.store == REDIS) {
            return out;
        }
        for (name, value) in &self.setup {
            let _ = writeln!(out, "- {name}: {value}");
        }
        let _ = writeln!(
            out,
            "\n| store | lock or request | w1 pairs (or requests) per second | p50 µs | p99 µs | PINGs per pair | own floors per pair | w2 sections/s (best) | w2 counter |"
        );
        let _ = writeln!(out, "|---|---|---:|---:|---:|---:|---:|---:|---|");
        let picked = self.rows.iter().filter(|r| match r.workload {
            "ping" => true,
            "w1" => r.store != REDIS || REDIS_LOCKS.contains(&r.lock.as_str()),
            _ => false,
        });
        let mut picked: Vec<&Row> = picked.collect();
        // Grouped by store, Redis first; within one, floor, write, locks.
        let order = |store: &str| [REDIS, ZOOKEEPER, ETCD].iter().position(|s| *s == store);
        picked.sort_by_key(|r| (order(r.store), r.workload != "ping"));
        for row in picked {
            let floor = self.rate("ping", floor_of(row.store));
            let w2 = self.rows("w2").filter(|r| r.lock == row.lock);
            let w2: Vec<&ContentionFigures> = w2.filter_map(|r| r.contention.as_ref()).collect();
            let counter = match w2.as_slice() {
                [] => String::new(),
                all if all.iter().all(|c| c.counter_ok()) => "no update lost".to_owned(),
                _ => "**LOST UPDATES**".to_owned(),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {:.0} | {} | {} | {:.2} | {} | {} | {counter} |",
                row.store,
                row.lock,
                row.rate,
                opt(row.p50_us),
                opt(row.p99_us),
                ping / row.rate,
                floor.map_or_else(String::new, |f| format!("{:.2}", f / row.rate)),
                self.rate("w2", &row.lock)
                    .map_or_else(String::new, |r| format!("{r:.0}")),
            );
        }
        out
    }

    /// The targets, as ratios within this run.
    fn targets(&self, out: &mut String) {
        let mut lines = Vec::new();
        let mut check = |what: String, value: Option<f64>, goal: f64, at_least: bool| {
            if let Some(value) = value {
                let met = if at_least {
                    value >= goal
                } else {
                    value <= goal
                };
                let sign = if at_least { "≥" } else { "≤" };
                lines.push(format!(
                    "| {what} | {value:.2} | {sign} {goal:.2} | {} |",
                    if met { "met" } else { "**missed**" }
                ));
            }
        };
        let rslock_w1 = self.rate("w1", "rslock");
        for stage in ["stage3", "stage5"] {
            check(
                format!("w1: {stage} pairs/s ÷ rslock's"),
                self.rate("w1", stage).zip(rslock_w1).map(|(a, b)| a / b),
                1.0,
                true,
            );
        }
        check(
            "w2: stage6 sections/s ÷ rslock's best".to_owned(),
            self.rate("w2", "stage6")
                .zip(self.rate("w2", "rslock"))
                .map(|(a, b)| a / b),
            1.0,
            true,
        );
        check(
            "w2: stage6 owner changes".to_owned(),
            self.rows("w2")
                .filter(|r| r.lock == "stage6")
                .filter_map(|r| r.contention.as_ref().map(|c| c.owner_changes))
                .reduce(f64::min),
            0.97,
            true,
        );
        // The fair variant (issue 24): in order, fast, and cheap.
        let fair = self.rate("w2", "stage6-fair");
        check(
            "w2: stage6-fair owner changes".to_owned(),
            self.rows("w2")
                .filter(|r| r.lock == "stage6-fair")
                .filter_map(|r| r.contention.as_ref().map(|c| c.owner_changes))
                .reduce(f64::min),
            0.95,
            true,
        );
        check(
            "w2: stage6-fair sections/s ÷ rslock's at retry 1 ms (its fairest)".to_owned(),
            fair.zip(self.rate_at("w2", "rslock", "retry 1 ms"))
                .map(|(a, b)| a / b),
            1.2,
            true,
        );
        check(
            "w2: stage6-fair sections/s ÷ rslock's best".to_owned(),
            fair.zip(self.rate("w2", "rslock")).map(|(a, b)| a / b),
            0.8,
            true,
        );
        check(
            "w2: stage6-fair server commands per section".to_owned(),
            self.rows("w2")
                .filter(|r| r.lock == "stage6-fair")
                .filter_map(|r| r.contention.as_ref()?.commands_per_section)
                .reduce(f64::max),
            10.0,
            false,
        );
        let stage7 = self.rate("w3", "stage7");
        check(
            "w3: stage7 pairs/s ÷ rslock's".to_owned(),
            stage7.zip(self.rate("w3", "rslock")).map(|(a, b)| a / b),
            1.15,
            true,
        );
        check(
            "w3: stage7 pair ÷ PING x5 at once".to_owned(),
            self.rate("w3", "PING x5 at once")
                .zip(stage7)
                .map(|(a, b)| a / b),
            2.2,
            false,
        );
        if !lines.is_empty() {
            let _ = writeln!(out, "\n**Targets** (ratios within this run)\n");
            let _ = writeln!(out, "| target | measured | goal | |");
            let _ = writeln!(out, "|---|---:|---:|---|");
            for line in lines {
                let _ = writeln!(out, "{line}");
            }
        }
    }

    /// ping + w1, or w3: rate, latencies, cost in PINGs, ratio to rslock.
    fn pairs_table(&self, out: &mut String, base: &str, workload: &str, unit: &str, cost: &str) {
        let Some(unit_rate) = self.rate(base, unit) else {
            return;
        };
        let rslock = self.rate(workload, "rslock");
        let _ = writeln!(out, "\n**{}**\n", title(workload));
        let mut rows: Vec<&Row> = self.rows(workload).collect();
        if base != workload {
            rows.splice(0..0, self.rows(base));
        }
        // Another store than Redis in the table: each row is also counted
        // in its own store's floor.
        let own = rows.iter().any(|r| r.store != REDIS);
        let (own_head, own_rule) = if own {
            (" own floors per pair |", "---:|")
        } else {
            ("", "")
        };
        let _ = writeln!(
            out,
            "| lock | store | per second | p50 µs | p99 µs | {cost} |{own_head} vs rslock | peak MiB | errors |"
        );
        let _ = writeln!(
            out,
            "|---|---|---:|---:|---:|---:|{own_rule}---:|---:|---:|"
        );
        for row in rows {
            let own_cell = match self.rate(base, floor_of(row.store)) {
                _ if !own => String::new(),
                Some(floor) => format!(" {:.2} |", floor / row.rate),
                None => " |".to_owned(),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {:.0} | {} | {} | {:.2} |{own_cell} {} | {} | {} |",
                row.lock,
                row.store,
                row.rate,
                opt(row.p50_us),
                opt(row.p99_us),
                unit_rate / row.rate,
                // A lock's pairs against rslock's; not a single request's.
                ratio(
                    row.workload == workload && row.lock != unit,
                    row.rate,
                    rslock
                ),
                mib(row.peak_kib),
                row.errors
            );
        }
    }

    /// What "own floors" means, under the w1 table that has the column.
    fn own_floor_note(&self, out: &mut String) {
        if self.rows("w1").all(|r| r.store == REDIS) {
            return;
        }
        let _ = writeln!(
            out,
            "\n*Own floors per pair*: a pair's time in its own store's cheapest round trip of this run: \
             PING for Redis, `{ZK_FLOOR}` (a read the member answers alone) for ZooKeeper, \
             `{ETCD_FLOOR}` (the same, without the leader's confirmation) for etcd. \
             The quorum writes (`set_data`, `put`) are what every acquire and release of stages 9 and 10 needs at least."
        );
    }

    fn contention_table(&self, out: &mut String) {
        let best_rslock = self.rate("w2", "rslock");
        let _ = writeln!(out, "\n**{}**\n", title("w2"));
        let _ = writeln!(
            out,
            "| lock | store | waiting | sections/s | owner changes | per client | timeouts | counter | server commands per section (script calls included) | CPU µs per section, server / clients | vs rslock best | peak MiB | errors |"
        );
        let _ = writeln!(
            out,
            "|---|---|---|---:|---:|---|---:|---|---:|---:|---:|---:|---:|"
        );
        for row in self.rows("w2") {
            let Some(c) = &row.contention else { continue };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {:.0} | {:.1}% | {}..{} | {} | {} | {} | {:.0} / {:.0} | {} | {} | {} |",
                row.lock,
                row.store,
                row.setting,
                row.rate,
                c.owner_changes * 100.0,
                c.per_client.0,
                c.per_client.1,
                c.timeouts,
                if c.counter_ok() {
                    format!("{} ok", c.counter)
                } else {
                    format!("{} LOST {}", c.counter, c.sections as i64 - c.counter)
                },
                c.commands_per_section
                    .map_or_else(|| "—".to_owned(), |n| format!("{n:.1}")),
                c.cpu_us_per_section.0,
                c.cpu_us_per_section.1,
                ratio(true, row.rate, best_rslock),
                mib(row.peak_kib),
                row.errors
            );
        }
        if self.rows("w2").any(|r| r.store != REDIS) {
            let _ = writeln!(
                out,
                "\nThe counter is on Redis for every lock. For a lock on an ensemble the server CPU is its three members' \
                 (`/proc/<pid>/stat`), and its requests are not Redis commands (—)."
            );
        }
    }

    /// The report as JSON.
    pub fn json(&self) -> Value {
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|r| {
                json!({
                    "workload": r.workload,
                    "lock": r.lock,
                    "store": r.store,
                    "setting": r.setting,
                    "per_second": r.rate,
                    "p50_us": r.p50_us,
                    "p99_us": r.p99_us,
                    "peak_kib": r.peak_kib,
                    "errors": r.errors,
                    "contention": r.contention.as_ref().map(|c| json!({
                        "sections": c.sections,
                        "owner_changes": c.owner_changes,
                        "per_client_min": c.per_client.0,
                        "per_client_max": c.per_client.1,
                        "timeouts": c.timeouts,
                        "counter": c.counter,
                        "counter_ok": c.counter_ok(),
                        "commands_per_section": c.commands_per_section,
                        "server_cpu_us_per_section": c.cpu_us_per_section.0,
                        "client_cpu_us_per_section": c.cpu_us_per_section.1,
                    })),
                })
            })
            .collect();
        json!({
            "setup": self.setup.iter().map(|(k, v)| (k.clone(), Value::from(v.clone()))).collect::<serde_json::Map<_, _>>(),
            "rows": rows,
            "long_w1": self.long_w1.as_ref().map(|(lock, samples)| json!({
                "lock": lock,
                "resident_kib": samples.iter().map(|(n, kib)| json!([n, kib])).collect::<Vec<_>>(),
            })),
        })
    }
}

fn title(workload: &str) -> &'static str {
    match workload {
        "w1" => {
            "ping and w1: one client, acquire + release on one node (Redis) or a three-member ensemble"
        }
        "w2" => "w2: 8 clients, one lock, GET + SET of a counter inside",
        "w3" => "w3: Redlock on 5 nodes, one client, acquire + release",
        _ => "",
    }
}

fn opt(us: Option<f64>) -> String {
    us.map_or_else(String::new, |us| format!("{us:.0}"))
}

fn ratio(applies: bool, rate: f64, peer: Option<f64>) -> String {
    match peer {
        Some(peer) if applies => format!("{:.2}", rate / peer),
        _ => String::new(),
    }
}

fn mib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / 1024.0)
}

fn column<T>(items: &[T], cell: impl Fn(&T) -> String) -> String {
    items.iter().map(cell).collect::<Vec<_>>().join(" | ")
}
