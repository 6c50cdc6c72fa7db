//! The run's figures as one markdown report (printed, written to
//! `target/bench/workloads.md` and, on request, to the book, in English and
//! in Chinese) and as JSON (`target/bench/workloads.json`, read back by
//! `saved`). Ratios compare figures of this run only.
//!
//! Each table is written once, for both editions: the figures and their
//! formats are the same, only the words differ ([`Lang`]).

use std::fmt::Write;

use serde_json::{Value, json};

use crate::consensus::{ETCD_FLOOR, ZK_FLOOR};
use crate::runs::Contention;
use crate::setup::Setup;

/// The book's editions: `book/src` and `book/zh/src`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// English, the report every run prints.
    En,
    /// Chinese, for `book/zh`.
    Zh,
}

impl Lang {
    /// `en` or `zh`, in this edition.
    pub fn pick(self, en: &'static str, zh: &'static str) -> &'static str {
        match self {
            Self::En => en,
            Self::Zh => zh,
        }
    }
}

/// How a w2 waiter waited for the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waiting {
    /// It asked again every so many ms.
    Retry(u64),
    /// Stage 6: an unlock message woke it (the retry set is unused).
    UnlockMessage(u64),
    /// The fair lock: the releaser woke the queue's head (retry unused).
    QueueHead(u64),
    /// Stages 9 and 10: a watch on its predecessor, no retry.
    Watch,
}

impl Waiting {
    /// The cell of the `waiting` column.
    pub fn cell(self, lang: Lang) -> String {
        match (self, lang) {
            (Self::Retry(ms), Lang::En) => format!("retry {ms} ms"),
            (Self::Retry(ms), Lang::Zh) => format!("每 {ms} ms 重试"),
            (Self::UnlockMessage(ms), Lang::En) => {
                format!("unlock message (retry {ms} ms unused)")
            }
            (Self::UnlockMessage(ms), Lang::Zh) => {
                format!("等解锁消息（不用 {ms} ms 重试）")
            }
            (Self::QueueHead(ms), Lang::En) => {
                format!("the queue's head is woken (retry {ms} ms unused)")
            }
            (Self::QueueHead(ms), Lang::Zh) => {
                format!("队首被叫醒（不用 {ms} ms 重试）")
            }
            (Self::Watch, Lang::En) => "a watch on the predecessor (no retry)".to_owned(),
            (Self::Watch, Lang::Zh) => "监听前一个节点（不重试）".to_owned(),
        }
    }

    /// The retry set, in ms (none for a watch).
    pub fn retry_ms(self) -> Option<u64> {
        match self {
            Self::Retry(ms) | Self::UnlockMessage(ms) | Self::QueueHead(ms) => Some(ms),
            Self::Watch => None,
        }
    }

