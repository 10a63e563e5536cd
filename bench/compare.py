#!/usr/bin/env python3
"""Runs the C bench and every binding's bench, one after the other, on one server with
one workload, and prints a Markdown table: events/s (publish and drain, single and
batch(10)) and each binding's ratio to C.

    python3 bench/compare.py --uri URI [--events 2000] [--groups 50] [--workers 4]
                             [--rounds 1] [--json build/bench-compare.json]

Expects what scripts/test.sh leaves built: build/bench/bench, the Java jar and its
test classes (bindings/java/target), the Ruby gem in build/ruby/gems, the Python
wheel's venv (build/python/venv), the staged library (build/stage) for Go and Rust.
bench/chart.py turns the --json file into the PNG bar chart.
"""
import argparse
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODES = ("single", "batch")
FIGURES = ("publish", "drain")


def run(cmd, cwd=ROOT, env=None):
    print("compare: " + " ".join(cmd), file=sys.stderr)
    p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{cmd[0]} exited {p.returncode}: {p.stderr[-2000:]}{p.stdout[-2000:]}")
    return p.stdout


def from_json_modes(modes):
    out = {}
    for m in modes:
        single = m["batch"] == 1 if "batch" in m else m["mode"] == "single"
        key = "single" if single else "batch"
        out[key] = {"publish": float(m["publish_eps"]), "drain": float(m["drain_eps"])}
    return out


def bench_c(a, env):
    return from_json_modes(json.loads(run([os.path.join(ROOT, "build/bench/bench"), "--uri", a.uri, "--events",
                                           str(a.events), "--groups", str(a.groups), "--workers", str(a.workers),
                                           "--json"], env=env))["modes"])


def bench_go(a, env):
    out = run(["go", "run", "./cmd/mongomq-bench", "-uri", a.uri, "-events", str(a.events), "-groups", str(a.groups),
               "-workers", str(a.workers)], cwd=os.path.join(ROOT, "bindings/go"), env=env)
    m = re.search(r"events/s: single publish ([\d.]+) drain ([\d.]+); batch\(10\) publish ([\d.]+) drain ([\d.]+)", out)
    if not m:
        raise RuntimeError("go bench: no summary line:\n" + out)
    v = [float(x) for x in m.groups()]
    return {"single": {"publish": v[0], "drain": v[1]}, "batch": {"publish": v[2], "drain": v[3]}}


def pub_drain_lines(out, pattern):
    res = {}
    for mode, pub, drain in re.findall(pattern, out):
        res["single" if mode == "single" else "batch"] = {"publish": float(pub), "drain": float(drain)}
    return res


def bench_java(a, env):
    jdir = os.path.join(ROOT, "bindings/java/target")
    out = run(["java", "-cp", f"{jdir}/mongomq-0.4.0.jar:{jdir}/test-classes", "org.mongomq.bench.Bench", "--uri", a.uri,
               "--events", str(a.events), "--groups", str(a.groups), "--workers", str(a.workers), "--batch", "10"],
              env=env)
    return pub_drain_lines(out, r"(?m)^(single|batch\(10\))\s+publish\s+([\d.]+) events/s\s+drain\s+([\d.]+) events/s")


def bench_ruby(a, env):
    env = dict(env, GEM_HOME=os.path.join(ROOT, "build/ruby/gems"))
    out = run(["ruby", "bindings/ruby/bench/bench.rb", "--uri", a.uri, "--events", str(a.events), "--groups",
               str(a.groups), "--workers", str(a.workers)], env=env)
    res, mode = {}, None
    for line in out.splitlines():
        m = re.match(r"== (single|batch\(10\))", line)
        if m:
            mode = "single" if m.group(1) == "single" else "batch"
            res[mode] = {}
        m = re.match(r"(publish|drain)\s+[\d.]+ s\s+([\d.]+) events/s", line)
        if m and mode:
            res[mode][m.group(1)] = float(m.group(2))
    return res


