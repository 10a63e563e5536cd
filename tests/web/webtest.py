"""tests/web: what the dashboard's tests share. Starting `mongomq web` on a free port
(port 0; the port is read from its "serving" line) and stopping it, the filler and the
CLI as independent views of the queue, HTTP without a browser, and a headless Chromium
whose console log is read for script errors. Every wait is bounded."""
import json
import os
import re
import subprocess
import time
import urllib.error
import urllib.request

MONGOMQ = os.environ["MONGOMQ_BIN"]     # build/cli/mongomq
FILL = os.environ["MONGOMQ_WEB_FILL"]   # build/cli/web_fill
URI = os.environ["MONGOMQ_TEST_URI"]
SHOTS = os.environ.get("MONGOMQ_WEB_SHOTS", "")  # where screenshots go ("" = none)
WAIT = 30  # seconds, the bound of every wait


def fill(db, *args):
    out = subprocess.run([FILL, URI, db, "mq", *map(str, args)], check=True, capture_output=True, text=True, timeout=300)
    return json.loads(out.stdout)


def cli(db, *args, check=True):
    """The queue seen through the CLI (the library), not the dashboard."""
    r = subprocess.run([MONGOMQ, "--uri", URI, "--db", db, *args], capture_output=True, text=True, timeout=60)
    if check and r.returncode != 0:
        raise AssertionError(f"mongomq {' '.join(args)}: exit {r.returncode}: {r.stderr}")
    return r


def stats(db):
    return json.loads(cli(db, "stats", "--json").stdout)


def drop(db):
    cli(db, "drop", "--yes", check=False)


class Web:
    """A running `mongomq web`; its stderr in self.log."""

    def __init__(self, *args, uri=URI, listen="127.0.0.1:0"):
        self.log_path = f"/tmp/mongomq-web-test-{os.getpid()}-{time.monotonic_ns()}.log"
        self.log_file = open(self.log_path, "w+")
        self.proc = subprocess.Popen([MONGOMQ, "web", "--uri", uri, "--listen", listen, *args],
                                     stdout=subprocess.DEVNULL, stderr=self.log_file)
        deadline = time.monotonic() + WAIT
        self.port = None
        while time.monotonic() < deadline:
            m = re.search(r"serving http://[^ ]+:(\d+)/", self.log())
            if m:
                self.port = int(m.group(1))
                break
            if self.proc.poll() is not None:
                raise AssertionError(f"mongomq web ended with {self.proc.returncode}: {self.log()}")
            time.sleep(0.05)
        if self.port is None:
            self.stop()
            raise AssertionError("mongomq web did not start: " + self.log())
        self.base = f"http://127.0.0.1:{self.port}"

    def log(self):
        with open(self.log_path) as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(WAIT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log_file.close()

    def request(self, path, data=None, headers=None, method=None):
        """(status, headers, body text) of one request, without a browser."""
        body = None
        if data is not None:
            body = urllib.parse.urlencode(data, doseq=True).encode()
        req = urllib.request.Request(self.base + path, data=body, headers=headers or {}, method=method)
        opener = urllib.request.build_opener(NoRedirect)
        try:
            with opener.open(req, timeout=WAIT) as r:
                return r.status, dict(r.headers), r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read().decode()

    def json(self, path, **kw):
        status, _, body = self.request(path, **kw)
        return status, json.loads(body)


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *a, **k):
        return None


import urllib.parse  # noqa: E402


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    o = Options()
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000",
              "--disable-dev-shm-usage", "--force-color-profile=srgb"]:
        o.add_argument(a)
    o.binary_location = "/usr/bin/chromium"
    o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)
    d.set_page_load_timeout(WAIT)
    d.set_script_timeout(WAIT)
    return d


def wait_for(cond, what):
    """cond() until it is true, at most WAIT seconds; an element that is gone (the page
    was navigating) or not there yet counts as false."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        try:
            v = cond()
        except (NoSuchElementException, StaleElementReferenceException):
            v = None
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError("timed out waiting for " + what)
