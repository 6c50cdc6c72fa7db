//! The run's figures as one markdown report (printed, written to
//! `target/bench/workloads.md` and, on request, to the book) and as JSON
//! (`target/bench/workloads.json`). Ratios compare figures of this run only.

use std::fmt::Write;

use serde_json::{Value, json};

use crate::runs::Contention;

/// One lock (or PING) on one workload.
#[derive(Debug)]
pub struct Row {
    /// `ping`, `w1`, `w2`, `w3`.
    pub workload: &'static str,
    /// `PING`, `PING x5 at once`, `stage3`, `rslock`…
    pub lock: String,
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
    /// Server commands per section (lock, counter and all).
    pub commands_per_section: f64,
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
            commands_per_section: c.server_commands as f64 / c.sections.max(1) as f64,
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
                .filter_map(|r| r.contention.as_ref().map(|c| c.commands_per_section))
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
        let _ = writeln!(
            out,
            "| lock | per second | p50 µs | p99 µs | {cost} | vs rslock | peak MiB | errors |"
        );
        let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|");
        let mut rows: Vec<&Row> = self.rows(workload).collect();
        if base != workload {
            rows.splice(0..0, self.rows(base));
        }
        for row in rows {
            let _ = writeln!(
                out,
                "| {} | {:.0} | {} | {} | {:.2} | {} | {} | {} |",
                row.lock,
                row.rate,
                opt(row.p50_us),
                opt(row.p99_us),
                unit_rate / row.rate,
                ratio(row.lock != unit, row.rate, rslock),
                mib(row.peak_kib),
                row.errors
            );
        }
    }

    fn contention_table(&self, out: &mut String) {
        let best_rslock = self.rate("w2", "rslock");
        let _ = writeln!(out, "\n**{}**\n", title("w2"));
        let _ = writeln!(
            out,
            "| lock | waiting | sections/s | owner changes | per client | timeouts | counter | server commands per section (script calls included) | CPU µs per section, server / clients | vs rslock best | peak MiB | errors |"
        );
        let _ = writeln!(
            out,
            "|---|---|---:|---:|---|---:|---|---:|---:|---:|---:|---:|"
        );
        for row in self.rows("w2") {
            let Some(c) = &row.contention else { continue };
            let _ = writeln!(
                out,
                "| {} | {} | {:.0} | {:.1}% | {}..{} | {} | {} | {:.1} | {:.0} / {:.0} | {} | {} | {} |",
                row.lock,
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
                c.commands_per_section,
                c.cpu_us_per_section.0,
                c.cpu_us_per_section.1,
                ratio(true, row.rate, best_rslock),
                mib(row.peak_kib),
                row.errors
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
        "w1" => "ping and w1: one client, acquire + release on one node",
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
