"""The holder protocol, for lock libraries written in Python.

lockstages puts a lock through its faults by running each client as a
process of its own (so that `kill -9` and SIGSTOP act on the real thing)
and driving it line by line. The Rust side is `harness/src/holder.rs`; this
module is the same protocol for a Python library, so that each adapter
beside it is only the few lines that call its library's public API.

The protocol, as this module serves it:

- The whole configuration arrives as JSON in the environment variable
  `LOCKSTAGES_HOLDER` (a `HolderSpec`): the client's `name`, the lock's
  `lock_urls` and `key`, the stock's `db_url`, the `ttl` and the other times
  (serde's `{"secs": .., "nanos": ..}`), the resource's `fencing` mode and
  whether it checks `request_ids`.
- Requests come on stdin, one a line; every answer is one line on stdout
  starting `@holder `:

  | request               | answer                                                |
  |-----------------------|-------------------------------------------------------|
  | `ping`                | `pong`: asked once, when the holder has started       |
  | `acquire <ms>`        | `acquired <value> <token or ->` or `not-acquired`      |
  | `read`                | `stock <n>`                                           |
  | `sell <read>`         | `sold <read>`, `sold-out`, `rejected <token>`,        |
  |                       | `duplicate`                                           |
  | `release`             | `released deleted`, `released nothing` (the library  |
  |                       | said the lock was not ours: nothing deleted)          |
  | `wait-lost <ms>`      | `lost yes` or `lost no`                               |
  | `stall <point> <ms>`  | `stalling`                                            |

  A lock's server that refused a command or could not be reached, as the library
  reports it (redis-py's `ConnectionError`, `TimeoutError` or an error
  reply such as `NOREPLICAS` or `OOM`; kazoo's lost connection or expired
  session), is `@holder failed <what>`: the lock's failure, which the story
  hears as it hears a stage's Redis error. Anything else wrong (a malformed
  request, any other exception of a library) is `@holder error <what>`,
  never a made-up answer. A library that cannot take part in the story at
  all (a topology it does not take) says so once, before any request:
  `@holder n/a <reason>` (raise `NotApplicable`).

What this module cannot do is stop a library *inside* its own code: the
Rust stages have fault points between two commands of their acquire or
release, a library we only call has two places we can reach, the moment
its `acquire` has returned (`after-acquire`) and the moment before we call
its `release` (`before-release`). A stall at any other point is an error
that says so.

`sell` does on the stock what the Rust holder's sale does
(`lockstages_stock.py`, harness/src/workload.rs's scripts word for word).

Every Redis connection the holder opens, the library's and the stock's, is
named with `CLIENT SETNAME <name>` (redis-py's `client_name=`), because the
harness tells clients apart by that name: its proxies cut or delay one
client's connections, its `MONITOR` timeline says who sent what.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Optional
from urllib.parse import urlsplit

from lockstages_stock import Stock

PREFIX = "@holder "
ENV_SPEC = "LOCKSTAGES_HOLDER"
# The fault points a library we only call has (see the module docs).
AFTER_ACQUIRE = "after-acquire"
BEFORE_RELEASE = "before-release"
# Every point the Rust side knows (lockcore's `Point::ALL`): a stall at one of
# these that a library cannot reach is told apart from a misspelt point.
KNOWN_POINTS = (
    "after-setnx",
    "after-expire",
    AFTER_ACQUIRE,
    "between-get-and-del",
    "in-critical-section",
    BEFORE_RELEASE,
)
FENCING_MODES = ("write-only", "reads-and-writes", "none")
# The requests that talk to the lock's servers, not the stock's.
LOCK_REQUESTS = ("acquire", "release", "wait-lost")
SENTINEL_SCHEME = "redis+sentinel://"
CLUSTER_SCHEME = "redis+cluster://"


class HolderError(Exception):
    """An error to answer as `@holder error ...`: its text says what was wrong."""


class NotApplicable(Exception):
    """The library cannot take part in the story (a topology it does not
    take): answered `@holder n/a <reason>`, and the cell is n/a."""


# --------------------------------------------------------------------------
# The spec


def _duration(raw: dict, name: str) -> float:
    """A serde `Duration` (`{"secs": 1, "nanos": 500000000}`) in seconds."""
    value = raw.get(name)
    if not isinstance(value, dict) or not {"secs", "nanos"} <= value.keys():
        raise HolderError(
            f"malformed {ENV_SPEC}: `{name}` must be a duration "
            f'{{"secs": .., "nanos": ..}}, not {json.dumps(value)}'
        )
    secs, nanos = value["secs"], value["nanos"]
    if not all(isinstance(n, int) and n >= 0 for n in (secs, nanos)):
        raise HolderError(f"malformed {ENV_SPEC}: `{name}` has a negative or non-integer part")
    return secs + nanos / 1e9


@dataclass
class Spec:
    """The `HolderSpec` the parent sent: everything this holder runs with."""

    name: str
    lock_urls: list
    db_url: str
    key: str
    ttl: float
    retry_interval: float
    watchdog_timeout: float
    drift_factor: float
    fencing: str
    request_ids: bool
    stage: str = ""

    @classmethod
    def from_json(cls, text: str) -> "Spec":
        """Reads a spec; anything missing or of the wrong kind is a `HolderError`."""
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as e:
            raise HolderError(f"malformed {ENV_SPEC}: {e}") from None
        if not isinstance(raw, dict):
            raise HolderError(f"malformed {ENV_SPEC}: not a JSON object")

        def field_of(name, kind, default=None):
            if name not in raw:
                if default is not None:
                    return default
                raise HolderError(f"malformed {ENV_SPEC}: missing field `{name}`")
            value = raw[name]
            if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
                raise HolderError(f"malformed {ENV_SPEC}: `{name}` is {json.dumps(value)}")
            return value

        spec = cls(
            name=field_of("name", str),
            lock_urls=field_of("lock_urls", list),
            db_url=field_of("db_url", str),
            key=field_of("key", str),
            ttl=_duration(raw, "ttl"),
            retry_interval=_duration(raw, "retry_interval"),
            watchdog_timeout=_duration(raw, "watchdog_timeout"),
            drift_factor=float(field_of("drift_factor", (int, float))),
            fencing=field_of("fencing", str),
            request_ids=field_of("request_ids", bool, False),
            stage=field_of("stage", str, ""),
        )
        if not spec.lock_urls or not all(isinstance(u, str) for u in spec.lock_urls):
            raise HolderError(f"malformed {ENV_SPEC}: `lock_urls` must be a list of URLs")
        if spec.fencing not in FENCING_MODES:
            raise HolderError(
                f"`{spec.fencing}` is not a fencing mode (one of {', '.join(FENCING_MODES)})"
            )
        return spec


# --------------------------------------------------------------------------
# Named connections


def redis_client(url: str, name: str):
    """A redis-py client of the server `url` names, every connection of it
    named `name`. A Sentinel URL (`redis+sentinel://h:p,h:p/master`) is asked
    for its master once, now, as lockcore's `resolve` does: a client made
    before a failover stays with the old master, as the Rust clients do. A
    cluster URL (`redis+cluster://h:p,h:p`) gives redis-py's cluster client.
    """
    import redis
    from redis.cluster import ClusterNode, RedisCluster
    from redis.sentinel import Sentinel

    if url.startswith(SENTINEL_SCHEME):
        hosts, _, service = url[len(SENTINEL_SCHEME):].partition("/")
        if not hosts or not service:
            raise HolderError(f"`{url}`: expected {SENTINEL_SCHEME}host:port,host:port/master-name")
        sentinel = Sentinel(
            [_host_port(h, url) for h in hosts.split(",")],
            sentinel_kwargs={"client_name": name, "socket_timeout": 2},
        )
        host, port = sentinel.discover_master(service)
        return redis.Redis(host=host, port=port, client_name=name)
    if url.startswith(CLUSTER_SCHEME):
        nodes = [ClusterNode(*_host_port(h, url)) for h in url[len(CLUSTER_SCHEME):].split(",")]
        return RedisCluster(startup_nodes=nodes, client_name=name)
    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise HolderError(f"`{url}` is not a Redis URL (redis://host:port)")
    return redis.Redis.from_url(url, client_name=name)


def _host_port(text: str, url: str):
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise HolderError(f"`{text}` in `{url}` is not host:port")
    return host, int(port)


def zookeeper_hosts(urls: list) -> str:
    """`zk://a:1`, `zk://b:2` as ZooKeeper's connect string `a:1,b:2`, with
    the path they share (`zk://a:1/runs/3`) as its chroot, as stage 9 reads
    them (`stage9-zookeeper`'s `connect_string`)."""
    members, paths = [], set()
    for url in urls:
        if not url.startswith("zk://"):
            raise HolderError(f"a ZooKeeper lock needs members as zk://host:port, not `{url}`")
        parts = urlsplit(url)
        members.append(parts.netloc)
        paths.add(parts.path.rstrip("/"))
    if len(paths) > 1:
        raise HolderError(f"the ZooKeeper URLs name different paths: {', '.join(urls)}")
    return ",".join(members) + paths.pop()


# --------------------------------------------------------------------------
# What an adapter provides


@dataclass
class Held:
    """A lock the library granted: the value it stored (what the harness
    compares with the servers' record), the fencing token if the library
    has one, and the library's own lock object."""

    value: str
    token: Optional[int] = None
    lock: object = None


@dataclass
class Library:
    """One library, as its adapter wraps it.

    `acquire(wait_seconds)` returns a `Held` or None (not granted in time);
    `release(held)` returns `released deleted` or `released nothing` (the
    library found the lock not ours, or gone, and deleted nothing). `lost(held, within_seconds)` says whether the library
    signalled that the lock was lost; a library with no such signal says no
    at once, as a Rust stage without one does.
    """

    acquire: Callable[[float], Optional[Held]]
    release: Callable[[Held], str]
    lost: Callable[[Held, float], bool] = field(default=lambda held, within: False)


# --------------------------------------------------------------------------
# Serving


def _number(word: str, line: str) -> int:
    try:
        return int(word)
    except ValueError:
        raise HolderError(f"`{word}` is not a number in `{line}`") from None


def _millis(word: str, line: str) -> float:
    ms = _number(word, line)
    if ms < 0:
        raise HolderError(f"`{word}` is a negative time in `{line}`")
    return ms / 1000


class Holder:
    """One holder process: its library, its stock, the lock it holds, and
    the stalls the parent planned."""

    def __init__(self, library: Library, stock: Stock):
        self.library = library
        self.stock = stock
        self.held: Optional[Held] = None
        # point -> the monotonic time its gate opens. As in the Rust holder,
        # a stall's time runs from the request, not from reaching the point.
        self.stalls: dict = {}

    def reach(self, point: str) -> None:
        """Stops here until the stall planned at `point`, if any, is over."""
        opens = self.stalls.pop(point, None)
        if opens is not None:
            time.sleep(max(0.0, opens - time.monotonic()))

    def need_held(self, line: str) -> Held:
        if self.held is None:
            raise HolderError(f"`{line}` needs the lock to be held first")
        return self.held

    def handle(self, line: str) -> str:
        """The answer to one request line (without the prefix)."""
        words = line.split()
        match words:
            case ["ping"]:
                return "pong"
            case ["acquire", ms]:
                held = self.library.acquire(_millis(ms, line))
                if held is None:
                    return "not-acquired"
                self.reach(AFTER_ACQUIRE)
                # The Rust holder, too, keeps only the last lock it took.
                self.held = held
                token = "-" if held.token is None else str(held.token)
                return f"acquired {held.value} {token}"
            case ["read"]:
                return f"stock {self.stock.read(self.need_held(line).token)}"
            case ["sell", read]:
                held = self.need_held(line)
                return self.stock.sell(_number(read, line), held.token)
            case ["release"]:
                held = self.need_held(line)
                self.reach(BEFORE_RELEASE)
                return self.library.release(held)
            case ["wait-lost", ms]:
                held = self.need_held(line)
                return "lost yes" if self.library.lost(held, _millis(ms, line)) else "lost no"
            case ["stall", point, ms]:
                if point not in KNOWN_POINTS:
                    raise HolderError(f"unknown fault point `{point}`")
                if point not in (AFTER_ACQUIRE, BEFORE_RELEASE):
                    raise HolderError(
                        f"a library cannot be stopped at `{point}`: its insides are not ours "
                        f"to hook; it stops at {AFTER_ACQUIRE} and {BEFORE_RELEASE}"
                    )
                self.stalls[point] = time.monotonic() + _millis(ms, line)
                return "stalling"
            case _:
                raise HolderError(f"unknown request `{line}`")


def answer(text: str) -> None:
    # One line each, whatever the text held: a newline in an exception's
    # message would otherwise be read as a second answer.
    sys.stdout.write(PREFIX + " ".join(text.split()) + "\n")
    sys.stdout.flush()


def server_failure(error: BaseException) -> bool:
    """Whether `error` is the lock's server refusing or out of reach, as
    the library reports it (not a bug of the library or of the adapter)."""
    from redis.exceptions import ConnectionError, ResponseError, TimeoutError

    if isinstance(error, (ConnectionError, TimeoutError, ResponseError)):
        return True
    kazoo = sys.modules.get("kazoo.exceptions")
    return kazoo is not None and isinstance(
        error, (kazoo.ConnectionLoss, kazoo.SessionExpiredError, kazoo.OperationTimeoutError)
    )


def describe(error: BaseException) -> str:
    """An exception as an error answer: its type says which library raised it."""
    if isinstance(error, HolderError):
        return str(error)
    return f"{type(error).__module__}.{type(error).__name__}: {error}"


def serve(label: str, make_library: Callable[[Spec], Library]) -> int:
    """Serves the protocol on stdin/stdout with the library `make_library`
    wraps; returns the exit status. `label` names the adapter in errors."""
    # Ctrl-C reaches the whole process group, the holders too: a holder
    # ends at once and quietly, as the Rust one does, not with a traceback.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    text = os.environ.get(ENV_SPEC)
    if text is None:
        print(f"{label}: not started as a holder process ({ENV_SPEC} is not set)", file=sys.stderr)
        return 2
    try:
        spec = Spec.from_json(text)
        # A library's own warnings (kazoo's "Connection dropped", pottery's
        # errors from a master) stay on stderr, which the harness shows,
        # marked with whose they are.
        logging.basicConfig(
            level=logging.WARNING,
            format=f"{spec.name} ({label}) %(name)s %(levelname)s: %(message)s",
        )
        db = redis_client(spec.db_url, spec.name)
        stock = Stock(db, spec.key, spec.name, spec.fencing, spec.request_ids)
        holder = Holder(make_library(spec), stock)
    except NotApplicable as e:
        answer(f"n/a {e}")
        return 2
    except Exception as e:  # noqa: BLE001 - every failure becomes an answer
        # Answered before any request: the parent reads it as the answer to
        # its first one, which names this holder.
        answer(f"error {label}: {describe(e)}")
        return 2
    for raw in sys.stdin:
        line = raw.strip()
        if not line:
            continue
        try:
            reply = holder.handle(line)
        except Exception as e:  # noqa: BLE001
            # The lock's server failing is the lock's failure; the stock's
            # server is never faulted, so its failing is an error.
            lock_request = line.split()[0] in LOCK_REQUESTS
            kind = "failed" if lock_request and server_failure(e) else "error"
            reply = f"{kind} {label}: {describe(e)}"
        answer(reply)
    return 0