    /// How the JSON names it.
    fn word(self) -> &'static str {
        match self {
            Self::Retry(_) => "retry",
            Self::UnlockMessage(_) => "unlock-message",
            Self::QueueHead(_) => "queue-head",
            Self::Watch => "watch",
        }
    }

    /// The waiting [`Waiting::word`] and its retry name.
    pub fn from_words(word: &str, retry_ms: Option<u64>) -> Result<Self, String> {
        match (word, retry_ms) {
            ("retry", Some(ms)) => Ok(Self::Retry(ms)),
            ("unlock-message", Some(ms)) => Ok(Self::UnlockMessage(ms)),
            ("queue-head", Some(ms)) => Ok(Self::QueueHead(ms)),
            ("watch", None) => Ok(Self::Watch),
            _ => Err(format!(
                "waiting {word:?} with retry_ms {retry_ms:?} is no way to wait"
            )),
        }
    }
}

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
    /// How it waited (w2); `None` elsewhere.
    pub waiting: Option<Waiting>,
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
    /// Where servers and clients ran, the load, the sizes (`None` in a
    /// file saved for pages that do not show them).
    pub setup: Option<Setup>,
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

    /// The rate of `lock` waiting one way (`retry 1 ms`).
    fn rate_at(&self, workload: &str, lock: &str, waiting: Waiting) -> Option<f64> {
        self.rows(workload)
            .find(|r| r.lock == lock && r.waiting == Some(waiting))
            .map(|r| r.rate)
    }

    fn setup_list(&self, out: &mut String, lang: Lang) {
        if let Some(setup) = &self.setup {
            setup.write(out, lang);
        }
    }

    /// Whether every w2 run counted every section.
    pub fn counters_ok(&self) -> bool {
        self.rows
            .iter()
            .filter_map(|r| r.contention.as_ref())
            .all(ContentionFigures::counter_ok)
    }

    /// The report in markdown (the performance chapter's).
    pub fn markdown(&self, lang: Lang) -> String {
        let mut out = String::new();
        self.setup_list(&mut out, lang);
        let cost = lang.pick("PINGs per pair", "每对合几个 PING");
        self.pairs_table(&mut out, lang, "ping", "w1", PING, cost);
        self.own_floor_note(&mut out, lang);
        self.contention_table(&mut out, lang);
        let cost = lang.pick("x5 PINGs per pair", "每对合几次 PING x5");
        self.pairs_table(&mut out, lang, "w3", "w3", PING_X5, cost);
        self.targets(&mut out, lang);
        if let Some((lock, samples)) = &self.long_w1 {
            let _ = match lang {
                Lang::En => writeln!(
                    out,
                    "\n**Long w1** ({lock}): the client's resident memory (MiB) after every tenth of the pairs\n"
                ),
                Lang::Zh => writeln!(
                    out,
                    "\n**长 w1**（{lock}）：每跑完十分之一的对数，客户端的常驻内存（MiB）\n"
                ),
            };
            let _ = writeln!(
                out,
                "| {} | {} |",
                lang.pick("pairs", "对数"),
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
    pub fn stores_markdown(&self, lang: Lang) -> String {
        const REDIS_LOCKS: [&str; 4] = ["stage3", "stage5", "stage6", "rslock"];
        let mut out = String::new();
        let Some(ping) = self.rate("ping", PING) else {
            return out;
        };
        if self.rows.iter().all(|r| r.store == REDIS) {
            return out;
        }
        self.setup_list(&mut out, lang);
        let _ = match lang {
            Lang::En => writeln!(
                out,
                "\n| store | lock or request | w1 pairs (or requests) per second | p50 µs | p99 µs | PINGs per pair | own floors per pair | w2 sections/s (best) | w2 counter |"
            ),
            Lang::Zh => writeln!(
                out,
                "\n| 存储 | 锁或请求 | w1 每秒对数（单个请求则为每秒请求数） | p50 µs | p99 µs | 每对合几个 PING | 每对合几个自家地板 | w2 每秒临界区（最好一次） | w2 计数器 |"
            ),
        };
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
                [] => "",
                all if all.iter().all(|c| c.counter_ok()) => {
                    lang.pick("no update lost", "没有丢失更新")
                }
                _ => lang.pick("**LOST UPDATES**", "**丢失了更新**"),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {:.0} | {} | {} | {:.2} | {} | {} | {counter} |",
                row.store,
                lock_name(&row.lock, lang),
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

    /// The fair lock's `w2` beside stage 6's and rslock's (stage 6's
    /// chapter): rate, order and cost, then each setting's counter, CPU and
    /// memory. Empty when the run measured none of the three on `w2`.
    pub fn fair_markdown(&self, lang: Lang) -> String {
        const LOCKS: [&str; 3] = ["stage6", "stage6-fair", "rslock"];
        let mut out = String::new();
        let rows: Vec<(&Row, &ContentionFigures)> = self
            .rows("w2")
            .filter(|r| LOCKS.contains(&r.lock.as_str()))
            .filter_map(|r| Some((r, r.contention.as_ref()?)))
            .collect();
        if rows.is_empty() {
            return out;
        }
        let best_rslock = self.rate("w2", "rslock");
        let _ = match lang {
            Lang::En => writeln!(
                out,
                "| lock | waiting | sections/s | owner changes | server commands per section | vs rslock best |"
            ),
            Lang::Zh => writeln!(
                out,
                "| 锁 | 等待方式 | 每秒临界区 | 易主率 | 每个临界区的服务器命令数 | 相对 rslock 最好成绩 |"
            ),
        };
        let _ = writeln!(out, "|---|---|---:|---:|---:|---:|");
        for (row, c) in &rows {
            let _ = writeln!(
                out,
                "| {} | {} | {:.0} | {:.1}% | {} | {} |",
                row.lock,
                waiting_cell(row, lang),
                row.rate,
                c.owner_changes * 100.0,
                commands(c),
                ratio(true, row.rate, best_rslock),
            );
        }
        let _ = match lang {
            Lang::En => writeln!(
                out,
                "\n| lock (retry) | sections per client | timeouts | counter | CPU µs per section, server / clients | peak MiB | errors |"
            ),
            Lang::Zh => writeln!(
                out,
                "\n| 锁（重试间隔） | 单个客户端的临界区数 | 超时 | 计数器 | 每个临界区的 CPU µs，服务器 / 客户端 | 内存峰值 MiB | 出错 |"
            ),
        };
        let _ = writeln!(out, "|---|---|---:|---|---:|---:|---:|");
        for (row, c) in &rows {
            let retry = row.waiting.and_then(Waiting::retry_ms);
            let lock = match (retry, lang) {
                (None, _) => row.lock.clone(),
                (Some(ms), Lang::En) => format!("{} ({ms} ms)", row.lock),
                (Some(ms), Lang::Zh) => format!("{}（{ms} ms）", row.lock),
            };
            let _ = writeln!(
                out,
                "| {lock} | {}..{} | {} | {} | {:.0} / {:.0} | {} | {} |",
                c.per_client.0,
                c.per_client.1,
                c.timeouts,
                counter(c, lang),
                c.cpu_us_per_section.0,
                c.cpu_us_per_section.1,
                mib(row.peak_kib),
                row.errors
            );
        }
        out
    }

    /// The targets, as ratios within this run.
    fn targets(&self, out: &mut String, lang: Lang) {
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
                    if met {
                        lang.pick("met", "达成")
                    } else {
                        lang.pick("**missed**", "**未达成**")
                    }
                ));
            }
        };
        let en = lang == Lang::En;
        let rslock_w1 = self.rate("w1", "rslock");
        for stage in ["stage3", "stage5"] {
            check(
                if en {
                    format!("w1: {stage} pairs/s ÷ rslock's")
                } else {
                    format!("w1：{stage} 每秒对数 ÷ rslock 的")
                },
                self.rate("w1", stage).zip(rslock_w1).map(|(a, b)| a / b),
                1.0,
                true,
            );
        }
        check(
            lang.pick(
                "w2: stage6 sections/s ÷ rslock's best",
                "w2：stage6 每秒临界区 ÷ rslock 的最好成绩",
            )
            .to_owned(),
            self.rate("w2", "stage6")
                .zip(self.rate("w2", "rslock"))
                .map(|(a, b)| a / b),
            1.0,
            true,
        );
        check(
            lang.pick("w2: stage6 owner changes", "w2：stage6 易主率")
                .to_owned(),
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
            lang.pick("w2: stage6-fair owner changes", "w2：stage6-fair 易主率")
                .to_owned(),
            self.rows("w2")
                .filter(|r| r.lock == "stage6-fair")
                .filter_map(|r| r.contention.as_ref().map(|c| c.owner_changes))
                .reduce(f64::min),
            0.95,
            true,
        );
        check(
            lang.pick(
                "w2: stage6-fair sections/s ÷ rslock's at retry 1 ms (its fairest)",
                "w2：stage6-fair 每秒临界区 ÷ rslock 每 1 ms 重试时的（它最公平的设置）",
            )
            .to_owned(),
            fair.zip(self.rate_at("w2", "rslock", Waiting::Retry(1)))
                .map(|(a, b)| a / b),
            1.2,
            true,
        );
        check(
            lang.pick(
                "w2: stage6-fair sections/s ÷ rslock's best",
                "w2：stage6-fair 每秒临界区 ÷ rslock 的最好成绩",
            )
            .to_owned(),
            fair.zip(self.rate("w2", "rslock")).map(|(a, b)| a / b),
            0.8,
            true,
        );
        check(
            lang.pick(
                "w2: stage6-fair server commands per section",
                "w2：stage6-fair 每个临界区的服务器命令数",
            )
            .to_owned(),
            self.rows("w2")
                .filter(|r| r.lock == "stage6-fair")
                .filter_map(|r| r.contention.as_ref()?.commands_per_section)
                .reduce(f64::max),
            10.0,
            false,
        );
        let stage7 = self.rate("w3", "stage7");
        check(
            lang.pick(
                "w3: stage7 pairs/s ÷ rslock's",
                "w3：stage7 每秒对数 ÷ rslock 的",
            )
            .to_owned(),
            stage7.zip(self.rate("w3", "rslock")).map(|(a, b)| a / b),
            1.15,
            true,
        );
        check(
            lang.pick(
                "w3: stage7 pair ÷ PING x5 at once",
                "w3：stage7 一对合几次 PING x5 同时发送",
            )
            .to_owned(),
            self.rate("w3", PING_X5).zip(stage7).map(|(a, b)| a / b),
            2.2,
            false,
        );
        if !lines.is_empty() {
            let _ = writeln!(
                out,
                "\n{}\n",
                lang.pick(
                    "**Targets** (ratios within this run)",
                    "**目标**（都是同一次运行之内的比值）"
                )
            );
            let _ = writeln!(
                out,
                "{}",
                lang.pick("| target | measured | goal | |", "| 目标 | 实测 | 要求 | |")
            );
            let _ = writeln!(out, "|---|---:|---:|---|");
            for line in lines {
                let _ = writeln!(out, "{line}");
            }
        }
    }

    /// ping + w1, or w3: rate, latencies, cost in PINGs, ratio to rslock.
    fn pairs_table(
        &self,
        out: &mut String,
        lang: Lang,
        base: &str,
        workload: &str,
        unit: &str,
        cost: &str,
    ) {
        let Some(unit_rate) = self.rate(base, unit) else {
            return;
        };
        let rslock = self.rate(workload, "rslock");
        let _ = writeln!(out, "\n**{}**\n", title(workload, lang));
        let mut rows: Vec<&Row> = self.rows(workload).collect();
        if base != workload {
            rows.splice(0..0, self.rows(base));
        }
        // Another store than Redis in the table: each row is also counted
        // in its own store's floor.
        let own = rows.iter().any(|r| r.store != REDIS);
        let (own_head, own_rule) = match (own, lang) {
            (false, _) => ("", ""),
            (true, Lang::En) => (" own floors per pair |", "---:|"),
            (true, Lang::Zh) => (" 每对合几个自家地板 |", "---:|"),
        };
        let _ = match lang {
            Lang::En => writeln!(
                out,
                "| lock | store | per second | p50 µs | p99 µs | {cost} |{own_head} vs rslock | peak MiB | errors |"
            ),
            Lang::Zh => writeln!(
                out,
                "| 锁 | 存储 | 每秒 | p50 µs | p99 µs | {cost} |{own_head} 相对 rslock | 内存峰值 MiB | 出错 |"
            ),
        };
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
                lock_name(&row.lock, lang),
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
    fn own_floor_note(&self, out: &mut String, lang: Lang) {
        if self.rows("w1").all(|r| r.store == REDIS) {
            return;
        }
        let _ = match lang {
            Lang::En => writeln!(
                out,
                "\n*Own floors per pair*: a pair's time in its own store's cheapest round trip of this run: \
                 PING for Redis, `{ZK_FLOOR}` (a read the member answers alone) for ZooKeeper, \
                 `{ETCD_FLOOR}` (the same, without the leader's confirmation) for etcd. \
                 The quorum writes (`set_data`, `put`) are what every acquire and release of stages 9 and 10 needs at least."
            ),
            Lang::Zh => writeln!(
                out,
                "\n*每对合几个自家地板*：一对加解锁的耗时，以这次运行里它所在存储最便宜的一次往返为单位。\
                 Redis 的地板是 PING；ZooKeeper 的是 `{ZK_FLOOR}`，成员自己就能回答的读；\
                 etcd 的是 `{ETCD_FLOOR}`，同样是成员自己回答，不等 leader 确认。\
                 多数派写入（`set_data`、`put`）是阶段 9 和 10 每次加锁、每次解锁至少要付的代价。"
            ),
        };
    }

    fn contention_table(&self, out: &mut String, lang: Lang) {
        let best_rslock = self.rate("w2", "rslock");
        let _ = writeln!(out, "\n**{}**\n", title("w2", lang));
        let _ = match lang {
            Lang::En => writeln!(
                out,
                "| lock | store | waiting | sections/s | owner changes | per client | timeouts | counter | server commands per section (script calls included) | CPU µs per section, server / clients | vs rslock best | peak MiB | errors |"
            ),
            Lang::Zh => writeln!(
                out,
                "| 锁 | 存储 | 等待方式 | 每秒临界区 | 易主率 | 单个客户端的临界区数 | 超时 | 计数器 | 每个临界区的服务器命令数（脚本里执行的也算） | 每个临界区的 CPU µs，服务器 / 客户端 | 相对 rslock 最好成绩 | 内存峰值 MiB | 出错 |"
            ),
        };
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
                waiting_cell(row, lang),
                row.rate,
                c.owner_changes * 100.0,
                c.per_client.0,
                c.per_client.1,
                c.timeouts,
                counter(c, lang),
                commands(c),
                c.cpu_us_per_section.0,
                c.cpu_us_per_section.1,
                ratio(true, row.rate, best_rslock),
                mib(row.peak_kib),
                row.errors
            );
        }
        if self.rows("w2").any(|r| r.store != REDIS) {
            let _ = match lang {
                Lang::En => writeln!(
                    out,
                    "\nThe counter is on Redis for every lock. For a lock on an ensemble the server CPU is its three members' \
                     (`/proc/<pid>/stat`), and its requests are not Redis commands (—)."
                ),
                Lang::Zh => writeln!(
                    out,
                    "\n不管锁在哪里，计数器都在 Redis 上。锁在集群上时，服务器 CPU 算的是集群三个成员的\
                     （取自 `/proc/<pid>/stat`）；它的请求不是 Redis 命令，命令数一栏因此是 —。"
                ),
            };
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
                    "waiting": r.waiting.map(Waiting::word),
                    "retry_ms": r.waiting.and_then(Waiting::retry_ms),
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
            "setup": self.setup.as_ref().map(Setup::json),
            "rows": rows,
            "long_w1": self.long_w1.as_ref().map(|(lock, samples)| json!({
                "lock": lock,
                "resident_kib": samples.iter().map(|(n, kib)| json!([n, kib])).collect::<Vec<_>>(),
            })),
        })
    }
}

