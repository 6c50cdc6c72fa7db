//! The matrix as the Chinese edition shows it: the same table (scenario
//! names and verdict labels are the CLI's, in English, explained in the
//! glossary), with its legend and its "why n/a" list in Chinese. Written
//! from the English file that `matrix --out` writes, so the two never
//! disagree; a label or a reason without its Chinese here is an error that
//! names it.

use std::fmt::Write as _;

/// The Chinese of every legend label.
const LEGEND: [(&str, &str); 11] = [
    ("ok", "没有任何观察器触发"),
    ("OVERSOLD", "订单数多于离开库存的商品数：锁没能保护住数据"),
    ("OVERLAP", "两个客户端同时在临界区里"),
    ("FOREIGN-DELETE", "某个客户端解锁时删掉了别的客户端持有的锁"),
    ("DEADLOCK", "在整个等待窗口内谁也拿不到锁，也没有别人持有它"),
    (
        "SELF-BLOCKED",
        "持锁者再次申请自己的锁，要等这把锁过期后才拿到",
    ),
    ("REFUSED", "锁选择拒绝，而不是发出一把不安全的锁"),
    (
        "DUPLICATE",
        "同一个请求被扣了两次款：锁能让重试排队，却认不出它是同一个请求",
    ),
    (
        "OUT-OF-ORDER",
        "有等待者被插了队：锁给了一个比它后来的客户端",
    ),
    ("n/a", "这个场景不适用于这个阶段（原因见下）"),
    ("ERROR", "场景没能运行（见 matrix.json）"),
];

