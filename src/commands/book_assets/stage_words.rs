//! The one hand-written sentence (or few) per stage that the generated
//! lists put beside what the matrix says: how the stage takes and gives
//! back its lock, what it was built to fix, and what a recommendation of
//! it rests on. Every column of `matrix.json` must have an entry here (a new
//! stage fails `book-assets` until it has one), and the words here name no
//! scenario and no verdict: what a stage fixes or breaks is written from
//! the matrix, never by hand (a test below holds that).

/// The words of one edition for one stage.
#[derive(Debug, Clone, Copy)]
pub struct Words {
    /// How prose names it: `stage 6`, `阶段 6`.
    pub name: &'static str,
    /// What it is, in a few words: `Redisson-style watchdog lock`.
    pub what: &'static str,
    /// How it takes the lock.
    pub takes: &'static str,
    /// How it gives the lock back.
    pub gives: &'static str,
    /// What it was built to fix, as a goal (the matrix says whether it does).
    pub built_for: &'static str,
    /// Said when no row of the matrix turns ok on it: what shows its goal
    /// instead (empty: nothing to add).
    pub shown_elsewhere: &'static str,
    /// The recommendation, and what it rests on.
    pub choose: &'static str,
    /// Why it reenters, for a stage on which `reentrant` is ok.
    pub reenters: &'static str,
}

/// One column of the matrix.
#[derive(Debug, Clone, Copy)]
pub struct StageWords {
    /// `stage6-fair`: the column's name in `matrix.json`.
    pub stage: &'static str,
    /// `6-fair`: how the introduction's table names it.
    pub short: &'static str,
    /// The column it is read against: the stage it builds on (`None` for
    /// the control).
    pub baseline: Option<&'static str>,
    /// Whether its lock lives in a consensus store (ZooKeeper, etcd).
    pub consensus: bool,
    /// English.
    pub en: Words,
    /// Chinese.
    pub zh: Words,
}

const NONE: &str = "";

