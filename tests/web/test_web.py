"""tests/web/test_web.py: mongomq web in a real browser (headless Chromium). One queue
filled by tests/web/fill.c (a stuck group, a held one, a parked one, a paused one, dead
letters, hostile events, 10^4 bulk groups); every page loads without a script error,
each filter gives the expected rows, paging walks the groups in order, the actions
change the server (checked through the CLI, not the dashboard) and the page shows it,
hostile events render as text; read-only, the token, CSRF and a non-loopback listen
without a token. Screenshots of each page go to $MONGOMQ_WEB_SHOTS."""
import os
import subprocess
import tempfile
import unittest

from selenium.webdriver.common.by import By

import webtest as wt

DB = f"mqweb_{os.getpid()}"
BULK = 10000


def setUpModule():
    global FILLED, WEB, D
    wt.drop(DB)
    FILLED = wt.fill(DB, BULK)
    WEB = wt.Web("--db", DB, "--history-interval", "1")
    D = wt.browser()


def tearDownModule():
    D.quit()
    WEB.stop()
    wt.drop(DB)


def errors():
    """The browser's console errors since the last call (script errors, CSP, 4xx/5xx)."""
    return [e for e in D.get_log("browser") if e["level"] == "SEVERE"]


def load(path, web=None):
    web = web or WEB
    D.get(web.base + path)
    wt.wait_for(lambda: D.execute_script("return document.body.dataset.renders"), "the page to render " + path)
    return D


def rows(table_id="groups", attr="data-group"):
    return [r.get_attribute(attr) for r in D.find_elements(By.CSS_SELECTOR, f"#{table_id} tbody tr")]


def shot(name, dark=False):
    """The whole page (up to 2400 px high) as SHOTS/name.png, in the dark theme if asked."""
    if not wt.SHOTS:
        return
    os.makedirs(wt.SHOTS, exist_ok=True)
    height = min(2400, D.execute_script("return document.documentElement.scrollHeight"))
    D.set_window_size(1400, max(700, height))
    if dark:
        D.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
    D.save_screenshot(os.path.join(wt.SHOTS, name + ".png"))
    D.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "light"}]})
    D.set_window_size(1400, 1000)


class Drained(unittest.TestCase):
    def setUp(self):
        errors()  # what earlier tests left in the console log


