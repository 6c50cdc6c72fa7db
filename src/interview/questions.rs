//! The questions, in the order the chapter asks them: the twelve the course
//! started with, then what the source articles and interviewers add. Each answer is
//! short; the runs and the chapter it points to say the rest.

use harness::check::Finding::{
    Deadlock, Duplicate, ForeignDelete, OutOfOrder, Overlap, Oversold, Refused,
};
use harness::workload::{Fencing, ReleaseOrder, RequestIds};

use super::Watch::{Clean, Fires};
use super::{Probe, Question, TestTarget};

/// A run as the matrix runs it, with the verdict the answer says it shows.
pub(super) const fn on(stage: u8, scenario: &'static str, says: &'static str) -> Probe {
    Probe {
        stage,
        variant: None,
        library: None,
        scenario,
        fencing: Fencing::ReadsAndWrites,
        request_ids: RequestIds::Ignored,
        release_order: ReleaseOrder::BeforeCommit,
        says,
    }
}

/// A run of a lock library's row (`redis-py`), as `matrix --library` runs it.
const fn library(name: &'static str, scenario: &'static str, says: &'static str) -> Probe {
    Probe {
        library: Some(name),
        ..on(0, scenario, says)
    }
}

/// A run of stage 6's fair variant (`stage6-fair`), as the matrix runs it.
const fn fair(scenario: &'static str, says: &'static str) -> Probe {
    Probe {
        variant: Some("fair"),
        ..on(6, scenario, says)
    }
}

/// A run against a resource that charges each request id once.
const fn with_ids(stage: u8, scenario: &'static str, says: &'static str) -> Probe {
    Probe {
        request_ids: RequestIds::Checked,
        ..on(stage, scenario, says)
    }
}

/// A run against stage 8's write-only resource.
const fn write_only(stage: u8, scenario: &'static str, says: &'static str) -> Probe {
    Probe {
        fencing: Fencing::WriteOnly,
        ..on(stage, scenario, says)
    }
}

/// A run against a resource that checks no token (`--fencing none`).
const fn unchecked(stage: u8, scenario: &'static str, says: &'static str) -> Probe {
    Probe {
        fencing: Fencing::Unchecked,
        ..on(stage, scenario, says)
    }
}

/// A run whose transaction commits before the lock is released
/// (`--release-after-commit`).
const fn after_commit(stage: u8, scenario: &'static str, says: &'static str) -> Probe {
    Probe {
        release_order: ReleaseOrder::AfterCommit,
        ..on(stage, scenario, says)
    }
}

const fn test(package: &'static str, target: &'static str) -> TestTarget {
    TestTarget { package, target }
}

const DISTLOCK: (&str, &str) = (
    "Redis: Distributed Locks with Redis",
    "https://redis.io/docs/latest/develop/clients/patterns/distributed-locks/",
);
const KLEPPMANN: (&str, &str) = (
    "Martin Kleppmann: How to do distributed locking",
    "https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html",
);
const ANTIREZ: (&str, &str) = (
    "Salvatore Sanfilippo (antirez): Is Redlock safe?",
    "http://antirez.com/news/101",
);
const REDISSON_LOCKS: (&str, &str) = (
    "Redisson: Locks and synchronizers",
    "https://redisson.org/docs/data-and-services/locks-and-synchronizers/",
);

const STAGE1: (&str, &str) = ("Stage 1: SETNX and DEL", "stage1.md");
const STAGE2: (&str, &str) = ("Stage 2: SETNX, then EXPIRE", "stage2.md");
const STAGE3: (&str, &str) = ("Stage 3: SET NX PX", "stage3.md");
const STAGE4: (&str, &str) = ("Stage 4: a unique value, GET then DEL", "stage4.md");
const STAGE5: (&str, &str) = ("Stage 5: compare-and-delete in Lua", "stage5.md");
const STAGE6: (&str, &str) = ("Stage 6: a Redisson-style watchdog lock", "stage6.md");
const STAGE7: (&str, &str) = ("Stage 7: Redlock", "stage7.md");
const STAGE8: (&str, &str) = ("Stage 8: fencing tokens", "stage8.md");
const MATRIX: (&str, &str) = ("The matrix", "matrix.md");
const DEBATE: (&str, &str) = ("The Redlock debate", "redlock-debate.md");
const CHOOSING: (&str, &str) = ("Choosing a lock", "choosing.md");
const IDEMPOTENCY: (&str, &str) = ("Idempotency, the last defence", "idempotency.md");
const BEYOND: (&str, &str) = ("Beyond Redis: ZooKeeper and etcd", "beyond-redis.md");
const LIBRARIES: (&str, &str) = ("Your library, under the same faults", "libraries.md");
const REDIS_PY_LOCK: (&str, &str) = (
    "redis-py: the Lock class (redis/lock.py)",
    "https://github.com/redis/redis-py/blob/master/redis/lock.py",
);
const PYTHON_REDIS_LOCK: (&str, &str) = (
    "python-redis-lock (ionelmc/python-redis-lock)",
    "https://github.com/ionelmc/python-redis-lock",
);
const CURATOR: (&str, &str) = (
    "Apache Curator: Shared Reentrant Lock (InterProcessMutex)",
    "https://curator.apache.org/docs/recipes-shared-reentrant-lock/",
);
const ETCD_MUTEX: (&str, &str) = (
    "etcd: client/v3/concurrency, Mutex",
    "https://pkg.go.dev/go.etcd.io/etcd/client/v3/concurrency#Mutex",
);
const JEPSEN_ETCD: (&str, &str) = (
    "Jepsen: etcd 3.4.3",
    "https://jepsen.io/analyses/etcd-3.4.3",
);