def bench_rust(a, env):
    out = run(["cargo", "run", "--locked", "--quiet", "--release", "--example", "bench", "-p", "mongomq", "--",
               "--uri", a.uri, "--events", str(a.events), "--groups", str(a.groups), "--workers", str(a.workers)],
              cwd=os.path.join(ROOT, "bindings/rust"), env=env)
    return pub_drain_lines(out, r"(?m)^(single|batch\(10\))\s+([\d.]+)\s+([\d.]+)\s")


def bench_python(a, env):
    out = run([os.path.join(ROOT, "build/python/venv/bin/python"), "bindings/python/bench/bench.py", "--uri", a.uri,
               "--events", str(a.events), "--groups", str(a.groups), "--workers", str(a.workers), "--json"], env=env)
    return from_json_modes(json.loads(out)["modes"])


BENCHES = [("C", bench_c), ("Go", bench_go), ("Java", bench_java), ("Ruby", bench_ruby), ("Rust", bench_rust),
           ("Python", bench_python)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--uri", default=os.environ.get("MONGOMQ_TEST_URI") or os.environ.get("MONGOMQ_URI"))
    ap.add_argument("--events", type=int, default=2000)
    ap.add_argument("--groups", type=int, default=50)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=1,
                    help="run every bench this many times, interleaved (C, Go, ..., C, Go, ...), and keep each "
                         "figure's best: on a loaded machine the best is the least disturbed")
    ap.add_argument("--json", help="also write the figures to this file (for bench/chart.py)")
    a = ap.parse_args()
    if not a.uri:
        ap.error("--uri (or MONGOMQ_TEST_URI) is needed")
    env = dict(os.environ)
    stage = os.path.join(ROOT, "build/stage")
    env["PKG_CONFIG_PATH"] = os.path.join(stage, "lib/pkgconfig") + os.pathsep + env.get("PKG_CONFIG_PATH", "")
    env["LD_LIBRARY_PATH"] = os.path.join(stage, "lib") + os.pathsep + env.get("LD_LIBRARY_PATH", "")
    env["CARGO_TARGET_DIR"] = os.path.join(ROOT, "build/rust-target")
    env.setdefault("GOTOOLCHAIN", "local")
    for extra in ("/usr/local/go/bin", os.path.expanduser("~/.cargo/bin")):
        if os.path.isdir(extra):
            env["PATH"] = env["PATH"] + os.pathsep + extra
    results = {name: None for name, _ in BENCHES}
    failures = set()
    for _ in range(a.rounds):
        for name, fn in BENCHES:
            try:
                r = fn(a, env)
                if set(r) != set(MODES) or any(set(r[m]) != set(FIGURES) for m in MODES):
                    raise RuntimeError(f"incomplete figures: {r}")
            except Exception as e:  # a bench that fails is a row that says so
                print(f"compare: {name}: {e}", file=sys.stderr)
                failures.add(name)
                continue
            best = results[name]
            results[name] = r if best is None else {
                m: {f: max(best[m][f], r[m][f]) for f in FIGURES} for m in MODES}
    for name in failures:
        results[name] = None
    c = results["C"]
    cols = [(m, f) for m in MODES for f in FIGURES]
    label = {"single": "single", "batch": "batch(10)"}
    best = f", best of {a.rounds} runs" if a.rounds > 1 else ""
    print(f"events {a.events}, groups {a.groups}, workers {a.workers}{best}; events/s (ratio to C)\n")
    print("| binding | " + " | ".join(f"{label[m]} {f}" for m, f in cols) + " |")
    print("| --- |" + " ---: |" * len(cols))
    for name, r in results.items():
        if r is None:
            print(f"| {name} |" + " failed |" * len(cols))
            continue
        cells = []
        for m, f in cols:
            v = r[m][f]
            cells.append(f"{v:,.0f}" if name == "C" or not c else f"{v:,.0f} ({v / c[m][f]:.2f})")
        print(f"| {name} | " + " | ".join(cells) + " |")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"workload": {"events": a.events, "groups": a.groups, "workers": a.workers, "rounds": a.rounds},
                       "results": results}, fh, indent=1)
    return 0 if all(results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