class A_Pages(Drained):
    def test_1_every_page_loads_without_script_errors(self):
        errors()
        # History charts need a few samples (one a second): wait for them, bounded.
        wt.wait_for(lambda: len(WEB.json(f"/api/history?q={DB}.mq")[1]["samples"]) >= 4, "4 history samples")
        for name, path in [("overview", "/"), ("groups", "/groups"), ("group", "/group?id=stuck-1"),
                           ("dead", "/dead"), ("workers", "/workers")]:
            load(path)
            self.assertEqual([], D.find_elements(By.ID, "page-error"), path)
            shot(name)
            self.assertEqual([], errors(), path)

    def test_overview_refreshes_live(self):
        """With ?refresh=1 (the overview's Live links) a publish shows up without a reload."""
        load("/?refresh=1")
        D.execute_script("window.mqNotReloaded = 1")
        published = wt.stats(DB)["published"]
        wt.cli(DB, "publish", "live-1", "x")
        try:
            wt.wait_for(lambda: D.find_element(By.ID, "ov-published").text == str(published + 1),
                        "the overview to show the new publish by itself")
            self.assertEqual(1, D.execute_script("return window.mqNotReloaded"), "the page was reloaded")
            self.assertEqual(["off", "5 s", "30 s"],
                             [a.text for a in D.find_elements(By.CSS_SELECTOR, "#live a")])
            self.assertEqual([], errors())
        finally:
            wt.cli(DB, "purge-group", "live-1", "--yes")
            # The next tests compare the overview with the CLI: wait until the
            # dashboard's stats cache has seen the purge (the live page shows it).
            messages = str(wt.stats(DB)["messages"])
            wt.wait_for(lambda: D.find_element(By.ID, "ov-messages").text == messages,
                        "the dashboard's cache to see the purge")
            load("/")  # off: the next tests read a page that stays as loaded

    def test_overview_shows_the_queue(self):
        load("/")
        s = wt.stats(DB)
        self.assertEqual(str(s["messages"]), D.find_element(By.ID, "ov-messages").text)
        self.assertEqual(str(s["groups"]["leased"]), D.find_element(By.ID, "ov-leased").text)
        self.assertEqual("1", D.find_element(By.ID, "ov-parked").text)
        self.assertEqual("1", D.find_element(By.ID, "ov-paused").text)
        self.assertEqual(str(s["published"]), D.find_element(By.ID, "ov-published").text)
        self.assertEqual(4, len(D.find_elements(By.CSS_SELECTOR, "#charts svg")))
        self.assertGreater(len(D.find_elements(By.CSS_SELECTOR, "#charts path.line")), 0, "no line drawn")
        self.assertEqual([], errors())

    def test_filters(self):
        cases = {
            "state=leased": ["held-1", "stuck-1"],
            "stuck=1": ["stuck-1"],
            "state=parked": ["parked-1"],
            "state=paused": ["paused-1"],
            "prefix=bulk-0001": [f"bulk-0001{i}" for i in range(10)],
            "held=0.001": ["held-1", "stuck-1"],
            "held=100000": [],
            "parked=7200": ["parked-1"],
            "state=leased&stuck=1": ["stuck-1"],
            "prefix=nothing-has-this": [],
        }
        for query, want in cases.items():
            load("/groups?" + query)
            self.assertEqual(want, rows(), query)
        # The form builds the same GET URL.
        load("/groups")
        D.find_element(By.ID, "f-stuck").click()
        D.find_element(By.ID, "f-apply").click()
        wt.wait_for(lambda: "stuck=1" in D.current_url and D.execute_script("return document.body.dataset.renders"), "the form")
        self.assertEqual(["stuck-1"], rows())
        self.assertEqual([], errors())

    def test_group_row_fields(self):
        load("/groups?stuck=1")
        cells = [c.text for c in D.find_elements(By.CSS_SELECTOR, "#groups tbody tr td")]
        self.assertEqual(["stuck-1", "leased", "worker-a:1"], cells[:3])
        self.assertEqual(["3", "4", "2"], cells[5:8])  # attempts, priority, backlog
        load("/group?id=stuck-1")
        head = [td.text for td in D.find_elements(By.CSS_SELECTOR, "#events tbody tr:first-child td")]
        self.assertEqual(["4", "3"], head[1:3])  # the head's priority and attempts (the lock's)

    def test_paging_walks_every_group_in_order(self):
        load("/groups?limit=1000")
        seen = rows()
        pages = 1
        while D.find_elements(By.ID, "next-page"):
            old = D.current_url
            D.find_element(By.ID, "next-page").click()
            wt.wait_for(lambda: D.current_url != old and D.execute_script("return document.body.dataset.renders"),
                        "the next page")
            seen += rows()
            pages += 1
        self.assertEqual(sorted(seen), seen)
        self.assertEqual(len(set(seen)), len(seen))
        bulk = [g for g in seen if g.startswith("bulk-")]
        self.assertEqual([f"bulk-{i:05d}" for i in range(BULK)], bulk)
        self.assertGreaterEqual(pages, 11)
        # By due: available_at ascending.
        load("/groups?sort=due&limit=200")
        due = [r.find_elements(By.TAG_NAME, "td")[10].text for r in D.find_elements(By.CSS_SELECTOR, "#groups tbody tr")]
        self.assertEqual(sorted(due), due)
        self.assertEqual([], errors())

    def test_workers(self):
        load("/workers")
        got = sorted((r.get_attribute("data-holder"), r.find_elements(By.TAG_NAME, "td")[1].text)
                     for r in D.find_elements(By.CSS_SELECTOR, "#workers tbody tr"))
        self.assertEqual([("worker-a:1", "stuck-1"), ("worker-b:2", "held-1")], got)
        counts = [[td.text for td in r.find_elements(By.TAG_NAME, "td")] for r in D.find_elements(By.CSS_SELECTOR, "#worker-counts tbody tr")]
        self.assertEqual([["worker-a:1", "1"], ["worker-b:2", "1"]], counts)

    def test_hostile_events_render_as_text(self):
        load("/group?id=hostile")
        cells = [c.text for c in D.find_elements(By.CSS_SELECTOR, "#events code.ev")]
        self.assertEqual("<script>window.__pwned=1</script>", cells[0])
        self.assertEqual("hex fffe3c623e626f6c643c2f623e0001", cells[1])  # invalid UTF-8: binary, as hex
        self.assertTrue(cells[2].startswith("<script>window.__pwned=3</script>AAAA"), cells[2][:60])
        self.assertTrue(cells[2].endswith("… (1048576 bytes)"), cells[2][-40:])
        self.assertLess(len(cells[2]), 1000)
        # its attribute (0.7.0) is text too: shown as key=value, no element made of it
        attrs = [c.text for c in D.find_elements(By.CSS_SELECTOR, "#events code.attr")]
        self.assertEqual(['x-html=<i id="injected">attr</i>'], attrs)
        self.assertEqual([], D.find_elements(By.ID, "injected"))
        self.assertIsNone(D.execute_script("return window.__pwned"))
        self.assertEqual([], D.find_elements(By.CSS_SELECTOR, "main script, main img"))
        load("/dead")
        self.assertIn('<img src=x onerror="window.__pwned=2">', D.find_element(By.ID, "dead").text)
        self.assertIsNone(D.execute_script("return window.__pwned"))
        self.assertEqual([], errors())


