"""What the adapter tests share: real servers on free ports, and an adapter
run as the harness runs it, a process of its own driven over its stdin.

Every server and every adapter is stopped by a cleanup the test registers
as it starts them, so nothing outlives a test, a failed one included.
Waits are for events (a reply, a key's state) with generous deadlines,
never fixed sleeps that a loaded machine could outrun.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import redis

HERE = os.path.dirname(os.path.abspath(__file__))
ADAPTERS = os.path.dirname(HERE)
# An answer that takes longer is an adapter that hangs: the Rust parent
# gives up after 20 s too.
ANSWER_WITHIN = 20.0


def die_with_parent():
    """Runs in each child before it starts: the kernel kills it when this
    test process dies, however it dies (a Ctrl-C that skips the cleanups,
    a `kill -9`), so no server or adapter outlives the tests."""
    import ctypes

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def until(condition, within: float, what: str):
    """Polls `condition` until it is true; fails the test after `within` s."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError(f"not within {within}s: {what}")


class RedisServer:
    """A real redis-server on a free loopback port, in a temp dir."""

    def __init__(self, test: unittest.TestCase):
        if shutil.which("redis-server") is None:
            test.skipTest("redis-server is not installed (apt-get install redis-server)")
        self.dir = tempfile.mkdtemp(prefix="lockstages-py-redis-")
        test.addCleanup(shutil.rmtree, self.dir, True)
        self.port = free_port()
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", self.dir,
             # Keyspace events, so that a test can wait for an expiry or a
             # renewal instead of sleeping past it.
             "--notify-keyspace-events", "KEA"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=die_with_parent,
        )
        test.addCleanup(self.stop)
        self.url = f"redis://127.0.0.1:{self.port}"
        self.client = redis.Redis(host="127.0.0.1", port=self.port, decode_responses=True)
        until(self._answers, 10, f"redis-server on port {self.port} to answer")

    def _answers(self):
        try:
            return self.client.ping()
        except redis.ConnectionError:
            return False

    def stop(self):
        self.process.kill()
        self.process.wait()

    def client_names(self) -> set:
        return {c["name"] for c in self.client.client_list()}


