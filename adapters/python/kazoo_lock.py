"""kazoo's `Lock` (kazoo 2.11.0), ZooKeeper's lock recipe in Python, as a
lockstages holder, on the ensemble stage 9 runs on.

Configured as kazoo's documentation shows it: `KazooClient(hosts=...)`,
`start()`, then `zk.Lock(path, identifier)` and `acquire(timeout=...)`. The
spec's `lock_urls` are the members as stage 9 names them (`zk://host:port`,
one each); the lock path is stage 9's, `/lockstages/<key>`; the identifier
written in our node is the client's name (what `Lock.contenders()` lists).

ZooKeeper has no TTL: the session is. As stage 9 does, the spec's TTL is the
session timeout (`KazooClient(timeout=...)`, seconds as a float; the
ensemble grants no less than two of its ticks).

The fencing token is stage 9's: our node's `czxid`, the id of the
transaction that created it, read with `exists` once the lock is granted
(kazoo itself hands out none). `wait-lost` answers from kazoo's session
listener: `lost yes` once the session is LOST (expired), as stage 9's
lost-lock signal fires when its session expires.
"""

import sys
import threading

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import LockTimeout, SessionExpiredError

import lockstages_holder as holder

# stage9-zookeeper's ROOT: where its lock paths live.
ROOT = "/lockstages"


def make(spec: holder.Spec) -> holder.Library:
    zk = KazooClient(hosts=holder.zookeeper_hosts(spec.lock_urls), timeout=spec.ttl)
    zk.start()
    path = f"{ROOT}/{spec.key}"
    # Set when the session is lost; a new one for each lock taken.
    lost = {"event": threading.Event()}

    def on_state(state):
        if state == KazooState.LOST:
            lost["event"].set()
        return False  # stay registered

    zk.add_listener(on_state)

    def acquire(wait):
        lost["event"] = threading.Event()
        # A new Lock per critical section: kazoo's Lock is not reentrant.
        lock = zk.Lock(path, spec.name)
        try:
            got = lock.acquire(blocking=False) if wait == 0 else lock.acquire(timeout=wait)
        except LockTimeout:
            got = False
        if not got:
            return None
        node = f"{path}/{lock.node}"
        stat = zk.exists(node)
        if stat is None:
            raise holder.HolderError(f"kazoo granted the lock, but its node {node} is gone")
        return holder.Held(value=node, token=stat.czxid, lock=(lock, lost["event"]))

    def release(held):
        lock, _ = held.lock
        try:
            # kazoo's release ignores a node already gone (its session
            # expired): asking first tells that apart from a release that
            # deleted it.
            there = zk.exists(held.value) is not None
            lock.release()
        except SessionExpiredError:
            # The session our node belonged to is over, and the ensemble
            # deleted the node with it. kazoo raises this to its caller
            # (until its new session is up); for the record, nothing of
            # ours was left to delete.
            return "released nothing"
        return "released deleted" if there else "released nothing"

    def lost_within(held, within):
        _, event = held.lock
        return event.wait(within)

    return holder.Library(acquire=acquire, release=release, lost=lost_within)


if __name__ == "__main__":
    sys.exit(holder.serve("kazoo Lock", make))