class B_Actions(Drained):
    def click(self, button_id, confirm=False):
        before = int(D.execute_script("return document.body.dataset.renders"))
        D.find_element(By.ID, button_id).click()
        if confirm:
            D.switch_to.alert.accept()
        wt.wait_for(lambda: int(D.execute_script("return document.body.dataset.renders")) > before, "the re-render")
        banner = D.find_element(By.ID, "banner")
        self.assertEqual("banner ok", banner.get_attribute("class"), banner.text)

    def test_pause_and_resume(self):
        g = "bulk-00042"
        paused = wt.stats(DB)["groups"]["paused"]
        load(f"/group?id={g}")
        self.click("pause")
        self.assertEqual(paused + 1, wt.stats(DB)["groups"]["paused"])
        self.assertEqual("paused", D.find_element(By.CSS_SELECTOR, "#lock .state").text)
        self.assertTrue(D.find_elements(By.ID, "resume"))
        load("/groups?state=paused")
        self.assertIn(g, rows())
        load(f"/group?id={g}")
        self.click("resume")
        self.assertEqual(paused, wt.stats(DB)["groups"]["paused"])
        self.assertEqual("ready", D.find_element(By.CSS_SELECTOR, "#lock .state").text)
        self.assertEqual([], errors())

    def test_purge_group(self):
        g = "bulk-00043"
        self.assertEqual(1, len(wt.cli(DB, "peek", g, "--json").stdout.splitlines()))
        load(f"/group?id={g}")
        self.click("purge", confirm=True)
        self.assertEqual("", wt.cli(DB, "peek", g, "--json").stdout)
        self.assertTrue(D.find_elements(By.ID, "no-lock"))
        self.assertEqual([], errors())

    def test_dead_letters(self):
        a, b, c, hostile = FILLED["dead"]
        load("/dead")
        self.assertEqual([str(s) for s in FILLED["dead"]], rows("dead", "data-seq"))
        # One.
        self.click(f"requeue-{a}")
        dead = [int(x.split()[0]) for x in wt.cli(DB, "dead", "list").stdout.splitlines()[1:]]
        self.assertNotIn(a, dead)
        self.assertEqual(1, len(wt.cli(DB, "peek", "dead-a", "--json").stdout.splitlines()))
        self.assertEqual([str(s) for s in (b, c, hostile)], rows("dead", "data-seq"))
        # The selected.
        for s in (b, c):
            D.find_element(By.CSS_SELECTOR, f'input.pick[value="{s}"]').click()
        self.click("requeue-selected")
        self.assertEqual("1", wt.cli(DB, "dead", "count").stdout.strip())
        self.assertEqual([str(hostile)], rows("dead", "data-seq"))
        # All (with more letters made meanwhile), then purge.
        more = wt.fill(DB, "dead", 3)["dead"]
        load("/dead")
        self.assertEqual([str(s) for s in [hostile] + more], rows("dead", "data-seq"))
        messages = wt.stats(DB)["messages"]
        self.click("requeue-all", confirm=True)
        self.assertEqual("0", wt.cli(DB, "dead", "count").stdout.strip())
        self.assertEqual(messages + 4, wt.stats(DB)["messages"])
        self.assertTrue(D.find_elements(By.ID, "no-dead"))
        wt.fill(DB, "dead", 2)
        load("/dead")
        self.assertEqual(2, len(rows("dead", "data-seq")))
        self.click("purge-dead", confirm=True)
        self.assertEqual("0", wt.cli(DB, "dead", "count").stdout.strip())
        self.assertTrue(D.find_elements(By.ID, "no-dead"))
        self.assertEqual([], errors())


