#!/usr/bin/env python3
"""Compares the bindings with C: runs the C bench and every binding's bench (the same
workload, bench/README.md) on one server, interleaved, and prints Markdown tables of
events/s and of each bench process's own CPU time per event, with the ratio to C.

    python3 bench/compare.py [--uri URI] [--rounds 3] [--events 5000] [--base-events 1000]
                             [--groups 50] [--workers 4] [--langs C,Go,...] [--stat median]
                             [--seed S] [--no-prepare] [--json build/bench-compare.json]

Why it runs each bench the way it does:
- Prepares what it runs (each step quick when already built): scripts/stage.sh (the
  library, the C bench, build/stage for the bindings), the Go bench binary, the Rust
  example, the Java jar and its test classes (mvn -DskipTests, only when a source is
  newer), the Ruby gem and the Python package, each installed into build/compare/
  from the sources (again only when a source or the library is newer). So it works
  right after scripts/test.sh, or on a fresh checkout with the dependencies of
  scripts/install-deps.sh. The benches run as built programs, never through `go run`
  or `cargo run`, whose compiler would count as the bench's CPU.
- Without --uri (or MONGOMQ_TEST_URI) it starts the local test server of its own
  (scripts/test-server.sh, state in build/test-server-compare, so a server that
  scripts/test.sh or a test-<language>.sh runs is never touched) and stops it at the
  end. One unrecorded C run warms the server's JVM up first.
- The test server is slow and changes speed as its JVM warms up and its state grows,
  so a fixed order (C first, then Go, ...) gives C the coldest server. Each round runs
  every bench of every language in a freshly shuffled order; the figures are the
  median (--stat best: the best) over the rounds.
- Events/s depend on the server as much as on the binding. What the binding itself
  costs shows in its process's CPU time, which the server's speed cannot hide: each
  bench runs each mode (--batch 1, --batch 10) at --base-events N1 and at --events N2,
  and CPU per event = (cpu(N2) - cpu(N1)) / (N2 - N1), user + system time of the
  process from wait4(2). The difference removes what does not grow with the events:
  start-up, the JVM's and the interpreters' loading and compiling, opening clients
  and queues. Events/s come from the N2 runs.

Exits 1 when a bench failed (its row says "failed"; stderr says why).
bench/chart.py draws the --json file.
"""
import argparse
import glob
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build")
OUT = os.path.join(BUILD, "compare")  # what this script builds and installs, and nothing else
LANGS = ("C", "Go", "Java", "Ruby", "Rust", "Python")
MODES = {"single": 1, "batch": 10}
LABEL = {"single": "single", "batch": "batch(10)"}
FIGURES = ("publish", "drain")
RUN_TIMEOUT = 900  # seconds for one bench run; a hung run is killed and counts as failed


def log(msg):
    print("compare: " + msg, file=sys.stderr, flush=True)


def sh(cmd, cwd=ROOT, env=None):
    """Runs a preparation step and returns its output, shown only when it fails."""
    log("$ " + " ".join(cmd) + (f"   (in {os.path.relpath(cwd, ROOT)})" if cwd != ROOT else ""))
    p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{cmd[0]} exited {p.returncode}:\n{p.stdout[-4000:]}")
    return p.stdout


def newest(paths):
    """The newest modification time of any file under paths (0 if none)."""
    t = 0.0
    for p in paths:
        if os.path.isfile(p):
            t = max(t, os.path.getmtime(p))
        for d, dirs, files in os.walk(p):
            dirs[:] = [x for x in dirs if x not in ("target", "build", "tmp", "__pycache__", ".pytest_cache")]
            for f in files:
                t = max(t, os.path.getmtime(os.path.join(d, f)))
    return t


def stale(stamp, inputs):
    return not os.path.exists(stamp) or os.path.getmtime(stamp) < newest(inputs)


def touch(stamp):
    os.makedirs(os.path.dirname(stamp), exist_ok=True)
    with open(stamp, "w") as fh:
        fh.write("built by bench/compare.py\n")


def library():
    return os.path.join(BUILD, "stage/lib/libmongomq.so.0")


# ---- preparing: one function per language, returning the command of its bench ----
# Each returns cmd(uri, events, batch, a) -> argv.

