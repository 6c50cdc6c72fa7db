//! The fair lock's scripts. Each runs atomically on the server, so the
//! hash, the queue and the deadlines always change together.
//!
//! `KEYS[1]` is always the lock hash, `KEYS[2]` the queue, `KEYS[3]` the
//! waiters' deadlines. The queue and the deadlines hold *requests*, an
//! owner and the number of its request, `<client-uuid>:<task>#<n>`; the
//! hash holds owners, as in stage 6 (the part before the `#`). The hot
//! path (a contended hand-over) is kept to the fewest commands:
//! `INFO commandstats`, which the bench reads, counts every command a
//! script runs, not just the `EVALSHA`.

use std::sync::LazyLock;

use redis::Script;

// ANCHOR: fair_enqueue
/// Joins the tail of the queue. If the queue was empty and the lock is
/// free, takes the lock at once instead (nil). Otherwise 1: wait to be
/// named. Two commands when others are already waiting: the `EVALSHA` and
/// the `RPUSH`.
///
/// `ARGV[1]` the lease in ms, `ARGV[2]` the owner, `ARGV[3]` the request.
pub const ENQUEUE_SCRIPT: &str = r"
if redis.call('rpush', KEYS[2], ARGV[3]) == 1 and redis.call('exists', KEYS[1]) == 0 then
  redis.call('lpop', KEYS[2])
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return 1
";
// ANCHOR_END: fair_enqueue

// ANCHOR: fair_release
/// Gives back the last hold and hands the lock to the head of the queue:
/// the head's owner is written into the hash *by the release*, and the
/// head's request is named on its client's channel. A head that hears the
/// message in time runs nothing to take it (`fair.rs` says when a message
/// is in time).
///
/// The lock is handed over with a short lease, the waiter timeout, alive
/// or dead, listening or not: the server cannot tell a frozen head from a
/// slow one, and a head that does not renew within a waiter timeout must
/// cost the queue no more. A live head's watchdog renews it in time.
/// nil when the caller held nothing; 0 otherwise.
///
/// It does not read the head's deadline, as Redisson's release does: the
/// waiters' looks drop the heads gone past theirs ([`REFRESH_SCRIPT`]),
/// and the script of every hand-over stays at six commands, the `EVALSHA`
/// included.
///
/// `ARGV[1]` the owner, `ARGV[2]` the waiter timeout in ms, `ARGV[3]` the
/// lock's channel (the head's client UUID is appended).
pub const RELEASE_SCRIPT: &str = r"
if redis.call('hdel', KEYS[1], ARGV[1]) == 0 then
  return nil
end
local head = redis.call('lpop', KEYS[2])
if head then
  redis.call('hset', KEYS[1], string.match(head, '^(.*)#'), 1)
  redis.call('pexpire', KEYS[1], ARGV[2])
  redis.call('publish', ARGV[3] .. ':' .. string.match(head, '^([^:]+)'), head)
else
  redis.call('del', KEYS[3])
end
return 0
";
// ANCHOR_END: fair_release

// ANCHOR: fair_refresh
/// What a waiter runs when it has slept a third of the waiter timeout
/// without being named, when a message came too late to be trusted, or
/// when it has just subscribed. 0: the lock is ours (it was handed to us,
/// or it was free and we were first). 1: still waiting, with our deadline
/// renewed.
///
/// A lock handed over lives only a waiter timeout, so that a dead or
/// frozen head cannot hold the queue up for longer. Claiming it gives it the
/// whole lease at once, as the plain acquire does: the claim is where the
/// head shows it is alive, and its reply may reach it late (the explorer
/// found a busy client told "yours" after the short hand-over lease had
/// already run out and another client was in).
///
/// Every look first drops the heads of the queue whose deadline has
/// passed: waiters that stopped looking for a whole waiter timeout, dead
/// or frozen, as Redisson's acquire drops them. The release, which runs at
/// every hand-over, does not look (it stays six commands); the waiters'
/// looks, every third of a waiter timeout, clear the line ahead of it. A
/// head without a deadline has not waited long enough to write one and
/// keeps its place. A free lock with a queue means a hand-over went
/// unanswered (its lease ran out): the look hands the lock on to the head
/// left, or takes it if that is us.
///
/// `ARGV[1]` the lease in ms, `ARGV[2]` the owner, `ARGV[3]` the waiter
/// timeout in ms, `ARGV[4]` the lock's channel, `ARGV[5]` the request.
pub const REFRESH_SCRIPT: &str = r"
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('pexpire', KEYS[1], ARGV[1])
  redis.call('zrem', KEYS[3], ARGV[5])
  return 0
