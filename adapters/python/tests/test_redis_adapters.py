"""Each Redis library's adapter, driven as the harness drives a holder,
against real redis-servers: a purchase, a refusal, an expiry, a frozen
holder, the two fault points, and the names on the connections.

The stock lives on a server of its own, as in the matrix, so that what the
servers record about the lock is only the library's doing.
"""

import tempfile
import time
import unittest

from support import Adapter, KeyEvents, RedisServer, spec, until


class RedisLibrary:
    """The tests every Redis adapter passes; a subclass names the adapter."""

    script = ""
    args: tuple = ()
    # Where the library keeps the lock for the spec's key `lock:stock`.
    lock_key = "lock:stock"
    masters = 1
    # The TTL the library actually runs at (whole seconds for some).
    ttl_ms = 300
    renews = False

    def setUp(self):
        self.db = RedisServer(self)
        self.locks = [RedisServer(self) for _ in range(self.masters)]
        self.db.client.set("stock", 10)

    def holder(self, name, **options):
        the_spec = spec(name, [s.url for s in self.locks], self.db.url, **options)
        return Adapter(self, self.script, the_spec, self.args)

    def acquired(self, answer):
        words = answer.split()
        self.assertEqual(words[0], "acquired", answer)
        self.assertEqual(words[2], "-", "a Redis library has no fencing token")
        return words[1]

    def values(self):
        return [s.client.get(self.lock_key) for s in self.locks]

    def held_everywhere(self, value):
        """Waits until every master holds `value` (None: the lock is gone
        from every master). A Redlock answers once a majority has: the last
        master's command may still be on its way (pottery does not wait)."""
        until(lambda: self.values() == [value] * self.masters, 5,
              f"{value} on every master, not {self.values()}")
        return value

    def test_a_purchase_is_answered_recorded_and_named(self):
        a = self.holder("client-A")
        # The value answered is the one the servers hold.
        self.held_everywhere(self.acquired(a.ask("acquire 2000")))
        self.assertEqual(a.ask("read"), "stock 10")
        self.assertEqual(a.ask("sell 10"), "sold 10")
        # Every connection the holder opened carries its name.
        for server in [self.db, *self.locks]:
            self.assertIn("client-A", server.client_names())
        self.assertEqual(self.db.client.get("stock"), "9")
        self.assertEqual(self.db.client.lrange("orders", 0, -1), ["client-A"])
        self.assertEqual(a.ask("release"), "released deleted")
        self.held_everywhere(None)

    def test_a_held_lock_is_refused_to_another_client(self):
        a, b = self.holder("client-A", ttl_ms=5000), self.holder("client-B", ttl_ms=5000)
        self.acquired(a.ask("acquire 2000"))
        self.assertEqual(b.ask("acquire 0"), "not-acquired")
        self.assertEqual(a.ask("release"), "released deleted")
        self.acquired(b.ask("acquire 2000"))

    def test_a_frozen_holder_sells_after_its_lock_went_to_another(self):
        # The gc-pause story: the lock expires while its holder is frozen
        # (renewals freeze with it), the next client buys, the first wakes
        # and writes the stock it read before: one item sold twice.
        a, b = self.holder("client-A"), self.holder("client-B")
        self.acquired(a.ask("acquire 2000"))
        self.assertEqual(a.ask("read"), "stock 10")
        a.freeze()
        self.acquired(b.ask(f"acquire {10 * self.ttl_ms}"))
        self.assertEqual(b.ask("read"), "stock 10")
        self.assertEqual(b.ask("sell 10"), "sold 10")
        a.thaw()
        self.assertEqual(a.ask("sell 10"), "sold 10")
        self.assertEqual(self.db.client.lrange("orders", 0, -1), ["client-B", "client-A"])
        self.assertEqual(self.db.client.get("stock"), "9", "two sales, one item left the stock")
        # Its release compares the value: client-B's lock is left alone.
        self.assertEqual(a.ask("release"), "released nothing")
        self.assertNotIn(None, self.values())

    def test_a_checking_resource_gets_a_request_id_with_each_purchase(self):
        a = self.holder("client-A", request_ids=True)
        self.acquired(a.ask("acquire 2000"))
        self.assertEqual(a.ask("sell 10"), "sold 10")
        self.assertEqual(self.db.client.lrange("orders", 0, -1), ["client-A client-A#1"])

    def test_a_stall_before_release_holds_the_release_back(self):
        a = self.holder("client-A", ttl_ms=5000)
        value = self.held_everywhere(self.acquired(a.ask("acquire 2000")))
        # The stall's time runs from its request, as in the Rust holder.
        asked = time.monotonic()
        self.assertEqual(a.ask("stall before-release 600"), "stalling")
        a.send("release")
        # Still held while the release waits at its point.
        self.assertEqual(self.values(), [value] * self.masters)
        self.assertEqual(a.answer(), "released deleted")
        self.assertGreaterEqual(time.monotonic() - asked, 0.6)
        self.held_everywhere(None)

    def test_a_stall_after_acquire_holds_the_answer_back_with_the_lock_taken(self):
        a = self.holder("client-A", ttl_ms=5000)
        asked = time.monotonic()
        self.assertEqual(a.ask("stall after-acquire 600"), "stalling")
        a.send("acquire 2000")
        until(lambda: None not in self.values(), 5, "the lock to be taken")
        self.assertTrue(a.answers.empty(), "answered before its stall was over")
        value = self.acquired(a.answer())
        self.assertGreaterEqual(time.monotonic() - asked, 0.6)
        self.held_everywhere(value)