def prepare_c(env, build):
    # scripts/stage.sh builds build/ (the C bench is part of it) and installs the
    # library into build/stage, which every binding builds and runs against.
    if build:
        sh(["bash", "scripts/stage.sh"], env=env)
    exe = os.path.join(BUILD, "bench/bench")
    return lambda uri, n, b, a: [exe, "--uri", uri, "--events", str(n), "--groups", str(a.groups), "--workers",
                                 str(a.workers), "--batch", str(b), "--json"]


def prepare_go(env, build):
    exe = os.path.join(OUT, "go/mongomq-bench")
    # go build is incremental: quick when nothing changed.
    if build:
        sh(["go", "build", "-o", exe, "./cmd/mongomq-bench"], cwd=os.path.join(ROOT, "bindings/go"), env=env)
    return lambda uri, n, b, a: [exe, "-uri", uri, "-events", str(n), "-groups", str(a.groups), "-workers",
                                 str(a.workers), "-batch", str(b)]


def prepare_rust(env, build):
    # Built from a copy of bindings/rust (modification times kept, so cargo rebuilds
    # only what changed): the workspace's Cargo.lock is made by scripts/test-rust.sh
    # from crate-versions.txt, and a bench must not rewrite it. When the copy's lock
    # is behind the workspace's own versions, `cargo update --workspace` moves only
    # the workspace's crates, offline; every other crate stays as pinned.
    src = os.path.join(OUT, "rust/src")
    if build:
        shutil.rmtree(src, ignore_errors=True)
        shutil.copytree(os.path.join(ROOT, "bindings/rust"), src, ignore=shutil.ignore_patterns("target"))
        cmd = ["cargo", "build", "--locked", "--quiet", "--release", "--example", "bench", "-p", "mongomq"]
        try:
            sh(cmd, cwd=src, env=env)
        except RuntimeError as e:
            if "lock file" not in str(e):
                raise
            sh(["cargo", "update", "--workspace", "--offline", "--quiet"], cwd=src, env=env)
            sh(cmd, cwd=src, env=env)
    exe = os.path.join(env["CARGO_TARGET_DIR"], "release/examples/bench")
    return lambda uri, n, b, a: [exe, "--uri", uri, "--events", str(n), "--groups", str(a.groups), "--workers",
                                 str(a.workers), "--batch", str(b)]


def prepare_java(env, build):
    jdir = os.path.join(ROOT, "bindings/java")
    stamp = os.path.join(OUT, "java.stamp")
    inputs = [os.path.join(jdir, "pom.xml"), os.path.join(jdir, "src"), os.path.join(ROOT, "bindings/swig"), library()]
    jars = [j for j in glob.glob(os.path.join(jdir, "target/mongomq-*.jar")) if re.search(r"mongomq-[\d.]+\.jar$", j)]
    bench_class = os.path.join(jdir, "target/test-classes/org/mongomq/bench/Bench.class")
    if build and (stale(stamp, inputs) or not jars or not os.path.exists(bench_class)):
        # The jar carries its own copy of libmongomq.so.0 (loaded through the JNI
        # library's RPATH before LD_LIBRARY_PATH), hence the library among the inputs.
        sh(["mvn", "-B", "-ntp", "-q", "-DskipTests", "package"], cwd=jdir, env=env)
        touch(stamp)
        jars = [j for j in glob.glob(os.path.join(jdir, "target/mongomq-*.jar"))
                if re.search(r"mongomq-[\d.]+\.jar$", j)]
    if len(jars) != 1:
        raise RuntimeError(f"expected one jar in bindings/java/target, found {jars}")
    cp = jars[0] + os.pathsep + os.path.join(jdir, "target/test-classes")
    return lambda uri, n, b, a: ["java", "-cp", cp, "org.mongomq.bench.Bench", "--uri", uri, "--events", str(n),
                                 "--groups", str(a.groups), "--workers", str(a.workers), "--batch", str(b)]


