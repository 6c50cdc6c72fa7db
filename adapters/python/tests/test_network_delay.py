"""The network-delay story, told to two libraries without the matrix: every
reply to client-A comes three TTLs late (its requests are not delayed, so
its commands run at once). What the libraries make of a late "OK" is theirs
to decide, and the stories' predictions in NOTES.md rest on it:

- redis-py waits for the reply (its socket timeout is 5 s) and reports the
  lock as taken, with no look at how long that took: client-A holds a lock
  whose key expired before it heard of it.
- pottery measures the time to its quorum: the late quorum left no validity,
  so it refuses; its release then reaches masters whose keys have already
  expired (Redis's own record says `expired`, not `del`).
"""

import queue
import socket
import threading
import time
import unittest

from support import Adapter, KeyEvents, RedisServer, spec, until

TTL_MS = 300
DELAY = 3 * TTL_MS / 1000


class DelayingProxy:
    """Forwards one port to a server; replies wait `delay` seconds each
    (in order, each from when it arrived), requests pass at once."""

    def __init__(self, test: unittest.TestCase, upstream_port: int):
        self.delay = 0.0
        self.upstream = upstream_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}"
        self.sockets = [self.listener]
        test.addCleanup(self.close)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.upstream))
            self.sockets += [client, server]
            threading.Thread(target=self._pipe, args=(client, server), daemon=True).start()
            held: queue.Queue = queue.Queue()
            threading.Thread(target=self._hold, args=(server, held), daemon=True).start()
            threading.Thread(target=self._deliver, args=(held, client), daemon=True).start()

    @staticmethod
    def _pipe(source, target):
        try:
            while chunk := source.recv(65536):
                target.sendall(chunk)
        except OSError:
            pass

    def _hold(self, source, held):
        try:
            while chunk := source.recv(65536):
                held.put((time.monotonic() + self.delay, chunk))
        except OSError:
            pass

    @staticmethod
    def _deliver(held, target):
        try:
            while True:
                due, chunk = held.get()
                time.sleep(max(0.0, due - time.monotonic()))
                target.sendall(chunk)
        except OSError:
            pass

    def close(self):
        for s in self.sockets:
            s.close()


class NetworkDelayTest(unittest.TestCase):
    def setUp(self):
        self.db = RedisServer(self)
        self.db.client.set("stock", 10)

    def test_redis_py_reports_a_lock_whose_key_expired_before_the_reply(self):
        lock = RedisServer(self)
        proxy = DelayingProxy(self, lock.port)
        a = Adapter(self, "redis_py.py", spec("client-A", [proxy.url], self.db.url, ttl_ms=TTL_MS))
        # Once with a healthy network: connections open, scripts cached.
        self.assertTrue(a.ask("acquire 1000").startswith("acquired "))
        self.assertEqual(a.ask("release"), "released deleted")
        proxy.delay = DELAY
        asked = time.monotonic()
        answer = a.ask("acquire 0")
        waited = time.monotonic() - asked
        self.assertTrue(answer.startswith("acquired "), answer)
        self.assertGreaterEqual(waited, DELAY)
        self.assertIsNone(lock.client.get("lock:stock"), "its key had expired when it was told")

    def test_pottery_refuses_a_late_quorum_and_its_keys_expire(self):
        masters = [RedisServer(self) for _ in range(3)]
        proxies = [DelayingProxy(self, m.port) for m in masters]
        events = [KeyEvents(self, m, "redlock:lock:stock") for m in masters]
        the_spec = spec("client-A", [p.url for p in proxies], self.db.url, ttl_ms=TTL_MS)
        a = Adapter(self, "pottery_redlock.py", the_spec)
        self.assertTrue(a.ask("acquire 1000").startswith("acquired "))
        self.assertEqual(a.ask("release"), "released deleted")
        for proxy in proxies:
            proxy.delay = DELAY
        asked = time.monotonic()
        self.assertEqual(a.ask("acquire 0"), "not-acquired")
        self.assertGreaterEqual(time.monotonic() - asked, DELAY)
        # Its keys went by their TTL, on every master, before its release came.
        until(lambda: all(e.times("expired") for e in events), 5, "the three keys to expire")
        self.assertEqual([m.client.get("redlock:lock:stock") for m in masters], [None] * 3)


if __name__ == "__main__":
    unittest.main()
