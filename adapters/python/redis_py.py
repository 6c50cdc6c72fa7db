"""redis-py's `Lock` (redis 8.1.0) as a lockstages holder.

Configured as redis-py's documentation shows it, `r.lock(name, timeout=...)`:
`timeout` is the spec's TTL in seconds (a float: redis-py sends it as
`SET key token NX PX <ms>`), and each `acquire <ms>` request waits with
`blocking_timeout`, polling every `sleep` (its default, 0.1 s). Celery and
Django's Redis cache lock this way.

    redis_py.py                 `timeout` = the spec's TTL
    redis_py.py --no-timeout    no `timeout`, its default (`timeout=None` in
                                the reference documentation's signature):
                                the key never expires

Its lock is a single server's: the spec's one lock URL.
"""

import sys

from redis.exceptions import LockError

import lockstages_holder as holder


def make(spec: holder.Spec, timeout: bool) -> holder.Library:
    if len(spec.lock_urls) != 1:
        raise holder.HolderError(
            f"redis-py's Lock takes one server; the spec names {len(spec.lock_urls)}"
        )
    client = holder.redis_client(spec.lock_urls[0], spec.name)

    def acquire(wait):
        # A new Lock per critical section, as `with r.lock(...)` makes one.
        lock = client.lock(spec.key, timeout=spec.ttl if timeout else None)
        if not lock.acquire(blocking_timeout=wait):
            return None
        # The token redis-py stored (its `local.token`, read, never set):
        # the value the servers' record shows.
        return holder.Held(value=lock.local.token.decode(), lock=lock)

    def release(held):
        try:
            held.lock.release()
        except LockError:
            # LockNotOwnedError: its script found another value, or none.
            # Its compare-and-delete deleted nothing, stage 5's answer
            # (`not-owner` would say this client held no lock at all).
            return "released nothing"
        return "released deleted"

    return holder.Library(acquire=acquire, release=release)


if __name__ == "__main__":
    if sys.argv[1:] not in ([], ["--no-timeout"]):
        print(f"usage: {sys.argv[0]} [--no-timeout]; not {' '.join(sys.argv[1:])}", file=sys.stderr)
        sys.exit(2)
    with_timeout = sys.argv[1:] == []
    label = "redis-py" + ("" if with_timeout else " (no timeout)")
    sys.exit(holder.serve(label, lambda spec: make(spec, with_timeout)))