/// The Chinese of every reason a scenario gives for not applying.
const REASONS: [(&str, &str); 45] = [
    (
        "no lock command to crash after",
        "没有加锁命令，也就谈不上在它之后崩溃",
    ),
    (
        "no lock, so no release to race",
        "没有锁，也就没有会被抢先的解锁",
    ),
    ("no lock to lose", "没有锁可丢"),
    ("no lock for a node to forget", "没有锁可让节点忘掉"),
    (
        "no lock key for a clock to expire",
        "没有锁 key 可让时钟提前过期",
    ),
    ("no lock", "没有锁"),
    (
        "no lock command whose reply could be late",
        "没有加锁命令，也就没有会迟到的回复",
    ),
    ("no lock to leave behind", "没有锁会被留下"),
    ("no lock to release early", "没有锁，也就谈不上提前解锁"),
    ("no lock key to evict", "没有锁 key 可被淘汰"),
    (
        "ZooKeeper: a lock that is not reentrant waits behind its own node, and no observer of the ensemble's nodes tells that wait from a deadlock yet",
        "ZooKeeper：不可重入的锁会排在自己的节点后面等，而目前还没有观察 ensemble 节点的观察者，分不清这种等待和死锁",
    ),
    (
        "etcd: a lock that is not reentrant waits behind its own key, and no observer of the cluster's keys tells that wait from a deadlock yet",
        "etcd：不可重入的锁会排在自己的 key 后面等，而目前还没有观察集群 key 的观察者，分不清这种等待和死锁",
    ),
    (
        "ZooKeeper: it evicts nothing; a lock node lives until its session ends",
        "ZooKeeper：它不淘汰任何东西，锁节点一直活到会话结束",
    ),
    (
        "etcd: it evicts nothing; a lock key lives until its lease ends",
        "etcd：它不淘汰任何东西，锁 key 一直活到租约结束",
    ),
    (
        "Redlock uses independent masters, no replicas",
        "Redlock 用的是互相独立的 master，没有 replica",
    ),
    ("no lock to wait for", "没有锁可等"),
    (
        "Redlock needs independent masters: five lock keys on one cluster's masters share its failure detection and its failovers, so they are one system, not five",
        "Redlock 需要互相独立的 master：五个锁 key 放在同一个集群的几个 master 上，共用这个集群的故障检测和故障转移，是一个系统，而不是五个",
    ),
    (
        "ZooKeeper: no Redis Cluster; the ensemble elects its own leader",
        "ZooKeeper：没有 Redis 集群；ZooKeeper 集群自己选出 leader",
    ),
    (
        "ZooKeeper: no Redis Cluster; a member cut off from the majority serves no writes",
        "ZooKeeper：没有 Redis 集群；与多数派断开的成员不再接受写入",
    ),
    (
        "etcd: no Redis Cluster; the cluster elects its own leader (Raft)",
        "etcd：没有 Redis 集群；etcd 集群靠 Raft 自己选出 leader",
    ),
    (
        "etcd: no Redis Cluster; a member cut off from the majority serves no writes",
        "etcd：没有 Redis 集群；与多数派断开的成员不再接受写入",
    ),
    (
        "ZooKeeper: a dead waiter's node leaves the line with its session; not yet a story here",
        "ZooKeeper：死去的等待者的节点随会话一起离开队列；这里还没有这个场景",
    ),
    (
        "ZooKeeper: its queue is ordered by sequence number, but no record of the order its requests arrived in is kept here yet",
        "ZooKeeper：它的队列按顺序号排好了，但请求到达服务器的先后，这里还没有记录下来",
    ),
    (
        "etcd: its queue is ordered by create revision, but no record of the order its requests arrived in is kept here yet",
        "etcd：它的队列按创建 revision 排好了，但请求到达服务器的先后，这里还没有记录下来",
    ),
    (
        "ZooKeeper: a write is in a majority's fsynced log before it is acknowledged; no member restarts empty",
        "ZooKeeper：一次写入在确认之前已经落进多数成员刷过盘的日志；没有成员会空着重启",
    ),
    (
        "ZooKeeper: no Sentinels; a member cut off from the majority serves no writes",
        "ZooKeeper：没有哨兵；与多数派断开的成员不再接受写入",
    ),
    (
        "ZooKeeper: no Sentinels; the ensemble elects its own leader",
        "ZooKeeper：没有哨兵；集群自己选出 leader",
    ),
    (
        "ZooKeeper: no key TTL to cut; sessions are timed on the servers' monotonic clocks",
        "ZooKeeper：没有 key 的 TTL 可砍；会话由服务器的单调时钟计时",
    ),
    (
        "ZooKeeper: no master and replica; the leader killed is stage 9's own test (tests/ensemble.rs)",
        "ZooKeeper：没有 master 和 replica；杀掉 leader 的场景在阶段 9 自己的测试里（tests/ensemble.rs）",
    ),
    (
        "ZooKeeper: no observer of the ensemble's nodes yet, so the deadlock of a skipped release (the node lives with the session) cannot be judged",
        "ZooKeeper：还没有观察集群节点的观察器，所以跳过解锁造成的死锁（节点随会话存活）无从判定",
    ),
    (
        "ZooKeeper: the delaying proxy stands in front of Redis nodes; none is built for the ensemble yet",
        "ZooKeeper：制造延迟的代理挡在 Redis 节点前面；还没有为集群做一个",
    ),
    (
        "ZooKeeper: the release deletes our own node by its path; no GET to race, no expiry while the session lives",
        "ZooKeeper：解锁按路径删除自己的节点；没有可被抢先的 GET，会话存活期间也不会过期",
    ),
    (
        "etcd: a dead waiter's key leaves the line with its lease; not yet a story here",
        "etcd：死去的等待者的 key 随租约一起离开队列；这里还没有这个场景",
    ),
    (
        "etcd: a write is in a majority's fsynced Raft log before it is acknowledged; no member restarts empty",
        "etcd：一次写入在确认之前已经落进多数成员刷过盘的 Raft 日志；没有成员会空着重启",
    ),
    (
        "etcd: no Sentinels; a member cut off from the majority serves no writes",
        "etcd：没有哨兵；与多数派断开的成员不再接受写入",
    ),
    (
        "etcd: no Sentinels; the cluster elects its own leader (Raft)",
        "etcd：没有哨兵；集群自己（用 Raft）选出 leader",
    ),
    (
        "etcd: no key TTL to cut; leases are timed on the leader's monotonic clock",
        "etcd：没有 key 的 TTL 可砍；租约由 leader 的单调时钟计时",
    ),
    (
        "etcd: no master and replica; its leader killed is the leader-killed column",
        "etcd：没有 master 和 replica；杀掉它的 leader 是 leader-killed 这一列",
    ),
    (
        "ZooKeeper: no master and replica; its leader killed is the leader-killed column",
        "ZooKeeper：没有 master 和 replica；杀掉它的 leader 是 leader-killed 这一列",
    ),
    (
        "Redis: a master cut off with its client is the split-brain columns' story",
        "Redis：master 和它的客户端一起被隔开，是 split-brain 那几列的场景",
    ),
    (
        "Redis elects no leader: a master's death is the failover columns' story",
        "Redis 不选举 leader：master 死掉是 failover 那几列的场景",
    ),
    (
        "etcd: no observer of the cluster's keys yet, so the deadlock of a skipped release (the key lives with the lease) cannot be judged",
        "etcd：还没有观察集群 key 的观察器，所以跳过解锁造成的死锁（key 随租约存活）无从判定",
    ),
    (
        "etcd: the delaying proxy stands in front of Redis nodes; none is built for the cluster yet",
        "etcd：制造延迟的代理挡在 Redis 节点前面；还没有为集群做一个",
    ),
    (
        "etcd: the release deletes our own key if its create revision is ours, in one transaction; no GET to race, no expiry while the lease is kept alive",
        "etcd：解锁在一个事务里删除自己的 key，前提是它的创建版本号仍是自己的；没有可被抢先的 GET，租约续着就不会过期",
    ),
    (
        "etcd: the story needs a Redis topology",
        "etcd：这个场景需要 Redis 的拓扑",
    ),
];

