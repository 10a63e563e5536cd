"""tests/web/test_metrics.py: GET /metrics parsed with prometheus_client's own text
parser, every value checked against the queue as the CLI (the library) reads it, and
the cache: however many scrapes, one stats read per queue per --cache interval."""
import json
import os
import unittest

from prometheus_client.parser import text_string_to_metric_families

import webtest as wt

DB = f"mqmetrics_{os.getpid()}"
DB2 = f"mqmetrics2_{os.getpid()}"


class Metrics(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for db in (DB, DB2):
            wt.drop(db)
        wt.fill(DB, 100)
        wt.cli(DB2, "publish", "solo", '{"x": 1}')
        # A cache longer than the test: every scrape after the first is served from it.
        cls.web = wt.Web(f"{DB}.mq", f"{DB2}.mq", "--cache", "3600", "--history-interval", "0")

    @classmethod
    def tearDownClass(cls):
        cls.web.stop()
        for db in (DB, DB2):
            wt.drop(db)

    def scrape(self):
        status, headers, text = self.web.request("/metrics")
        self.assertEqual(200, status)
        self.assertTrue(headers["Content-Type"].startswith("text/plain; version=0.0.4"), headers)
        fams = {f.name: f for f in text_string_to_metric_families(text)}
        values = {}
        for f in fams.values():
            for s in f.samples:
                values[(s.name, tuple(sorted(s.labels.items())))] = s.value
        return text, fams, values

    def test_values_match_the_queue(self):
        text, fams, v = self.scrape()
        for name in ["mongomq_queue_messages", "mongomq_queue_groups", "mongomq_queue_dead_messages",
                     "mongomq_queue_oldest_message_age_seconds", "mongomq_queue_published",
                     "mongomq_queue_priority_messages", "mongomq_queue_paused_groups"]:
            self.assertIn(name, fams)
            self.assertIn(f"# HELP {name}", text)
            self.assertTrue(fams[name].documentation, name)
        self.assertEqual("counter", fams["mongomq_queue_published"].type)
        self.assertEqual("gauge", fams["mongomq_queue_groups"].type)
        for db in (DB, DB2):
            q = (("queue", f"{db}.mq"),)
            s = wt.stats(db)
            self.assertEqual(1, v[("mongomq_queue_up", q)])
            self.assertEqual(s["messages"], v[("mongomq_queue_messages", q)])
            self.assertEqual(s["dead"], v[("mongomq_queue_dead_messages", q)])
            self.assertEqual(s["published"], v[("mongomq_queue_published_total", q)])
            self.assertEqual(s["groups"]["paused"], v[("mongomq_queue_paused_groups", q)])
            for state in ("ready", "leased", "parked", "paused"):
                self.assertEqual(s["groups"][state], v[("mongomq_queue_groups", tuple(sorted(q + (("state", state),))))], state)
            for p in range(5):
                key = tuple(sorted(q + (("priority", str(p)),)))
                self.assertEqual(s["priorities"][str(p)]["messages"], v[("mongomq_queue_priority_messages", key)])
                self.assertEqual(s["priorities"][str(p)]["groups"], v[("mongomq_queue_priority_groups", key)])
            # The oldest age, checked as the instant it implies: the oldest event's publish.
            oldest = json.loads(wt.cli(db, "peek", "-n", "1", "--json").stdout)
            implied = v[("mongomq_queue_stats_timestamp_seconds", q)] - v[("mongomq_queue_oldest_message_age_seconds", q)]
            self.assertAlmostEqual(oldest["published_at"], implied, delta=1e-3)
        # The filled queue's shape, independently of the stats.
        q = (("queue", f"{DB}.mq"),)
        self.assertEqual(4, v[("mongomq_queue_dead_messages", q)])
        self.assertEqual(1, v[("mongomq_queue_paused_groups", q)])
        self.assertEqual(2, v[("mongomq_queue_groups", (("queue", f"{DB}.mq"), ("state", "leased")))])
        self.assertEqual(1, v[("mongomq_queue_groups", (("queue", f"{DB}.mq"), ("state", "parked")))])

    def test_scrapes_share_one_stats_read(self):
        for _ in range(10):
            _, _, v = self.scrape()
        for db in (DB, DB2):
            self.assertEqual(1, v[("mongomq_web_stats_reads_total", (("queue", f"{db}.mq"),))], db)
        # The overview reads through the same cache.
        self.web.json(f"/api/overview?q={DB}.mq")
        _, _, v = self.scrape()
        self.assertEqual(1, v[("mongomq_web_stats_reads_total", (("queue", f"{DB}.mq"),))])

    def test_healthz(self):
        self.assertEqual((200, "ok\n"), (self.web.request("/healthz")[0], self.web.request("/healthz")[2]))


if __name__ == "__main__":
    unittest.main(verbosity=2)
