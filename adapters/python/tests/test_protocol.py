"""What the shared module answers to a spec or a request that is wrong: a
`@holder error` line that names the thing, never a made-up answer, and a
holder that goes on serving after a bad request."""

import json
import os
import subprocess
import sys
import unittest

from support import ADAPTERS, Adapter, RedisServer, spec


class SpecErrors(unittest.TestCase):
    def setUp(self):
        self.server = RedisServer(self)

    def first_answer(self, script, the_spec, args=()):
        adapter = Adapter(self, script, the_spec, args)
        adapter.send("acquire 0")
        answer = adapter.answer()
        self.assertEqual(adapter.process.wait(timeout=20), 2, "a holder that cannot start exits 2")
        return answer

    def good_spec(self, **options):
        return spec("client-A", [self.server.url], self.server.url, **options)

    def test_malformed_json_is_named(self):
        answer = self.first_answer("redis_py.py", "{not json")
        self.assertTrue(answer.startswith("error redis-py: malformed LOCKSTAGES_HOLDER"), answer)

    def test_a_missing_field_is_named(self):
        the_spec = self.good_spec()
        del the_spec["db_url"]
        answer = self.first_answer("redis_py.py", the_spec)
        self.assertIn("missing field `db_url`", answer)

    def test_a_malformed_duration_is_named(self):
        answer = self.first_answer("redis_py.py", dict(self.good_spec(), ttl=300))
        self.assertIn("`ttl` must be a duration", answer)

    def test_an_unknown_fencing_mode_is_named(self):
        answer = self.first_answer("redis_py.py", self.good_spec(fencing="sometimes"))
        self.assertIn("`sometimes` is not a fencing mode", answer)

    def test_a_url_that_is_not_redis_is_named(self):
        answer = self.first_answer("redis_py.py", dict(self.good_spec(), lock_urls=["zk://a:1"]))
        self.assertIn("`zk://a:1` is not a Redis URL", answer)

    def test_a_key_python_redis_lock_cannot_keep_is_named(self):
        answer = self.first_answer("python_redis_lock.py", self.good_spec(key="mutex"))
        self.assertIn("the spec's key `mutex` does not start with lock:", answer)

    def test_kazoo_refuses_redis_urls(self):
        answer = self.first_answer("kazoo_lock.py", self.good_spec())
        self.assertIn("zk://host:port", answer)

    def test_an_unknown_flag_is_refused(self):
        env = dict(os.environ, LOCKSTAGES_HOLDER=json.dumps(self.good_spec()))
        done = subprocess.run(
            [sys.executable, os.path.join(ADAPTERS, "python_redis_lock.py"), "--auto"],
            env=env, capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL,
        )
        self.assertEqual(done.returncode, 2)
        self.assertIn("usage", done.stderr)

    def test_without_a_spec_it_says_it_is_no_holder(self):
        env = {k: v for k, v in os.environ.items() if k != "LOCKSTAGES_HOLDER"}
        done = subprocess.run(
            [sys.executable, os.path.join(ADAPTERS, "redis_py.py")],
            env=env, capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL,
        )
        self.assertEqual(done.returncode, 2)
        self.assertIn("LOCKSTAGES_HOLDER is not set", done.stderr)


class RequestErrors(unittest.TestCase):
    def setUp(self):
        self.server = RedisServer(self)
        self.server.client.set("stock", 3)
        self.holder = Adapter(
            self, "redis_py.py", spec("client-A", [self.server.url], self.server.url, ttl_ms=5000)
        )

    def test_each_bad_request_is_an_error_and_the_holder_goes_on(self):
        a = self.holder

        def error(request):
            answer = a.ask(request)
            self.assertTrue(answer.startswith("error redis-py: "), answer)
            return answer[len("error redis-py: "):]

        self.assertEqual(error("sell 3"), "`sell 3` needs the lock to be held first")
        self.assertEqual(error("release"), "`release` needs the lock to be held first")
        self.assertEqual(error("acquire soon"), "`soon` is not a number in `acquire soon`")
        self.assertEqual(error("acquire -5"), "`-5` is a negative time in `acquire -5`")
        self.assertEqual(error("dance"), "unknown request `dance`")
        self.assertEqual(error("stall nowhere 10"), "unknown fault point `nowhere`")
        self.assertIn("cannot be stopped at `between-get-and-del`",
                      error("stall between-get-and-del 10"))
        # Still serving, and nothing was written by the refused requests.
        self.assertTrue(a.ask("acquire 1000").startswith("acquired "))
        self.assertEqual(a.ask("read"), "stock 3")
        self.assertEqual(self.server.client.lrange("orders", 0, -1), [])

    def test_a_library_error_is_answered_with_its_type(self):
        a = self.holder
        self.assertTrue(a.ask("acquire 1000").startswith("acquired "))
        self.server.stop()
        answer = a.ask("read")
        self.assertTrue(
            answer.startswith("error redis-py: redis.exceptions.ConnectionError"), answer
        )
        self.assertNotIn("\n", answer)

    def test_a_lock_server_out_of_reach_is_the_locks_failure_not_an_error(self):
        a = self.holder
        self.assertTrue(a.ask("acquire 1000").startswith("acquired "))
        self.server.stop()
        answer = a.ask("release")
        self.assertTrue(
            answer.startswith("failed redis-py: redis.exceptions.ConnectionError"), answer
        )


class PrefixedKeys(unittest.TestCase):
    def test_the_stock_sits_beside_a_prefixed_lock_key(self):
        # A run on a reader's own server puts its keys under a prefix:
        # `<prefix>lock:stock` for the lock, `<prefix>stock` for the stock.
        server = RedisServer(self)
        server.client.set("run7:stock", 4)
        the_spec = spec("client-A", [server.url], server.url, key="run7:lock:stock")
        a = Adapter(self, "redis_py.py", the_spec)
        self.assertTrue(a.ask("acquire 1000").startswith("acquired "))
        self.assertIsNotNone(server.client.get("run7:lock:stock"))
        self.assertEqual(a.ask("read"), "stock 4")
        self.assertEqual(a.ask("sell 4"), "sold 4")
        self.assertEqual(server.client.get("run7:stock"), "3")
        self.assertEqual(server.client.lrange("run7:orders", 0, -1), ["client-A"])
        self.assertIsNone(server.client.get("stock"))


if __name__ == "__main__":
    unittest.main()