class C_History(Drained):
    def test_history_is_shared_and_survives_a_restart(self):
        q = f"{DB}.mq"
        other = wt.Web("--db", DB, "--history-interval", "1")
        try:
            wt.wait_for(lambda: len(other.json(f"/api/history?q={q}")[1]["samples"]) >= 3, "3 samples")
            a = WEB.json(f"/api/history?q={q}")[1]["samples"]
            b = other.json(f"/api/history?q={q}")[1]["samples"]
            upto = min(a[-1]["_id"], b[-1]["_id"])
            a = [x for x in a if x["_id"] <= upto]
            b = [x for x in b if x["_id"] <= upto]
            self.assertEqual(a, b)  # the same samples for every instance
            ids = [x["_id"] for x in a]
            self.assertEqual(sorted(set(ids)), ids)  # one per interval
        finally:
            other.stop()
        # A dashboard that samples nothing still shows what was written before it started.
        quiet = wt.Web("--db", DB, "--history-interval", "0")
        try:
            got = [x for x in quiet.json(f"/api/history?q={q}&range=86400")[1]["samples"] if x["_id"] <= upto]
            self.assertEqual(a, got[-len(a):])
        finally:
            quiet.stop()


class D_Last(Drained):
    def test_overview_after_the_actions(self):
        """The overview again once the actions changed the queue, so its charts show it;
        its dark theme too."""
        load("/")
        self.assertEqual(str(wt.stats(DB)["dead"]), D.find_element(By.ID, "ov-dead").text)
        shot("overview")
        shot("overview-dark", dark=True)
        load("/groups?state=parked,paused")
        self.assertEqual(["parked-1", "paused-1"], rows())
        self.assertEqual([], errors())


