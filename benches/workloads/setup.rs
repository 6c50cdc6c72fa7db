//! Where a run's servers and clients ran, the load and the sizes: the list
//! at the top of every report, kept as facts (not sentences) so that it is
//! saved with the figures and told in each edition's own words.

use std::fmt::Write;

use serde_json::{Value, json};

use crate::args::Placement;
use crate::report::Lang;
use crate::saved::{self, Fields};

/// What the run's setup list says.
#[derive(Debug, Clone)]
pub struct Setup {
    /// Where servers and clients ran.
    pub placement: Placement,
    /// The Redis nodes started.
    pub redis_servers: usize,
    /// The ensembles' members started (stages 9 and 10), for the pinning.
    pub ensemble_members: usize,
    /// How the Redis nodes run: `process`, `docker <image>`, or the
    /// external server's variable and address (the harness's label).
    pub backend: String,
    /// One note per ensemble started.
    pub stores: Vec<StoreNote>,
    /// `/proc/loadavg`'s three figures when the run began.
    pub load_at_start: String,
    /// The workloads' sizes.
    pub sizes: SizesNote,
    /// `/proc/loadavg`'s three figures when it ended.
    pub load_at_end: Option<String>,
}

/// One ensemble: its members, who led, where its data lived.
#[derive(Debug, Clone)]
pub struct StoreNote {
    /// `ZooKeeper` or `etcd`.
    pub store: String,
    /// How many members.
    pub members: usize,
    /// The leader's label (`zk3`), or why none was found.
    pub leader: Result<String, String>,
    /// The harness's words for the data directories: `disk (ext4) at
    /// /tmp/…`, `tmpfs at /dev/shm/…`.
    pub storage: String,
}

/// The sizes the run used.
#[derive(Debug, Clone, Copy)]
pub struct SizesNote {
    pub ping: usize,
    pub w1: usize,
    pub warmup: usize,
    pub consensus_w1: usize,
    pub floor: usize,
    pub w2_sections: usize,
    pub w2_limit_s: u64,
    pub w3: usize,
    pub long_w1: usize,
    pub quick: bool,
}

impl Setup {
    /// The list, one `- name: value` line each (the English lines are the
    /// ones every report has printed).
    pub fn write(&self, out: &mut String, lang: Lang) {
        for (name, value) in self.lines(lang) {
            let _ = match lang {
                Lang::En => writeln!(out, "- {name}: {value}"),
                Lang::Zh => writeln!(out, "- {name}：{value}"),
            };
        }
    }

    fn lines(&self, lang: Lang) -> Vec<(String, String)> {
        let mut lines = vec![
            (
                lang.pick("placement", "绑核方式").to_owned(),
                placement(self.placement, lang),
            ),
            (
                lang.pick("clients", "客户端").to_owned(),
                self.clients(lang),
            ),
            (
                lang.pick("servers", "服务器").to_owned(),
                self.servers(lang),
            ),
            (
                lang.pick("backend", "Redis 的运行方式").to_owned(),
                backend(&self.backend, lang),
            ),
        ];
        for store in &self.stores {
            lines.push((store.store.clone(), store.note(lang)));
        }
        lines.push((
            lang.pick("load average at start", "开始时的平均负载")
                .to_owned(),
            self.load_at_start.clone(),
        ));
        lines.push((lang.pick("sizes", "规模").to_owned(), self.sizes.note(lang)));
        if let Some(load) = &self.load_at_end {
            lines.push((
                lang.pick("load average at end", "结束时的平均负载")
                    .to_owned(),
                load.clone(),
            ));
        }
        lines
    }

    fn clients(&self, lang: Lang) -> String {
        match (self.placement.cpus(), lang) {
            (None, Lang::En) => "unpinned".to_owned(),
            (None, Lang::Zh) => "不绑核".to_owned(),
            (Some((_, cpu)), Lang::En) => {
                format!("bench process pinned to CPU {cpu}, tokio with 1 worker thread")
            }
            (Some((_, cpu)), Lang::Zh) => {
                format!("bench 进程绑在 CPU {cpu} 上，tokio 只开 1 个工作线程")
            }
        }
    }

    fn servers(&self, lang: Lang) -> String {
        let Some((cpu, _)) = self.placement.cpus() else {
            return lang.pick("unpinned", "不绑核").to_owned();
        };
        let (redis, members) = (self.redis_servers, self.ensemble_members);
        match lang {
            Lang::En => {
                let mut note = format!("{redis} redis-server processes");
                if members > 0 {
                    let _ = write!(note, " and {members} ensemble members");
                }
                format!("{note} pinned to CPU {cpu}")
            }
            Lang::Zh => {
                let mut note = format!("{redis} 个 redis-server 进程");
                if members > 0 {
                    let _ = write!(note, "和 {members} 个集群成员");
                }
                format!("{note}都绑在 CPU {cpu} 上")
            }
        }
    }

    /// The setup as JSON.
    pub fn json(&self) -> Value {
        json!({
            "placement": self.placement.word(),
            "redis_servers": self.redis_servers,
            "ensemble_members": self.ensemble_members,
            "backend": self.backend,
            "stores": self.stores.iter().map(|s| json!({
                "store": s.store,
                "members": s.members,
                "leader": s.leader.as_ref().ok(),
                "leader_unknown": s.leader.as_ref().err(),
                "storage": s.storage,
            })).collect::<Vec<_>>(),
            "load_average_at_start": self.load_at_start,
            "sizes": {
                "ping": self.sizes.ping,
                "w1": self.sizes.w1,
                "warmup": self.sizes.warmup,
                "consensus_w1": self.sizes.consensus_w1,
                "floors": self.sizes.floor,
                "w2_sections": self.sizes.w2_sections,
                "w2_limit_s": self.sizes.w2_limit_s,
                "w3": self.sizes.w3,
                "long_w1": self.sizes.long_w1,
                "quick": self.sizes.quick,
            },
            "load_average_at_end": self.load_at_end,
        })
    }