def spec(name, lock_urls, db_url, ttl_ms=300, fencing="reads-and-writes", request_ids=False,
         key="lock:stock") -> dict:
    """A HolderSpec as harness/src/holder.rs writes it (serde's durations)."""

    def duration(ms):
        return {"secs": ms // 1000, "nanos": (ms % 1000) * 1_000_000}

    return {
        "stage": "",
        "name": name,
        "lock_urls": lock_urls,
        "db_url": db_url,
        "key": key,
        "ttl": duration(ttl_ms),
        "retry_interval": duration(100),
        "watchdog_timeout": duration(ttl_ms),
        "drift_factor": 0.01,
        "fencing": fencing,
        "request_ids": request_ids,
    }


class Adapter:
    """One adapter process, as the harness starts it: the spec in
    LOCKSTAGES_HOLDER, requests on stdin, `@holder` answers on stdout."""

    def __init__(self, test: unittest.TestCase, script: str, the_spec, args=(), stderr=None):
        """`stderr`: a file for what the adapter and its library print there
        (inherited when None)."""
        env = dict(os.environ)
        env["LOCKSTAGES_HOLDER"] = the_spec if isinstance(the_spec, str) else json.dumps(the_spec)
        self.process = subprocess.Popen(
            [sys.executable, os.path.join(ADAPTERS, script), *args],
            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True,
            bufsize=1, preexec_fn=die_with_parent,
        )
        test.addCleanup(self.stop)
        self.answers: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            self.answers.put(line.rstrip("\n"))
        self.answers.put(None)

    def send(self, request: str):
        self.process.stdin.write(request + "\n")
        self.process.stdin.flush()

    def answer(self, within: float = ANSWER_WITHIN) -> str:
        """The next answer, without its `@holder ` prefix."""
        try:
            line = self.answers.get(timeout=within)
        except queue.Empty:
            raise AssertionError(f"no answer within {within}s") from None
        if line is None:
            raise AssertionError(f"the adapter exited (status {self.process.wait()})")
        if not line.startswith("@holder "):
            raise AssertionError(f"an answer without the @holder prefix: {line!r}")
        return line[len("@holder "):]

    def ask(self, request: str) -> str:
        self.send(request)
        return self.answer()

    def freeze(self):
        os.kill(self.process.pid, signal.SIGSTOP)

    def thaw(self):
        os.kill(self.process.pid, signal.SIGCONT)

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()  # SIGKILL reaches a frozen process too
        self.process.wait()
        self.process.stdin.close()
        self.process.stdout.close()


# Debian's ZooKeeper, as stage 9 runs it (harness/src/server/zookeeper.rs).
ZOOKEEPER_JAR = "/usr/share/java/zookeeper.jar"
SLF4J_SIMPLE = "/usr/share/java/slf4j-simple.jar"


class ZooKeeperServer:
    """One standalone ZooKeeper server (stage 9's jar and `java`, its tick of
    100 ms) on a free loopback port. A test of the adapter needs one member:
    the ensemble's own faults are the matrix's to show."""

    def __init__(self, test: unittest.TestCase):
        if shutil.which("java") is None or not os.path.exists(ZOOKEEPER_JAR):
            test.skipTest(f"no java or no {ZOOKEEPER_JAR} (apt-get install zookeeper)")
        self.dir = tempfile.mkdtemp(prefix="lockstages-py-zk-")
        test.addCleanup(shutil.rmtree, self.dir, True)
        self.port = free_port()
        config = os.path.join(self.dir, "zoo.cfg")
        with open(config, "w") as f:
            f.write(
                f"tickTime=100\ndataDir={self.dir}/data\nclientPort={self.port}\n"
                "clientPortAddress=127.0.0.1\nadmin.enableServer=false\n"
                "maxSessionTimeout=60000\n4lw.commands.whitelist=srvr,ruok\n"
            )
        classpath = ZOOKEEPER_JAR
        if os.path.exists(SLF4J_SIMPLE):
            classpath += ":" + SLF4J_SIMPLE
        self.log = open(os.path.join(self.dir, "zookeeper.log"), "w")
        self.process = subprocess.Popen(
            ["java", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             "-Djava.net.preferIPv4Stack=true", "-cp", classpath,
             "org.apache.zookeeper.server.quorum.QuorumPeerMain", config],
            stdout=self.log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent,
        )
        test.addCleanup(self.stop)
        self.url = f"zk://127.0.0.1:{self.port}"
        until(self._serves, 90, f"ZooKeeper on port {self.port} to serve (log: {self.log.name})")

    def _serves(self):
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"srvr")
                return b"Mode: standalone" in s.recv(4096)
        except OSError:
            return False

    def stop(self):
        self.process.kill()
        self.process.wait()
        self.log.close()


class KeyEvents:
    """The keyspace events of one key on one server (`set`, `expire`,
    `expired`, `del`…), each with the monotonic time it came: what a test
    waits on instead of sleeping, and the server's own record of who did
    what to the lock."""

    def __init__(self, test: unittest.TestCase, server: RedisServer, key: str):
        self.events: list = []
        channel = f"__keyspace@0__:{key}"
        self.pubsub = server.client.pubsub()
        self.pubsub.subscribe(channel)
        self.stop = threading.Event()
        thread = threading.Thread(target=self._collect, daemon=True)
        thread.start()

        def close():
            self.stop.set()
            thread.join()
            self.pubsub.close()

        test.addCleanup(close)
        until(lambda: server.client.pubsub_numsub(channel)[0][1] == 1, 5,
              f"a subscription to {key}")

    def _collect(self):
        while not self.stop.is_set():
            message = self.pubsub.get_message(timeout=0.05)
            if message and message["type"] == "message":
                self.events.append((message["data"], time.monotonic()))

    def times(self, event: str) -> list:
        return [t for word, t in self.events if word == event]