/// The row of PINGs, Redis's floor.
const PING: &str = "PING";
/// The row of a PING to each of the 5 nodes at once, w3's floor.
pub const PING_X5: &str = "PING x5 at once";

fn title(workload: &str, lang: Lang) -> &'static str {
    match (workload, lang) {
        ("w1", Lang::En) => {
            "ping and w1: one client, acquire + release on one node (Redis) or a three-member ensemble"
        }
        ("w1", Lang::Zh) => {
            "ping 和 w1：一个客户端反复加锁、解锁，锁在一个节点（Redis）或一个三成员集群上"
        }
        ("w2", Lang::En) => "w2: 8 clients, one lock, GET + SET of a counter inside",
        ("w2", Lang::Zh) => "w2：8 个客户端抢一把锁，锁内先 GET 一个计数器，加一后再 SET 回去",
        ("w3", Lang::En) => "w3: Redlock on 5 nodes, one client, acquire + release",
        ("w3", Lang::Zh) => "w3：5 个节点上的 Redlock，一个客户端反复加锁、解锁",
        _ => "",
    }
}

/// A row's lock or request as a reader of `lang` sees it: the names of
/// stages, locks and commands stay as they are.
fn lock_name(lock: &str, lang: Lang) -> &str {
    match (lock, lang) {
        (PING_X5, Lang::Zh) => "PING x5 同时发送",
        _ => lock,
    }
}

fn waiting_cell(row: &Row, lang: Lang) -> String {
    row.waiting.map_or_else(String::new, |w| w.cell(lang))
}

/// The counter at the end, and whether it counted every section.
fn counter(c: &ContentionFigures, lang: Lang) -> String {
    let lost = c.sections as i64 - c.counter;
    match (c.counter_ok(), lang) {
        (true, Lang::En) => format!("{} ok", c.counter),
        (true, Lang::Zh) => format!("{} 无误", c.counter),
        (false, Lang::En) => format!("{} LOST {lost}", c.counter),
        (false, Lang::Zh) => format!("{}，**丢了 {lost} 次**", c.counter),
    }
}

fn commands(c: &ContentionFigures) -> String {
    c.commands_per_section
        .map_or_else(|| "—".to_owned(), |n| format!("{n:.1}"))
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