class C_Safety(Drained):
    def test_read_only(self):
        ro = wt.Web("--db", DB, "--read-only", "--history-interval", "0")
        try:
            load("/group?id=paused-1", ro)
            self.assertEqual("read-only", D.find_element(By.ID, "mode").text)
            self.assertEqual([], D.find_elements(By.CSS_SELECTOR, "#resume, #pause, #purge"))
            load("/dead", ro)
            self.assertEqual([], D.find_elements(By.CSS_SELECTOR, "#purge-dead, #requeue-all, input.pick"))
            _, session = ro.json("/api/session")
            self.assertTrue(session["read_only"])
            status, body = ro.json("/api/group/resume", data={"q": f"{DB}.mq", "id": "paused-1"},
                                   headers={"X-CSRF-Token": session["csrf"]})
            self.assertEqual(403, status)
            self.assertIn("read-only", body["error"])
            self.assertEqual(1, wt.stats(DB)["groups"]["paused"])
            self.assertEqual([], errors())
        finally:
            ro.stop()

    def test_csrf(self):
        q = f"{DB}.mq"
        status, body = WEB.json("/api/group/resume", data={"q": q, "id": "paused-1"})
        self.assertEqual(403, status)
        self.assertIn("CSRF", body["error"])
        csrf = WEB.json("/api/session")[1]["csrf"]
        status, _ = WEB.json("/api/group/resume", data={"q": q, "id": "paused-1"},
                             headers={"X-CSRF-Token": csrf, "Origin": "http://evil.example"})
        self.assertEqual(403, status)
        status, _ = WEB.json("/api/group/resume", data={"q": q, "id": "paused-1"}, headers={"X-CSRF-Token": "0" * 64})
        self.assertEqual(403, status)
        self.assertEqual(405, WEB.request("/api/overview", method="PUT")[0])
        self.assertEqual(1, wt.stats(DB)["groups"]["paused"])
        # A GET cannot act.
        self.assertEqual(404, WEB.request(f"/api/group/resume?q={q}&id=paused-1")[0])
        # A DNS-rebound name is refused on loopback without a token.
        self.assertEqual(421, WEB.request("/api/session", headers={"Host": "evil.example"})[0])

    def test_bad_input_is_a_clear_error(self):
        status, body = WEB.json("/api/groups?state=bogus")
        self.assertEqual(400, status)
        self.assertIn("state=bogus", body["error"])
        status, body = WEB.json("/api/groups?held=-1")
        self.assertEqual(400, status)
        status, body = WEB.json("/api/overview?q=no.such")
        self.assertEqual(404, status)
        load("/groups?state=bogus")
        self.assertIn("state=bogus", D.find_element(By.ID, "page-error").text)
        self.assertEqual(1, len(errors()))  # the 400 itself, nothing else

    def test_db_alone_lists_its_queues(self):
        db = DB + "_many"
        wt.drop(db)
        for prefix in ("orders", "refunds"):
            wt.cli(db, "--prefix", prefix, "publish", "g", "{}")
        web = wt.Web("--db", db, "--history-interval", "0")
        try:
            self.assertEqual([f"{db}.orders", f"{db}.refunds"], web.json("/api/session")[1]["queues"])
            self.assertEqual(f"{db}.refunds", web.json(f"/api/overview?q={db}.refunds")[1]["queue"])
            D.get(web.base + f"/?q={db}.refunds")
            wt.wait_for(lambda: D.execute_script("return document.body.dataset.renders"), "the overview")
            self.assertEqual(f"{db}.refunds", D.find_element(By.ID, "queue").get_attribute("value"))
            self.assertEqual("1", D.find_element(By.ID, "ov-messages").text)
            self.assertEqual([], errors())
        finally:
            web.stop()
            for prefix in ("orders", "refunds"):
                wt.cli(db, "--prefix", prefix, "drop", "--yes", check=False)

    def test_non_loopback_needs_a_token_or_read_only(self):
        r = subprocess.run([wt.MONGOMQ, "web", "--uri", wt.URI, "--db", DB, "--listen", "0.0.0.0:0"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(2, r.returncode)
        self.assertIn("not a loopback address", r.stderr)
        self.assertEqual("", r.stdout)
        # --read-only is the explicit choice that allows it (nothing to act with).
        ro = wt.Web("--db", DB, "--read-only", "--history-interval", "0", listen="0.0.0.0:0")
        try:
            self.assertEqual(200, ro.request("/healthz")[0])
            self.assertTrue(ro.json("/api/session")[1]["read_only"])
            self.assertIn("read-only", ro.log())
        finally:
            ro.stop()

    def test_token(self):
        with tempfile.NamedTemporaryFile("w", suffix=".token") as f:
            token = "t0ken-for-the-browser-test-0123456789"
            f.write(token + "\n")
            f.flush()
            web = wt.Web("--db", DB, "--token-file", f.name, "--history-interval", "0")
            try:
                self.assertEqual(401, web.request("/api/session")[0])
                self.assertEqual(401, web.request("/metrics")[0])
                self.assertEqual(200, web.request("/healthz")[0])
                self.assertEqual(200, web.request("/api/session", headers={"Authorization": "Bearer " + token})[0])
                self.assertEqual(200, web.request("/metrics", headers={"Authorization": "Bearer " + token})[0])
                self.assertEqual(401, web.request("/api/session", headers={"Authorization": "Bearer wrong"})[0])
                D.delete_all_cookies()
                D.get(web.base + "/groups")
                wt.wait_for(lambda: D.current_url.endswith("/login"), "the login page")
                D.find_element(By.ID, "token").send_keys("wrong-token-wrong-token")
                D.find_element(By.ID, "login").click()
                wt.wait_for(lambda: "failed=1" in D.current_url and D.find_element(By.ID, "failed").is_displayed(),
                            "the failure message")
                D.find_element(By.ID, "token").send_keys(token)
                D.find_element(By.ID, "login").click()
                wt.wait_for(lambda: D.execute_script("return document.body.dataset.renders"), "the overview")
                self.assertTrue(D.find_elements(By.ID, "ov-messages"))
                self.assertEqual([], errors())
            finally:
                web.stop()

    def test_password_never_shown(self):
        pw = "s3cret-pa55word"
        host = wt.URI.split("://", 1)[1].split("/", 1)[0]
        uri = f"mongodb://someone:{pw}@{host}/?authSource=admin&serverSelectionTimeoutMS=2000"
        r = subprocess.run([wt.MONGOMQ, "web", "--uri", uri, "--db", DB, "--listen", "127.0.0.1:0", "-v"],
                           capture_output=True, text=True, timeout=60)
        # mongo-java-server has no authentication: the open fails, and says why without it.
        self.assertNotEqual(0, r.returncode)
        self.assertNotIn(pw, r.stderr + r.stdout)
        self.assertIn("mongomq web:", r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