/// Every column, in the matrix's order.
pub const STAGE_WORDS: &[StageWords] = &[
    StageWords {
        stage: "stage0",
        short: "0",
        baseline: None,
        consensus: false,
        en: Words {
            name: "stage 0",
            what: "no lock",
            takes: "nothing",
            gives: "nothing",
            built_for: "nothing: the control, what each story does with no lock",
            shown_elsewhere: NONE,
            choose: "The control: what every story does with no lock at all.",
            reenters: NONE,
        },
        zh: Words {
            name: "阶段 0",
            what: "不加锁",
            takes: "不加锁",
            gives: "无",
            built_for: "无：对照组，看每个场景在没有锁时是什么样",
            shown_elsewhere: NONE,
            choose: "对照组：完全不加锁时，每个场景是什么样。",
            reenters: NONE,
        },
    },
    StageWords {
        stage: "stage1",
        short: "1",
        baseline: Some("stage0"),
        consensus: false,
        en: Words {
            name: "stage 1",
            what: "`SETNX` and `DEL`",
            takes: "`SETNX key 1`",
            gives: "`DEL key`",
            built_for: "two buyers inside at once",
            shown_elsewhere: NONE,
            choose: "Never ship it: what breaks it below takes no worse luck than a crash or a slow request.",
            reenters: NONE,
        },
        zh: Words {
            name: "阶段 1",
            what: "`SETNX` 加 `DEL`",
            takes: "`SETNX key 1`",
            gives: "`DEL key`",
            built_for: "两个买家同时进了临界区",
            shown_elsewhere: NONE,
            choose: "不要上线：下面这些故障，一次崩溃或一次慢请求就足以触发，用不着更坏的运气。",
            reenters: NONE,
        },
    },
    StageWords {
        stage: "stage2",
        short: "2",
        baseline: Some("stage1"),
        consensus: false,
        en: Words {
            name: "stage 2",
            what: "`SETNX`, then `EXPIRE`",
            takes: "`SETNX`, then `EXPIRE`",
            gives: "`DEL key`",
            built_for: "a dead holder's lock living for ever",
            shown_elsewhere: NONE,
            choose: "Never ship it, for the same reason: no worse luck than a crash or a slow request.",
            reenters: NONE,
        },
        zh: Words {
            name: "阶段 2",
            what: "先 `SETNX` 再 `EXPIRE`",
            takes: "`SETNX`，再 `EXPIRE`",
            gives: "`DEL key`",
            built_for: "持锁者挂掉后锁永远不释放",
            shown_elsewhere: NONE,
            choose: "同样不要上线，理由一样：一次崩溃或一次慢请求就够了。",
            reenters: NONE,
        },
    },
    StageWords {
        stage: "stage3",
        short: "3",
        baseline: Some("stage2"),
        consensus: false,
        en: Words {
            name: "stage 3",
            what: "`SET NX PX`",
            takes: "`SET key 1 NX PX ttl`",
            gives: "`DEL key`",
            built_for: "a crash between stage 2's two commands",
            shown_elsewhere: NONE,
            choose: "Never ship it: its release deletes whatever key is there, its own or not.",
            reenters: NONE,
        },
        zh: Words {
            name: "阶段 3",
            what: "`SET NX PX`",
            takes: "`SET key 1 NX PX ttl`",
            gives: "`DEL key`",
            built_for: "在阶段 2 的两条命令之间崩溃",
            shown_elsewhere: NONE,
            choose: "不要上线：它解锁时不管 key 是不是自己的，一律删掉。",
            reenters: NONE,
        },
    },
    StageWords {
        stage: "stage4",
        short: "4",
        baseline: Some("stage3"),
        consensus: false,
        en: Words {
            name: "stage 4",
            what: "a unique value, `GET` then `DEL`",
            takes: "`SET key <uuid> NX PX ttl`",
            gives: "`GET`, compare, `DEL`",
            built_for: "releasing a lock that expired and was taken by someone else",
            shown_elsewhere: NONE,
            choose: "Never ship it: between its `GET` and its `DEL` the key can change hands.",
            reenters: NONE,
        },
        zh: Words {
            name: "阶段 4",
            what: "唯一值，先 `GET` 再 `DEL`",
            takes: "`SET key <uuid> NX PX ttl`",
            gives: "`GET`、比较、`DEL`",
            built_for: "锁过期后被别人拿到，自己却把它删了（误删）",
            shown_elsewhere: NONE,
            choose: "不要上线：在它的 `GET` 和 `DEL` 之间，key 可能已经换了主人。",
            reenters: NONE,
        },
    },
    StageWords {
        stage: "stage5",
        short: "5",
        baseline: Some("stage4"),
        consensus: false,
        en: Words {
            name: "stage 5",
            what: "`SET NX PX` and a Lua release",
            takes: "`SET key <uuid> NX PX ttl`",
            gives: "compare-and-delete in one Lua script",
            built_for: "the race between `GET` and `DEL`",
            shown_elsewhere: NONE,
            choose: "The right lock when the lock is an *efficiency* measure: two workers doing the same job now and then costs a little time, not money. Every failure listed below is one you accept with it.",
            reenters: NONE,
        },
        zh: Words {
            name: "阶段 5",
            what: "`SET NX PX` 加 Lua 解锁",
            takes: "`SET key <uuid> NX PX ttl`",
            gives: "在一段 Lua 脚本里比较并删除",
            built_for: "`GET` 和 `DEL` 之间的竞态",
            shown_elsewhere: NONE,
            choose: "锁只是一种*效率*手段时，它就是合适的选择：两个 worker 偶尔重复干同一件活，浪费的是一点时间，不是钱。下面列出的每一种故障，选它就等于接受了它。",
            reenters: NONE,
        },
    },
    StageWords {
        stage: "stage6",
        short: "6",
        baseline: Some("stage5"),
        consensus: false,
        en: Words {
            name: "stage 6",
            what: "a Redisson-style watchdog lock",
            takes: "a Redisson-style hash, with a watchdog",
            gives: "a Lua script, then `PUBLISH`",
            built_for: "a lock that expires under a holder still at work; taking it again while holding it; waiting without polling",
            shown_elsewhere: NONE,
            choose: "The watchdog removes the TTL guess. The first article recommends this lock (Redisson's, with Sentinel) for most business; that is an article's advice, not a run, and the list below is what the choice accepts: it is still an efficiency lock.",
            reenters: "its hash counts the holds",
        },
        zh: Words {
            name: "阶段 6",
            what: "Redisson 风格的看门狗锁",
            takes: "Redisson 风格的 hash 加看门狗",
            gives: "Lua 脚本，然后 `PUBLISH`",
            built_for: "持锁者还在干活，锁却先过期了；持锁时再次加锁；不用轮询的等待",
            shown_elsewhere: NONE,
            choose: "看门狗让人不用再去猜 TTL。第一篇来源文章向大多数业务推荐的正是这把锁（Redisson 的锁加哨兵）；这是文章的建议，不是运行结果，下面列出的就是选它要接受的东西：它仍然是一把效率锁。",
            reenters: "它的 hash 记录重入次数",
        },
    },
    StageWords {
        stage: "stage6-fair",
        short: "6-fair",
        baseline: Some("stage6"),
        consensus: false,
        en: Words {
            name: "stage6-fair",
            what: "Redisson's fair lock, stage 6 with a queue",
            takes: "stage 6's hash, plus Redisson's queue of waiters",
            gives: "hands the lock to the queue's head",
            built_for: "waiters served in the order they asked",
            shown_elsewhere: "no row of the matrix shows the order yet; the bench's `w2` (every release hands the lock to another client) and `cargo test -p stage6 fair::` do",
            choose: "Choose it for order, not for safety: the bench's `w2` and `cargo test -p stage6 fair::` show waiters served in the order they asked. A waiter that dies at the head of the line costs the others one waiter timeout.",
            reenters: "it keeps stage 6's hash",
        },
        zh: Words {
            name: "公平锁 stage6-fair",
            what: "Redisson 的公平锁：阶段 6 加一个队列",
            takes: "阶段 6 的 hash，再加 Redisson 的等待队列",
            gives: "把锁交给队首",
            built_for: "等待者按申请的先后拿到锁",
            shown_elsewhere: "矩阵里还没有哪一行能体现这个顺序；体现它的是基准测试的 `w2`（每次解锁都把锁交给另一个客户端）和 `cargo test -p stage6 fair::`",
            choose: "为了顺序选它，而不是为了安全：基准测试的 `w2` 和 `cargo test -p stage6 fair::` 表明，等待者是按申请的先后拿到锁的。排到队首时死掉的等待者，会让后面的人多等一个等待超时。",
            reenters: "它沿用阶段 6 的 hash",
        },
    },
    StageWords {
        stage: "stage7",
        short: "7",
        baseline: Some("stage5"),
        consensus: false,
        en: Words {
            name: "stage 7",
            what: "Redlock",
            takes: "Redlock over five independent masters",
            gives: "Lua on every master",
            built_for: "losing the lock with the one master that holds it",
            shown_elsewhere: "its own test shows it keeping the lock with a minority of its masters killed (`cargo test -p stage7 node_loss::`); no row of the matrix runs that",
            choose: "It costs five masters. Its own test, not a matrix row, shows it keeping the lock with a minority of them killed (`cargo test -p stage7 node_loss::`); a master that fails over to a replica has no run here, since its masters have none. Redisson deprecated its `RedissonRedLock` in 3.12.5 and points to `RLock` and `RFencedLock`; the first article's advice to use it is older than that.",
            reenters: NONE,
        },
        zh: Words {
            name: "阶段 7",
            what: "Redlock（红锁）",
            takes: "在五个独立 master 上做 Redlock",
            gives: "在每个 master 上执行 Lua",
            built_for: "持锁的那一台 master 挂了，锁也跟着丢",
            shown_elsewhere: "它自己的测试表明，少数 master 被杀时锁还在（`cargo test -p stage7 node_loss::`）；矩阵里没有哪一行跑这个",
            choose: "它要五台 master。少数几台被杀时锁还在，这是它自己的测试（`cargo test -p stage7 node_loss::`）表明的，不是矩阵里的哪一格；master 切到 replica 的情况这里没有运行，因为它的 master 没有 replica。Redisson 在 3.12.5 废弃了 `RedissonRedLock`，改为推荐 `RLock` 和 `RFencedLock`；第一篇来源文章建议用它，那是更早的事。",
            reenters: NONE,
        },
    },
    StageWords {
        stage: "stage8",
        short: "8",
        baseline: Some("stage5"),
        consensus: false,
        en: Words {
            name: "stage 8",
            what: "fencing tokens",
            takes: "`SET NX PX` plus a fencing token",
            gives: "Lua",
            built_for: "a stale holder writing after its lock is gone",
            shown_elsewhere: NONE,
            choose: "Each grant carries a token that the resource checks: the damage is stopped *because the resource checks*, not because the lock holds, and only on the accesses it checks (`cargo test -p stage8 stale_writer::` shows a resource that checks writes alone). When the lock protects *correctness*, use tokens, and keep the counter where it cannot be lost: stage 8's lives on its Redis master.",
            reenters: NONE,
        },
        zh: Words {
            name: "阶段 8",
            what: "栅栏令牌",
            takes: "`SET NX PX` 加栅栏令牌",
            gives: "Lua",
            built_for: "锁已经没了，旧持锁者还在写数据",
            shown_elsewhere: NONE,
            choose: "每次授予锁都附带一个由资源检查的令牌：损害被挡住，*是因为资源做了检查*，而不是因为锁守住了，而且只挡得住资源检查了的那些访问（`cargo test -p stage8 stale_writer::` 演示了只在写入时检查的资源）。锁保护的是*正确性*时，就用令牌，并把计数器放在丢不了的地方：阶段 8 的计数器放在它的 Redis master 上。",
            reenters: NONE,
        },
    },
    StageWords {
        stage: "stage9",
        short: "9",
        baseline: Some("stage8"),
        consensus: true,
        en: Words {
            name: "stage 9",
            what: "ZooKeeper, Curator's recipe",
            takes: "an ephemeral sequential node in a ZooKeeper ensemble (Curator's recipe)",
            gives: "`delete` the node",
            built_for: "a store that forgets the lock when one of its servers fails; its token, the node's `czxid`, never goes back",
            shown_elsewhere: NONE,
            choose: "The lock and its token (the node's `czxid`) live in an ensemble that agrees by majority. Each acquire is a quorum write: milliseconds where Redis takes microseconds ([Beyond Redis](beyond-redis.md) measures it). Its many n/a cells are the scenarios' reasons, not runs. Choose it, with its token checked at the resource, where the team already runs ZooKeeper.",
            reenters: "it counts holds in the client, per task, as Curator does per thread",
        },
        zh: Words {
            name: "阶段 9",
            what: "ZooKeeper，Curator 的做法",
            takes: "ZooKeeper 集群上的临时顺序节点（Curator 的做法）",
            gives: "`delete` 这个节点",
            built_for: "某台服务器出故障，存储就把锁忘了；它的令牌（节点的 `czxid`）永远不会倒退",
            shown_elsewhere: NONE,
            choose: "锁和令牌（节点的 `czxid`）都放在一个按多数派达成一致的集群里。每次加锁都是一次要多数派确认的写入：Redis 几微秒的事，它要几毫秒（[Redis 之外](beyond-redis.md)一章有实测）。它的许多 n/a 格子写的是场景给出的理由，不是运行结果。团队本来就在运维 ZooKeeper 时选它，并在资源端检查它的令牌。",
            reenters: "像 Curator 按线程计数那样，在客户端里按任务记录重入次数",
        },
    },
    StageWords {
        stage: "stage10",
        short: "10",
        baseline: Some("stage9"),
        consensus: true,
        en: Words {
            name: "stage 10",
            what: "etcd, the `concurrency.Mutex` recipe",
            takes: "a key on a lease kept alive, in an etcd cluster (Go's `concurrency.Mutex`)",
            gives: "delete the key if its create revision is ours",
            built_for: "the same as stage 9, on etcd; its token, the key's create revision, never goes back",
            shown_elsewhere: NONE,
            choose: "Stage 9's design on etcd: the lease kept alive is the session, the key's create revision the token. It costs what stage 9 costs ([Beyond Redis](beyond-redis.md)). Choose it, with its token checked at the resource, where the team already runs etcd (Kubernetes does).",
            reenters: "it counts holds in the client, per task, as stage 9 does",
        },
        zh: Words {
            name: "阶段 10",
            what: "etcd，`concurrency.Mutex` 的做法",
            takes: "etcd 集群里挂在一个持续续约的租约上的 key（Go 的 `concurrency.Mutex`）",
            gives: "若 key 的创建版本号仍是自己的，就删掉它",
            built_for: "和阶段 9 一样，换成 etcd；它的令牌（key 的创建版本号）永远不会倒退",
            shown_elsewhere: NONE,
            choose: "阶段 9 的设计搬到 etcd 上：持续续约的租约就是会话，key 的创建版本号就是令牌。代价和阶段 9 相当（[Redis 之外](beyond-redis.md)）。团队本来就在运维 etcd 时选它（Kubernetes 就带着一个），并在资源端检查它的令牌。",
            reenters: "和阶段 9 一样，在客户端里按任务计数",
        },
    },
];

