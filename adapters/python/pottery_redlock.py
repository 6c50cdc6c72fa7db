"""pottery's `Redlock` (pottery 3.0.1) as a lockstages holder.

Configured as pottery's README shows it: `Redlock(key=..., masters={...},
auto_release_time=...)` over one redis-py client per master (the spec's
`lock_urls`, Redlock's independent masters), with `auto_release_time` the
spec's TTL in seconds (pottery sends `SET key uuid4 NX PX <ms>`, so a TTL
under a second is kept as it is). `acquire <ms>` waits with
`acquire(timeout=...)`; pottery retries after a random 0-200 ms sleep.

pottery keeps its lock at `redlock:<key>`, not at the spec's key: the
servers' record shows `redlock:lock:stock` for this row.
"""

import sys

from pottery import Redlock
from pottery.exceptions import ReleaseUnlockedLock

import lockstages_holder as holder


def make(spec: holder.Spec) -> holder.Library:
    masters = {holder.redis_client(url, spec.name) for url in spec.lock_urls}

    def acquire(wait):
        # A new Redlock per critical section, as `with Redlock(...)` makes one.
        lock = Redlock(key=spec.key, masters=masters, auto_release_time=spec.ttl)
        got = lock.acquire(blocking=False) if wait == 0 else lock.acquire(timeout=wait)
        # Its uuid4 value (`_uuid`, read, never set): what the masters hold.
        return holder.Held(value=lock._uuid, lock=lock) if got else None

    def release(held):
        try:
            held.lock.release()
        except ReleaseUnlockedLock:
            # Fewer than a majority of masters held our value (or answered).
            # Its compare-and-delete deleted nothing, stage 5's answer
            # (`not-owner` would say this client held no lock at all).
            return "released nothing"
        return "released deleted"

    return holder.Library(acquire=acquire, release=release)


if __name__ == "__main__":
    sys.exit(holder.serve("pottery Redlock", make))