/// Every question, numbered from 1 in this order.
pub const QUESTIONS: &[Question] = &[
    // 1
    Question {
        ask: "Why not just `SETNX` and `DEL`?",
        answer: "Because the key never expires. A holder that dies between the two commands (a crash, \
                 an OOM kill, `kill -9`, a machine that disappears) leaves the key behind for good, and \
                 every other client waits for ever: `PTTL` on the key answers `-1`, no expiry.\n\n\
                 From stage 2 on the key carries a TTL, so a dead holder costs the others one TTL and \
                 no more.",
        java: Some(
            "Spring's `opsForValue().setIfAbsent(\"lock\", \"1\")` then `delete(\"lock\")` is stage 1's \
             `SetnxLock::try_lock()` then `unlock()`.",
        ),
        predict: "The holder is killed with `kill -9` while it holds the lock. Which stages leave \
                  everyone else locked out for good?",
        watch: Fires(Deadlock),
        runs: &[
            on(1, "killed-holder", "DEADLOCK"),
            on(2, "killed-holder", "ok"),
        ],
        marks: &["KILLED", "PTTL of", "DEADLOCK", "expired"],
        tests: &[test("stage1", "killed_holder")],
        look_for: "In stage 1's timeline, the harness kills the holder, then the rival's `SETNX` \
                   answers 0 until the patience window ends and `PTTL` says -1. Stage 2's key expires \
                   and the rival sells.",
        sources: &[],
        read_next: STAGE1,
    },
    // 2
    Question {
        ask: "Then why not `SETNX` followed by `EXPIRE`? Why `SET NX PX`?",
        answer: "Two commands are two chances to die in between. A crash after `SETNX` and before \
                 `EXPIRE` is stage 1's everlasting key again. `SET key value NX PX ttl` writes the \
                 value and its expiry in one command, so there is no moment at which the key exists \
                 without a TTL.\n\n\
                 `SETNX` is also the older command: the Redis docs have listed it as deprecated since \
                 2.6.12, replaced by `SET` with `NX`.",
        java: Some(
            "`setIfAbsent(key, value)` followed by `expire(key, 30, TimeUnit.SECONDS)` is stage 2's \
             `ExpiringLock::try_lock()`; the one-command `setIfAbsent(key, value, 30, \
             TimeUnit.SECONDS)` (it sends `SET … NX EX`) is stage 3's `SetNxPxLock::try_lock()`.",
        ),
        predict: "The holder crashes right after its first lock command. Which stages deadlock?",
        watch: Fires(Deadlock),
        runs: &[
            on(2, "crash-before-expire", "DEADLOCK"),
            on(3, "crash-before-expire", "ok"),
        ],
        marks: &["CRASHES", "PTTL of", "DEADLOCK", "expired"],
        tests: &[
            test("stage2", "crash_before_expire"),
            test("stage3", "crash_before_expire"),
        ],
        look_for: "Stage 2's holder CRASHES after `SETNX` and sends no `EXPIRE`: `PTTL` is -1 and \
                   the rival's patience runs out. Stage 3's key has a `PTTL` from its one command, \
                   expires, and the rival sells.",
        sources: &[(
            "Redis: SET (the NX and PX options)",
            "https://redis.io/docs/latest/commands/set/",
        )],
        read_next: STAGE2,
    },
    // 3
    Question {
        ask: "Why must the value be unique, and checked on release?",
        answer: "Because a lock can expire while its holder is still working. The next client takes \
                 it; when the first one finishes, a plain `DEL` removes the *second* client's lock, and \
                 whoever asks next walks in beside the second.\n\n\
                 A value only its holder knows (a UUID per acquisition) lets the release check \
                 whose lock it is deleting. It does not stop the first overlap: the lock still \
                 expired under a working holder.",
        java: Some(
            "`String uuid = UUID.randomUUID().toString(); setIfAbsent(key, uuid, 30, SECONDS)` is \
             stage 4's `UuidLock::try_lock()`, which returns the token; `unlock(&token)` releases.",
        ),
        predict: "The holder works for longer than its TTL. Which stages delete the next holder's lock?",
        watch: Fires(ForeignDelete),
        runs: &[
            on(3, "slow-business", "OVERSOLD OVERLAP FOREIGN-DELETE"),
            on(4, "slow-business", "OVERSOLD OVERLAP"),
        ],
        marks: &["DEL lock", "key is gone", "FOREIGN-DELETE", "expired"],
        tests: &[
            test("stage2", "slow_business"),
            test("stage4", "slow_business"),
        ],
        look_for: "client-A's late `DEL` in stage 3 lands while client-B holds the lock: FOREIGN-DELETE. \
                   In stage 4 client-A's `GET` sees client-B's value and sends no `DEL`; the overlap \
                   remains.",
        sources: &[],
        read_next: STAGE4,
    },
    // 4
    Question {
        ask: "Why must the release be a Lua script?",
        answer: "`GET`, compare, `DEL` is three steps on the wire. If the key expires and someone else \
                 takes it after the `GET` matched and before the `DEL` arrives, the `DEL` removes the \
                 other client's lock. Redis runs a script with no other command in between, so the key \
                 the script compares is the key it deletes.\n\n\
                 The run stops each client at the last moment before its release's final command: \
                 between `GET` and `DEL` for stage 4, just before the script for stage 5. The pause is \
                 the same; only the stage with a gap loses.",
        java: Some(
            "`redisTemplate.execute(new DefaultRedisScript<>(UNLOCK, Long.class), List.of(key), \
             uuid)` is stage 5's `ScriptLock::unlock(&token)`, which sends `EVALSHA` and falls back \
             to `EVAL` when the server does not know the script yet.",
        ),
        predict: "The release stalls while the lock expires and someone else takes it. Which stages \
                  delete the other client's lock?",
        watch: Fires(ForeignDelete),
        runs: &[
            on(4, "get-del-race", "FOREIGN-DELETE"),
            on(5, "get-del-race", "ok"),
        ],
        marks: &["paused at", "expired", "DEL lock", "GONE", "FOREIGN-DELETE"],
        tests: &[
            test("stage4", "get_del_race"),
            test("stage5", "get_del_race"),
        ],
        look_for: "Stage 4: client-A is paused between `GET` and `DEL`, its key expires, client-B \
                   takes the lock, and client-A's `DEL` answers 1: client-B's lock is GONE. Stage 5: \
                   the script's `GET` sees client-B's value and the script returns 0.",
        sources: &[(
            "Redis: Scripting with Lua",
            "https://redis.io/docs/latest/develop/interact/programmability/eval-intro/",
        )],
        read_next: STAGE5,
    },
    // 5
    Question {
        ask: "The business sometimes takes longer than the TTL. What now?",
        answer: "Renew the lock while the holder works. Redisson's watchdog renews every third of the \
                 watchdog timeout (10 s of 30 s) as long as the lock is held, and stops when it is \
                 released or the holder dies, so a dead holder still frees the lock one timeout later.\n\n\
                 A lock taken with an explicit lease is *not* renewed: it expires when the lease \
                 does, finished or not.",
        java: Some(
            "`lock.lock()` (no lease: the watchdog renews) is stage 6's `RLock::lock()`; \
             `lock.tryLock(3, 30, TimeUnit.SECONDS)` (a 30 s lease, no watchdog) is \
             `RLock::try_lock(Duration::from_secs(3), Some(Duration::from_secs(30)))`.",
        ),
        predict: "The holder works for three TTLs while a rival waits. Which stages oversell?",
        watch: Fires(Oversold),
        runs: &[
            on(5, "slow-business", "OVERSOLD OVERLAP"),
            on(6, "slow-business", "ok"),
        ],
        marks: &[
            "pexpire",
            "acquired",
            "publish",
            "TWO HOLDERS",
            "OVERSOLD",
            "expired",
        ],
        tests: &[test("stage6", "slow_business"), test("stage6", "lease")],
        look_for: "Stage 6's holder sends the renewal script (`hexists`, `pexpire`) every third of the \
                   TTL, and client-B acquires only after client-A's release. Stage 5's key expires \
                   under client-A.",
        sources: &[REDISSON_LOCKS],
        read_next: STAGE6,
    },
    // 6
    Question {
        ask: "How does Redisson's lock let the same thread lock twice? Why a hash?",
        answer: "The lock is a hash: the field is the owner (`<client-uuid>:<thread>`, here \
                 `<client-uuid>:task-<id>`), the value counts the holds. Locking again increments it, \
                 unlocking decrements it, and the key is deleted at zero. A string holds an owner but \
                 no count; the hash holds both, and one script reads and updates them together.\n\n\
                 A lock that is not reentrant makes its holder wait for itself; with a TTL the wait \
                 ends only when its own first hold expires, and by then it no longer protects \
                 anything.",
        java: Some(
            "`lock.lock(); lock.lock(); … lock.unlock(); lock.unlock();` and \
             `lock.getHoldCount()` are stage 6's `RLock::lock()` twice, `unlock()` twice and \
             `hold_count()`.",
        ),
        predict: "The holder asks again for the lock it already holds. Which stages give it at once?",
        watch: Clean,
        runs: &[on(6, "reentrant", "ok"), on(5, "reentrant", "SELF-BLOCKED")],
        marks: &["hincrby", "reentered", "DEADLOCK", "SELF-BLOCKED"],
        tests: &[test("stage6", "reentrant")],
        look_for: "Stage 6's second acquire runs `hincrby … 1` on the holder's own field and returns \
                   nil at once. Stage 5's second `SET … NX` answers nil until its first hold expires.",
        sources: &[REDISSON_LOCKS],
        read_next: STAGE6,
    },
    // 7
    Question {
        ask: "Does the watchdog make the lock safe?",
        answer: "No. The watchdog runs inside the holder's process. A stop-the-world pause (a long \
                 GC, SIGSTOP, a VM migration) freezes it together with the business: the lock \
                 expires, someone else takes it, and the holder wakes up still believing it holds \
                 the lock, then writes.\n\n\
                 No lock that lives by time can stop a paused holder on its own. What stops it is \
                 the resource refusing its write: stage 8's fencing token.",
        java: None,
        predict: "The holder is frozen for longer than the TTL, then thawed. Which stages oversell?",
        watch: Fires(Oversold),
        runs: &[
            on(6, "gc-pause", "OVERSOLD OVERLAP"),
            on(3, "gc-pause", "OVERSOLD OVERLAP"),
            on(4, "gc-pause", "OVERSOLD OVERLAP"),
            on(5, "gc-pause", "OVERSOLD OVERLAP"),
            on(7, "gc-pause", "OVERSOLD OVERLAP"),
            on(8, "gc-pause", "OVERLAP"),
        ],
        marks: &[
            "FROZEN",
            "thawed",
            "TWO HOLDERS",
            "expired",
            "lost-lock",
            "OVERSOLD",
        ],
        tests: &[
            test("stage6", "gc_pause"),
            test("stage7", "gc_pause"),
            test("stage8", "stale_writer"),
        ],
        look_for: "FROZEN with SIGSTOP, then no renewal while client-B takes the lock, then thawed and \
                   client-A's `SET stock` anyway. Stage 8 overlaps too, but the resource refuses the \
                   stale write: OVERLAP without OVERSOLD.",
        sources: &[KLEPPMANN],
        read_next: STAGE6,
    },
    // 8
    Question {
        ask: "How do waiters know the lock is free without polling?",
        answer: "They subscribe to the lock's channel before trying again; the release script \
                 publishes on it. A waiter sleeps until the message, or until the holder's lock would \
                 have expired anyway (the acquire script returns the holder's `PTTL`), whichever \
                 comes first, then tries once more.\n\n\
                 Subscribing first matters: a release between a failed try and the `SUBSCRIBE` would \
                 publish to nobody.",
        java: Some(
            "Redisson's `lock.lock()` waits on `redisson_lock__channel:{name}`; stage 6's \
             `RLock::lock()` subscribes to the same channel name and waits for the same message, `0`.",
        ),
        predict: "client-A works for three TTLs while client-B waits. Which stages let client-B in \
                  before client-A is done?",
        watch: Fires(Overlap),
        runs: &[
            on(6, "slow-business", "ok"),
            on(5, "slow-business", "OVERSOLD OVERLAP"),
        ],
        marks: &["publish", "pttl", "-> nil", "acquired", "paused at"],
        tests: &[test("stage6", "pubsub_wait")],
        look_for: "client-B's acquire script answers a number (the holder's `PTTL`) and client-B \
                   sleeps; it tries again only when that time is up (the watchdog has renewed \
                   meanwhile) or when client-A's release runs `publish`, and then its try answers \
                   nil: it has the lock.",
        sources: &[REDISSON_LOCKS],
        read_next: STAGE6,
    },
    // 9
    Question {
        ask: "What happens to a lock on a failover?",
        answer: "Replication is asynchronous. If the master dies after granting the lock and before \
                 its replica has the write, the promoted replica has never heard of the lock and \
                 grants it again: two holders.\n\n\
                 Every stage built on one master shares this, the watchdog and fencing included: \
                 stage 8's token counter lived on the same master, so the new holder gets the same \
                 token and the resource cannot tell them apart.",
        java: None,
        predict: "The master dies before the lock reaches its replica, and the replica is promoted. \
                  Which stages oversell?",
        watch: Fires(Oversold),
        runs: &[
            on(5, "failover", "OVERSOLD OVERLAP"),
            on(6, "failover", "OVERSOLD OVERLAP"),
            on(8, "failover", "OVERSOLD OVERLAP"),
        ],
        marks: &[
            "KILLED",
            "REPLICAOF",
            "does NOT have",
            "TWO HOLDERS",
            "OVERSOLD",
        ],
        tests: &[
            test("stage5", "failover"),
            test("stage6", "failover"),
            test("stage8", "lost_counter"),
        ],
        look_for: "\"the new master does NOT have the lock key\", then client-B's `SET … NX` answers \
                   OK while client-A still believes it holds the lock.",
        sources: &[DISTLOCK],
        read_next: MATRIX,
    },
    // 10
    Question {
        ask: "What is Redlock, and does it fix that?",
        answer: "The same lock on N independent masters (usually five), taken when a majority said \
                 yes and enough of the TTL is left after the time the asking took. Masters that are \
                 simply gone (dead, cut off) are survived while a majority answers: stage 7's \
                 `node_loss` test kills two of five and the lock still holds.\n\n\
                 A failover is not that. A master whose replica is promoted comes back at the same \
                 address without the keys replication had not carried yet: to Redlock it is a \
                 master that *forgot* a lock it granted, the restart-without-persistence run below \
                 when that master was in client-A's majority. The matrix has no stage 7 x failover \
                 cell (n/a: stage 7's masters are independent and have no replicas), and that is \
                 Redlock's own advice: no replicas, persistence, a restart delayed by a TTL. A clock \
                 that jumps forgets the same way. Redlock does nothing for a paused holder, and it \
                 refuses cleanly when answers come too late.",
        java: Some(
            "`new RedissonRedLock(lock1, lock2, lock3).tryLock(3, 30, SECONDS)` is stage 7's \
             `Redlock::lock(wait)` over five nodes; `Redlock::quorum()` is N/2+1.",
        ),
        predict: "Which of these stories make Redlock oversell?",
        watch: Fires(Oversold),
        runs: &[
            on(7, "restart-without-persistence", "OVERSOLD OVERLAP"),
            on(7, "network-delay", "REFUSED"),
            on(7, "clock-jump", "OVERSOLD OVERLAP"),
            on(7, "gc-pause", "OVERSOLD OVERLAP"),
        ],
        marks: &["CUT OFF", "KILLED", "RESTARTED", "TWO HOLDERS", "OVERSOLD"],
        tests: &[
            test("stage7", "node_loss"),
            test("stage7", "restart_and_clock"),
        ],
        look_for: "After the restart, one master of client-A's majority has no key: client-B wins \
                   three of five. With late replies, the lock is refused and the keys are deleted.",
        sources: &[DISTLOCK, KLEPPMANN, ANTIREZ],
        read_next: STAGE7,
    },
    // 11
    Question {
        ask: "What is a fencing token?",
        answer: "A number that grows with every acquisition, handed out with the lock and checked by \
                 the protected resource, which refuses a write carrying a lower number than one it \
                 has already seen. A holder that wakes up after its lock was taken writes with an old \
                 token and is refused.\n\n\
                 It only works if the resource checks it, and only as long as the counter itself is \
                 not lost.",
        java: Some(
            "Redisson's `RFencedLock.lockAndGetToken()` returns the token; stage 8's \
             `FencedLock::lock(wait)` returns a `Fenced` with `token`.",
        ),
        predict: "The holder works for three TTLs and then writes. Which stages oversell?",
        watch: Fires(Oversold),
        runs: &[
            on(8, "slow-business", "OVERLAP"),
            on(5, "slow-business", "OVERSOLD OVERLAP"),
        ],
        marks: &["fencing token", "REJECTED", "OVERLAP", "OVERSOLD"],
        tests: &[test("stage8", "stale_writer")],
        look_for: "Both clients are inside at once (OVERLAP), but in stage 8 client-A's write carries \
                   token 1 after client-B wrote with token 2: \"write REJECTED by the resource: token 1 \
                   is stale\". One order, no OVERSOLD.",
        sources: &[KLEPPMANN],
        read_next: STAGE8,
    },
    // 12
    Question {
        ask: "Redis lock, ZooKeeper lock or database lock?",
        answer: "A Redis lock is fast (a round trip to memory) but rests on time: TTLs and \
                 asynchronous replication. A ZooKeeper (or etcd) lock rests on consensus and on the \
                 session: an ephemeral node disappears when its client's session dies, and its \
                 version (zxid, revision) is a fencing token that survives a leader change (stage \
                 9 is Curator's ZooKeeper lock, with the node's `czxid` as its token). A \
                 database lock (`SELECT … FOR UPDATE`, a unique row) is as durable as the database \
                 and costs a transaction, which is fine when the protected data lives there anyway.\n\n\
                 Choose Redis when an occasional double execution is tolerable or the resource \
                 fences with a counter that cannot be lost; choose a consensus system when it is not.",
        java: Some(
            "Curator's `InterProcessMutex` (ZooKeeper) and Redisson's `RLock` fill the same role: \
             stage 9's `ZkLock` rebuilds the first (ephemeral sequential nodes), stage 6's \
             `RLock` the second.",
        ),
        predict: "After a failover, which stages oversell, fencing included?",
        watch: Fires(Oversold),
        runs: &[
            on(5, "failover", "OVERSOLD OVERLAP"),
            on(8, "failover", "OVERSOLD OVERLAP"),
        ],
        marks: &["does NOT have", "TWO HOLDERS", "fencing token", "OVERSOLD"],
        tests: &[test("stage8", "lost_counter"), test("stage9", "ensemble")],
        look_for: "Stage 8 oversells too: its counter lived on the master that died, so both holders \
                   carry the same token. A consensus system would not have lost it: stage 9's \
                   `ensemble` test kills the ZooKeeper leader under a holder and keeps one holder.",
        sources: &[KLEPPMANN],
        read_next: CHOOSING,
    },
    // 13
    Question {
        ask: "How long should the TTL be?",
        answer: "Long enough that the critical section, at its slowest (p99.9, a slow disk, a retry), \
                 ends well inside it; short enough that a dead holder blocks the others only briefly. \
                 Those two pull apart, and any fixed number is a guess.\n\n\
                 Either stop guessing (a watchdog renews while the holder lives) or make the guess \
                 safe to lose (idempotent business, a fencing token). Keep the TTL far above the \
                 clock drift and network delays between clients and Redis.",
        java: Some(
            "The `leaseTime` of `lock.tryLock(waitTime, leaseTime, unit)` is the TTL; without it \
             Redisson uses `lockWatchdogTimeout` (30 s). Here: `LockConfig::ttl` and \
             `LockConfig::watchdog_timeout`.",
        ),
        predict: "With a 300 ms TTL, which of these runs oversell?",
        watch: Fires(Oversold),
        runs: &[
            on(5, "slow-business", "OVERSOLD OVERLAP"),
            on(5, "killed-holder", "ok"),
        ],
        marks: &["paused at", "business finally ends", "expired", "OVERSOLD"],
        tests: &[
            test("stage3", "killed_holder"),
            test("stage6", "slow_business"),
        ],
        look_for: "Too short: the key expires under a working holder (slow-business). Long enough: a \
                   killed holder costs the rival one TTL, then it sells (killed-holder).",
        sources: &[],
        read_next: STAGE5,
    },
    // 14
    Question {
        ask: "What if Redis restarts?",
        answer: "A node that restarts without persistence comes back empty: every lock it granted is \
                 gone, and the next client gets one. With one node that is two holders; with Redlock \
                 it is two holders when the restarted node was part of the first holder's majority.\n\n\
                 Two remedies: persistence with `appendfsync always` (slow, and still lost if the \
                 disk lies), or keep a crashed node down for longer than the largest TTL before it \
                 rejoins (antirez's delayed restart), so every lock it knew has expired anyway.",
        java: None,
        predict: "A node that granted the lock restarts empty. Which stages oversell?",
        watch: Fires(Oversold),
        runs: &[
            on(5, "restart-without-persistence", "OVERSOLD OVERLAP"),
            on(7, "restart-without-persistence", "OVERSOLD OVERLAP"),
        ],
        marks: &["KILLED", "RESTARTED", "TWO HOLDERS", "OVERSOLD"],
        tests: &[test("stage7", "restart_and_clock")],
        look_for: "The node is KILLED and RESTARTED empty; client-B's `SET … NX` there answers OK. \
                   `restart_and_clock` also shows the delayed restart: nobody gets in beside the \
                   holder.",
        sources: &[
            DISTLOCK,
            (
                "Redis: persistence",
                "https://redis.io/docs/latest/operate/oss_and_stack/management/persistence/",
            ),
        ],
        read_next: STAGE7,
    },
    // 15
    Question {
        ask: "What does Redisson's `tryLock(waitTime, leaseTime, unit)` do?",
        answer: "It waits at most `waitTime` for the lock (on the lock's channel, not by polling) and \
                 returns false when that runs out. If it gets the lock, the lock lives `leaseTime` \
                 and is *not* renewed; pass -1 (or use `tryLock(waitTime, unit)`) to get the \
                 watchdog instead.\n\n\
                 So a lease is a promise that the business ends in time. Break it and the next client \
                 walks in, exactly as in stage 5.",
        java: Some(
            "`lock.tryLock(3, 30, TimeUnit.SECONDS)` is stage 6's `RLock::try_lock(wait, \
             Some(lease))`, `None` in place of the lease keeps the watchdog; it returns `Ok(None)` \
             where Java returns false.",
        ),
        predict: "The holder works for three TTLs: stage 6 without a lease, stage 5 with a TTL, \
                  which is what a lease is. Which stages let the rival in?",
        watch: Fires(Overlap),
        runs: &[
            on(6, "slow-business", "ok"),
            on(5, "slow-business", "OVERSOLD OVERLAP"),
        ],
        marks: &["pexpire", "acquired", "publish"],
        tests: &[test("stage6", "lease"), test("stage6", "pubsub_wait")],
        look_for: "No lease: the renewals keep client-B out until client-A releases. `cargo test -p \
                   stage6 lease::` shows the same business with a lease: OVERLAP.",
        sources: &[REDISSON_LOCKS],
        read_next: STAGE6,
    },
    // 16
    Question {
        ask: "Who may unlock the lock? What if another thread calls unlock?",
        answer: "Only its holder. A bare `DEL` lets anyone unlock, including a former holder whose \
                 lock has already passed to someone else. The owner check (a value compared in a \
                 script, or the hash field) turns another client's unlock into a refusal.\n\n\
                 Redisson throws on a foreign unlock rather than returning false, because it is a \
                 bug in the caller: it released something it did not hold.",
        java: Some(
            "Redisson's `unlock()` from a thread that does not hold the lock throws \
             `IllegalMonitorStateException`; stage 6's `RLock::unlock()` returns \
             `Err(LockError::NotOwner)`, and stage 5's `ScriptLock::unlock(&token)` returns \
             `Ok(false)`.",
        ),
        predict: "A holder whose lock expired releases after the next client took it. Which stages \
                  delete the next client's lock?",
        watch: Fires(ForeignDelete),
        runs: &[
            on(2, "slow-business", "OVERSOLD OVERLAP FOREIGN-DELETE"),
            on(6, "slow-business", "ok"),
        ],
        marks: &["DEL lock", "key is gone", "FOREIGN-DELETE", "REFUSED"],
        tests: &[test("stage6", "reentrant")],
        look_for: "Stage 2's `DEL` after its key expired deletes client-B's key. `cargo test -p \
                   stage6 reentrant::` has another client's unlock refused while the lock survives.",
        sources: &[REDISSON_LOCKS],
        read_next: STAGE6,
    },
    // 17
    Question {
        ask: "Why unlock in `finally`, and what if the business throws?",
        answer: "A release that sits after the business is skipped when the business fails. Without \
                 a TTL the lock stays for ever; with one, every other client waits out the TTL for \
                 a lock nobody uses. A watchdog makes it worse: the process is still alive, so its \
                 watchdog keeps renewing a lock that nobody will ever release (stage 6).\n\n\
                 Java releases in `finally`. Rust's answer is a guard: a value whose `Drop` releases \
                 (or hands the release to a task), so every path out of the critical section, error \
                 and panic included, gives the lock back.",
        java: Some(
            "`lock.lock(); try { … } finally { lock.unlock(); }` is a guard in Rust: the release \
             runs on every path out of the scope.",
        ),
        predict: "The business fails inside the critical section and the release is skipped. Which \
                  stages leave the lock held for good?",
        watch: Fires(Deadlock),
        runs: &[
            on(1, "business-error", "DEADLOCK"),
            on(5, "business-error", "ok"),
            on(6, "business-error", "DEADLOCK"),
        ],
        marks: &["error", "DEADLOCK", "expired", "PTTL of"],
        tests: &[
            test("stage5", "business_error"),
            test("stage6", "business_error"),
        ],
        look_for: "The failure inside the critical section, then no release from the holder. \
                   Stage 1's key stays for good; stage 5's rival waits out the TTL and gets in; \
                   stage 6's watchdog keeps renewing (`PEXPIRE` every third of the timeout) for the \
                   living holder, so the rival never gets in.",
        sources: &[],
        read_next: STAGE1,
    },
    // 18
    Question {
        ask: "Why check `isHeldByCurrentThread()` before `unlock()` in `finally`?",
        answer: "Because by the time `finally` runs the lock may no longer be yours: it expired, a \
                 pause outlived it, someone else holds it now. Redisson's `unlock()` would then throw \
                 and hide the business's own exception. The check turns a lost lock into a quiet \
                 skip.\n\n\
                 The check is for tidiness, not for safety: the release script re-checks the owner \
                 atomically anyway. What matters is that a lost lock is *noticed*: log it, because \
                 the business ran unprotected.",
        java: Some(
            "`if (lock.isHeldByCurrentThread()) lock.unlock();` is stage 6's `if \
             lock.is_held_by_current_task().await? { lock.unlock().await?; }`, or simply handling \
             `Err(LockError::NotOwner)` from `unlock()`.",
        ),
        predict: "A thawed holder releases a lock someone else now holds. Which stages delete the \
                  other client's lock?",
        watch: Fires(ForeignDelete),
        runs: &[
            on(6, "gc-pause", "OVERSOLD OVERLAP"),
            on(5, "gc-pause", "OVERSOLD OVERLAP"),
        ],
        marks: &["REFUSED", "not the owner", "lost-lock", "thawed"],
        tests: &[test("stage6", "reentrant")],
        look_for: "After the thaw, client-A's release script finds no field of its own: \"release \
                   REFUSED: not the owner\". The lost-lock signal fired first.",
        sources: &[REDISSON_LOCKS],
        read_next: STAGE6,
    },
    // 19
    Question {
        ask: "How is Redisson's watchdog built, and when does it stop?",
        answer: "After a lock taken without a lease, Redisson schedules a renewal on a timer wheel \
                 (Netty's `HashedWheelTimer`) every `lockWatchdogTimeout / 3`. The renewal is a \
                 script: if the hash still has our field, `PEXPIRE` it back to the full timeout. It \
                 stops when the lock is released, when a renewal finds the field gone (the lock \
                 expired under a paused holder: the gc-pause run), when a renewal fails (Redis \
                 answers an error or cannot be reached: Redisson drops the renewal, and stage 6 \
                 stops too and fires its lost-lock signal, because the lease is now running out \
                 unrenewed), or when the process dies (the killed-holder run: no renewal after \
                 KILLED).\n\n\
                 It does not stop when the thread that took the lock ends, as is often said: the \
                 renewal belongs to the timer, not to that thread. So the trap: a lock that is \
                 never unlocked (a forgotten `unlock`, a thread that died on an exception) is \
                 renewed for as long as the process lives (the business-error run). The watchdog \
                 cannot tell a slow holder from a stuck one.",
        java: Some(
            "`Config.setLockWatchdogTimeout(30_000)` is `LockConfig::watchdog_timeout`; stage 6's \
             watchdog is a tokio task per hold instead of a timer wheel entry.",
        ),
        predict: "The holder process is killed with `kill -9`, or lives on having skipped its \
                  unlock. Which runs keep the lock for ever?",
        watch: Fires(Deadlock),
        runs: &[
            on(6, "killed-holder", "ok"),
            on(1, "killed-holder", "DEADLOCK"),
            on(6, "business-error", "DEADLOCK"),
        ],
        marks: &["KILLED", "PTTL of", "expired", "DEADLOCK"],
        tests: &[
            test("stage6", "killed_holder"),
            test("stage6", "slow_business"),
            test("stage6", "business_error"),
        ],
        look_for: "Stage 6: KILLED, then `PTTL` still a TTL and no renewal after it: the key expires \
                   one timeout later and client-B gets the lock. Stage 1's `PTTL` is -1: it never \
                   lets go. The third run is the trap: a living holder that skipped its unlock, \
                   renewed until the rival gives up.",
        sources: &[REDISSON_LOCKS],
        read_next: STAGE6,
    },
    // 20
    Question {
        ask: "What should a client do when it cannot get the lock?",
        answer: "Three honest answers. Spin: retry after a short sleep (the articles' 100 ms), simple \
                 but it costs a round trip per try per waiter. Wait with a limit: block until the \
                 lock is free or a deadline passes, then fail fast to the caller. Hand the work on: \
                 put it in a queue and let one consumer do it later.\n\n\
                 Never fail silently, and never retry without a limit: a request that waits for ever \
                 holds a thread and a connection for ever.",
        java: Some(
            "`lock.tryLock(3, 30, SECONDS)` returning false is stage 6's `try_lock` returning \
             `Ok(None)`; the articles' spin (`sleep(100)` then call again) is stages 1–5's \
             `lock(wait)`, retrying every `LockConfig::retry_interval`.",
        ),
        predict: "Eight clients buy ten items at once. Which stages oversell?",
        watch: Fires(Oversold),
        runs: &[on(3, "contention", "ok"), on(6, "contention", "ok")],
        marks: &["start shopping", "acquired", "verdict"],
        tests: &[test("stage3", "contention")],
        look_for: "Stage 3's waiters spin: each repeats `SET … NX` every few milliseconds and hears \
                   nil until the holder's `DEL`. Stage 6's waiters send the acquire script, hear the \
                   holder's `PTTL`, and wait on the channel between tries.",
        sources: &[],
        read_next: STAGE3,
    },
    // 21
    Question {
        ask: "Is a Redisson lock fair? What do the fair lock and the read-write lock change?",
        answer: "The plain lock is not. On release, every waiter wakes (a pub/sub message reaches \
                 all subscribers; every spinner retries) and races the others and the client that \
                 has just released, which may ask again at once: the winner is whoever is fastest, \
                 not who came first. In the arrival-order run, four waiters line up one at a time \
                 and every client asks again as soon as it has released: stage 6 passes a waiter \
                 over in every run, three to six grants of about fourteen.\n\n\
                 A fair lock queues the waiters and hands the lock to the head (Redisson's \
                 `getFairLock`: a list and a sorted set of deadlines): `stage6-fair` serves the same \
                 line in order every time, and a client that asks again joins the tail. What it \
                 costs: a waiter that dies in the queue holds the line up until its place times \
                 out, one waiter timeout and a third at most (65 ms in the dead-waiter run, where \
                 plain stage 6 hands over at once). A read-write lock (`getReadWriteLock`) lets \
                 readers share and makes writers exclusive; the course does not build it.",
        java: Some(
            "`redisson.getFairLock(name)` is `stage6-fair`'s `FairLock`; \
             `redisson.getReadWriteLock(name).readLock()` has no counterpart here; stage 6's \
             `RLock` is Redisson's plain, unfair `getLock(name)`.",
        ),
        predict: "Four waiters line up, and every client asks again the moment it releases: \
                  which lock passes a waiter over?",
        watch: Fires(OutOfOrder),
        runs: &[
            on(6, "arrival-order", "OUT-OF-ORDER"),
            fair("arrival-order", "ok"),
            on(6, "dead-waiter", "ok"),
            fair("dead-waiter", "ok"),
        ],
        marks: &[
            "in line",
            "acquired the lock",
            "OUT-OF-ORDER",
            "after client-A's release",
        ],
        tests: &[test("stage6", "pubsub_wait"), test("stage6", "fair")],
        look_for: "In stage 6's run, who gets the lock after each release: often the client that \
                   has just released, or the last one in line, while client-B, first in line, \
                   still waits. In stage6-fair's, B, C, D, E in turn. In the dead-waiter runs, how \
                   long client-C waits after client-A's release: at once on stage 6, a waiter \
                   timeout and a third on the fair lock, whose head is dead.",
        sources: &[REDISSON_LOCKS],
        read_next: STAGE6,
    },
    // 22
    Question {
        ask: "Why does Redlock use five masters, short timeouts and a random retry delay?",
        answer: "Five independent masters with a majority of three tolerate two failures; three \
                 would tolerate one. Each request has a timeout far below the TTL, so a dead master \
                 costs milliseconds, not the lock's validity.\n\n\
                 Clients that collide (each won two masters) must not retry in step, or they collide \
                 again; a random delay spreads them out. A client that fails releases on *every* \
                 master, even those that seemed to say no, because a lost reply may hide a key \
                 written.",
        java: None,
        predict: "Replies are delayed until the lock's validity is used up. Which stages refuse the \
                  lock?",
        watch: Fires(Refused),
        runs: &[
            on(7, "network-delay", "REFUSED"),
            on(3, "network-delay", "ok"),
        ],
        marks: &[
            "held 900ms",
            "REFUSED",
            "healthy again",
            "acquired the lock",
        ],
        tests: &[test("stage7", "node_loss"), test("stage7", "network_delay")],
        look_for: "Stage 7 counts its replies against the validity and says no, then deletes the \
                   keys the late replies were about. `node_loss` has two of five masters down and \
                   the stock sold exactly.",
        sources: &[DISTLOCK, KLEPPMANN, ANTIREZ],
        read_next: STAGE7,
    },
    // 23
    Question {
        ask: "What is clock drift, and why does Redlock subtract it?",
        answer: "Each Redis node expires keys by its own clock. Clocks run at slightly different \
                 rates, so a 10 s TTL may end a little earlier on one node than the client expects. \
                 Redlock takes a margin off the validity for that (TTL × 0.01 + 2 ms): validity = \
                 TTL − time spent acquiring − drift.\n\n\
                 The margin covers a *rate*, not a *jump*: an NTP step or an operator changing the \
                 time ends the lock early on that node, and the margin cannot know. The harness \
                 models a jump by its effect (`PEXPIRE` shortening the key), since Redis has no \
                 clock of its own to move.",
        java: None,
        predict: "A node's clock jumps forward, so the lock expires early there. Which stages \
                  oversell?",
        watch: Fires(Oversold),
        runs: &[
            on(7, "clock-jump", "OVERSOLD OVERLAP"),
            on(5, "clock-jump", "OVERSOLD OVERLAP"),
        ],
        marks: &["JUMPS", "PEXPIRE", "TWO HOLDERS", "OVERSOLD"],
        tests: &[test("stage7", "restart_and_clock")],
        look_for: "The harness's `PEXPIRE` on one of client-A's majority; client-B then wins that \
                   node and two others.",
        sources: &[DISTLOCK, KLEPPMANN, ANTIREZ],
        read_next: STAGE7,
    },
    // 24
    Question {
        ask: "Kleppmann's critique of Redlock and antirez's reply: who is right?",
        answer: "Kleppmann: (1) a lock with a TTL cannot stop a paused or delayed client, so the \
                 resource must check a fencing token, and Redlock has none; (2) Redlock's safety \
                 depends on bounded clocks, delays and pauses, and a clock jump breaks it; so it is \
                 too heavy for efficiency and not safe enough for correctness.\n\n\
                 antirez: (1) the pause problem hits every lock with auto-release, and a unique \
                 value can serve for check-and-set; (2) with monotonic time and administered \
                 clocks the timing assumptions are reasonable. The runs agree with both on one \
                 point: a pause breaks Redlock like any lock (stage 7), and only a resource that \
                 checks stops the stale writer (stage 8).",
        java: None,
        predict: "The holder is frozen for longer than the TTL. Which stages oversell?",
        watch: Fires(Oversold),
        runs: &[
            on(7, "gc-pause", "OVERSOLD OVERLAP"),
            on(8, "gc-pause", "OVERLAP"),
        ],
        marks: &["FROZEN", "thawed", "TWO HOLDERS", "REJECTED", "OVERSOLD"],
        tests: &[test("stage7", "gc_pause"), test("stage8", "stale_writer")],
        look_for: "Stage 7: a majority cannot help a frozen holder. Stage 8: the same overlap, and \
                   the resource refuses the older token.",
        sources: &[KLEPPMANN, ANTIREZ, DISTLOCK],
        read_next: DEBATE,
    },
    // 25
    Question {
        ask: "Redisson deprecated `RedissonRedLock`. What should you use instead?",
        answer: "Redisson marks `RedissonRedLock` deprecated and points to a plain `RLock`, or \
                 `RFencedLock` when the resource can check a token. The source articles still recommend RedLock for high safety; the runs say why that \
                 advice aged: five masters cost five servers and still fail on a restart, a clock \
                 jump or a pause.\n\n\
                 For efficiency, one master is enough; for correctness, use a token the resource \
                 checks, kept where it cannot be lost.",
        java: Some(
            "`new RedissonRedLock(l1, l2, l3)` is stage 7's `Redlock`; `RFencedLock` is stage 8's \
             `FencedLock`.",
        ),
        predict: "A node's clock jumps forward. Which stages oversell?",
        watch: Fires(Oversold),
        runs: &[
            on(7, "clock-jump", "OVERSOLD OVERLAP"),
            on(8, "clock-jump", "OVERLAP"),
        ],
        marks: &["JUMPS", "PEXPIRE", "TWO HOLDERS", "OVERSOLD"],
        tests: &[test("stage8", "stale_writer")],
        look_for: "Stage 7 oversells after the jump; stage 8 overlaps, and the older token cannot \
                   write.",
        sources: &[REDISSON_LOCKS, DISTLOCK, KLEPPMANN, ANTIREZ],
        read_next: CHOOSING,
    },
    // 26
    Question {
        ask: "What do `WAIT` and `min-replicas-to-write` do for a lock?",
        answer: "`WAIT 1 <timeout>` after the lock write blocks until one replica acknowledged it, \
                 so a failover right after is less likely to lose it. It does not make replication \
                 synchronous: the write is already visible on the master, and a replica that did not \
                 acknowledge may still be the one promoted. `min-replicas-to-write 1` with \
                 `min-replicas-max-lag` makes the master refuse writes when no replica is close \
                 behind: a master cut off by a partition stops granting the lock once the lag has \
                 passed, though it still grants it during that first lag.\n\n\
                 Both narrow the failover hole; neither closes it. The runs show each one closing \
                 the case it was made for, and `WAIT` losing the lock all the same when the one \
                 replica that acknowledged dies with the master.",
        java: None,
        predict: "The master dies or is cut off before its replicas have the lock, with and \
                  without `WAIT` and `min-replicas-to-write`. Which runs oversell?",
        watch: Fires(Oversold),
        runs: &[
            on(5, "sentinel-failover", "OVERSOLD OVERLAP"),
            on(5, "sentinel-failover-wait", "ok"),
            on(
                5,
                "sentinel-failover-wait-other-replica",
                "OVERSOLD OVERLAP",
            ),
            on(5, "split-brain", "OVERSOLD OVERLAP"),
            on(5, "split-brain-min-replicas", "ok"),
        ],
        marks: &[
            "WAIT",
            "min-replicas",
            "switch-master",
            "TWO HOLDERS",
            "NOREPLICAS",
        ],
        tests: &[test("stage5", "sentinel")],
        look_for: "With `WAIT 1` and no replica answering, client-A knows its lock is not safe \
                   and does not go on; when the one replica that answered dies with the master, \
                   the other is promoted without the key and client-B gets in. With \
                   `min-replicas-to-write 1`, the master cut off from its replicas refuses \
                   client-A's lock instead of granting it.",
        sources: &[
            ("Redis: WAIT", "https://redis.io/docs/latest/commands/wait/"),
            DISTLOCK,
        ],
        read_next: STAGE5,
    },
    // 27
    Question {
        ask: "What happens to my lock when Sentinel fails over?",
        answer: "The same as any failover, decided by the Sentinels instead of a person: they agree \
                 the master is down (`+sdown`, `+odown`), promote a replica (`+switch-master`), and \
                 clients asking Sentinel for the master now reach one that never had the lock.\n\n\
                 The first source article's advice (a single-node lock plus Sentinel is enough for most business) is \
                 right for an efficiency lock and wrong for a correctness lock.",
        java: None,
        predict: "The master dies before its replicas have the lock; the Sentinels promote one. \
                  Which stages oversell?",
        watch: Fires(Oversold),
        runs: &[
            on(5, "sentinel-failover", "OVERSOLD OVERLAP"),
            on(6, "sentinel-failover", "OVERSOLD OVERLAP"),
            on(8, "sentinel-failover", "OVERSOLD OVERLAP"),
        ],
        marks: &["odown", "switch-master", "TWO HOLDERS", "OVERSOLD"],
        tests: &[],
        look_for: "`+switch-master` from the Sentinels, then client-B's `SET … NX` on the new master \
                   answers OK: TWO HOLDERS.",
        sources: &[DISTLOCK],
        read_next: STAGE5,
    },
    // 28
    Question {
        ask: "What is a split brain, and what does it do to a lock?",
        answer: "A partition cuts the master off from its replicas and the Sentinels, but not from \
                 every client. The majority side promotes a replica; the old master keeps accepting \
                 writes from the clients on its side. For a while there are two masters, each \
                 granting the lock. When the partition heals the old master is demoted and its \
                 writes vanish.\n\n\
                 `min-replicas-to-write` bounds how long the old master accepts writes alone \
                 (question 26 runs it).",
        java: None,
        predict: "The master is cut off while a client on its side takes the lock. Which stages \
                  oversell?",
        watch: Fires(Oversold),
        runs: &[
            on(5, "split-brain", "OVERSOLD OVERLAP"),
            on(8, "split-brain", "OVERSOLD OVERLAP"),
        ],
        marks: &["partition", "switch-master", "TWO HOLDERS", "OVERSOLD"],
        tests: &[],
        look_for: "Two `SET … NX` answered OK, on two different masters; after the heal, the old \
                   master's key is gone.",
        sources: &[DISTLOCK],
        read_next: STAGE5,
    },
    // 29
    Question {
        ask: "A lock in Redis Cluster: which node holds it?",
        answer: "The master that owns the key's hash slot (CRC16 of the key, mod 16384). One lock key \
                 lives on one master, so a Cluster lock is a single-master lock with the same \
                 failover hole; the cluster's replicas are asynchronous too.\n\n\
                 A script may only touch keys of one slot. When a lock uses several keys (a lock and \
                 its fencing counter, a lock and its waiters' queue), put the common part in braces, \
                 `{order:42}:lock` and `{order:42}:fence`: only the part inside `{…}` is hashed, so \
                 they share a slot.",
        java: None,
        predict: "The master holding the lock dies before its replica has it. Which stages oversell?",
        watch: Fires(Oversold),
        runs: &[
            on(6, "failover", "OVERSOLD OVERLAP"),
            on(8, "failover", "OVERSOLD OVERLAP"),
        ],
        marks: &["KILLED", "does NOT have", "TWO HOLDERS", "OVERSOLD"],
        tests: &[test("stage8", "lost_counter")],
        look_for: "A Cluster failover is this run: the slot's master dies, its replica takes the \
                   slot without the key.",
        sources: &[(
            "Redis: Cluster specification, hash tags",
            "https://redis.io/docs/latest/operate/oss_and_stack/reference/cluster-spec/#hash-tags",
        )],
        read_next: STAGE6,
    },
    // 30
    Question {
        ask: "Is a Redis lock CP or AP?",
        answer: "Neither, strictly. A single master with asynchronous replicas chooses availability: \
                 after a failover or a partition it keeps granting locks it may have granted \
                 already. Redlock trades some availability (it needs a majority) for safety, but its \
                 safety rests on timing assumptions, not on consensus, so it is not CP either.\n\n\
                 A CP lock (ZooKeeper, etcd) refuses to answer without a quorum and orders every \
                 grant.",
        java: None,
        predict: "Which of these give the lock to two holders at once and oversell?",
        watch: Fires(Oversold),
        runs: &[
            on(5, "failover", "OVERSOLD OVERLAP"),
            on(7, "clock-jump", "OVERSOLD OVERLAP"),
        ],
        marks: &["TWO HOLDERS", "OVERSOLD"],
        tests: &[
            test("stage5", "failover"),
            test("stage7", "restart_and_clock"),
        ],
        look_for: "Both runs end with TWO HOLDERS: one by replication, one by timing.",
        sources: &[KLEPPMANN],
        read_next: DEBATE,
    },
    // 31
    Question {
        ask: "Why not `MULTI`/`EXEC` instead of a Lua script? Can a script roll back?",
        answer: "A transaction queues commands and runs them together, but it cannot use one \
                 command's answer to decide the next: \"delete only if GET returned my value\" is \
                 a decision. `WATCH` can make it optimistic (abort if the key changed), at the cost \
                 of a retry loop. A script decides inside Redis in one step.\n\n\
                 A script is atomic but has no rollback: if it fails halfway, what it wrote stays. \
                 And it blocks the whole server while it runs, so lock scripts stay a few commands \
                 long.",
        java: Some(
            "`redisTemplate.execute(new SessionCallback<>() { … multi(); … exec(); })` is a \
             transaction; `DefaultRedisScript` is stage 5's `redis::Script`.",
        ),
        predict: "The release stalls while the lock changes hands. Which stages delete the other \
                  client's lock?",
        watch: Fires(ForeignDelete),
        runs: &[
            on(5, "get-del-race", "ok"),
            on(4, "get-del-race", "FOREIGN-DELETE"),
        ],
        marks: &["EVAL", "lua>", "paused at"],
        tests: &[test("stage5", "get_del_race")],
        look_for: "The script's `lua>` lines: `GET` and `DEL` run inside it with nothing between. The \
                   first release on a fresh server falls back from `EVALSHA` (NOSCRIPT) to `EVAL`.",
        sources: &[
            (
                "Redis: Transactions",
                "https://redis.io/docs/latest/develop/interact/transactions/",
            ),
            (
                "Redis: Scripting with Lua",
                "https://redis.io/docs/latest/develop/interact/programmability/eval-intro/",
            ),
        ],
        read_next: STAGE5,
    },
    // 32
    Question {
        ask: "How do you test a distributed lock?",
        answer: "Against real servers, with the faults made on purpose: kill the holder, freeze it \
                 (SIGSTOP), delay its replies, restart or fail over its node. Make each race happen \
                 every time by stopping a client at a named point, not by hoping for it. Judge from \
                 what was recorded (orders against stock, overlapping critical sections, what the \
                 server saw), never from what the code believes.\n\n\
                 Then let a random nemesis look for what nobody scripted, as Jepsen does. A test that \
                 passes one run in fifty is a broken test.",
        java: None,
        predict: "Eight clients, ten items. Which stages oversell?",
        watch: Fires(Oversold),
        runs: &[
            on(0, "contention", "OVERSOLD OVERLAP"),
            on(1, "contention", "ok"),
        ],
        marks: &["start shopping", "OVERSOLD", "verdict"],
        tests: &[test("stage1", "contention"), test("stage4", "get_del_race")],
        look_for: "The control (no lock) shows the observers can fire: more orders than stock. A \
                   lock's test is only as good as its control.",
        sources: &[("Jepsen", "https://jepsen.io/")],
        read_next: MATRIX,
    },
    // 33
    Question {
        ask: "When should you not use a lock at all? What about a flash-sale hot item?",
        answer: "When the data store can decide by itself. Stock: `UPDATE stock SET n = n - 1 WHERE \
                 id = ? AND n > 0`, or a Lua script that decrements only above zero. Duplicates: a \
                 unique constraint or an idempotency key. Concurrent edits: a compare-and-set on a \
                 version. Each is one atomic step, with no TTL to guess.\n\n\
                 For a hot item, a lock serialises every buyer on one key. Split the stock into \
                 buckets on different keys, decrement atomically, and queue the orders.",
        java: None,
        predict: "Which of these oversell: no lock at all, or fencing with a paused holder?",
        watch: Fires(Oversold),
        runs: &[
            on(8, "gc-pause", "OVERLAP"),
            on(0, "contention", "OVERSOLD OVERLAP"),
        ],
        marks: &["FROZEN", "thawed", "REJECTED", "OVERSOLD"],
        tests: &[test("stage8", "stale_writer")],
        look_for: "Stage 8 overlaps and still sells exactly the stock, because the resource checks \
                   the write. Correctness came from the resource, not from the lock.",
        sources: &[],
        read_next: CHOOSING,
    },
    // 34
    Question {
        ask: "Redis itself is down or slow: fail open or fail closed?",
        answer: "Fail open (carry on without the lock) is stage 0: duplicates and overselling, \
                 acceptable only when the lock was an optimisation. Fail closed (refuse the \
                 operation) keeps the data safe and makes Redis a hard dependency.\n\n\
                 Decide per operation, and give every lock call a timeout: a client waiting for \
                 ever on a dead Redis is worse than either.",
        java: None,
        predict: "Which of these oversell: no lock, or Redlock with its replies delayed?",
        watch: Fires(Oversold),
        runs: &[
            on(7, "network-delay", "REFUSED"),
            on(0, "contention", "OVERSOLD OVERLAP"),
        ],
        marks: &["held 900ms", "REFUSED"],
        tests: &[test("stage1", "bad_input")],
        look_for: "Stage 7 refuses (fails closed) when the answers come too late; stage 0 is what \
                   failing open costs. `cargo test -p stage1 bad_input::` shows a dead server is an error, \
                   not a hang.",
        sources: &[],
        read_next: CHOOSING,
    },
    // 35
    Question {
        ask: "Is checking the fencing token on the write enough?",
        answer: "Not when the decision was made on a read. A (token n) reads stock 1 and freezes; \
                 B (token n+1) takes the lock and reads stock 1; A thaws and writes *first*: no \
                 higher token has been seen, so the write passes, and then B's does too. Two orders \
                 for one item.\n\n\
                 The resource must see the token on every access the decision depends on (a read \
                 registers it, a later write with a lower token is refused), or make the write \
                 conditional on the version it read.",
        java: None,
        predict: "A stale holder writes with its old token, first (before the new holder \
                  writes) or second (after it), to a resource that checks tokens on writes only \
                  or on reads too. Which runs oversell?",
        watch: Fires(Oversold),
        runs: &[
            write_only(8, "stale-write-first", "OVERSOLD OVERLAP"),
            on(8, "stale-write-first", "OVERLAP"),
            on(8, "gc-pause", "OVERLAP"),
        ],
        marks: &["fencing token", "REJECTED", "OVERSOLD"],
        tests: &[test("stage8", "stale_writer")],
        look_for: "Against the write-only resource (`--fencing write-only`) client-A's stale write \
                   lands first and passes, client-B's passes too: two orders, OVERSOLD. Against \
                   the resource that registers tokens on reads, the stale write is refused in \
                   both orders: OVERLAP without OVERSOLD.",
        sources: &[KLEPPMANN],
        read_next: STAGE8,
    },
    // 36
    Question {
        ask: "What does idempotency add to a lock, and what does it not?",
        answer: "A lock decides who goes first; it never knows whether the work was done before. \
                 A gateway that times out on a slow instance sends the same request to another: \
                 the retry waits for the lock, gets it once the first instance has charged and \
                 released, and charges again. Every stage does this, the watchdog and the \
                 fencing token included (the retry's token is the newer one).\n\n\
                 Idempotency adds the missing memory: each charge carries a unique request id \
                 (a serial number), and the resource records the id in the same atomic step as \
                 the charge, so a second application changes nothing.\n\n\
                 What it does not add is mutual exclusion. Two *different* requests are two \
                 charges by right: when a paused holder's lock expires and a rival sells the \
                 last item, the thawed holder's purchase has its own id and oversells all the \
                 same. That is the fencing token's job (or a lock that does not expire under a \
                 living holder). Use both: the lock for efficiency, the id and the token for \
                 correctness.",
        java: None,
        predict: "Which of these charge one request twice: the gateway's retry on stage 5 or on \
                  stage 8, each without or with request ids?",
        watch: Fires(Duplicate),
        runs: &[
            on(5, "duplicate-request", "DUPLICATE"),
            on(8, "duplicate-request", "DUPLICATE"),
            with_ids(5, "duplicate-request", "ok"),
            with_ids(8, "duplicate-request", "ok"),
            with_ids(5, "gc-pause", "OVERSOLD OVERLAP"),
        ],
        marks: &["gateway", "request-1", "DUPLICATE", "OVERSOLD"],
        tests: &[test("stage5", "idempotency"), test("stage8", "idempotency")],
        look_for: "Without request ids client-B waits for the lock, then charges request-1 a \
                   second time: DUPLICATE on both stages, the lock and the token working as \
                   designed. With `--request-ids` the resource answers DUPLICATE REFUSED and \
                   the order is charged once. The last run has request ids on too and still \
                   oversells: client-A#1 and client-B#1 are different requests.",
        sources: &[KLEPPMANN],
        read_next: IDEMPOTENCY,
    },
    // 37
    Question {
        ask: "Redis or ZooKeeper for a distributed lock?",
        answer: "It is a trade of speed against what a failure of the store does to the lock. A \
                 Redis lock is one write to one master's memory: here a pair (acquire and release) \
                 costs about two PINGs (150 µs at the median on the book's machine). But the master answers before its replica has the key, so \
                 a failover can forget a held lock and hand it out again. A ZooKeeper (or etcd) \
                 lock is a write that a majority of the ensemble has agreed on and fsynced before \
                 anyone is told: its leader killed, or cut off with a minority, leaves exactly one \
                 holder. Here a pair costs about 30 PINGs (2 ms), milliseconds, as the articles say.\n\n\
                 Neither saves a holder that pauses past its TTL (its session or lease): only a \
                 fencing token checked by the resource does, and ZooKeeper and etcd hand one out \
                 for free (the `czxid`, the create revision). Most business is well served by a \
                 Redis lock plus a check in the data (a token, a unique request id); choose the \
                 consensus store when a second holder after a failover is not acceptable, \
                 especially if one already runs.",
        java: Some(
            "Curator's `new InterProcessMutex(client, \"/lock/stock\")` with `acquire(6, SECONDS)` and \
             `release()` is stage 9's `ZkLock::lock(wait)` and `unlock()`; Redisson's `getLock(\"stock\")` \
             is stage 6.",
        ),
        predict: "Client-A holds the lock when the store's own machinery fails: Redis's master \
                  dies and its replica is promoted; ZooKeeper's leader is killed; etcd's leader \
                  is cut off with client-A. Which stores hand the lock to a second client?",
        watch: Fires(Overlap),
        runs: &[
            on(5, "failover", "OVERSOLD OVERLAP"),
            on(9, "leader-killed", "ok"),
            on(10, "minority-partition", "ok"),
        ],
        marks: &[
            "KILLED",
            "promoted",
            "elected leader",
            "PARTITION",
            "lock-lost signal",
            "TWO HOLDERS",
        ],
        tests: &[test("stage9", "ensemble"), test("stage10", "partition")],
        look_for: "On Redis the promoted replica never saw client-A's key and grants it to \
                   client-B: two holders, two orders. On ZooKeeper the survivors elect a new \
                   leader within a second and client-B waits behind client-A's node; on etcd \
                   client-A's lost-lock signal fires before the majority lets client-B in. The \
                   bench (`cargo bench --bench workloads -- --only w1,w2`) prints what that costs.",
        sources: &[CURATOR, ETCD_MUTEX],
        read_next: BEYOND,
    },
    // 38
    Question {
        ask: "What does a ZooKeeper session expiry do to a holder that is paused?",
        answer: "It takes the lock away without telling the holder. A frozen process (a long GC, \
                 SIGSTOP, a VM migration) stops the pings that keep its session alive; after the \
                 session timeout the ensemble expires the session and deletes its ephemeral node, \
                 the next node's watch fires, and another client holds. The paused holder learns \
                 nothing until it runs again and its client reconnects: by then it may already \
                 have done the write it was about to do.\n\n\
                 The session is the lock's TTL, kept alive by the client library rather than by \
                 a watchdog of the lock's own, and it fails the same way stage 6's watchdog does. \
                 ZooKeeper cannot refuse the stale write; the resource can, with the node's \
                 `czxid` as the fencing token.",
        java: Some(
            "Curator reports the loss to a `ConnectionStateListener` (`LOST`), which a paused \
             thread cannot hear in time; stage 9 fires its lost-lock signal at the same moment.",
        ),
        predict: "Stage 9's holder is frozen for longer than its session timeout, then thawed. \
                  Against a resource that checks no token, and one that checks the czxid: which \
                  runs sell the item twice?",
        watch: Fires(Oversold),
        runs: &[
            unchecked(9, "gc-pause", "OVERSOLD OVERLAP"),
            on(9, "gc-pause", "OVERLAP"),
        ],
        marks: &[
            "FROZEN",
            "TWO HOLDERS",
            "thawed",
            "REJECTED",
            "lost-lock signal",
            "OVERSOLD",
        ],
        tests: &[test("stage9", "paused_holder")],
        look_for: "Client-B gets the lock about two seconds (the session timeout) after client-A \
                   froze. Thawed, client-A sells before its lost-lock signal fires: against the \
                   resource that checks nothing (`--fencing none`) that is two orders, against \
                   the checking one its stale token is REJECTED.",
        sources: &[CURATOR, KLEPPMANN],
        read_next: BEYOND,
    },
    // 39
    Question {
        ask: "Why is etcd's create revision a fencing token?",
        answer: "Because it only ever grows, and every later holder's is higher. etcd numbers \
                 every change to its keyspace with one revision counter; the Raft leader raises it \
                 in commit order, and it is part of the replicated state, so a new leader carries \
                 it on and nothing short of wiping the cluster resets it. Each contender's key \
                 remembers the revision that created it, and the lock is granted in create \
                 revision order: the holder after you created its key after yours.\n\n\
                 Stage 8's token was an `INCR` on one Redis master: a restart without \
                 persistence (or a failover to a replica that missed the increments) hands the \
                 same numbers out again. Jepsen found etcd 3.4.3's lock unsafe without such a \
                 check: a paused holder's lease expires and it writes anyway; with the resource \
                 comparing revisions, its write is refused.",
        java: Some(
            "jetcd's `Lock.lock(name, leaseId)` (etcd's lock service, the same recipe) returns the key it \
             holds; that key's create revision is the token, as stage 10's `EtcdLock::lock()` returns \
             it in `Fenced { token, .. }`.",
        ),
        predict: "A stale holder writes with its old token: stage 8's counter after Redis \
                  restarted empty, stage 10's create revision against a resource that checks \
                  nothing, and against one that checks it. Which runs oversell?",
        watch: Fires(Oversold),
        runs: &[
            on(8, "restart-without-persistence", "OVERSOLD OVERLAP"),
            unchecked(10, "gc-pause", "OVERSOLD OVERLAP"),
            on(10, "gc-pause", "OVERLAP"),
        ],
        marks: &["fencing token", "FROZEN", "thawed", "REJECTED", "OVERSOLD"],
        tests: &[test("stage10", "paused_holder")],
        look_for: "Stage 8's restarted counter hands client-B the token client-A had, so the \
                   resource cannot tell them apart. Stage 10's tokens are 2 and then 3, from the \
                   cluster's one revision counter: checked, client-A's stale write is REJECTED; \
                   unchecked (`--fencing none`), it sells a second time.",
        sources: &[ETCD_MUTEX, JEPSEN_ETCD],
        read_next: BEYOND,
    },
    // 40
    Question {
        ask: "A service method takes the lock, sells, and unlocks in `finally`; its caller is \
              `@Transactional`. What can go wrong?",
        answer: "The lock is given back before the sale is committed. Inside a transaction the \
                 writes are not visible to anyone else until the commit, and the commit comes \
                 when the outer method returns, after the `finally` that unlocked. Between the \
                 two, the next holder gets the lock, reads the stock as it was before the sale, \
                 and sells the same item again. No lock can see this: every hold was exclusive, \
                 one after the other; the data was simply not written yet when the hold ended.\n\n\
                 The fix is the order: commit, then release. Put the lock around the \
                 transaction (lock in the caller, or release in an after-commit callback), never \
                 inside it. A resource that checks fencing tokens also refuses the late commit: \
                 the next holder's read showed a newer token first.",
        java: Some(
            "Spring: `TransactionSynchronizationManager.registerSynchronization` with \
             `afterCompletion` to unlock, or `lock.lock()` in the caller before it calls the \
             `@Transactional` method. Here the story writes with `MULTI` … `EXEC` and the \
             release sits between them unless `--release-after-commit` moves it after `EXEC`.",
        ),
        predict: "client-A sells in a transaction and releases the lock before the commit; \
                  client-B buys in between. With stage 5, with stage 5 releasing after the \
                  commit, and with stage 8's fencing tokens: which runs sell the one item twice?",
        watch: Fires(Oversold),
        runs: &[
            on(5, "release-before-commit", "OVERSOLD"),
            after_commit(5, "release-before-commit", "ok"),
            on(8, "release-before-commit", "ok"),
        ],
        marks: &["MULTI", "EXEC", "released", "REJECTED", "OVERSOLD"],
        tests: &[],
        look_for: "In the first run client-B reads stock 1 after client-A released and sells; \
                   client-A's EXEC then writes a second order. With the release after EXEC, \
                   client-B reads 0. Stage 8 releases early too, but client-B's read registered \
                   a newer token, so client-A's transaction is REJECTED when it commits.",
        sources: &[],
        read_next: CHOOSING,
    },
    // 41
    Question {
        ask: "Celery takes redis-py's `Lock` for its tasks. A worker holding it stops for a long \
              GC pause (or the VM is frozen). What happens?",
        answer: "The key expires under the frozen worker and another worker takes the lock; when \
                 the first one wakes it carries on from what it read before the pause and writes \
                 too. redis-py's lock is stage 5: one `SET NX PX` and a compare-and-delete \
                 release. It renews nothing, hands out no token and never tells the holder the \
                 lock is gone, so nothing stops the late write. Its release is safe (it deletes \
                 nothing that is not its own), which is why the only symptom is the data.\n\n\
                 A watchdog does not save you either: python-redis-lock's `auto_renewal` thread \
                 is frozen with the process, and when it wakes its renewal fails, the thread \
                 ends, and the holder is not told. What saves the data is a fencing token the \
                 resource checks: kazoo's lock node has one (its `czxid`), and with it the \
                 paused holder's write is refused, though the two still overlapped.",
        java: Some(
            "Redisson's `RLock` is stage 6: its watchdog renews while the JVM runs and stops in \
             the pause like any thread; only a token checked by the resource (stage 8) refuses \
             the late write.",
        ),
        predict: "client-A is frozen with SIGSTOP past its TTL while it holds the lock; client-B \
                  takes it and sells; client-A wakes and sells too. With redis-py, with \
                  python-redis-lock's auto_renewal, and with kazoo (its node's czxid checked as a \
                  token): which runs oversell?",
        watch: Fires(Oversold),
        runs: &[
            library("redis-py", "gc-pause", "OVERSOLD OVERLAP"),
            library("python-redis-lock-renewal", "gc-pause", "OVERSOLD OVERLAP"),
            library("kazoo", "gc-pause", "OVERLAP"),
        ],
        marks: &["FROZEN", "thawed", "EVALSHA", "REJECTED", "OVERSOLD"],
        tests: &[],
        look_for: "In the first run client-B's SET comes after `expired lock:stock`, and \
                   client-A's SET stock follows client-B's after the thaw. In the second, \
                   client-A's renewal script runs after the thaw and finds another value; the \
                   thread ends, and client-A sells anyway. In the third, client-A's write is REJECTED: \
                   client-B's token was newer.",
        sources: &[REDIS_PY_LOCK, PYTHON_REDIS_LOCK, KLEPPMANN],
        read_next: LIBRARIES,
    },
    // 42
    Question {
        ask: "A job takes `r.lock(\"report\")` with redis-py and no timeout. The worker holding \
              it is OOM-killed. What happens to the next run of the job?",
        answer: "It waits for ever. redis-py's `timeout` defaults to `None`, and then its `SET` \
                 carries no `PX`: the key never expires, and the only thing that deletes it is \
                 the release the dead worker never sent. It is stage 1's deadlock with a safe \
                 release. python-redis-lock does the same when you leave out `expire`, as its \
                 README's own example does.\n\n\
                 Give the lock a timeout longer than the job, and renew it (`extend`) if the \
                 job can run longer; with a timeout the killed worker's lock frees itself at \
                 the TTL.",
        java: Some(
            "Redisson's `lock()` without a lease time is safe here: its watchdog renews a 30 s \
             lease only while the JVM lives, so a killed holder's lock expires. It is \
             `lock(leaseTime, unit)` with a huge lease that behaves like `timeout=None`.",
        ),
        predict: "client-A takes the lock and is killed with kill -9; client-B asks for it. With \
                  redis-py at its default timeout, with a timeout, and with python-redis-lock \
                  without `expire`: which runs deadlock?",
        watch: Fires(Deadlock),
        runs: &[
            library("redis-py-no-ttl", "killed-holder", "DEADLOCK"),
            library("redis-py", "killed-holder", "ok"),
            library("python-redis-lock-no-ttl", "killed-holder", "DEADLOCK"),
        ],
        marks: &["SET lock:stock", "KILLED", "DEADLOCK"],
        tests: &[],
        look_for: "The first run's SET has no PX and no `expired` line follows the kill; client-B \
                   asks until its patience runs out. With a timeout, `expired lock:stock` comes \
                   one TTL after the SET and client-B gets in.",
        sources: &[REDIS_PY_LOCK, PYTHON_REDIS_LOCK],
        read_next: LIBRARIES,
    },
];