/// The words for `stage`, or what is missing.
pub fn words_for(stage: &str) -> Result<&'static StageWords, String> {
    STAGE_WORDS.iter().find(|w| w.stage == stage).ok_or_else(|| {
        format!(
            "the matrix has a column `{stage}` with no words in src/commands/book_assets/stage_words.rs: \
             add its entry"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::book_assets::matrix_json::Matrix;

    #[test]
    fn every_column_has_words_and_every_entry_is_a_column() {
        let matrix = Matrix::of_the_book();
        for stage in &matrix.stages {
            assert!(words_for(stage).is_ok(), "{stage}");
        }
        let order: Vec<&str> = STAGE_WORDS.iter().map(|w| w.stage).collect();
        assert_eq!(
            order, matrix.stages,
            "one entry per column, in the matrix's order"
        );
    }

    /// What a stage fixes or breaks comes from the matrix: the words name
    /// no scenario and no verdict label.
    #[test]
    fn the_hand_written_words_name_no_story_and_no_verdict() {
        let matrix = Matrix::of_the_book();
        let labels = harness::check::Finding::ALL.map(|f| f.label());
        for entry in STAGE_WORDS {
            for words in [entry.en, entry.zh] {
                for text in [
                    words.what,
                    words.takes,
                    words.gives,
                    words.built_for,
                    words.shown_elsewhere,
                    words.choose,
                    words.reenters,
                ] {
                    for scenario in &matrix.scenarios {
                        assert!(
                            !text.contains(&format!("`{scenario}`"))
                                && !text.contains(&format!(" {scenario} ")),
                            "{}: `{text}` names {scenario}",
                            entry.stage
                        );
                    }
                    for label in labels {
                        assert!(
                            !text.contains(label),
                            "{}: `{text}` says {label}",
                            entry.stage
                        );
                    }
                }
            }
        }
    }
}
