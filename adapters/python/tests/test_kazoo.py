"""kazoo's adapter against a real ZooKeeper server: the queue, stage 9's
token (the node's czxid), and the session as the TTL: a frozen holder's
session expires, the next client holds, the thawed holder is told its lock
was lost and its stale write is refused by the fenced resource."""

import os
import signal
import unittest

from support import Adapter, RedisServer, ZooKeeperServer, spec


class KazooTest(unittest.TestCase):
    def setUp(self):
        self.zk = ZooKeeperServer(self)
        self.db = RedisServer(self)
        self.db.client.set("stock", 10)

    def holder(self, name, ttl_ms=1000):
        return Adapter(self, "kazoo_lock.py", spec(name, [self.zk.url], self.db.url, ttl_ms=ttl_ms))

    def acquired(self, answer):
        words = answer.split()
        self.assertEqual(words[0], "acquired", answer)
        self.assertTrue(words[1].startswith("/lockstages/lock:stock/"), answer)
        return words[1], int(words[2])

    def test_the_queue_the_token_and_the_names(self):
        a, b = self.holder("client-A"), self.holder("client-B")
        _, token_a = self.acquired(a.ask("acquire 2000"))
        self.assertEqual(b.ask("acquire 0"), "not-acquired")
        self.assertEqual(a.ask("read"), "stock 10")
        # The fenced read registered the token on the resource.
        self.assertEqual(self.db.client.get("stock:fence"), str(token_a))
        self.assertEqual(a.ask("sell 10"), "sold 10")
        self.assertIn("client-A", self.db.client_names())
        self.assertEqual(a.ask("wait-lost 10"), "lost no")
        self.assertEqual(a.ask("release"), "released deleted")
        _, token_b = self.acquired(b.ask("acquire 2000"))
        self.assertGreater(token_b, token_a, "czxids grow with each holder")

    def test_a_frozen_holder_is_told_its_lock_was_lost_and_its_write_refused(self):
        a, b = self.holder("client-A"), self.holder("client-B")
        node_a, token_a = self.acquired(a.ask("acquire 2000"))
        self.assertEqual(a.ask("read"), "stock 10")
        a.freeze()
        # Its pings freeze with it: the session expires, client-B is next.
        node_b, _ = self.acquired(b.ask("acquire 15000"))
        self.assertNotEqual(node_a, node_b)
        self.assertEqual(b.ask("read"), "stock 10")
        self.assertEqual(b.ask("sell 10"), "sold 10")
        a.thaw()
        self.assertEqual(a.ask("wait-lost 15000"), "lost yes")
        self.assertEqual(a.ask("sell 10"), f"rejected {token_a}")
        self.assertEqual(self.db.client.lrange("orders", 0, -1), ["client-B"])
        # Its node went with its session: the release deletes nothing.
        self.assertEqual(a.ask("release"), "released nothing")

    def test_a_holder_cut_off_from_every_server_is_not_told_it_lost_the_lock(self):
        # kazoo does not end its session by its own clock (stage 9's client
        # does): cut off, it goes SUSPENDED and waits to hear from a server.
        a = self.holder("client-A")
        self.acquired(a.ask("acquire 2000"))
        os.kill(self.zk.process.pid, signal.SIGSTOP)
        self.addCleanup(os.kill, self.zk.process.pid, signal.SIGCONT)
        # Three session timeouts without a word from the ensemble.
        self.assertEqual(a.ask("wait-lost 3000"), "lost no")
        os.kill(self.zk.process.pid, signal.SIGCONT)

    def test_a_killed_holders_lock_comes_back_after_its_session(self):
        a, b = self.holder("client-A"), self.holder("client-B")
        self.acquired(a.ask("acquire 2000"))
        a.stop()
        self.acquired(b.ask("acquire 15000"))


if __name__ == "__main__":
    unittest.main()