/// The Chinese of a reason a scenario gives for not applying.
pub fn reason_zh(reason: &str) -> Option<&'static str> {
    REASONS
        .iter()
        .find(|(r, _)| *r == reason.trim())
        .map(|(_, zh)| *zh)
}

/// The Chinese page's matrix from the English `generated/matrix.md`, or
/// what has no Chinese yet.
pub fn render(english: &str) -> Result<String, Vec<String>> {
    let mut missing = Vec::new();
    let mut out = String::from(
        "<!-- Generated by `cargo run --release -- book-assets` from matrix.md; do not edit. -->\n",
    );
    let table: Vec<&str> = english
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .collect();
    for line in &table {
        let _ = writeln!(out, "{line}");
    }
    out.push_str("\n图例：\n\n");
    let legend = english.split_once("\nLegend:\n").map_or("", |(_, rest)| {
        rest.split("\nWhy n/a:").next().unwrap_or("")
    });
    for label in legend
        .lines()
        .filter_map(|l| l.strip_prefix("- "))
        .filter_map(|l| l.split_whitespace().next())
    {
        match LEGEND.iter().find(|(l, _)| *l == label) {
            Some((_, zh)) => {
                let _ = writeln!(out, "- `{label}`：{zh}");
            }
            None => missing.push(format!("the legend label `{label}` has no Chinese")),
        }
    }
    let reasons = english.split_once("\nWhy n/a:\n").map_or("", |(_, r)| r);
    let lines: Vec<&str> = reasons
        .lines()
        .filter_map(|l| l.strip_prefix("- "))
        .collect();
    if !lines.is_empty() {
        out.push_str("\n为什么是 n/a：\n\n");
    }
    for line in lines {
        let Some((cell, reason)) = line.split_once(": ") else {
            missing.push(format!("`{line}` is not `cell: reason`"));
            continue;
        };
        match REASONS.iter().find(|(r, _)| *r == reason.trim()) {
            Some((_, zh)) => {
                let _ = writeln!(out, "- {cell}：{zh}");
            }
            None => missing.push(format!("the reason `{reason}` has no Chinese")),
        }
    }
    if missing.is_empty() {
        Ok(out)
    } else {
        Err(missing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_books_matrix_has_chinese_for_every_label_and_reason() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/book/src/generated/matrix.md");
        let english = std::fs::read_to_string(path).expect("the book's matrix");
        let zh = render(&english).unwrap_or_else(|missing| panic!("{missing:?}"));
        assert!(zh.contains("图例") && zh.contains("为什么是 n/a"), "{zh}");
        assert!(!zh.contains("Legend") && !zh.contains("no lock"), "{zh}");
        assert_eq!(
            zh.lines().filter(|l| l.starts_with('|')).count(),
            english.lines().filter(|l| l.starts_with('|')).count()
        );
    }

    #[test]
    fn every_etcd_reason_has_chinese() {
        let etcd = harness::scenario::ensemble::ETCD_REASONS
            .iter()
            .map(|(_, etcd)| *etcd)
            .chain([harness::scenario::ensemble::ETCD_NEEDS_REDIS]);
        for reason in etcd {
            assert!(
                REASONS.iter().any(|(r, _)| *r == reason),
                "no Chinese for `{reason}`"
            );
        }
    }

    #[test]
    fn a_reason_without_chinese_is_named() {
        let english =
            "| a |\n|---|\n\nLegend:\n\n- ok  fine\n\nWhy n/a:\n\n- stage0 × x: a new reason\n";
        let missing = render(english).expect_err("no Chinese for it");
        assert!(missing[0].contains("a new reason"), "{missing:?}");
    }
}