    /// The setup [`Setup::json`] saved.
    pub fn from_json(value: &Value) -> Result<Self, String> {
        let f = Fields::strict(value, "setup");
        let stores = f
            .list("stores")?
            .iter()
            .map(|store| {
                let s = Fields::strict(store, "setup.stores[]");
                let leader = match s.opt_text("leader")? {
                    Some(label) => Ok(label),
                    None => Err(s.text("leader_unknown")?),
                };
                Ok(StoreNote {
                    store: s.text("store")?,
                    members: s.count("members")?,
                    leader,
                    storage: s.text("storage")?,
                })
            })
            .collect::<Result<_, String>>()?;
        let sizes = f.object("sizes")?;
        let z = Fields::strict(sizes, "setup.sizes");
        Ok(Self {
            placement: Placement::from_word(&f.text("placement")?)?,
            redis_servers: f.count("redis_servers")?,
            ensemble_members: f.count("ensemble_members")?,
            backend: f.text("backend")?,
            stores,
            load_at_start: f.text("load_average_at_start")?,
            sizes: SizesNote {
                ping: z.count("ping")?,
                w1: z.count("w1")?,
                warmup: z.count("warmup")?,
                consensus_w1: z.count("consensus_w1")?,
                floor: z.count("floors")?,
                w2_sections: z.count("w2_sections")?,
                w2_limit_s: z.count("w2_limit_s")? as u64,
                w3: z.count("w3")?,
                long_w1: z.count("long_w1")?,
                quick: saved::flag(sizes, "quick")?,
            },
            load_at_end: f.opt_text("load_average_at_end")?,
        })
    }
}

impl StoreNote {
    fn note(&self, lang: Lang) -> String {
        let members = self.members;
        match lang {
            Lang::En => {
                let leader = match &self.leader {
                    Ok(label) | Err(label) => label,
                };
                format!(
                    "{members} members, leader {leader}, data directories on {}",
                    self.storage
                )
            }
            Lang::Zh => {
                let leader = match &self.leader {
                    Ok(label) => format!("leader 是 {label}"),
                    Err(why) => format!("没找到 leader（{why}）"),
                };
                format!(
                    "{members} 个成员，{leader}，数据目录{}",
                    storage_zh(&self.storage)
                )
            }
        }
    }
}

impl SizesNote {
    fn note(&self, lang: Lang) -> String {
        let s = self;
        match lang {
            Lang::En => format!(
                "ping {}, w1 {} pairs (+{} warm-up; stages 9 and 10: {} pairs, floors {}), w2 {} sections or {} s, w3 {} pairs, long w1 {} pairs{}",
                s.ping,
                s.w1,
                s.warmup,
                s.consensus_w1,
                s.floor,
                s.w2_sections,
                s.w2_limit_s,
                s.w3,
                s.long_w1,
                if s.quick { " (quick mode)" } else { "" }
            ),
            Lang::Zh => format!(
                "ping {} 次；w1 {} 对（另有 {} 对预热不计；阶段 9 和 10 各 {} 对，地板各测 {} 次）；w2 {} 个临界区，或跑满 {} s 为止；w3 {} 对；长 w1 {} 对{}",
                s.ping,
                s.w1,
                s.warmup,
                s.consensus_w1,
                s.floor,
                s.w2_sections,
                s.w2_limit_s,
                s.w3,
                s.long_w1,
                if s.quick { "（quick 模式）" } else { "" }
            ),
        }
    }
}

fn placement(placement: Placement, lang: Lang) -> String {
    match lang {
        Lang::En => placement.to_string(),
        Lang::Zh => match placement.cpus() {
            None => "none（不绑核）".to_owned(),
            Some((servers, clients)) if servers == clients => {
                format!("shared（服务器和客户端挤在同一个 CPU {servers} 上）")
            }
            Some((servers, clients)) => {
                format!("split（服务器在 CPU {servers}，客户端在 CPU {clients}）")
            }
        },
    }
}

/// The harness's label of the Redis backend, in `lang`.
fn backend(label: &str, lang: Lang) -> String {
    match lang {
        Lang::En => label.to_owned(),
        Lang::Zh => match label {
            "process" => "本机的 redis-server 进程".to_owned(),
            _ => match label.strip_prefix("docker ") {
                Some(image) => format!("docker 容器（镜像 {image}）"),
                None => format!("外部服务器（{label}）"),
            },
        },
    }
}

/// `disk (ext4) at /tmp/x` as `在磁盘（ext4）上：/tmp/x`.
fn storage_zh(storage: &str) -> String {
    let (kind, path) = storage.split_once(" at ").unwrap_or((storage, ""));
    let kind = match kind
        .strip_prefix("disk (")
        .and_then(|k| k.strip_suffix(')'))
    {
        Some(fs) => format!("在磁盘（{fs}）上"),
        None if kind == "unknown filesystem" => "所在的文件系统不明".to_owned(),
        None => format!("在 {kind} 上"),
    };
    if path.is_empty() {
        kind
    } else {
        format!("{kind}：{path}")
    }
}