def prepare_ruby(env, build):
    rdir = os.path.join(ROOT, "bindings/ruby")
    gems = os.path.join(OUT, "ruby/gems")
    stamp = os.path.join(OUT, "ruby.stamp")
    if build and stale(stamp, [rdir, library()]):
        # As scripts/test-ruby.sh installs it: gem build, then gem install --local
        # (which compiles the extension against the library pkg-config finds).
        version = sh(["ruby", "-e", "load ARGV[0]; print MongoMQ::VERSION",
                      os.path.join(rdir, "lib/mongomq/version.rb")], env=env).strip()
        gem = os.path.join(OUT, f"ruby/mongomq-{version}.gem")
        shutil.rmtree(gems, ignore_errors=True)
        if os.path.exists(gem):
            os.remove(gem)
        os.makedirs(os.path.dirname(gem), exist_ok=True)
        sh(["gem", "build", "mongomq.gemspec", "--output", gem], cwd=rdir, env=env)
        sh(["gem", "install", "--local", "--no-document", gem], env=dict(env, GEM_HOME=gems))
        touch(stamp)
    env["GEM_HOME"] = gems
    script = os.path.join(rdir, "bench/bench.rb")
    return lambda uri, n, b, a: ["ruby", script, "--uri", uri, "--events", str(n), "--groups", str(a.groups),
                                 "--workers", str(a.workers), "--batch", str(b)]


def prepare_python(env, build):
    pdir = os.path.join(ROOT, "bindings/python")
    venv = os.path.join(OUT, "python/venv")
    py = os.path.join(venv, "bin/python")
    stamp = os.path.join(OUT, "python.stamp")
    sources = [os.path.join(pdir, x) for x in ("src", "generated", "setup.py", "pyproject.toml", "MANIFEST.in",
                                               "README.md")]
    if build and (stale(stamp, sources + [library()]) or not os.path.exists(py)):
        # pip builds the package as a user's pip would (pyproject.toml's pinned
        # setuptools, pkg-config for the library), from a copy of the sources so that
        # setuptools' build/ and egg-info never land in the source tree.
        shutil.rmtree(venv, ignore_errors=True)
        sh([sys.executable, "-m", "venv", venv], env=env)
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "python")
            shutil.copytree(pdir, src, ignore=shutil.ignore_patterns("build", "tests", "*.egg-info", "__pycache__"))
            sh([py, "-m", "pip", "install", "-q", "--no-deps", src], env=dict(env, PIP_DISABLE_PIP_VERSION_CHECK="1"))
        touch(stamp)
    script = os.path.join(pdir, "bench/bench.py")
    return lambda uri, n, b, a: [py, script, "--uri", uri, "--events", str(n), "--groups", str(a.groups),
                                 "--workers", str(a.workers), "--batch", str(b), "--json"]


PREPARE = {"C": prepare_c, "Go": prepare_go, "Java": prepare_java, "Ruby": prepare_ruby, "Rust": prepare_rust,
           "Python": prepare_python}


# ---- reading each bench's figures: {"publish": eps, "drain": eps} of its one mode ----

def parse_json_modes(out):
    modes = json.loads(out.strip().splitlines()[-1])["modes"]
    if len(modes) != 1:
        raise RuntimeError(f"expected one mode, got {len(modes)}")
    return {"publish": float(modes[0]["publish_eps"]), "drain": float(modes[0]["drain_eps"])}


def parse_go(out):
    m = re.search(r"events/s: (?:single|batch\(\d+\)) publish ([\d.]+) drain ([\d.]+)\s*$", out, re.M)
    if not m:
        raise RuntimeError("no 'events/s:' line")
    return {"publish": float(m.group(1)), "drain": float(m.group(2))}


def parse_java(out):
    m = re.search(r"^(?:single|batch\(\d+\))\s+publish\s+([\d.]+) events/s\s+drain\s+([\d.]+) events/s", out, re.M)
    if not m:
        raise RuntimeError("no 'publish ... drain ...' line")
    return {"publish": float(m.group(1)), "drain": float(m.group(2))}


def parse_ruby(out):
    r = {}
    for f, v in re.findall(r"^(publish|drain)\s+[\d.]+ s\s+([\d.]+) events/s", out, re.M):
        r[f] = float(v)
    if set(r) != set(FIGURES):
        raise RuntimeError("no publish/drain lines")
    return r


def parse_rust(out):
    m = re.search(r"^(?:single|batch\(\d+\))\s+([\d.]+)\s+([\d.]+)\s", out, re.M)
    if not m:
        raise RuntimeError("no mode line")
    return {"publish": float(m.group(1)), "drain": float(m.group(2))}


PARSE = {"C": parse_json_modes, "Go": parse_go, "Java": parse_java, "Ruby": parse_ruby, "Rust": parse_rust,
         "Python": parse_json_modes}


