"""python-redis-lock 4.0.1 (`redis_lock.Lock`) as a lockstages holder.

    python_redis_lock.py                  `Lock(conn, name, expire=<the spec's TTL>)`
    python_redis_lock.py --auto-renewal   the same with `auto_renewal=True` (its watchdog)
    python_redis_lock.py --no-expire      its README's usage, `Lock(conn, name)`: no
                                          `expire`, the key never expires

Configured as its README shows: a `StrictRedis` connection, a new `Lock` per
critical section, `acquire(blocking=True, timeout=...)` to wait (or
`blocking=False` for a single try). It waits on a list, not
by polling: a release pushes to `lock-signal:<name>` and a waiter's `BLPOP`
wakes at once.

Whole seconds only. The library turns `expire` and `timeout` into `int`, so
a TTL of 0.3 s would become 0, which it reads as *no expiry at all*; this
adapter therefore runs at its smallest TTL, 1 s, and rounds any TTL up to a
whole second; the harness is to scale the story's other times to it.

A wait is rounded up too (a fraction of a second would never end: see
NOTES.md), and a wait longer than `expire` is waited out in turns of at
most `expire` seconds, as a caller of the library would have to: without
auto-renewal the library refuses a longer timeout (`TimeoutTooLarge`), and
its `BLPOP` of more than 5 s fails with redis-py 8's default socket timeout.

The key is the library's `lock:<name>`: the spec's key must start `lock:`.
"""

import math
import sys
import time

import redis_lock

import lockstages_holder as holder

# The smallest TTL the library can keep (see the module docs).
SMALLEST_EXPIRE = 1


def whole_seconds(seconds: float) -> int:
    """Rounded up, so that the library never holds or waits less than asked."""
    return max(SMALLEST_EXPIRE, math.ceil(seconds - 1e-9))


def make(spec: holder.Spec, mode: str) -> holder.Library:
    """`mode`: "" (expire), "--auto-renewal" or "--no-expire"."""
    auto_renewal = mode == "--auto-renewal"
    if len(spec.lock_urls) != 1:
        raise holder.HolderError(
            f"python-redis-lock takes one server; the spec names {len(spec.lock_urls)}"
        )
    if not spec.key.startswith("lock:"):
        raise holder.HolderError(
            f"python-redis-lock keeps its lock at lock:<name>; the spec's key `{spec.key}` "
            "does not start with lock:"
        )
    if spec.lock_urls[0].startswith(holder.CLUSTER_SCHEME):
        raise holder.NotApplicable(
            "python-redis-lock takes a redis.StrictRedis of one server; a cluster client "
            "is refused (its strict=True default)"
        )
    name = spec.key[len("lock:"):]
    client = holder.redis_client(spec.lock_urls[0], spec.name)
    expire = None if mode == "--no-expire" else whole_seconds(spec.ttl)

    def acquire(wait):
        # A new Lock per critical section, as `with redis_lock.Lock(...)`.
        lock = redis_lock.Lock(client, name, expire=expire, auto_renewal=auto_renewal)
        if wait == 0:
            got = lock.acquire(blocking=False)
        else:
            got = False
            deadline = time.monotonic() + whole_seconds(wait)
            while not got:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                # At most `expire`: the library refuses a longer timeout
                # without auto-renewal, and a BLPOP longer than redis-py 8's
                # default socket timeout (5 s) fails with TimeoutError.
                turn = min(whole_seconds(left), expire or SMALLEST_EXPIRE)
                got = lock.acquire(blocking=True, timeout=turn)
        return holder.Held(value=lock.id, lock=lock) if got else None

    def release(held):
        try:
            held.lock.release()
        except redis_lock.NotAcquired:
            # Its unlock script found another id, or none.
            # Its compare-and-delete deleted nothing, stage 5's answer
            # (`not-owner` would say this client held no lock at all).
            return "released nothing"
        return "released deleted"

    return holder.Library(acquire=acquire, release=release)


MODES = {"": "", "--auto-renewal": " (auto_renewal)", "--no-expire": " (no expire)"}

if __name__ == "__main__":
    mode = " ".join(sys.argv[1:])
    if mode not in MODES:
        print(f"usage: {sys.argv[0]} [--auto-renewal | --no-expire]; not {mode}", file=sys.stderr)
        sys.exit(2)
    sys.exit(holder.serve("python-redis-lock" + MODES[mode], lambda spec: make(spec, mode)))