end
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local head = redis.call('lindex', KEYS[2], 0)
while head and head ~= ARGV[5] do
  local deadline = tonumber(redis.call('zscore', KEYS[3], head))
  if not deadline or deadline > now then
    break
  end
  redis.call('lpop', KEYS[2])
  redis.call('zrem', KEYS[3], head)
  head = redis.call('lindex', KEYS[2], 0)
end
if redis.call('exists', KEYS[1]) == 0 then
  if not head or head == ARGV[5] then
    redis.call('lrem', KEYS[2], 0, ARGV[5])
    redis.call('zrem', KEYS[3], ARGV[5])
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return 0
  end
  redis.call('lpop', KEYS[2])
  redis.call('zrem', KEYS[3], head)
  redis.call('hset', KEYS[1], string.match(head, '^(.*)#'), 1)
  redis.call('pexpire', KEYS[1], ARGV[3])
  redis.call('publish', ARGV[4] .. ':' .. string.match(head, '^([^:]+)'), head)
end
if not redis.call('lpos', KEYS[2], ARGV[5]) then
  redis.call('rpush', KEYS[2], ARGV[5])
end
redis.call('zadd', KEYS[3], now + tonumber(ARGV[3]), ARGV[5])
return 1
";
// ANCHOR_END: fair_refresh

/// A waiter that gives up leaves the queue. 1 if the lock was handed to it
/// meanwhile (it then holds the lock, for a whole lease, as a claim in
/// `REFRESH` gives it), 0 otherwise.
///
/// `ARGV[1]` the owner, `ARGV[2]` the lease in ms, `ARGV[3]` the request.
pub const LEAVE_SCRIPT: &str = r"
redis.call('lrem', KEYS[2], 0, ARGV[3])
redis.call('zrem', KEYS[3], ARGV[3])
if redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 1
end
return 0
";

/// The same owner takes the lock once more: the count goes up and the
/// lease starts again. nil if it holds nothing (any more).
///
/// `ARGV[1]` the lease in ms, `ARGV[2]` the owner.
pub const REENTER_SCRIPT: &str = r"
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
  return nil
end
local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
redis.call('pexpire', KEYS[1], ARGV[1])
return count
";

/// Gives back one of several holds: the count goes down, the lock stays.
/// nil if the owner holds nothing.
///
/// `ARGV[1]` the lease in ms, `ARGV[2]` the owner.
pub const UNWIND_SCRIPT: &str = r"
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
  return nil
end
local left = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if left > 0 then
  redis.call('pexpire', KEYS[1], ARGV[1])
  return left
end
redis.call('hdel', KEYS[1], ARGV[2])
return 0
";

pub(super) static ENQUEUE: LazyLock<Script> = LazyLock::new(|| Script::new(ENQUEUE_SCRIPT));
pub(super) static RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(RELEASE_SCRIPT));
pub(super) static REFRESH: LazyLock<Script> = LazyLock::new(|| Script::new(REFRESH_SCRIPT));
pub(super) static LEAVE: LazyLock<Script> = LazyLock::new(|| Script::new(LEAVE_SCRIPT));
pub(super) static REENTER: LazyLock<Script> = LazyLock::new(|| Script::new(REENTER_SCRIPT));
pub(super) static UNWIND: LazyLock<Script> = LazyLock::new(|| Script::new(UNWIND_SCRIPT));
/// Stage 6's renewal, unchanged: the watchdog only looks at the hash.
pub(super) static RENEW: LazyLock<Script> = LazyLock::new(|| Script::new(crate::RENEW_SCRIPT));
