"""A lock URL that names a master through its Sentinels
(`redis+sentinel://host:port/name`, as the Sentinel stories pass it): the
adapter asks the Sentinel once, at start, and locks on the master it names,
with its connections named as everywhere else."""

import os
import subprocess
import unittest

import redis

from support import Adapter, RedisServer, die_with_parent, free_port, spec, until


class SentinelUrlTest(unittest.TestCase):
    def setUp(self):
        self.master = RedisServer(self)
        self.port = free_port()
        config = os.path.join(self.master.dir, "sentinel.conf")
        with open(config, "w") as f:
            f.write(
                f"port {self.port}\nbind 127.0.0.1\n"
                f"sentinel monitor mymaster 127.0.0.1 {self.master.port} 1\n"
            )
        sentinel = subprocess.Popen(
            ["redis-server", config, "--sentinel"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=die_with_parent,
        )
        self.addCleanup(sentinel.wait)
        self.addCleanup(sentinel.kill)
        client = redis.Redis(port=self.port, decode_responses=True)
        until(lambda: self._names_master(client), 10, "the Sentinel to name its master")

    def _names_master(self, client):
        try:
            return client.sentinel_get_master_addr_by_name("mymaster")
        except redis.ConnectionError:
            return None

    def test_each_redis_adapter_locks_on_the_master_the_sentinel_names(self):
        url = f"redis+sentinel://127.0.0.1:{self.port}/mymaster"
        for script in ("redis_py.py", "python_redis_lock.py"):
            with self.subTest(script=script):
                a = Adapter(self, script, spec("client-A", [url], self.master.url, ttl_ms=5000))
                value = a.ask("acquire 2000").split()[1]
                self.assertEqual(self.master.client.get("lock:stock"), value)
                self.assertIn("client-A", self.master.client_names())
                self.assertEqual(a.ask("release"), "released deleted")
                a.stop()


if __name__ == "__main__":
    unittest.main()