def run_bench(cmd, env):
    """Runs one bench; returns (stdout, cpu seconds of the process and what it waited for)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        deadline = time.monotonic() + RUN_TIMEOUT
        try:
            while True:
                pid, status, ru = os.wait4(p.pid, os.WNOHANG)
                if pid:
                    break
                if time.monotonic() > deadline:
                    p.kill()
                    pid, status, ru = os.wait4(p.pid, 0)
                    break
                time.sleep(0.05)
        except BaseException:  # interrupted: the bench goes too
            p.kill()
            os.wait4(p.pid, 0)
            p.returncode = -9
            raise
        p.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
        out.seek(0)
        err.seek(0)
        text = out.read()
        if p.returncode != 0:
            raise RuntimeError(f"{os.path.basename(cmd[0])} exited {p.returncode}: {err.read()[-2000:]}{text[-2000:]}")
        return text, ru.ru_utime + ru.ru_stime


# ---- the test server ----

class Server:
    def __init__(self, env):
        self.env = dict(env, MONGOMQ_STATE_DIR=os.path.join(BUILD, "test-server-compare"))
        self.uri = None

    def start(self):
        out = sh(["bash", "scripts/test-server.sh", "start"], env=self.env)
        self.uri = out.strip().splitlines()[-1]
        log(f"started the test server at {self.uri}")
        return self.uri

    def stop(self):
        if self.uri:
            subprocess.run(["bash", os.path.join(ROOT, "scripts/test-server.sh"), "stop"], env=self.env)
            log("stopped the test server")
            self.uri = None


def environment():
    env = dict(os.environ)
    stage = os.path.join(BUILD, "stage")
    env["PKG_CONFIG_PATH"] = os.path.join(stage, "lib/pkgconfig") + os.pathsep + env.get("PKG_CONFIG_PATH", "")
    env["LD_LIBRARY_PATH"] = os.path.join(stage, "lib") + os.pathsep + env.get("LD_LIBRARY_PATH", "")
    env["CARGO_TARGET_DIR"] = os.path.join(BUILD, "rust-target")
    env.setdefault("CARGO_BUILD_JOBS", "2")
    env.setdefault("GOTOOLCHAIN", "local")
    for var in ("GEM_PATH", "RUBYLIB", "RUBYOPT", "PYTHONPATH", "VIRTUAL_ENV"):
        env.pop(var, None)
    # Where scripts/test-go.sh and scripts/test-rust.sh find the toolchains.
    for extra in ("/usr/local/go/bin", os.path.expanduser("~/.cargo/bin")):
        if os.path.isdir(extra) and extra not in env["PATH"].split(os.pathsep):
            env["PATH"] = env["PATH"] + os.pathsep + extra
    return env


def summarize(values, best):
    return best(values) if best else statistics.median(values)


def fmt(v, c, digits=0):
    s = f"{v:,.{digits}f}"
    return s if c is None else f"{s} ({v / c:.2f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--uri", default=os.environ.get("MONGOMQ_TEST_URI") or os.environ.get("MONGOMQ_URI"),
                    help="server to use (default $MONGOMQ_TEST_URI, else a test server started here)")
    ap.add_argument("--events", type=int, default=5000, help="N2: events of the measured runs (default 5000)")
    ap.add_argument("--base-events", type=int, default=1000, help="N1: events of the runs subtracted (default 1000)")
    ap.add_argument("--groups", type=int, default=50)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--stat", choices=("median", "best"), default="median",
                    help="over the rounds: the median, or the best (highest events/s, lowest CPU)")
    ap.add_argument("--langs", default=",".join(LANGS), help="comma-separated subset of " + ",".join(LANGS))
    ap.add_argument("--seed", type=int, help="seed of the shuffles (default: random; printed)")
    ap.add_argument("--no-prepare", action="store_true", help="run what is built; build nothing")
    ap.add_argument("--json", help="also write the figures to this file (for bench/chart.py)")
    a = ap.parse_args()
    langs = [x.strip() for x in a.langs.split(",") if x.strip()]
    bad = [x for x in langs if x not in LANGS]
    langs = [x for x in LANGS if x in langs]
    if bad:
        ap.error(f"unknown language(s) {bad}: choose from {','.join(LANGS)}")
    if not 0 < a.base_events < a.events or a.rounds < 1:
        ap.error("need 0 < --base-events < --events and --rounds >= 1")
    seed = a.seed if a.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)

    env = environment()
    commands, failures = {}, {}
    prepare = ["C"] + [x for x in langs if x != "C"]  # C's step stages the library the others need
    for name in prepare:
        try:
            commands[name] = PREPARE[name](env, not a.no_prepare)
        except Exception as e:  # a language that cannot be built is a row that says so
            log(f"{name}: prepare failed: {e}")
            failures[name] = f"prepare: {e}"

    server = Server(env)
    uri = a.uri
    interrupted = []

    def on_signal(signum, _frame):
        interrupted.append(signum)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    # samples[name][mode] = list of {"publish", "drain", "cpu_us"} per round
    samples = {name: {m: [] for m in MODES} for name in langs}
    try:
        if not uri:
            uri = server.start()
        if "C" in commands:  # warm the server's JVM up; not recorded
            try:
                run_bench(commands["C"](uri, a.base_events, 1, a), env)
            except Exception as e:
                log(f"warm-up run failed: {e}")
        for rnd in range(1, a.rounds + 1):
            jobs = [(name, m, n) for name in langs if name in commands and name not in failures
                    for m in MODES for n in (a.base_events, a.events)]
            rng.shuffle(jobs)
            log(f"round {rnd}/{a.rounds}: {len(jobs)} runs")
            got = {}
            for name, m, n in jobs:
                if name in failures:
                    continue
                try:
                    text, cpu = run_bench(commands[name](uri, n, MODES[m], a), env)
                    got[(name, m, n)] = (PARSE[name](text), cpu)
                except Exception as e:  # a bench that fails is a row that says so
                    log(f"{name} {LABEL[m]} {n} events: {e}")
                    failures[name] = str(e).splitlines()[0] if str(e) else "failed"
            for name in langs:
                for m in MODES:
                    lo, hi = got.get((name, m, a.base_events)), got.get((name, m, a.events))
                    if lo and hi:
                        cpu_us = (hi[1] - lo[1]) / (a.events - a.base_events) * 1e6
                        samples[name][m].append(dict(hi[0], cpu_us=cpu_us))
    except KeyboardInterrupt:
        log("interrupted")
    finally:
        server.stop()
    if interrupted:
        return 1

    pick_max = max if a.stat == "best" else None
    pick_min = min if a.stat == "best" else None
    results = {}
    for name in langs:
        if name in failures or not all(samples[name][m] for m in MODES):
            results[name] = None
            continue
        results[name] = {m: {"publish": summarize([s["publish"] for s in samples[name][m]], pick_max),
                             "drain": summarize([s["drain"] for s in samples[name][m]], pick_max),
                             "cpu_us": summarize([s["cpu_us"] for s in samples[name][m]], pick_min)}
                         for m in MODES}
    c = results.get("C")
    stat = "median" if a.stat == "median" else "best"
    print(f"{a.rounds} round(s), languages in a shuffled order (seed {seed}); {stat} of the rounds; "
          f"groups {a.groups}, workers {a.workers}\n")
    print(f"Events/s ({a.events} events; ratio to C):\n")
    cols = [(m, f) for m in MODES for f in FIGURES]
    print("| language | " + " | ".join(f"{LABEL[m]} {f}" for m, f in cols) + " |")
    print("| --- |" + " ---: |" * len(cols))
    for name in langs:
        r = results[name]
        if r is None:
            print(f"| {name} |" + " failed |" * len(cols))
            continue
        base = (lambda m, f: None) if name == "C" or not c else (lambda m, f: c[m][f])
        print(f"| {name} | " + " | ".join(fmt(r[m][f], base(m, f)) for m, f in cols) + " |")
    print(f"\nCPU time of the bench process per event, µs (cpu({a.events}) - cpu({a.base_events})) / "
          f"{a.events - a.base_events}; ratio to C):\n")
    print("| language | " + " | ".join(LABEL[m] for m in MODES) + " |")
    print("| --- |" + " ---: |" * len(MODES))
    for name in langs:
        r = results[name]
        if r is None:
            print(f"| {name} |" + " failed |" * len(MODES))
            continue
        print(f"| {name} | " + " | ".join(
            fmt(r[m]["cpu_us"], None if name == "C" or not c else c[m]["cpu_us"], 1) for m in MODES) + " |")
    for name, why in failures.items():
        print(f"\n{name} failed: {why}")
    if a.json:
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        with open(a.json, "w") as fh:
            json.dump({"workload": {"events": a.events, "base_events": a.base_events, "groups": a.groups,
                                    "workers": a.workers, "rounds": a.rounds, "stat": a.stat, "seed": seed},
                       "results": results, "rounds": samples}, fh, indent=1)
    return 0 if all(results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