class ExpiringLibrary(RedisLibrary):
    """A library that does not renew: its lock goes at its TTL."""

    def test_an_expired_lock_goes_to_another_and_the_late_release_is_refused(self):
        a, b = self.holder("client-A"), self.holder("client-B")
        self.acquired(a.ask("acquire 2000"))
        until(lambda: self.values() == [None] * self.masters, 10 * self.ttl_ms / 1000,
              "the lock to expire")
        value_b = self.held_everywhere(self.acquired(b.ask("acquire 2000")))
        self.assertEqual(a.ask("release"), "released nothing")
        self.assertEqual(self.values(), [value_b] * self.masters)


class NeverExpiring:
    """The libraries' own default, no TTL at all: a holder that dies keeps
    the lock for ever (the killed-holder story's DEADLOCK)."""

    script = ""
    args: tuple = ()

    def test_a_killed_holders_lock_stays_for_ever(self):
        db, lock = RedisServer(self), RedisServer(self)

        def holder(name):
            return Adapter(self, self.script, spec(name, [lock.url], db.url), self.args)

        a = holder("client-A")
        self.assertTrue(a.ask("acquire 1000").startswith("acquired "))
        self.assertEqual(lock.client.pttl("lock:stock"), -1, "the key has no TTL")
        a.stop()  # kill -9
        b = holder("client-B")
        self.assertEqual(b.ask("acquire 2000"), "not-acquired")
        self.assertEqual(lock.client.pttl("lock:stock"), -1)


class RedisPyNoTimeoutTest(NeverExpiring, unittest.TestCase):
    script = "redis_py.py"
    args = ("--no-timeout",)


class PythonRedisLockNoExpireTest(NeverExpiring, unittest.TestCase):
    script = "python_redis_lock.py"
    args = ("--no-expire",)


class RedisPyTest(ExpiringLibrary, unittest.TestCase):
    script = "redis_py.py"


class PythonRedisLockTest(ExpiringLibrary, unittest.TestCase):
    script = "python_redis_lock.py"
    ttl_ms = 1000

    def test_a_ttl_under_a_second_runs_as_one_second_not_as_no_expiry(self):
        a = self.holder("client-A", ttl_ms=300)
        self.acquired(a.ask("acquire 2000"))
        pttl = self.locks[0].client.pttl(self.lock_key)
        self.assertGreater(pttl, 300, "kept at the spec's 300 ms")
        self.assertLessEqual(pttl, 1000, "the library's int(0.3) is 0: no expiry at all")


class PythonRedisLockRenewalTest(RedisLibrary, unittest.TestCase):
    script = "python_redis_lock.py"
    args = ("--auto-renewal",)
    ttl_ms = 1000

    def test_its_watchdog_keeps_the_lock_past_its_ttl(self):
        server = self.locks[0]
        events = KeyEvents(self, server, self.lock_key)
        a = self.holder("client-A", ttl_ms=1000)
        value = self.acquired(a.ask("acquire 2000"))

        # `SET .. NX EX 1` sends an `expire` event too: renewals are the rest.
        def renewals():
            return events.times("expire")[1:]

        # A renewal every 2/3 of the TTL: the second comes after the TTL.
        until(lambda: len(renewals()) >= 2, 10, "two renewals (EXPIRE) of the lock")
        taken = events.times("set")[0]
        self.assertGreater(renewals()[1] - taken, 1.0)
        self.assertEqual(server.client.get(self.lock_key), value)
        self.assertEqual(a.ask("release"), "released deleted")

    def test_after_a_pause_its_watchdog_dies_and_nobody_is_told(self):
        # The gc-pause story again, looking at the watchdog: thawed, its
        # thread renews, finds client-B's lock, raises and ends. The holder
        # is not told: it sells, and has no lost-lock signal to ask.
        stderr = tempfile.TemporaryFile(mode="w+")
        self.addCleanup(stderr.close)
        the_spec = spec("client-A", [self.locks[0].url], self.db.url, ttl_ms=1000)
        a = Adapter(self, self.script, the_spec, self.args, stderr=stderr)
        b = self.holder("client-B")
        self.acquired(a.ask("acquire 2000"))
        self.assertEqual(a.ask("read"), "stock 10")
        a.freeze()
        self.acquired(b.ask("acquire 10000"))
        a.thaw()
        # Its first renewal after the thaw comes within 2/3 of a second.
        until(lambda: "_lock_renewer" in self.read(stderr), 10, "the watchdog's end")
        self.assertIn("redis_lock.NotAcquired", self.read(stderr))
        self.assertEqual(a.ask("sell 10"), "sold 10")
        self.assertEqual(a.ask("wait-lost 1000"), "lost no")

    @staticmethod
    def read(file):
        file.seek(0)
        return file.read()


class PotteryRedlockTest(ExpiringLibrary, unittest.TestCase):
    script = "pottery_redlock.py"
    lock_key = "redlock:lock:stock"
    masters = 3


if __name__ == "__main__":
    unittest.main()
